"""The warehouse through a common-sql connection, against a real PostgreSQL server.

The fixture starts a throw-away server with ``servers.postgres_server`` (``livestack.PostgresServer``):
``initdb`` into a temporary folder and ``pg_ctl start`` on 127.0.0.1 and a free port (as the
``postgres`` system user via ``runuser`` when the tests run as root, since PostgreSQL refuses to
run as root), and stops it at the end. It never assumes a
server is running. Without PostgreSQL binaries (``scripts/ensure-postgres.sh`` installs them on
Debian) the module is skipped with that reason.

The Airflow connection is given as ``AIRFLOW_CONN_CA_PG_TEST`` (conn_type ``postgres``), so
:func:`open_warehouse` goes the ``conn.get_hook()`` way (PostgresHook, psycopg2).
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import stages
from contract_runtime.quality import evaluate_rule
from contract_runtime.sqlutil import TableRef, quote_ident
from contract_runtime.state import get_watermark
from contract_runtime.warehouse import DbApiWarehouse, Warehouse, open_warehouse
from runtime_support import dag_entry, run_identity, write_manifest
from servers import postgres_server

CONN_ID = "ca_pg_test"


@pytest.fixture(scope="module")
def pg_server() -> Iterator[dict[str, Any]]:
    with postgres_server() as server:
        yield server


@pytest.fixture
def pg(pg_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Warehouse]:
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", pg_server["uri"])
    wh = open_warehouse(CONN_ID)
    # a clean database per test
    for (schema,) in wh.fetch(
        "select nspname from pg_namespace where nspname not like 'pg\\_%' and nspname not in ('information_schema', 'public')"
    ):
        wh.execute(f"drop schema {quote_ident(schema)} cascade")
    wh.execute("drop table if exists public.victims")
    yield wh
    wh.close()


def test_selection_uses_the_connection_hook(pg: Warehouse) -> None:
    assert isinstance(pg, DbApiWarehouse) and pg.dialect == "postgres"
    assert "PostgresHook" in type(pg.hook).__name__
    assert pg.env() == {"CONTRACT_ASSETS_WAREHOUSE_KIND": "postgres", "CONTRACT_ASSETS_WAREHOUSE_CONN_ID": CONN_ID}
    assert pg.scalar("select ? + ?", [1, 2]) == 3


def test_lineage_names_the_server_database(
    pg: Warehouse, pg_server: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lineage datasets are named after the server (DESIGN §6.3): ``postgres://host:port`` and the
    connection's database; the URI's credentials never reach the namespace or the repr."""
    assert stages.lineage_warehouse(pg) == {
        "warehouse_namespace": f"postgres://127.0.0.1:{pg_server['port']}",
        "warehouse_database": "postgres",
    }
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN_ID.upper()}_SECRET",
        f"postgres://postgres:s3cret@127.0.0.1:{pg_server['port']}/postgres",
    )
    with open_warehouse(f"{CONN_ID}_secret") as wh:
        location = wh.location()
        naming = stages.lineage_warehouse(wh)
    assert "s3cret" in (location.connection_uri or "") and "s3cret" not in repr(location)
    assert naming["warehouse_namespace"] == f"postgres://127.0.0.1:{pg_server['port']}"


@pytest.mark.parametrize("name", ['x"; drop table public.victims; --', "percent%s?", "it's", "MiXeD case"])
def test_hostile_identifiers(pg: Warehouse, name: str) -> None:
    pg.execute("create table public.victims (v int)")
    t = TableRef(name, name)
    pg.create_table(t, [(name, "TEXT"), ("n", "INTEGER")])
    pg.insert_rows(t, [name, "n"], [("a", 1), (name, 2)])
    assert pg.table_exists(t) and [c.name for c in pg.columns(t)] == [name, "n"]
    assert pg.scalar(f"select count(*) from {t.sql} where {quote_ident(name)} = ?", [name]) == 1
    assert pg.table_exists(TableRef("public", "victims"))


def test_swap_is_one_transaction(pg: Warehouse) -> None:
    t1, s1 = TableRef("sales", "a"), TableRef("_ca_staging", "sales__a__x")
    t2, s2 = TableRef("sales", "b"), TableRef("_ca_staging", "sales__b__x")
    for t, v in ((t1, 1), (t2, 2), (s1, 10), (s2, 20)):
        pg.create_table(t, [("v", "INTEGER")])
        pg.insert_rows(t, ["v"], [(v,)])

    def boom(tx: Warehouse) -> None:
        assert tx.scalar(f"select v from {t2.sql}") == 20
        raise RuntimeError("crash before commit")

    with pytest.raises(RuntimeError):
        pg.swap([(s1, t1), (s2, t2)], before_commit=boom)
    assert pg.scalar(f"select v from {t1.sql}") == 1 and pg.scalar(f"select v from {t2.sql}") == 2
    assert pg.table_exists(s1) and pg.table_exists(s2)
    pg.swap([(s1, t1), (s2, t2)])
    assert pg.scalar(f"select v from {t1.sql}") == 10 and pg.scalar(f"select v from {t2.sql}") == 20
    assert pg.list_tables("_ca_staging") == []
    # a reader in another connection sees the old or the new table, never none
    other = open_warehouse(CONN_ID)
    try:
        assert other.scalar(f"select v from {t1.sql}") == 10
    finally:
        other.close()


def test_quality_metrics_on_postgres(pg: Warehouse) -> None:
    t = TableRef("sales", "q")
    pg.create_table(t, [("id", "TEXT"), ("n", "INTEGER"), ("status", "TEXT")])
    pg.insert_rows(t, ["id", "n", "status"], [("a", 1, "open"), ("a", 2, ""), (None, 3, None), ("b", None, "bad")])

    def check(rule: dict[str, Any]) -> Any:
        return evaluate_rule(pg, t, {"name": "r", "severity": "error", **rule})["actual"]

    assert check({"metric": "nullValues", "column": "id", "mustBe": 0}) == 1
    assert check({"metric": "missingValues", "column": "status", "mustBe": 0}) == 2
    assert check({"metric": "missingValues", "column": "n", "missingValues": [None, 3], "mustBe": 0}) == 2
    assert check({"metric": "invalidValues", "column": "status", "validValues": ["open"], "mustBe": 0}) == 2
    assert check({"metric": "duplicateValues", "column": "id", "mustBe": 0}) == 1
    assert check({"metric": "rowCount", "mustBe": 4}) == 4
    assert check({"metric": "nullValues", "column": "id", "unit": "percent", "mustBe": 25}) == 25
    assert check({"type": "sql", "query": "select sum(n) from {dataset}", "mustBe": 6}) == 6


def test_write_audit_publish_and_watermark_on_postgres(
    pg: Warehouse, pg_server: dict[str, Any], tmp_path: Path
) -> None:
    (tmp_path / "data").mkdir()
    csv = tmp_path / "data" / "orders.csv"
    csv.write_text(
        "order_id,amount,status,updated_at\n001,1.50,open,2026-01-01T10:00:00Z\n002,2.00,open,2026-01-02T10:00:00Z\n"
    )
    dag = dag_entry(
        "sales.orders_raw",
        producer={"type": "load"},
        warehouse_conn_id=CONN_ID,
        kind="IngestionContract",
        mode="load",
        source={"name": "shop.export", "uri": "s3://b/orders", "format": "csv", "system": "shop"},
        sample_data="data/orders.csv",
        incremental={"watermark": "updated_at"},
    )
    manifest = write_manifest(tmp_path, [dag])

    def opener(conn_id: str | None) -> Warehouse:
        return open_warehouse(conn_id)

    def wap(run_id: str) -> list[dict[str, Any]]:
        run = run_identity("sales.orders_raw", run_id=run_id)
        stages.produce(manifest, "sales.orders_raw", run, opener=opener)
        summary = stages.audit(manifest, "sales.orders_raw", run, opener=opener)
        return stages.publish(manifest, "sales.orders_raw", run, summary, opener=opener)

    out = wap("pg-run-1")
    assert out[0]["row_count"] == 2 and out[0]["quality_status"] == "passed"
    assert {c["name"]: c["type"] for c in out[0]["columns"]}["amount"] == "numeric"
    assert pg.fetch("select order_id, amount from sales.orders order by 1") == [
        ("001", Decimal("1.50")),
        ("002", Decimal("2.00")),
    ]
    wm = get_watermark(pg, "sales.orders_raw", "orders")
    assert wm is not None and wm[1].startswith("2026-01-02 10:00:00")

    csv.write_text(csv.read_text() + "002,2.00,paid,2026-01-03T10:00:00Z\n003,3.00,open,2026-01-04T10:00:00Z\n")
    out = wap("pg-run-2")
    assert out[0]["row_count"] == 3
    assert pg.fetch("select order_id, status from sales.orders order by 1") == [
        ("001", "open"),
        ("002", "paid"),
        ("003", "open"),
    ]
    assert get_watermark(pg, "sales.orders_raw", "orders")[1].startswith("2026-01-04 10:00:00")  # type: ignore[index]


def test_sql_producer_and_quarantine_on_postgres(pg: Warehouse, tmp_path: Path) -> None:
    pg.create_table(TableRef("shop", "src"), [("id", "TEXT")])
    pg.insert_rows(TableRef("shop", "src"), ["id"], [("a",), (None,)])
    sql = "select id as order_id, cast(1.5 as numeric(18,2)) as amount, 'open' as status, now() as updated_at from shop.src"
    dag = dag_entry(
        producer={"type": "sql", "path": "x.sql", "sql": sql}, on_failure="quarantine", warehouse_conn_id=CONN_ID
    )
    manifest = write_manifest(tmp_path, [dag])
    run = run_identity(run_id="pg-q")
    stages.produce(manifest, "sales.orders", run, opener=open_warehouse)
    with pytest.raises(stages.QualityGateFailed) as info:
        stages.audit(manifest, "sales.orders", run, opener=open_warehouse)
    q = info.value.summary["quarantine"][0]
    assert q["row_count"] == 2 and q["table"].startswith("_ca_quarantine.sales__orders__")
    assert not pg.table_exists(TableRef("sales", "orders"))
    assert pg.list_tables("_ca_staging") == []
    assert pg.row_count(TableRef(*q["table"].split(".", 1))) == 2


def test_a_broken_quality_query_is_that_rule_failing_on_postgres(pg: Warehouse) -> None:
    """PostgreSQL aborts the transaction on an error: the next rule must still be evaluated."""
    from contract_runtime.quality import evaluate_dataset

    t = TableRef("sales", "broken_q")
    pg.create_table(t, [("id", "TEXT")])
    pg.insert_rows(t, ["id"], [("a",), ("b",)])
    verdict = evaluate_dataset(
        pg,
        t,
        {
            "name": "q",
            "quality": [
                {"name": "broken", "type": "sql", "query": "select count(*) from {dataset} where nope", "mustBe": 0, "severity": "warning"},
                {"name": "rows", "metric": "rowCount", "mustBe": 2, "severity": "error"},
            ],
        },
    )
    broken, rows = verdict.results
    assert broken["success"] is False and 'column "nope" does not exist' in broken["error"]
    assert rows["success"] is True and rows["actual"] == 2
    assert verdict.status("block_publish") == "degraded"


def _upstream_and_consumer(tmp_path: Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``sales.orders`` (SQL) and ``sales.order_totals``, whose SQL reads the published ``sales.orders``."""
    upstream = dag_entry("sales.orders", warehouse_conn_id=CONN_ID)
    totals = [{**upstream["runtime"]["datasets"][0], "name": "order_totals", "asset": "sales.order_totals", "quality": []}]
    consumer = dag_entry(
        "sales.order_totals",
        warehouse_conn_id=CONN_ID,
        datasets=totals,
        producer={"type": "sql", "path": "sql/t.sql", "sql": "select order_id, amount, status, updated_at from sales.orders"},
        upstreams=[{"asset": "sales.orders", "trigger": True}],
    )
    consumer["inlets"] = ["sales.orders"]
    return write_manifest(tmp_path, [upstream, consumer]), upstream, consumer


def test_a_consumer_waits_for_its_upstreams_first_publish(
    pg: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An asset-triggered run whose condition held before an upstream it reads was ever
    published (``any``, a first deployment) waits for that publish instead of failing on a
    missing table; at the deadline it fails with a retryable error naming the upstream."""
    manifest_path, upstream, consumer = _upstream_and_consumer(tmp_path)
    manifest = {"dags": [upstream, consumer]}
    assert [(a, t.dotted) for a, t in stages.unpublished_upstreams(manifest, consumer, pg)] == [
        ("sales.orders", "sales.orders")
    ]
    monkeypatch.setenv("CONTRACT_ASSETS_FIRST_PUBLISH_WAIT", "0")
    with pytest.raises(stages.UpstreamNeverPublished) as caught:
        stages.produce(manifest_path, "sales.order_totals", run_identity("sales.order_totals", run_id="t-1"))
    assert not isinstance(caught.value, stages.non_retryable_errors())
    message = str(caught.value)
    assert message.startswith("sales.order_totals: upstream sales.orders (table")
    assert "Connection 'ca_pg_test'" in message and "retries" in message

    def publish_upstream(run_id: str) -> None:
        run = run_identity("sales.orders", run_id=run_id)
        stages.produce(manifest_path, "sales.orders", run)
        summary = stages.audit(manifest_path, "sales.orders", run)
        stages.publish(manifest_path, "sales.orders", run, summary)

    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the upstream's publish lands while the consumer waits
        slept.append(seconds)
        publish_upstream("u-1")

    # an extract's dataset is landing files, never a table: its consumer (a load) does not wait for one
    extract = {**upstream, "runtime": {**upstream["runtime"], "producer": {"type": "extract"}}}
    assert stages.unpublished_upstreams({"dags": [extract, consumer]}, consumer, pg) == []

    stages.await_first_publishes(manifest, consumer, pg, timeout=60, interval=2, sleep=sleep)
    assert slept == [2]
    assert stages.unpublished_upstreams(manifest, consumer, pg) == []
    out = stages.produce(manifest_path, "sales.order_totals", run_identity("sales.order_totals", run_id="t-2"))
    schema, name = out["staging"]["order_totals"].split(".", 1)
    assert pg.scalar(f"select count(*) from {TableRef(schema, name).sql}") == 1


def test_on_duckdb_a_consumer_does_not_wait_for_an_upstream(tmp_path: Path) -> None:
    """The embedded DuckDB file has one writer (and a pool of one slot): waiting would hold what
    the upstream's publish needs, so the check is made once, whatever the configured wait."""
    from contract_runtime.warehouse import DuckDBWarehouse

    _, upstream, consumer = _upstream_and_consumer(tmp_path)
    consumer["runtime"]["warehouse_conn_id"] = None
    wh = DuckDBWarehouse(tmp_path / "wh.duckdb")
    try:
        slept: list[float] = []
        with pytest.raises(stages.UpstreamNeverPublished, match=r"has never been published in the warehouse .*wh\.duckdb"):
            stages.await_first_publishes({"dags": [upstream, consumer]}, consumer, wh, timeout=900, sleep=slept.append)
        assert slept == []
    finally:
        wh.close()


def test_a_warehouse_refusing_connections_is_a_retryable_error_naming_the_connection(
    pg: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that does not take the connection (here ``ALLOW_CONNECTIONS false``) fails the
    stage with a retryable error naming the contract and the Connection id, never its password;
    once the server takes connections again, the same stage succeeds."""
    from contract_runtime.warehouse import WarehouseUnavailableError

    raw = pg.hook.get_conn()  # type: ignore[attr-defined]
    raw.autocommit = True
    cur = raw.cursor()
    cur.execute("drop database if exists closed_wh")
    cur.execute("create database closed_wh")
    cur.execute("alter database closed_wh allow_connections false")
    uri = pg.hook.get_uri()  # type: ignore[attr-defined]
    host_part = uri.split("@", 1)[1].rsplit("/", 1)[0]
    monkeypatch.setenv("AIRFLOW_CONN_CA_PG_CLOSED", f"postgres://postgres:s3cret-pass@{host_part}/closed_wh")
    upstream = dag_entry("sales.orders", warehouse_conn_id="ca_pg_closed")
    manifest_path = write_manifest(tmp_path, [upstream])
    try:
        with pytest.raises(WarehouseUnavailableError) as caught:
            stages.produce(manifest_path, "sales.orders", run_identity("sales.orders", run_id="w-1"))
        message = str(caught.value)
        assert message.startswith("sales.orders: the warehouse Connection 'ca_pg_closed' (postgres) could not be connected to: ")
        assert "not currently accepting connections" in message and message.endswith("; the task retries")
        assert "s3cret-pass" not in message
        assert not isinstance(caught.value, stages.non_retryable_errors())
        cur.execute("alter database closed_wh allow_connections true")
        out = stages.produce(manifest_path, "sales.orders", run_identity("sales.orders", run_id="w-1"))
        assert set(out["staging"]) == {"orders"}
    finally:
        cur.execute("alter database closed_wh allow_connections true")
        cur.execute("select pg_terminate_backend(pid) from pg_stat_activity where datname = 'closed_wh' and pid <> pg_backend_pid()")
        cur.execute("drop database if exists closed_wh")
        raw.close()
