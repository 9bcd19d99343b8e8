"""Faults on the CeleryExecutor stack (issue 36 item 5; fixture ``celery_stack``, after the corpus
of ``test_live_celery.py``): each a real fault of a real process, never a mock.

* **A worker killed (SIGKILL) in the middle of a publish.** A partitioned contract's publish
  (delete the key's rows, insert the batch, in one transaction) is held inside its transaction by a
  lock the test takes on the target table, the worker that runs it is killed with its whole
  process group, and the lock released. The table still holds the previous batch of the key, whole;
  the scheduler fails the try for its missing heartbeat, the retry runs on the other worker, and
  the table then holds the new batch exactly once (no row twice, no row of the old batch).
* **Redis restarted in the middle of the chain.** A three-contract chain is held while its second
  contract's ``produce`` runs (a lock on the table it reads), the broker is killed (its queues are
  in memory only) and started again on the same port, and the lock released: the chain completes,
  every run succeeded, and the last table holds its rows.
* **The warehouse refusing connections for a while** (``ALTER DATABASE warehouse ALLOW_CONNECTIONS
  false``): the first try of ``produce`` fails with the retryable error that names the contract and
  the Connection (read in the worker's own log), connections are allowed again, and the retry
  publishes.

The stack's scheduler fails a task whose heartbeat stops after ``[scheduler]
task_instance_heartbeat_timeout`` (60 s on the test stack, Airflow's default 300 s; conftest's
``celery_stack``); the contracts retry every 10 s.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagcheck
import pytest
from livestack import LiveStack

CONFIG = """apiVersion: contract-assets/v1
kind: OrchestrationConfig
uri_template: "x-datalake://{layer}/{domain}/{name}"
lineage: {namespace: acme}
defaults: {retries: 2, retry_delay: PT10S, execution_timeout: PT10M, pool: default_pool, warehouse_conn_id: warehouse}
"""

EVENTS = """apiVersion: contract-assets/v1
kind: TransformContract
id: fault.events
version: 1.0.0
status: active
domain: fault
owner: team-fault
producer: {type: sql, path: sql/fault/events.sql}
trigger: {cron: "0 3 * * *", timezone: UTC}
partitioning: {column: event_time, grain: day}
datasets:
  - name: events
    schema:
      version: 1
      properties:
        - {name: event_time, logicalType: timestamp, required: true, primaryKey: true}
        - {name: loaded_at, logicalType: timestamp, required: true}
"""

#: One row per hour of the run's day, stamped with the producing transaction's time (a batch).
EVENTS_SQL = (
    "select g.ts as event_time, now() as loaded_at\n"
    "from generate_series({partition_start}, {partition_end} - interval '1 hour', interval '1 hour') as g(ts)\n"
)

CHAIN = """apiVersion: contract-assets/v1
kind: TransformContract
id: fault.{name}
version: 1.0.0
status: active
domain: fault
owner: team-fault
producer: {{type: sql, path: sql/fault/{name}.sql}}
{trigger}
datasets:
  - name: {name}
    schema: {{version: 1, properties: [{{name: id, logicalType: integer, required: true}}]}}
"""

#: name -> (its trigger, its SQL)
CHAIN_CONTRACTS = {
    "chain_a": ("trigger: manual", "select 1 as id union all select 2 as id union all select 3 as id\n"),
    "chain_b": ("upstreams:\n  - {asset: fault.chain_a}", "select id from fault.chain_a\n"),
    "chain_c": ("upstreams:\n  - {asset: fault.chain_b}", "select id from fault.chain_b\n"),
    "refused": ("trigger: manual", "select 7 as id\n"),
}

DAY = "2026-04-14"
RUN_TIMEOUT_S = 600


def write_project(dest: Path) -> Path:
    """The ``fault`` contracts, compiled with the CLI into ``dest/generated``."""
    (dest / "orchestration" / "airflow" / "sources").mkdir(parents=True)
    (dest / "orchestration" / "airflow" / "sources" / "config.yaml").write_text(CONFIG, encoding="utf-8")
    (dest / "contracts" / "fault").mkdir(parents=True)
    (dest / "sql" / "fault").mkdir(parents=True)
    (dest / "contracts" / "fault" / "events.yaml").write_text(EVENTS, encoding="utf-8")
    (dest / "sql" / "fault" / "events.sql").write_text(EVENTS_SQL, encoding="utf-8")
    for name, (trigger, sql) in CHAIN_CONTRACTS.items():
        (dest / "contracts" / "fault" / f"{name}.yaml").write_text(CHAIN.format(name=name, trigger=trigger), encoding="utf-8")
        (dest / "sql" / "fault" / f"{name}.sql").write_text(sql, encoding="utf-8")
    compiled = dagcheck.run_compile(dest)
    assert compiled.returncode == 0, compiled.describe()
    return dest


@pytest.fixture(scope="module")
def faults(celery_stack: LiveStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveStack]:
    """The fault project in the stack's ``git`` bundle (it replaces the corpus there), every DAG unpaused."""
    project = write_project(tmp_path_factory.mktemp("faults") / "project")
    manifest = json.loads((project / "generated" / "manifest.json").read_text(encoding="utf-8"))
    celery_stack.commit_project(project, "the fault contracts")
    dag_ids = sorted(d["dag_id"] for d in manifest["dags"])
    celery_stack.wait_for_dags(dag_ids, timeout=600)
    for dag_id in dag_ids:
        celery_stack.unpause(dag_id)
    yield celery_stack
    for dag_id in dag_ids:
        celery_stack.unpause(dag_id, paused=True)


class TableLock:
    """``LOCK TABLE ... IN <mode> MODE`` held by a session of the test's own on the stack's
    warehouse, until :meth:`release`: whoever needs a conflicting lock waits inside its own
    statement (and its transaction) meanwhile. ``share`` lets readers through and holds writers
    (``DELETE``, ``INSERT``); ``access exclusive`` holds everyone."""

    def __init__(self, stack: LiveStack, table: str, mode: str) -> None:
        import psycopg2

        assert stack.postgres is not None
        self.con = psycopg2.connect(stack.postgres.uri("warehouse"))
        self.con.autocommit = False
        with self.con.cursor() as cur:
            cur.execute(f"lock table {table} in {mode} mode")

    def release(self) -> None:
        if not self.con.closed:
            self.con.rollback()
            self.con.close()


def _waiting_on_lock(stack: LiveStack, fragment: str) -> bool:
    """True when a warehouse session other than the test's waits on a lock in a statement holding ``fragment``."""
    assert stack.postgres is not None
    out = stack.postgres.psql(
        "warehouse",
        "select count(*) from pg_stat_activity where datname = 'warehouse' and wait_event_type = 'Lock' "
        f"and query ilike '%{fragment}%'",
    )
    return int(out.strip() or 0) > 0


def _task(stack: LiveStack, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
    (ti,) = [t for t in stack.task_instances(dag_id, run_id) if t["task_id"] == task_id]
    return ti


def _run_state(stack: LiveStack, dag_id: str, run_id: str) -> str:
    (run,) = [r for r in stack.dag_runs(dag_id) if r["dag_run_id"] == run_id]
    return str(run["state"])


def _wait_run(stack: LiveStack, dag_id: str, run_id: str, timeout: float = RUN_TIMEOUT_S) -> str:
    state = stack.wait(
        lambda: (s := _run_state(stack, dag_id, run_id)) in ("success", "failed") and s,
        f"{dag_id} run {run_id} finished", timeout, interval=2,
    )
    return str(state)


def _rows(stack: LiveStack, sql: str) -> list[list[str]]:
    assert stack.postgres is not None
    out = stack.postgres.psql("warehouse", sql)
    return [line.split("|") for line in out.strip().splitlines() if line]


def test_a_worker_killed_mid_publish_leaves_the_batch_whole_and_the_retry_publishes_it_once(
    faults: LiveStack, terminal_summary: list[str]
) -> None:
    stack = faults
    first = stack.trigger("fault.events", partition_key=DAY)["dag_run_id"]
    assert _wait_run(stack, "fault.events", first) == "success", stack.diagnose(stack.dag_runs("fault.events"))
    before = _rows(stack, "select event_time, loaded_at from fault.events order by event_time")
    assert len(before) == 24 and len({r[1] for r in before}) == 1, before

    lock = TableLock(stack, "fault.events", "share")  # the audit reads the table; the publish's delete waits
    try:
        run_id = stack.trigger("fault.events", partition_key=DAY)["dag_run_id"]
        stack.wait(lambda: _waiting_on_lock(stack, "delete from"), "the publish waiting inside its transaction", RUN_TIMEOUT_S, interval=1)
        publish = _task(stack, "fault.events", run_id, "publish")
        assert publish["state"] == "running" and publish["try_number"] == 1, publish
        victim = int(str(publish["hostname"]).rsplit("-", 1)[1])
        killed_at = time.monotonic()
        stack.kill_worker(victim)
    finally:
        lock.release()
    try:
        # the killed try's transaction never committed: the key holds the previous batch, whole
        stack.wait(lambda: not _waiting_on_lock(stack, "delete from"), "the killed publish's session gone", 60, interval=1)
        assert _rows(stack, "select event_time, loaded_at from fault.events order by event_time") == before
        assert _wait_run(stack, "fault.events", run_id) == "success", stack.diagnose(stack.dag_runs("fault.events"))
        recovered = time.monotonic() - killed_at
        publish = _task(stack, "fault.events", run_id, "publish")
        assert publish["try_number"] == 2, publish
        assert publish["hostname"] == f"ca-worker-{3 - victim}", publish
        after = _rows(stack, "select event_time, loaded_at from fault.events order by event_time")
        assert [r[0] for r in after] == [r[0] for r in before]  # every hour of the day once
        assert len({r[1] for r in after}) == 1 and after[0][1] != before[0][1], (before[0], after[0])  # the new batch only
        publications = _rows(
            stack,
            "select run_id, row_count from _ca_state.publications where contract_id = 'fault.events' order by run_id",
        )
        assert sorted(publications) == sorted([[first, "24"], [run_id, "24"]]), publications
        terminal_summary.append(
            f"celery faults: worker {victim} killed mid-publish; the retry published on worker {3 - victim} "
            f"{recovered:.0f} s later"
        )
    finally:
        stack.start_worker(victim)


def test_a_broker_restart_mid_chain_still_completes_the_chain(faults: LiveStack, terminal_summary: list[str]) -> None:
    stack = faults
    root = stack.trigger("fault.chain_a")["dag_run_id"]
    # once chain_a is published, chain_b's produce (which reads it) is held by a lock on the table
    stack.wait(lambda: stack.asset_events(source_dag_id="fault.chain_a"), "chain_a published", RUN_TIMEOUT_S, interval=0.3)
    lock = TableLock(stack, "fault.chain_a", "access exclusive")
    try:
        held = stack.wait(
            lambda: _waiting_on_lock(stack, "chain_a") or bool(stack.asset_events(source_dag_id="fault.chain_b")) and "late",
            "chain_b's produce waiting on the lock", RUN_TIMEOUT_S, interval=0.5,
        )
        assert held is True, "chain_b published before the lock was taken: the restart would not be mid-chain"
        stack.restart_redis(down=3)
    finally:
        lock.release()
    every = stack.wait_until_quiescent(timeout=RUN_TIMEOUT_S)
    chain = {r["dag_id"]: r for r in every if r["dag_id"] in ("fault.chain_a", "fault.chain_b", "fault.chain_c")}
    assert {d: r["state"] for d, r in chain.items()} == {
        "fault.chain_a": "success", "fault.chain_b": "success", "fault.chain_c": "success",
    }, stack.diagnose(list(chain.values()))
    assert chain["fault.chain_a"]["dag_run_id"] == root
    assert (chain["fault.chain_b"]["run_type"], chain["fault.chain_c"]["run_type"]) == ("asset_triggered", "asset_triggered")
    assert _rows(stack, "select id from fault.chain_c order by id") == [["1"], ["2"], ["3"]]
    terminal_summary.append("celery faults: redis killed and restarted while chain_b's produce ran; the chain completed")


def test_a_warehouse_refusing_connections_fails_the_try_retryably_and_the_retry_publishes(faults: LiveStack) -> None:
    stack = faults
    assert stack.postgres is not None
    stack.postgres.psql("postgres", "alter database warehouse allow_connections false")
    try:
        run_id = stack.trigger("fault.refused")["dag_run_id"]
        stack.wait(
            lambda: (t := _task(stack, "fault.refused", run_id, "produce"))["state"] in ("up_for_retry", "failed")
            or t["try_number"] > 1,
            "produce's first try failed", RUN_TIMEOUT_S, interval=0.5,
        )
    finally:
        stack.postgres.psql("postgres", "alter database warehouse allow_connections true")
    produce = _task(stack, "fault.refused", run_id, "produce")
    assert _wait_run(stack, "fault.refused", run_id) == "success", stack.diagnose(stack.dag_runs("fault.refused"))
    first_try = "\n".join(stack.worker_log(n, "fault.refused", run_id, "produce", 1) for n in (1, 2))
    assert (
        "fault.refused: the warehouse Connection 'warehouse' (postgres) could not be connected to: " in first_try
    ), first_try[-3000:]
    assert "not currently accepting connections" in first_try and "the task retries" in first_try
    produce = _task(stack, "fault.refused", run_id, "produce")
    assert produce["try_number"] >= 2 and produce["state"] == "success", produce
    assert _rows(stack, "select id from fault.refused") == [["7"]]
