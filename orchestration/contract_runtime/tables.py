"""Where the runtime keeps its tables.

- target (the published dataset): ``"<domain>"."<dataset>"``; a SQL producer reads its
  upstreams by these names (``billing.invoices_raw``);
- staging: ``"_ca_staging"."<domain>__<dataset>__<run hash>"``; a ``dbt`` producer builds its
  models in a schema of their own per contract and run instead,
  ``"_ca_dbt__<domain>__<contract name>__<run hash>"."<dataset>"`` (dbt names a model's relation
  after the model, in the profile's schema), which also holds the seeds its models read;
- quarantine: ``"_ca_quarantine"."<domain>__<dataset>__<run hash>"``;
- state: ``"_ca_state"."watermarks"``, ``"_ca_state"."publications"`` and ``"_ca_state"."objects"``
  (the source and landing objects of ingestion runs).

The run hash is :func:`contract_runtime.run.run_hash` of Airflow's run id, so every task and
try of one DAG run finds the same staging table and tables of different runs never collide.
Names stay within PostgreSQL's 63-byte identifier limit. Imports only the standard library.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from contract_runtime.sqlutil import TableRef

__all__ = [
    "DBT_STAGING_PREFIX",
    "OBJECTS",
    "PUBLICATIONS",
    "QUARANTINE_SCHEMA",
    "STAGING_SCHEMA",
    "STATE_SCHEMA",
    "WATERMARKS",
    "dbt_staging_schema",
    "quarantine_table",
    "staging_for",
    "staging_table",
    "target_table",
]

STAGING_SCHEMA: str = "_ca_staging"
#: The first part of every dbt staging schema (one schema per contract and run).
DBT_STAGING_PREFIX: str = "_ca_dbt__"
QUARANTINE_SCHEMA: str = "_ca_quarantine"
STATE_SCHEMA: str = "_ca_state"
WATERMARKS: TableRef = TableRef(STATE_SCHEMA, "watermarks")
PUBLICATIONS: TableRef = TableRef(STATE_SCHEMA, "publications")
OBJECTS: TableRef = TableRef(STATE_SCHEMA, "objects")

#: PostgreSQL truncates identifiers to 63 bytes; stay below it.
_MAX_IDENTIFIER_BYTES: int = 63


def target_table(domain: str, dataset: str) -> TableRef:
    """The published table of a dataset: schema = domain, table = dataset name."""
    return TableRef(domain, dataset)


def _run_scoped_name(domain: str, dataset: str, run_hash: str) -> str:
    base = f"{domain}__{dataset}"
    name = f"{base}__{run_hash}"
    if len(name.encode("utf-8")) <= _MAX_IDENTIFIER_BYTES:
        return name
    digest = hashlib.sha256(base.encode("utf-8")).hexdigest()[:8]
    keep = _MAX_IDENTIFIER_BYTES - len(run_hash) - len(digest) - 4
    return f"{base.encode('utf-8')[:keep].decode('utf-8', 'ignore')}_{digest}__{run_hash}"


def staging_table(domain: str, dataset: str, run_hash: str) -> TableRef:
    """The staging table of a dataset for one DAG run.

    :param domain: The contract's domain.
    :param dataset: The dataset name.
    :param run_hash: :func:`contract_runtime.run.run_hash` of the run id.
    """
    return TableRef(STAGING_SCHEMA, _run_scoped_name(domain, dataset, run_hash))


def quarantine_table(domain: str, dataset: str, run_hash: str) -> TableRef:
    """The quarantine table of a dataset for one DAG run (same naming as staging)."""
    return TableRef(QUARANTINE_SCHEMA, _run_scoped_name(domain, dataset, run_hash))


def dbt_staging_schema(contract_id: str, run_hash: str) -> str:
    """The schema a ``dbt`` producer builds one contract's models (and their seeds) in for one run.

    :param contract_id: ``<domain>.<name>``.
    :param run_hash: :func:`contract_runtime.run.run_hash` of the run id.
    :returns: ``_ca_dbt__<domain>__<name>__<run hash>``, within PostgreSQL's identifier limit.
    """
    domain, _, name = contract_id.partition(".")
    scoped = _run_scoped_name(domain, name, run_hash)
    if len((DBT_STAGING_PREFIX + scoped).encode("utf-8")) <= _MAX_IDENTIFIER_BYTES:
        return DBT_STAGING_PREFIX + scoped
    digest = hashlib.sha256(contract_id.encode("utf-8")).hexdigest()[:12]
    return f"{DBT_STAGING_PREFIX}{digest}__{run_hash}"


def staging_for(contract_id: str, runtime: Mapping[str, Any], dataset: str, run_hash: str) -> TableRef:
    """The staging table of one dataset of a contract for one run, whatever its producer.

    :param contract_id: The contract id (dag_id).
    :param runtime: The contract's manifest ``runtime`` section (``domain``, ``producer.type``).
    :param dataset: The dataset name.
    :param run_hash: :func:`contract_runtime.run.run_hash` of the run id.
    """
    if (runtime.get("producer") or {}).get("type") == "dbt":
        return TableRef(dbt_staging_schema(contract_id, run_hash), dataset)
    return staging_table(str(runtime["domain"]), dataset, run_hash)
