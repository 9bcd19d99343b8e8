"""The OpenLineage emit hook of contract-assets (DESIGN §6).

The runtime's tasks call four functions; each builds one RunEvent from the compiled manifest and
the run, and sends it through the openlineage-python client (transport from the client's own
configuration). None of them ever raises; together they block a task try for at most one lineage
budget (``CONTRACT_ASSETS_LINEAGE_TIMEOUT``, see :mod:`contract_runtime.lineage.transport`):

* :func:`emit_start` — ``produce`` starts (first try): START.
* :func:`emit_assertions` — ``audit`` evaluated a dataset's rules: OTHER, with
  ``dataQualityAssertions`` in the tested dataset's ``inputFacets``; before the terminal event.
* :func:`emit_complete` — ``publish`` succeeded: COMPLETE, with the published outputs.
* :func:`emit_fail` — the final failure (not a retry) of any task: FAIL, with ``errorMessage``.
* :func:`emit_freshness_start` / :func:`emit_freshness_end` — the freshness monitor's run (job:
  the monitor's dag_id): START when its task starts, then COMPLETE (or FAIL) with every monitored
  asset as an input carrying its ``freshness`` assertion.
* :func:`emit_skip` — ``produce`` skipped the run (``require: passed`` not met): ABORT, with
  ``contractAssets_skip``.

All events of one DAG run share one runId, our contract job's run (:func:`contract_run_id`,
derived from the Airflow OpenLineage provider's DAG-run id and the contract id), whose ``parent``
and ``root`` facets name the provider's DAG run (ADR 0010). The job is ``<lineage
namespace>.<domain>`` / ``<contract id>``.

Import cost: this package imports the openlineage client (about 0.5 s cold), so the operators
import it inside ``execute``, never at DAG-parse time. The first event of a process may also import
the Airflow OpenLineage provider (for the runId); that happens inside the bounded emit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from contract_runtime.lineage.events import (
    assertions_event,
    complete_event,
    fail_event,
    freshness_end_event,
    freshness_start_event,
    job_name,
    job_namespace,
    skip_event,
    start_event,
)
from contract_runtime.lineage.identity import (
    duckdb_warehouse_namespace,
    sql_warehouse_namespace,
)
from contract_runtime.lineage.runid import (
    RunIdentityLike,
    contract_run_id,
    dag_run_id,
    provider_namespace,
)
from contract_runtime.lineage.transport import lineage_disabled, log, one_line, send

__all__ = [
    "child_parent",
    "contract_run_id",
    "dag_run_id",
    "duckdb_warehouse_namespace",
    "emit_assertions",
    "emit_complete",
    "emit_fail",
    "emit_freshness_end",
    "emit_freshness_start",
    "emit_skip",
    "emit_start",
    "sql_warehouse_namespace",
]


def budget_key(run: object) -> tuple[object, ...] | None:
    """The task try whose lineage budget an event draws on (see ``transport.send``)."""
    try:
        return tuple(
            getattr(run, name)
            for name in ("dag_id", "run_id", "task_id", "try_number", "map_index")
        )
    except AttributeError:
        return None


def _emit(
    kind: str, dag: Mapping[str, Any], build: Callable[[], Any], run: object = None
) -> None:
    """Build and send one event (bounded by the task's budget, never raising) unless lineage is
    switched off."""
    if lineage_disabled():
        return
    try:
        dag_id = str(dag.get("dag_id", "?"))
    except Exception:  # noqa: BLE001 - not a mapping: the build will fail and say so
        dag_id = "?"
    try:
        send(kind, dag_id, build, budget_key(run))
    except Exception as error:  # noqa: BLE001 - e.g. no thread can start: never the task's problem
        log.warning(
            "lineage: %s event of %s not sent: %s", kind, dag_id, one_line(error)
        )


def emit_start(manifest: dict[str, Any], dag: dict[str, Any], run: RunIdentityLike) -> None:
    """Send START for the DAG run: called when ``produce`` starts its first try.

    :param manifest: The compiled manifest (``generated/manifest.json``).
    :param dag: Its ``dags[]`` entry for this contract.
    :param run: The run identity (``contract_runtime.run.RunIdentity``).
    """
    _emit("START", dag, lambda: start_event(manifest, dag, run), run)


def emit_assertions(
    manifest: dict[str, Any], dag: dict[str, Any], run: RunIdentityLike, dataset: dict[str, Any], results: list[dict[str, Any]]
) -> None:
    """Send OTHER with the assertion results of one dataset, before the terminal event.

    :param dataset: The tested dataset (an entry of ``dag["runtime"]["datasets"]``); merge
        ``table`` / ``warehouse_namespace`` / ``warehouse_database`` into it to identify it like
        the COMPLETE event's output.
    :param results: ``[{name, metric, column, severity, operator, expected, actual, success,
        type}]``, one per rule.
    """
    _emit("OTHER", dag, lambda: assertions_event(manifest, dag, run, dataset, results), run)


def emit_complete(
    manifest: dict[str, Any], dag: dict[str, Any], run: RunIdentityLike, outputs: list[dict[str, Any]]
) -> None:
    """Send COMPLETE from ``publish``.

    :param outputs: ``[{dataset, asset, table, row_count, columns: [{name, type}],
        quality_status, quarantined}]``, optionally with ``warehouse_namespace`` (default the
        lineage namespace; see :func:`sql_warehouse_namespace`, :func:`duckdb_warehouse_namespace`)
        and ``warehouse_database`` (prefixed to ``table`` in the dataset name).
    """
    _emit("COMPLETE", dag, lambda: complete_event(manifest, dag, run, outputs), run)


def emit_fail(
    manifest: dict[str, Any], dag: dict[str, Any], run: RunIdentityLike, error: BaseException, task_id: str
) -> None:
    """Send FAIL on the final failure of a task (the caller does not call it for a retry).

    :param error: The exception that failed the task; its message (one line) and traceback go
        into ``errorMessage`` with credentials masked.
    :param task_id: The task that failed.
    """
    _emit("FAIL", dag, lambda: fail_event(manifest, dag, run, error, task_id), run)


def emit_freshness_start(manifest: dict[str, Any], monitor: dict[str, Any], run: RunIdentityLike) -> None:
    """Send START of the freshness monitor's run (its task's first try, before evaluating).

    :param monitor: The manifest's ``freshness_monitor`` section.
    """
    _emit("START", monitor, lambda: freshness_start_event(manifest, monitor, run), run)


def emit_freshness_end(
    manifest: dict[str, Any],
    monitor: dict[str, Any],
    run: RunIdentityLike,
    entries: list[dict[str, Any]],
    warehouse: dict[str, Any],
    error: BaseException | None = None,
) -> None:
    """Send the terminal event of the freshness monitor's run: COMPLETE with every evaluated
    asset's ``freshness`` assertion, or FAIL (``errorMessage``, and the assertions made) when the
    monitor task fails for good.

    :param entries: The evaluations (``contract_runtime.freshness.evaluate_assets``).
    :param warehouse: ``warehouse_namespace`` / ``warehouse_database`` naming the warehouse.
    :param error: What failed the task, or None.
    """
    kind = "COMPLETE" if error is None else "FAIL"
    _emit(kind, monitor, lambda: freshness_end_event(manifest, monitor, run, entries, warehouse, error), run)


def emit_skip(
    manifest: dict[str, Any], dag: dict[str, Any], run: RunIdentityLike, reason: str, unmet: list[dict[str, Any]]
) -> None:
    """Send ABORT for a run ``produce`` skipped because ``require: passed`` was not met.

    :param reason: One line (``contract_runtime.gate.describe``).
    :param unmet: ``contract_runtime.gate.unmet_requirements``.
    """
    _emit("ABORT", dag, lambda: skip_event(manifest, dag, run, reason, unmet), run)


def child_parent(manifest: dict[str, Any], dag: dict[str, Any], run: RunIdentityLike) -> dict[str, str] | None:
    """The contract run as the parent of another integration's events (dbt-ol), or None when
    lineage is switched off.

    :returns: ``{"namespace", "name", "run_id"}`` of the contract run (the job and runId of the
        events this package sends) and ``{"root_namespace", "root_name", "root_run_id"}`` of its
        root, the Airflow DAG run as the provider names it (the ``root`` of the contract run's own
        ``parent`` facet), so a backend stitches DAG run -> contract run -> dbt run -> model.
    """
    if lineage_disabled():
        return None
    return {
        "namespace": job_namespace(manifest, dag),
        "name": job_name(dag),
        "run_id": contract_run_id(run, str(dag["dag_id"])),
        "root_namespace": provider_namespace(),
        "root_name": str(dag["dag_id"]),
        "root_run_id": dag_run_id(run),
    }
