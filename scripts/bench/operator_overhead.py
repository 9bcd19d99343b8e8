"""Per-task overhead of the contract operators against a bare ``SQLExecuteQueryOperator`` doing the
same SQL on the same warehouse (run by scripts/bench/run.mjs).

    .venv/bin/python scripts/bench/operator_overhead.py WORKDIR [--rounds 7] [--rows 10000]
        [--manifest CORPUS_MANIFEST]

Warehouse: a throw-away PostgreSQL server (``livestack.PostgresServer``: ``initdb`` + ``pg_ctl`` on
127.0.0.1 and a free port, stopped at the end), reached by both sides through the same Airflow
Connection ``warehouse`` (``AIRFLOW_CONN_WAREHOUSE``, conn_type postgres, so both use
``PostgresHook``/psycopg2). It holds ``src.orders`` (``--rows`` rows).

The contract: one SQL-produced dataset (``select ... from src.orders``) with a not-null and a
row-count rule (the test suite's ``runtime_support.dag_entry``). Its manifest is a one-DAG file,
or with ``--manifest`` that DAG added to a compiled corpus manifest (so each task reads a
manifest of realistic size, as a deployed project's tasks do).

Each round starts from the same clean warehouse (every schema but ``src`` dropped, not timed) and
times, each task on its own:

- ours: ``ProduceOperator``, ``AuditOperator``, ``PublishOperator``, ``execute(context)`` in turn,
  with the runtime's manifest cache cleared before each (Airflow runs every task in a process of
  its own, so a task never finds the manifest another task read);
- bare: three ``SQLExecuteQueryOperator(conn_id="warehouse")`` tasks, each running, in one call,
  the statements the matching stage of ours sent to the server (recorded on the DB-API cursor in
  an untimed first round, parameters rendered as literals by the driver's own ``mogrify``) and
  committing at the end.

So both sides do the same SQL against the same server and the difference is what the operators add
in Python: reading the manifest, the run identity, the checks, building SQL, the verdict, XCom. The
task context is the one ``execute`` needs (a TaskInstance stand-in with ``xcom_push``/``xcom_pull``,
the dag run, ``outlet_events``), the same for both; Airflow's own cost per task (process start, the
task runner, API calls) is the same for both and not in either figure. Lineage is off
(``OPENLINEAGE_DISABLED=true``; its cost is the emit figure). Rounds alternate which side goes
first. Prints one JSON line ``RESULT {...}`` with per-task medians in milliseconds;
``{"available": false, "reason"}`` when PostgreSQL is not installed.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
STAGES = ("produce", "audit", "publish")


class TaskInstance:
    """What ``execute`` uses of a TaskInstance: ids, try numbers, XCom."""

    def __init__(self, dag_id: str, run_id: str, xcom: dict[tuple[str, str], Any]) -> None:
        self.dag_id = dag_id
        self.run_id = run_id
        self.task_id = "produce"
        self.try_number = 1
        self.max_tries = 0
        self.map_index = -1
        self.xcom = xcom

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcom[(self.task_id, key)] = json.loads(json.dumps(value, default=str))

    def xcom_pull(self, task_ids: str, key: str = "return_value") -> Any:
        return self.xcom.get((task_ids, key))


class DagRun:
    run_after = datetime.datetime(2026, 4, 15, tzinfo=datetime.UTC)
    logical_date = datetime.datetime(2026, 4, 15, tzinfo=datetime.UTC)
    run_id = "bench__2026-04-15"


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(f"usage: the work folder first, then the options\n{__doc__}")
    work = Path(sys.argv[1])
    args = sys.argv[2:]
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 7
    rows = int(args[args.index("--rows") + 1]) if "--rows" in args else 10000
    corpus = Path(args[args.index("--manifest") + 1]) if "--manifest" in args else None
    sys.path.insert(0, str(REPO / "scripts"))
    sys.path.insert(0, str(REPO / "test" / "python"))
    from livestack import PostgresServer, StackUnavailable

    # Its own folder under the system's temporary folder (as the tests' servers.postgres_server):
    # the server runs as the 'postgres' user, which may not enter WORKDIR.
    base = Path(tempfile.mkdtemp(prefix="ca-pg-bench-"))
    server = PostgresServer(base)
    try:
        server.start()
    except StackUnavailable as exc:
        print("RESULT " + json.dumps({"available": False, "reason": f"PostgreSQL: {exc}"}))
        shutil.rmtree(base, ignore_errors=True)
        return
    try:
        print("RESULT " + json.dumps(measure(work, server.uri(), rounds, rows, corpus)))
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


def measure(work: Path, uri: str, rounds: int, rows: int, corpus: Path | None) -> dict[str, Any]:
    os.environ["AIRFLOW_CONN_WAREHOUSE"] = uri
    os.environ["OPENLINEAGE_DISABLED"] = "true"
    import psycopg
    from airflow.providers.common.sql.operators.sql import SQLExecuteQueryOperator
    from airflow.sdk import Asset
    from airflow.sdk.execution_time.context import OutletEventAccessors
    from contract_runtime import manifest as manifest_module
    from contract_runtime.operators import AuditOperator, ProduceOperator, PublishOperator
    from contract_runtime.warehouse import DbApiWarehouse
    from runtime_support import dag_entry, stored_manifest, write_manifest

    admin = psycopg.connect(uri.replace("postgres://", "postgresql://", 1))
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute("create schema src")
        cur.execute(
            "create table src.orders as select 'o' || g as order_id, mod(g, 1000) / 10.0 as amount, "
            "case when mod(g, 3) = 0 then 'open' else 'closed' end as status, "
            "timestamp '2026-01-01' + g * interval '1 minute' as updated_at from generate_series(1, %s) g",
            (rows,),
        )

    def reset() -> None:
        with admin.cursor() as cur:
            cur.execute(
                "select nspname from pg_namespace where nspname not like 'pg\\_%' "
                "and nspname not in ('information_schema', 'public', 'src')"
            )
            for (schema,) in cur.fetchall():
                cur.execute(f'drop schema "{schema}" cascade')

    contract_id = "sales.orders"
    dag = dag_entry(
        contract_id,
        producer={"type": "sql", "path": "sql/orders.sql", "sql": "select order_id, amount, status, updated_at from src.orders"},
    )
    manifest_path = write_manifest(work / "project", [dag])
    if corpus is not None:
        data = json.loads(corpus.read_text(encoding="utf-8"))
        stored = stored_manifest([dag])  # as the compiler stores it: the dataset's asset in assets[]
        data["dags"].extend(stored["dags"])
        data["assets"].extend(stored["assets"])
        Path(manifest_path).write_text(json.dumps(data, indent=2), encoding="utf-8")
    manifest_bytes = Path(manifest_path).stat().st_size
    asset = Asset(name=contract_id, uri=dag["runtime"]["datasets"][0]["uri"], group="sales")

    # Record what each stage sends to the server, on the DB-API cursor the warehouse opens.
    recording: list[str] | None = None
    original_run, original_run_many = DbApiWarehouse._run, DbApiWarehouse._run_many

    def inline(con: Any, text: str, bound: Any) -> str:
        """The statement with its parameters rendered as literals by the driver itself."""
        if bound is None:
            return text
        if hasattr(con, "cursor") and hasattr(con.cursor(), "mogrify"):  # psycopg2
            rendered = con.cursor().mogrify(text, bound)
        else:  # psycopg 3: its client-side-binding cursor renders what it would send
            import psycopg

            rendered = psycopg.ClientCursor(con).mogrify(text, bound)
        return rendered.decode() if isinstance(rendered, bytes) else rendered

    def run_recorded(self: DbApiWarehouse, sql: str, params: Any, fetch: bool) -> Any:
        if recording is not None:
            recording.append(inline(self._con, *self._prepare(sql, params)))
        return original_run(self, sql, params, fetch)

    def run_many_recorded(self: DbApiWarehouse, sql: str, batch: Any) -> None:
        if recording is not None:
            text, _ = self._prepare(sql, [])
            recording.extend(inline(self._con, text, tuple(r)) for r in batch)
        return original_run_many(self, sql, batch)

    def context(ti: TaskInstance, task_id: str) -> dict[str, Any]:
        ti.task_id = task_id
        return {"ti": ti, "dag_run": DagRun(), "logical_date": DagRun.logical_date, "outlet_events": OutletEventAccessors(), "run_id": DagRun.run_id}

    def ours() -> dict[str, float]:
        nonlocal recording
        ti = TaskInstance(contract_id, DagRun.run_id, {})
        tasks = {
            "produce": ProduceOperator(task_id="produce", contract_id=contract_id, manifest_path=manifest_path),
            "audit": AuditOperator(task_id="audit", contract_id=contract_id, manifest_path=manifest_path),
            "publish": PublishOperator(task_id="publish", contract_id=contract_id, manifest_path=manifest_path, outlets=[asset]),
        }
        took: dict[str, float] = {}
        for stage, task in tasks.items():
            manifest_module._cache.clear()
            if recorded is not None and not recorded.get(stage):
                recording = recorded.setdefault(stage, [])
            ctx = context(ti, stage)
            start = time.perf_counter()
            value = task.execute(ctx)
            took[stage] = time.perf_counter() - start
            recording = None
            ti.xcom[(stage, "return_value")] = json.loads(json.dumps(value, default=str))
        return took

    def bare() -> dict[str, float]:
        ti = TaskInstance(contract_id, DagRun.run_id, {})
        took: dict[str, float] = {}
        for stage in STAGES:
            task = SQLExecuteQueryOperator(task_id=stage, conn_id="warehouse", sql=recorded_sql[stage], split_statements=False, return_last=True)
            ctx = context(ti, stage)
            start = time.perf_counter()
            task.execute(ctx)
            took[stage] = time.perf_counter() - start
        return took

    DbApiWarehouse._run = run_recorded  # type: ignore[method-assign]
    DbApiWarehouse._run_many = run_many_recorded  # type: ignore[method-assign]
    recorded: dict[str, list[str]] | None = {}
    try:
        reset()
        ours()  # untimed: records the statements and warms imports up
    finally:
        DbApiWarehouse._run, DbApiWarehouse._run_many = original_run, original_run_many
    recorded_sql = {stage: list(recorded.get(stage, [])) for stage in STAGES}
    recorded = None
    reset()
    bare()  # untimed: the bare side's imports and first connection
    with admin.cursor() as cur:
        cur.execute('select count(*) from "sales"."orders"')
        published_rows = cur.fetchone()[0]

    times: dict[str, dict[str, list[float]]] = {"ours": {s: [] for s in STAGES}, "bare": {s: [] for s in STAGES}}
    for i in range(rounds):
        for side in (("ours", "bare") if i % 2 == 0 else ("bare", "ours")):
            reset()
            took = ours() if side == "ours" else bare()
            for stage, seconds in took.items():
                times[side][stage].append(seconds)
    admin.close()

    med = {side: {s: statistics.median(v) * 1000 for s, v in by.items()} for side, by in times.items()}
    per_task = {s: med["ours"][s] - med["bare"][s] for s in STAGES}
    return {
        "available": True,
        "rounds": rounds,
        "rows": rows,
        "manifest_bytes": manifest_bytes,
        "manifest_dags": (len(json.loads(Path(manifest_path).read_text(encoding="utf-8"))["dags"])),
        "statements": {s: len(recorded_sql[s]) for s in STAGES},
        "published_rows_by_bare": published_rows,
        "median_ms": med,
        "added_ms": per_task,
        "max_added_ms": max(per_task.values()),
        "ratio": {s: med["ours"][s] / med["bare"][s] for s in STAGES},
        "total_ratio": sum(med["ours"].values()) / sum(med["bare"].values()),
        "runs_ms": {side: {s: [round(x * 1000, 2) for x in v] for s, v in by.items()} for side, by in times.items()},
    }


if __name__ == "__main__":
    main()
