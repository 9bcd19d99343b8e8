"""The ``dbt`` producer: build exactly the contract's models into the run's dbt staging schema.

``runtime.producer`` (compiled from the contract's ``producer`` and the project's committed
``manifest.json``, ADR 0012)::

    {"type": "dbt", "project": "dbt/finance", "select": "invoices_curated",
     "manifest": "dbt/finance/manifest.json",
     "models": [{"name", "unique_id", "path"}],   # the contract's datasets, one model each
     "seeds": ["fiscal_calendar_seed"],            # seeds those models read (built with them)
     "upstream_models": {unique_id: {"schema", "name"}},  # refs to other contracts' models
     "params": {...}}

``produce`` drops the run's dbt staging schema (a retry starts clean), runs ``dbt seed`` for the
seeds (when any), then ``dbt run --select <the models>`` with the profile's schema set to that
staging schema and ``ref``s to upstream models deferred to their published tables
(:mod:`contract_runtime.dbtrun`). A model that fails (a SQL error) fails the task without retry,
with dbt's message and the model's path; a dbt process that fails without results (it could not
start or connect) is retried by Airflow.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from contract_runtime.dbtrun import DbtInvocation, DbtSetupError, dbt_executable, invoke
from contract_runtime.manifest import project_root
from contract_runtime.partitions import partition_of
from contract_runtime.producers import ProduceRequest, ProducerError
from contract_runtime.sqlutil import TableRef, quote_ident
from contract_runtime.tables import dbt_staging_schema

__all__ = [
    "DbtContext",
    "dbt_context",
    "drop_staging_schema",
    "failed_nodes",
    "has_dbt_ol",
    "lineage_parent",
    "partition_vars",
    "produce",
    "run_dbt",
]

log = logging.getLogger(__name__)


class DbtContext:
    """Where a contract's dbt project is and what a run of it builds (from the manifest).

    :ivar root: The contract project's root.
    :ivar project_dir: The dbt project folder.
    :ivar project_manifest: The committed dbt ``manifest.json``.
    :ivar models: Model names, in contract order.
    :ivar seeds: Seed names the models read.
    :ivar upstream_models: Model unique id -> published ``{"schema", "name"}``.
    :ivar schema: The run's dbt staging schema.
    """

    def __init__(self, manifest_path: str, contract_id: str, runtime: dict[str, Any], run_hash: str) -> None:
        producer = runtime.get("producer") or {}
        self.root = project_root(manifest_path)
        project = producer.get("project")
        if not isinstance(project, str) or not project:
            raise ProducerError(f"{contract_id}: producer.project is missing in the manifest")
        self.project_dir = self.root / project
        self.project_manifest = self.root / str(producer.get("manifest") or Path(project, "manifest.json").as_posix())
        models = producer.get("models")
        if not isinstance(models, list) or not models:
            raise ProducerError(
                f"{contract_id}: the manifest lists no dbt models for the producer (recompile the contracts)"
            )
        self.models: list[str] = [str(m["name"]) for m in models]
        self.model_paths: dict[str, str] = {str(m["name"]): str(m.get("path", "")) for m in models}
        self.seeds: list[str] = [str(s) for s in producer.get("seeds") or []]
        self.upstream_models: dict[str, dict[str, str]] = {
            str(k): {"schema": str(v["schema"]), "name": str(v["name"])}
            for k, v in (producer.get("upstream_models") or {}).items()
        }
        self.schema = dbt_staging_schema(contract_id, run_hash)
        self.contract_id = contract_id


def dbt_context(manifest_path: str, dag: dict[str, Any], run_hash: str) -> DbtContext:
    """The :class:`DbtContext` of a contract's manifest entry."""
    return DbtContext(manifest_path, str(dag["dag_id"]), dag["runtime"], run_hash)


def drop_staging_schema(wh: Any, schema: str) -> None:
    """Drop the run's dbt staging schema and everything left in it (seeds, unpublished models)."""
    wh.execute(f"drop schema if exists {quote_ident(schema)} cascade")


def failed_nodes(invocation: DbtInvocation, project_dir: Path) -> list[str]:
    """One line per node that errored: ``<project>/<path> (<name>): <dbt's message>``."""
    lines = []
    for result in invocation.results:
        if result.status in ("error", "fail"):
            where = (project_dir / result.path).as_posix() if result.path else result.unique_id
            lines.append(f"{where} ({result.name}): {result.message or result.status}")
    return lines


def lineage_parent(manifest: dict[str, Any], dag: dict[str, Any], run: Any) -> dict[str, str] | None:
    """The contract run that dbt-ol's events nest under, or None when lineage is off or broken.

    Never raises: lineage never changes a task's outcome.
    """
    try:
        from contract_runtime import lineage

        return lineage.child_parent(manifest, dag, run)
    except Exception as exc:  # noqa: BLE001 - lineage must never change the task outcome
        log.warning("lineage: dbt runs without OpenLineage (%s: %s)", type(exc).__name__, exc)
        return None


def run_dbt(
    manifest: dict[str, Any], dag: dict[str, Any], run: Any, wh: Any, context: DbtContext, command: str,
    select: list[str], extra_args: tuple[str, ...] = (),
) -> DbtInvocation:
    """Run one dbt command for the contract, through dbt-ol when lineage is on.

    :raises DbtSetupError: dbt cannot be run. :raises DbtFailed: dbt failed without results.
    """
    parent = lineage_parent(manifest, dag, run)
    lineage = parent is not None and has_dbt_ol(context.root)
    extra_args = (*extra_args, *partition_vars(dag, getattr(run, "partition_key", None)))
    return invoke(
        command,
        select,
        project_dir=context.project_dir,
        project_root=context.root,
        wh=wh,
        schema=context.schema,
        project_manifest=context.project_manifest,
        upstream_models=context.upstream_models,
        extra_args=extra_args,
        lineage=lineage,
        lineage_parent=parent,
    )


def partition_vars(dag: dict[str, Any], key: str | None) -> tuple[str, ...]:
    """``--vars`` for a partitioned contract's dbt commands (issue 35; docs/contract-format.md
    "Partitions"): ``partition_key`` (``2026-04-15``), ``partition_start`` and ``partition_end``
    (UTC, ``YYYY-MM-DD HH:MM:SS``, a text every supported adapter casts to a timestamp), read in a
    model as ``{{ var("partition_start") }}``. Empty for an unpartitioned contract.

    :raises contract_runtime.partitions.PartitionKeyError: A partitioned run without a valid key
        (produce has refused it before dbt starts).
    """
    partition = partition_of(dag, key)
    if partition is None:
        return ()
    stamp = "%Y-%m-%d %H:%M:%S"
    values = {
        "partition_key": partition.key,
        "partition_start": partition.start.strftime(stamp),
        "partition_end": partition.end.strftime(stamp),
    }
    return ("--vars", json.dumps(values, sort_keys=True))


def has_dbt_ol(root: Path) -> bool:
    """True when ``dbt-ol`` (openlineage-dbt) is installed beside dbt."""
    try:
        dbt_executable(root, "dbt-ol")
    except DbtSetupError:
        log.warning("lineage: dbt-ol (openlineage-dbt) is not installed; dbt runs without OpenLineage")
        return False
    return True


def _run(request: ProduceRequest, context: DbtContext, command: str, select: list[str]) -> DbtInvocation:
    try:
        invocation = run_dbt(request.manifest, request.dag, request.run, request.warehouse, context, command, select)
    except DbtSetupError as exc:
        raise ProducerError(f"{request.contract_id}: {exc}") from exc
    failed = failed_nodes(invocation, context.project_dir)
    if failed:
        raise ProducerError(f"{request.contract_id}: dbt {command} failed: " + "; ".join(failed))
    return invocation


def produce(request: ProduceRequest) -> dict[str, Any]:
    """Build the contract's models (and their seeds) into the run's dbt staging schema.

    :returns: ``{"dbt": {"schema", "models": {name: status}, "seeds": [...], "elapsed": s}}``.
    :raises ProducerError: A model or seed failed (dbt's message and the file), or dbt cannot be
        run here. :class:`~contract_runtime.dbtrun.DbtFailed` (retryable) when dbt failed
        without results.
    """
    context = dbt_context(request.manifest_path, request.dag, request.run.run_hash)
    drop_staging_schema(request.warehouse, context.schema)
    request.warehouse.create_schema(context.schema)
    elapsed = 0.0
    if context.seeds:
        elapsed += _run(request, context, "seed", context.seeds).elapsed
    invocation = _run(request, context, "run", context.models)
    built = {r.name: r.status for r in invocation.results if r.resource_type == "model"}
    missing = [m for m in context.models if built.get(m) != "success"]
    if missing:
        raise ProducerError(
            f"{request.contract_id}: dbt run built no model {missing} (selected {context.models}); "
            f"dbt said:\n{invocation.output}"
        )
    elsewhere = [
        f"{r.name} -> {'.'.join(r.relation)}"
        for r in invocation.results
        if r.resource_type == "model" and r.relation and r.relation != (context.schema, r.name)
    ]
    if elsewhere:
        raise ProducerError(
            f"{request.contract_id}: dbt built models outside the staging schema {context.schema!r} "
            f"({', '.join(elsewhere)}); remove their schema/alias config or a generate_schema_name "
            "override that ignores target.schema"
        )
    for name in context.models:
        # a model materialized as a view (dbt's default) is published as the table of its rows
        if request.warehouse.materialize_view(TableRef(context.schema, name)):
            log.info("dbt producer %s: model %s was built as a view: now a table of its rows", request.contract_id, name)
    elapsed += invocation.elapsed
    log.info("dbt producer %s: built %s in %s (%.2f s of dbt)", request.contract_id, context.models, context.schema, elapsed)
    return {"dbt": {"schema": context.schema, "models": built, "seeds": context.seeds, "elapsed": round(elapsed, 3)}}


class DbtTestError(Exception):
    """A dbt test could not run (it errored, e.g. its SQL does not compile): the audit is broken,
    and no retry helps."""


#: dbt test severities -> the contract's quality severities.
_SEVERITY = {"error": "error", "warn": "warning"}


def test_result(result: Any) -> dict[str, Any]:
    """One dbt test result as a quality result (what the audit, the Asset event and the
    ``dataQualityAssertions`` facet read).

    :returns: ``{"name": the test's name, "metric": None, "column", "severity" ("error" or
        "warning"), "operator": "mustBe", "expected": 0, "actual": failing rows, "success":
        status == "pass", "type": "dbt", "test": the generic test's name or "singular", "unit":
        "rows", "path", "status": dbt's status}``.
    """
    return {
        "name": result.name,
        "metric": None,
        "column": result.column,
        "severity": _SEVERITY.get(str(result.severity), "error"),
        "operator": "mustBe",
        "expected": 0,
        "actual": result.failures,
        "success": result.status == "pass",
        "type": "dbt",
        "test": result.test,
        "unit": "rows",
        "path": result.path,
        "status": result.status,
    }


def audit_tests(
    manifest_path: str, manifest: dict[str, Any], dag: dict[str, Any], run: Any, wh: Any
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, int]]]:
    """Run the contract's models' dbt tests against the run's staging relations.

    ``dbt test --select <models> --indirect-selection buildable``: every test of those models
    (also one that reads an upstream model, such as ``relationships``: that ``ref`` is deferred
    to the published table), never another model's test. dbt runs once; a failing test is not
    retried (the audit fails the task without retry when a blocking test failed).

    :returns: ``(results, summary)``: dataset name -> its test results (:func:`test_result`, by
        test name), and
        dataset name -> ``{"total", "passed", "failed", "warned"}``.
    :raises DbtTestError: When a test errored (the message names it and its file).
    :raises ProducerError: When dbt cannot be run here. ``DbtFailed`` (retryable) when dbt failed
        without results.
    """
    context = dbt_context(manifest_path, dag, run.run_hash)
    try:
        invocation = run_dbt(
            manifest, dag, run, wh, context, "test", context.models, ("--indirect-selection", "buildable")
        )
    except DbtSetupError as exc:
        raise ProducerError(f"{context.contract_id}: {exc}") from exc
    errored = [r for r in invocation.results if r.status == "error"]
    if errored:
        lines = "; ".join(
            f"{(context.project_dir / r.path).as_posix()} ({r.name}): {r.message or 'error'}" for r in errored
        )
        raise DbtTestError(f"{context.contract_id}: dbt tests could not run: {lines}")
    by_model: dict[str, str] = {}
    for model in (dag["runtime"].get("producer") or {}).get("models") or []:
        by_model[str(model["unique_id"])] = str(model["name"])
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in context.models}
    summary: dict[str, dict[str, int]] = {
        name: {"total": 0, "passed": 0, "failed": 0, "warned": 0} for name in context.models
    }
    for result in invocation.results:
        if result.resource_type != "test":
            continue
        dataset = by_model.get(str(result.attached))
        if dataset is None:
            log.warning("dbt test %s belongs to none of %s; ignored", result.name, context.models)
            continue
        entry = test_result(result)
        results[dataset].append(entry)
        counts = summary[dataset]
        counts["total"] += 1
        if entry["success"]:
            counts["passed"] += 1
        elif entry["severity"] == "error":
            counts["failed"] += 1
        else:
            counts["warned"] += 1
        log.info(
            "dbt test %s %-8s %-40s failures=%s (%s)",
            "PASS" if entry["success"] else "FAIL",
            entry["severity"],
            result.name,
            result.failures,
            result.path,
        )
    for entries in results.values():
        # Sort for determinism: dbt's execution order depends on its scheduling, the name does not.
        entries.sort(key=lambda r: str(r["name"]))
    return results, summary
