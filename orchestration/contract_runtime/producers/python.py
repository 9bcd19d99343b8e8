"""The ``python`` producer: import ``module:function`` at task time and call it with a context.

The entrypoint's package must be importable by the worker: install it, or put its folder on
``PYTHONPATH`` in the environment that runs Airflow (the bundled example's jobs live in
``orchestration/jobs``; ``scripts/demo.sh`` and the end-to-end test export
``PYTHONPATH=<project>/orchestration/jobs``). The runtime never edits ``sys.path``.

The function receives a :class:`ProducerContext` and must :meth:`~ProducerContext.write` every
dataset of the contract. Its return value is ignored.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from contract_runtime.partitions import Partition, partition_of
from contract_runtime.producers import ProduceRequest, ProducerError, asset_table
from contract_runtime.run import RunIdentity
from contract_runtime.sqlutil import TableRef
from contract_runtime.warehouse import Warehouse

__all__ = ["ProducerContext", "load_entrypoint", "produce"]

log = logging.getLogger(__name__)


def load_entrypoint(entrypoint: str) -> Callable[..., Any]:
    """Import ``package.module:function``.

    :raises ProducerError: When the string is malformed, the module cannot be imported (the
        message says how to put it on the import path) or the attribute is not callable.
    """
    module_name, colon, func_name = entrypoint.partition(":")
    if not colon or not module_name or not func_name:
        raise ProducerError(f"entrypoint {entrypoint!r} is not 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ProducerError(
            f"entrypoint module {module_name!r} cannot be imported ({exc}); python producers' code must be "
            "on the worker's import path: install the package, or set PYTHONPATH (for the bundled example: "
            "PYTHONPATH=<project>/orchestration/jobs)"
        ) from exc
    func: Any = module
    for part in func_name.split("."):
        func = getattr(func, part, None)
        if func is None:
            raise ProducerError(f"entrypoint {entrypoint!r}: {module_name} has no attribute {func_name!r}")
    if not callable(func):
        raise ProducerError(f"entrypoint {entrypoint!r} is not callable")
    return cast("Callable[..., Any]", func)


def _records(data: Any) -> Iterable[Any] | None:
    """Rows out of a dataframe-like object (pandas ``to_dict``, pyarrow ``to_pylist``), else None."""
    if hasattr(data, "to_pylist") and callable(data.to_pylist):
        return cast("Iterable[Any]", data.to_pylist())
    if hasattr(data, "to_dict") and hasattr(data, "columns") and not isinstance(data, Mapping):
        return cast("Iterable[Any]", data.to_dict(orient="records"))
    return None


class ProducerContext:
    """What a python producer receives.

    :ivar warehouse: The open :class:`~contract_runtime.warehouse.Warehouse` (``fetch``,
        ``scalar``, ``execute``, ``table_exists``, ...).
    :ivar params: ``producer.params`` from the contract (a dict; do not mutate).
    :ivar run: The :class:`~contract_runtime.run.RunIdentity`.
    :ivar contract_id: The contract id.
    :ivar datasets: Dataset name -> manifest entry (schema, quality, asset).
    :ivar staging: Dataset name -> staging :class:`~contract_runtime.sqlutil.TableRef`.
    :ivar log: A logger for the job.
    :ivar partition: The run's :class:`~contract_runtime.partitions.Partition` (``key``,
        ``start`` and ``end``, timezone-aware UTC, [start, end); ``column``) for a partitioned
        contract, else None. Write only that partition's rows: a row outside it blocks publish.
    """

    def __init__(self, request: ProduceRequest) -> None:
        self._request = request
        self.warehouse: Warehouse = request.warehouse
        self.params: dict[str, Any] = dict(request.runtime["producer"].get("params") or {})
        self.run: RunIdentity = request.run
        self.contract_id: str = request.contract_id
        self.datasets: dict[str, dict[str, Any]] = request.datasets
        self.staging: dict[str, TableRef] = dict(request.staging)
        self.log: logging.Logger = logging.getLogger(f"contract_runtime.job.{request.contract_id}")
        self.written: dict[str, int] = {}
        self.partition: Partition | None = partition_of(request.dag, request.run.partition_key)

    def table(self, asset_name: str) -> TableRef:
        """The published table of an Asset (an upstream, or one of this contract's own).

        :param asset_name: E.g. ``"finance.contracts_curated"``.
        :returns: Its :class:`TableRef`; use ``.sql`` in queries.
        """
        return asset_table(asset_name)

    def target(self, dataset: str) -> TableRef:
        """The currently published table of one of this contract's datasets (may not exist yet)."""
        self._check(dataset)
        return self._request.target(dataset)

    def columns(self, dataset: str) -> list[str]:
        """The contract's column names of a dataset, in schema order."""
        self._check(dataset)
        return [name for name, _ in self._request.column_types(dataset)]

    def _check(self, dataset: str) -> None:
        if dataset not in self.datasets:
            raise ProducerError(f"{self.contract_id} has no dataset {dataset!r} (datasets: {', '.join(self.datasets)})")

    def write(self, dataset: str, data: str | Iterable[Mapping[str, Any] | Sequence[Any]] | Any) -> int:
        """Replace the staging table of ``dataset`` with ``data``.

        :param dataset: One of the contract's dataset names.
        :param data: One of

            - ``str``: a SQL query; the staging table becomes ``CREATE TABLE ... AS <query>``;
            - rows: an iterable of mappings (keys = column names; missing keys are NULL, unknown
              keys are an error) or of sequences in schema column order;
            - a dataframe-like object (``to_dict(orient="records")`` or ``to_pylist()``).

            Rows are written into a table typed by the contract schema (``physicalType`` or
            ``logicalType``).
        :returns: The number of rows in the staging table.
        :raises ProducerError: For an unknown dataset, unknown keys, or a row of wrong length.
        """
        self._check(dataset)
        staging = self.staging[dataset]
        wh = self.warehouse
        if isinstance(data, str):
            wh.create_table_as(staging, data)
        else:
            records = _records(data)
            rows_in: Iterable[Any] = records if records is not None else data
            types = self._request.column_types(dataset)
            names = [n for n, _ in types]
            known = set(names)

            def normalised() -> Iterable[Sequence[Any]]:
                for i, row in enumerate(rows_in):
                    if isinstance(row, Mapping):
                        unknown = set(row) - known
                        if unknown:
                            raise ProducerError(f"{dataset} row {i}: columns not in the contract: {sorted(unknown)}")
                        yield tuple(row.get(n) for n in names)
                    else:
                        values = tuple(row)
                        if len(values) != len(names):
                            raise ProducerError(
                                f"{dataset} row {i}: {len(values)} values for {len(names)} columns {names}"
                            )
                        yield values

            with wh.transaction():
                wh.create_table(staging, types)
                wh.insert_rows(staging, names, normalised())
        count = wh.row_count(staging)
        self.written[dataset] = count
        self.log.info("wrote %s rows to %s (staging of %s)", count, staging.dotted, dataset)
        return count


def produce(request: ProduceRequest) -> dict[str, Any]:
    """Import the entrypoint, call it with a :class:`ProducerContext`.

    :returns: ``{"entrypoint": ..., "rows": {dataset: count}}``.
    :raises ProducerError: When the entrypoint cannot be loaded, or it wrote no dataset at all.
    """
    entrypoint = str(request.runtime["producer"].get("entrypoint", ""))
    func = load_entrypoint(entrypoint)
    ctx = ProducerContext(request)
    log.info("python producer %s: %s", request.contract_id, entrypoint)
    func(ctx)
    return {"entrypoint": entrypoint, "rows": dict(ctx.written)}
