"""Publishing and quarantining staging tables (DESIGN §5.2, §5.3).

:func:`publish_datasets` swaps every dataset's staging table into its target in ONE transaction,
together with the watermark advance, the publication record and (ingestion) the objects the run
read turning ``loaded``. :func:`quarantine_datasets`
moves staging tables to ``_ca_quarantine`` and leaves the targets alone.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from contract_runtime.partitions import partition_of
from contract_runtime.run import RunIdentity
from contract_runtime.sqlutil import TableRef
from contract_runtime.state import (
    ensure_state_tables,
    get_publication,
    mark_objects,
    max_as_text,
    record_publication,
    set_watermark,
)
from contract_runtime.tables import quarantine_table, staging_for, target_table
from contract_runtime.warehouse import Warehouse

__all__ = ["PublishError", "publish_datasets", "quarantine_datasets"]

log = logging.getLogger(__name__)


class PublishError(Exception):
    """Publishing is not allowed (no audit verdict, or a blocked dataset)."""


def _columns(wh: Warehouse, table: TableRef) -> list[dict[str, str]]:
    return [{"name": c.name, "type": c.type} for c in wh.columns(table)]


def publish_datasets(
    wh: Warehouse,
    dag: Mapping[str, Any],
    run: RunIdentity,
    verdicts: Mapping[str, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Swap all staging tables of a contract into their targets, in one transaction.

    :param dag: The contract's manifest ``dags[]`` entry.
    :param run: The run identity (its run hash names the staging tables).
    :param verdicts: Dataset name -> the audit summary of that dataset
        (:meth:`~contract_runtime.quality.DatasetVerdict.summary`): ``status`` and ``failed_rules``.
    :returns: One output per dataset, in contract order: ``{"dataset", "asset", "table"
        ("schema.table"), "row_count", "columns" ([{"name", "type"}]), "quality_status"
        ("passed"|"degraded"), "quarantined": False, "failed_rules": [names]}``.
    A partitioned contract's run (``runtime.partitioning``) replaces only the partition of its
    ``run.partition_key`` in each target (:meth:`Warehouse.replace_partitions`), and each output
    gains ``"partition"`` (:meth:`Partition.facet`); ``row_count`` is then the partition's rows.

    :raises PublishError: When a dataset has no verdict or its verdict is ``blocked``.
    :raises WarehouseError: When a staging table is missing and the run has not published yet.
    """
    runtime = dag["runtime"]
    contract_id = str(dag["dag_id"])
    domain = str(runtime["domain"])
    wm_column = (runtime.get("incremental") or {}).get("watermark")
    plan: list[tuple[dict[str, Any], TableRef, TableRef, Mapping[str, Any]]] = []
    for ds in runtime["datasets"]:
        name = str(ds["name"])
        verdict = verdicts.get(name)
        if verdict is None:
            raise PublishError(f"{contract_id}: no audit verdict for dataset {name!r}; nothing published")
        if verdict.get("status") not in ("passed", "degraded"):
            raise PublishError(f"{contract_id}: dataset {name!r} is {verdict.get('status')!r}; nothing published")
        plan.append((ds, staging_for(contract_id, runtime, name, run.run_hash), target_table(domain, name), verdict))

    ensure_state_tables(wh)
    done = [get_publication(wh, contract_id, str(ds["name"]), run.run_id) for ds, *_ in plan]
    if all(d is not None for d in done):
        log.info("%s: run %s already published (a publish retry); not swapping again", contract_id, run.run_id)
        return [
            _output(ds, target, int(d["row_count"]), _columns(wh, target), verdict)  # type: ignore[index]
            for (ds, _, target, verdict), d in zip(plan, done, strict=True)
        ]

    outputs: list[dict[str, Any]] = []
    watermarks: list[tuple[str, str | None]] = []
    for ds, staging, target, verdict in plan:
        if not wh.table_exists(staging):
            continue  # swap() reports every missing staging table
        outputs.append(_output(ds, target, wh.row_count(staging), _columns(wh, staging), verdict))
        if wm_column:
            watermarks.append((str(ds["name"]), max_as_text(wh, staging.sql, str(wm_column))))

    def record(tx: Warehouse) -> None:
        for out in outputs:
            record_publication(tx, contract_id, out["dataset"], run.run_id, out["row_count"], out["quality_status"])
            # the objects an ingestion run read count as loaded only once their rows are published
            mark_objects(tx, contract_id, out["dataset"], run.run_id, "loaded")
        for name, value in watermarks:
            set_watermark(tx, contract_id, name, str(wm_column), value, run.run_id)

    partition = partition_of(dag, run.partition_key)
    pairs = [(staging, target) for _, staging, target, _ in plan]
    if partition is None:
        wh.swap(pairs, before_commit=record)
    else:
        # A partitioned run replaces exactly its partition (issue 35): other keys stay as published.
        wh.replace_partitions(pairs, partition.column, partition.start, partition.end, before_commit=record)
        for out in outputs:
            out["partition"] = partition.facet()
    for out in outputs:
        log.info(
            "published %s -> %s: %s rows, %s%s",
            out["asset"],
            out["table"],
            out["row_count"],
            out["quality_status"],
            f" (failed: {', '.join(out['failed_rules'])})" if out["failed_rules"] else "",
        )
    for name, value in watermarks:
        log.info("watermark %s.%s advanced to %s", contract_id, name, value)
    return outputs


def _output(
    ds: Mapping[str, Any], target: TableRef, row_count: int, columns: list[dict[str, str]], verdict: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "dataset": str(ds["name"]),
        "asset": str(ds["asset"]),
        "table": target.dotted,
        "row_count": int(row_count),
        "columns": columns,
        "quality_status": str(verdict["status"]),
        "quarantined": False,
        "failed_rules": list(verdict.get("failed_rules", [])),
        **({"dbt_tests": dict(verdict["dbt_tests"])} if verdict.get("dbt_tests") else {}),
    }


def quarantine_datasets(wh: Warehouse, dag: Mapping[str, Any], run: RunIdentity) -> list[dict[str, Any]]:
    """Move every existing staging table of the run to ``_ca_quarantine`` (targets untouched).

    :returns: ``[{"dataset", "asset", "table" (the quarantine "schema.table"), "row_count",
        "quarantined": True}]``.
    """
    runtime = dag["runtime"]
    domain = str(runtime["domain"])
    moved: list[dict[str, Any]] = []
    with wh.transaction():
        for ds in runtime["datasets"]:
            name = str(ds["name"])
            staging = staging_for(str(dag["dag_id"]), runtime, name, run.run_hash)
            if not wh.table_exists(staging):
                continue
            dest = quarantine_table(domain, name, run.run_hash)
            rows = wh.row_count(staging)
            wh.move_table(staging, dest)
            moved.append(
                {
                    "dataset": name,
                    "asset": str(ds["asset"]),
                    "table": dest.dotted,
                    "row_count": rows,
                    "quarantined": True,
                }
            )
    for m in moved:
        log.warning("quarantined %s: %s rows in %s", m["asset"], m["row_count"], m["table"])
    return moved
