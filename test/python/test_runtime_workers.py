"""The warehouse under several workers (issue 36, item 2; ADR 0030).

* A DuckDB file under a distributed executor (``[core] executor`` read through the Task SDK's
  configuration) fails the task at once with an error that says what to use instead; a server
  database under the same executor is not refused.
* Two OS processes writing one DuckDB file at once, each running write-audit-publish of its own
  contract as tasks do: no lock error, no lost write. The processes start while this one holds
  the file, which it lets go only once both are waiting for its lock: the waits the runtime makes
  (``DuckDBWarehouse._open``) are what serialises them, not luck.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import stages, warehouse
from contract_runtime.warehouse import (
    DuckDBUnderDistributedExecutorError,
    DuckDBWarehouse,
    distributed_executors,
    open_warehouse,
)
from runtime_support import dag_entry, run_identity, write_manifest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize(
    ("setting", "distributed"),
    [
        ("LocalExecutor", []),
        ("airflow.executors.local_executor.LocalExecutor", []),
        ("SequentialExecutor", []),
        ("CeleryExecutor", ["CeleryExecutor"]),
        ("KubernetesExecutor", ["KubernetesExecutor"]),
        ("airflow.providers.edge3.executors.EdgeExecutor", ["airflow.providers.edge3.executors.EdgeExecutor"]),
        # multiple executors (Airflow 2.10+): one distributed one is enough
        ("LocalExecutor,CeleryExecutor", ["CeleryExecutor"]),
        ("LocalExecutor, fast:airflow.providers.amazon.aws.executors.ecs.ecs_executor.AwsEcsExecutor",
         ["fast:airflow.providers.amazon.aws.executors.ecs.ecs_executor.AwsEcsExecutor"]),
        ("my_company.executors.OwnExecutor", ["my_company.executors.OwnExecutor"]),
    ],
)
def test_which_executors_are_distributed(
    setting: str, distributed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", setting)
    entries = warehouse.configured_executors()
    assert entries == [e.strip() for e in setting.split(",")]
    assert distributed_executors(entries) == distributed


def test_an_empty_executor_setting_is_airflows_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "")
    assert warehouse.configured_executors() == ["LocalExecutor"]


def test_a_duckdb_file_under_celery_fails_the_task_saying_what_to_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded file (no warehouse_conn_id) and a DuckDB Connection: both refused before the
    file is made, non-retryable, the message naming the executor, the file and the fix."""
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "CeleryExecutor")
    monkeypatch.setenv("CONTRACT_ASSETS_WAREHOUSE", str(tmp_path / "embedded.duckdb"))
    monkeypatch.setenv("AIRFLOW_CONN_DUCK", f"duckdb://{tmp_path / 'named.duckdb'}")

    with pytest.raises(DuckDBUnderDistributedExecutorError) as embedded:
        open_warehouse(None)
    assert str(embedded.value) == (
        f"the warehouse is the embedded DuckDB file (no warehouse_conn_id) at {tmp_path / 'embedded.duckdb'}, "
        "but Airflow's [core] executor is 'CeleryExecutor': CeleryExecutor runs tasks on several workers, which "
        "neither share that file nor may write it at once (DuckDB takes one writer process); set warehouse_conn_id "
        "to a PostgreSQL Connection (conn_type postgres) for this contract, or run it on the LocalExecutor"
    )
    assert embedded.value.executors == ("CeleryExecutor",)
    assert isinstance(embedded.value, stages.non_retryable_errors())

    with pytest.raises(DuckDBUnderDistributedExecutorError, match=r"the DuckDB Connection 'duck' at .*named\.duckdb"):
        open_warehouse("duck")
    assert not (tmp_path / "embedded.duckdb").exists() and not (tmp_path / "named.duckdb").exists()


def test_the_operator_fails_without_retry_naming_the_contract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk.exceptions import AirflowFailException
    from contract_runtime.operators import ProduceOperator
    from test_runtime_operators import FakeTI, context

    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "LocalExecutor,KubernetesExecutor")
    monkeypatch.setenv("CONTRACT_ASSETS_WAREHOUSE", str(tmp_path / "w.duckdb"))
    embedded = dag_entry()
    del embedded["runtime"]["warehouse_conn_id"]  # the embedded DuckDB file
    manifest = write_manifest(tmp_path, [embedded])
    produce = ProduceOperator(task_id="produce", contract_id="sales.orders", manifest_path=manifest)
    with pytest.raises(AirflowFailException) as failed:
        produce.execute(context(FakeTI()))
    message = str(failed.value)
    assert message.startswith("contract 'sales.orders': the warehouse is the embedded DuckDB file")
    assert "'LocalExecutor,KubernetesExecutor': KubernetesExecutor runs tasks on several workers" in message
    assert "set warehouse_conn_id to a PostgreSQL Connection" in message
    assert "lock" not in message.lower()


def test_a_server_database_under_celery_is_not_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PostgreSQL Connection under CeleryExecutor goes to the server (here: nothing listens on
    port 1, so the driver's refusal, as the retryable WarehouseUnavailableError naming the
    Connection), never to the DuckDB refusal."""
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "CeleryExecutor")
    monkeypatch.setenv("AIRFLOW_CONN_PG", "postgres://u:secret-pw@127.0.0.1:1/db")
    with pytest.raises(warehouse.WarehouseUnavailableError) as refused:
        open_warehouse("pg")
    assert type(refused.value.__cause__).__name__ == "OperationalError"
    assert "the warehouse Connection 'pg' (postgres) could not be connected to" in str(refused.value)
    assert "Connection refused" in str(refused.value) and "secret-pw" not in str(refused.value)
    assert not isinstance(refused.value, warehouse.WarehouseConfigError)


def test_a_duckdb_file_under_the_local_executor_opens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "LocalExecutor")
    monkeypatch.setenv("CONTRACT_ASSETS_WAREHOUSE", str(tmp_path / "w.duckdb"))
    with open_warehouse(None) as wh:
        assert isinstance(wh, DuckDBWarehouse) and wh.scalar("select 41 + 1") == 42


# ------------------------------------------------------------------ two writers


def writer_dag(contract_id: str, rows: int) -> dict[str, Any]:
    domain, name = contract_id.split(".")
    entry = dag_entry(
        contract_id,
        domain=domain,
        producer={
            "type": "sql",
            "path": "x.sql",
            # enough rows that a stage holds the file for a while (the other process waits)
            "sql": f"select 'o' || i as order_id, cast(i as decimal(18,2)) as amount, 'open' as status, "
            f"timestamp '2026-04-01 00:00:00' as updated_at from range(0, {rows}) t(i)",
        },
    )
    entry["runtime"]["datasets"][0]["name"] = name
    entry["runtime"]["datasets"][0]["asset"] = contract_id
    entry["runtime"]["datasets"][0]["uri"] = f"x-datalake://curated/{domain}/{name}"
    entry["outlets"] = [contract_id]
    return entry


def test_two_processes_write_one_duckdb_file_at_once(tmp_path: Path) -> None:
    """Two contracts, three DAG runs each, from two processes started together on one file."""
    path = tmp_path / "shared.duckdb"
    contracts = {"sales.orders": 20_000, "crm.accounts": 30_000}
    manifest = write_manifest(tmp_path, [writer_dag(c, n) for c, n in contracts.items()])
    runs = 3
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_CONN_", "OPENLINEAGE"))}
    env.update(
        AIRFLOW_CONN_WAREHOUSE=f"duckdb://{path}",
        AIRFLOW__CORE__EXECUTOR="LocalExecutor",
        OPENLINEAGE__TRANSPORT__TYPE="file",
        OPENLINEAGE__TRANSPORT__LOG_FILE_PATH=str(tmp_path / "events.jsonl"),
        PYTHONPATH=os.pathsep.join([str(ROOT / "orchestration"), str(HERE), env.get("PYTHONPATH", "")]),
    )
    go = tmp_path / "go"
    processes = {}
    for contract in contracts:
        ready = tmp_path / f"{contract}.ready"
        waiting = tmp_path / f"{contract}.waiting"
        processes[contract] = (
            ready,
            subprocess.Popen(
                [sys.executable, str(HERE / "duckdb_writer.py"), manifest, contract, str(runs), str(ready), str(go), str(waiting)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            ),
        )
    try:
        deadline = time.monotonic() + 180
        while not all(ready.exists() for ready, _ in processes.values()):
            assert all(p.poll() is None for _, p in processes.values()), "a writer exited before it was ready"
            assert time.monotonic() < deadline, "the writers did not get ready"
            time.sleep(0.05)
        # hold the file while both start, until each waits for the lock before its first stage
        holder = DuckDBWarehouse(path)
        go.write_text("go\n")
        while not all((tmp_path / f"{c}.waiting").exists() for c in contracts):
            assert all(p.poll() is None for _, p in processes.values()), "a writer exited while the file was held"
            assert time.monotonic() < deadline, "the writers did not wait for the held file"
            time.sleep(0.05)
        holder.close()
        reports = {}
        for contract, (_, process) in processes.items():
            out, err = process.communicate(timeout=300)
            lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
            assert lines, f"{contract}: exit {process.returncode}\n{out[-2000:]}\n{err[-2000:]}"
            reports[contract] = json.loads(lines[-1][len("RESULT "):])
    finally:
        for _, process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()

    for contract, report in reports.items():
        assert report["error"] is None, f"{contract}: {report['error']}"
        assert report["published"] == [contracts[contract]] * runs
        assert report["lock_waits"] >= 1, report
    with DuckDBWarehouse(path) as wh:
        assert wh.scalar("select count(*) from sales.orders") == contracts["sales.orders"]
        assert wh.scalar("select count(*) from crm.accounts") == contracts["crm.accounts"]
        # every publish of both processes recorded in the one state table: nothing lost
        rows = wh.fetch(
            "select contract_id, count(*), min(row_count), max(row_count) from _ca_state.publications "
            "group by contract_id order by contract_id"
        )
        assert rows == [
            ("crm.accounts", runs, contracts["crm.accounts"], contracts["crm.accounts"]),
            ("sales.orders", runs, contracts["sales.orders"], contracts["sales.orders"]),
        ]
        # nothing of any run left in staging
        assert wh.list_tables("_ca_staging") == []


def test_a_stage_waits_for_another_process_and_then_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In one process, as a second task would: produce waits while another holder has the file."""
    path = tmp_path / "w.duckdb"
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "LocalExecutor")
    monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE", f"duckdb://{path}")
    manifest = write_manifest(tmp_path, [dag_entry()])
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(1.5)", str(path)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        produced = stages.produce(manifest, "sales.orders", run_identity())
        waited = time.monotonic() - started
    finally:
        holder.wait(timeout=30)
    assert produced["staging"]["orders"].startswith("_ca_staging.sales__orders__")
    assert waited >= 0.5


# ------------------------------------------------------------------ the pool in Airflow


def test_airflow_pools_import_takes_the_generated_file(tmp_path: Path) -> None:
    """The ``pools.json`` compile writes (the golden case's, kept current by the golden runner)
    is what the pinned Airflow's ``airflow pools import`` reads: the live stack's
    :meth:`LiveStack.import_pools` against a migrated SQLite metadata database (no component is
    started), then the metadata database's ``slot_pool`` holds it with one slot."""
    from livestack import LiveStack

    generated = ROOT / "test" / "cases" / "pool-embedded-duckdb" / "expected" / "generated"
    stack = LiveStack(work=tmp_path, metadata="sqlite", warehouse="none")
    stack.home.mkdir(parents=True)
    stack.logs.mkdir(parents=True)
    stack._env = stack._build_env(f"sqlite:///{stack.home / 'airflow.db'}")
    stack.run_cli("db", "migrate", timeout=300)
    assert stack.import_pools(generated) is True
    assert stack.import_pools(tmp_path / "no-project") is False
    import sqlite3

    with contextlib.closing(sqlite3.connect(stack.home / "airflow.db")) as db:
        rows = db.execute("select pool, slots, description, include_deferred from slot_pool where pool = ?", ("contract_assets_duckdb",)).fetchall()
    description = json.loads((generated / "pools.json").read_text())["contract_assets_duckdb"]["description"]
    assert rows == [("contract_assets_duckdb", 1, description, 0)]
