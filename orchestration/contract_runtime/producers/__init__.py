"""Producers: write every dataset of a contract into its staging table.

One module per ``runtime.producer.type``: :mod:`.sql`, :mod:`.python`, :mod:`.command`,
:mod:`.dbt`, and :mod:`.load` and :mod:`.extract` (ingestion). Each exposes ``produce(request: ProduceRequest) -> dict`` returning a
small JSON-able summary (it becomes part of the ``produce`` task's XCom).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contract_runtime.run import RunIdentity
from contract_runtime.sqlutil import TableRef, sql_type
from contract_runtime.tables import target_table
from contract_runtime.warehouse import Warehouse

__all__ = ["ProduceRequest", "ProducerError", "asset_table", "run_producer"]


class ProducerError(Exception):
    """The producer failed for a reason a retry will not fix (bad configuration or data).

    The operators turn it into ``AirflowFailException`` (no retry). The message is stored with
    the credentials of any URI it quotes masked
    (:func:`contract_runtime.lineage.redact.mask_uri_credentials`: user info, a signed URL's
    signature), so neither the task log, its traceback nor a lineage facet carries them.
    """

    def __init__(self, message: str) -> None:
        """:param message: What failed, naming the contract; URI credentials are masked here."""
        from contract_runtime.lineage.redact import mask_uri_credentials

        super().__init__(mask_uri_credentials(str(message)))


def asset_table(asset_name: str) -> TableRef:
    """The published table of an Asset name: schema = first segment, table = the rest.

    ``finance.contracts_curated`` -> ``"finance"."contracts_curated"``.

    :raises ProducerError: When the name has no dot.
    """
    schema, dot, name = asset_name.partition(".")
    if not dot or not schema or not name:
        raise ProducerError(f"asset name {asset_name!r} is not <domain>.<name>")
    return TableRef(schema, name)


@dataclass
class ProduceRequest:
    """Everything a producer needs.

    :ivar manifest_path: Path of ``manifest.json`` (the project root is its folder's parent).
    :ivar manifest: The whole manifest.
    :ivar dag: The contract's ``dags[]`` entry.
    :ivar run: The run identity.
    :ivar warehouse: The open warehouse.
    :ivar staging: Dataset name -> its staging table for this run.
    """

    manifest_path: str
    manifest: dict[str, Any]
    dag: dict[str, Any]
    run: RunIdentity
    warehouse: Warehouse
    staging: dict[str, TableRef]

    @property
    def runtime(self) -> dict[str, Any]:
        """``dag["runtime"]``."""
        runtime: dict[str, Any] = self.dag["runtime"]
        return runtime

    @property
    def contract_id(self) -> str:
        """The contract id (= dag_id)."""
        return str(self.dag["dag_id"])

    @property
    def domain(self) -> str:
        """The contract's domain."""
        return str(self.runtime["domain"])

    @property
    def datasets(self) -> dict[str, dict[str, Any]]:
        """Dataset name -> its manifest entry, in contract order."""
        return {str(d["name"]): d for d in self.runtime["datasets"]}

    def target(self, dataset: str) -> TableRef:
        """The published table of one of this contract's datasets."""
        return target_table(self.domain, dataset)

    def column_types(self, dataset: str) -> list[tuple[str, str]]:
        """``(column, SQL type)`` of a dataset's contract schema, in the warehouse's dialect."""
        props = self.datasets[dataset]["schema"]["properties"]
        return [(str(p["name"]), sql_type(p, self.warehouse.dialect)) for p in props]


_PRODUCERS: dict[str, str] = {
    "sql": "contract_runtime.producers.sql",
    "python": "contract_runtime.producers.python",
    "command": "contract_runtime.producers.command",
    "dbt": "contract_runtime.producers.dbt",
    "load": "contract_runtime.producers.load",
    "extract": "contract_runtime.producers.extract",
}


def run_producer(request: ProduceRequest) -> dict[str, Any]:
    """Dispatch on ``runtime.producer.type`` and run the producer.

    :returns: The producer's summary (JSON-able, small).
    :raises ProducerError: For an unknown producer type, and whatever the producer raises.
    """
    kind = str(request.runtime.get("producer", {}).get("type"))
    module_name = _PRODUCERS.get(kind)
    if module_name is None:
        raise ProducerError(
            f"producer type {kind!r} of {request.contract_id!r} has no runtime (known: {', '.join(sorted(_PRODUCERS))})"
        )
    produce: Callable[[ProduceRequest], dict[str, Any]] = importlib.import_module(module_name).produce
    return produce(request)
