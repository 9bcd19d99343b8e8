"""The warehouse interface on a temporary DuckDB file: quoting, catalogue, swap atomicity,
quarantine moves, parameter markers, warehouse selection and the manifest reader."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_runtime.manifest import (
    ManifestError,
    find_dag,
    load_manifest,
    project_root,
    resolve_project_path,
)
from contract_runtime.run import RunIdentity, run_hash
from contract_runtime.sqlutil import (
    SqlTypeError,
    TableRef,
    convert_placeholders,
    quote_ident,
    sql_type,
)
from contract_runtime.tables import quarantine_table, staging_table, target_table
from contract_runtime.warehouse import (
    DuckDBWarehouse,
    WarehouseConfigError,
    WarehouseError,
    default_duckdb_path,
    open_warehouse,
)
from runtime_support import dag_entry, write_manifest

HOSTILE = [
    'x"; drop table victims; --',
    "semi;colon",
    "it's",
    "spaces and UPPER",
    "percent%s?",
    "ünïcode",
    '"',
]


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[DuckDBWarehouse]:
    w = DuckDBWarehouse(tmp_path / "w.duckdb")
    yield w
    w.close()


# ---------------------------------------------------------------------- quoting


def test_quote_ident_doubles_quotes() -> None:
    assert quote_ident("orders") == '"orders"'
    assert quote_ident('a"b') == '"a""b"'
    assert quote_ident('x"; drop table t; --') == '"x""; drop table t; --"'
    for bad in ("", "a\x00b"):
        with pytest.raises(ValueError):
            quote_ident(bad)


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_identifiers_stay_identifiers(wh: DuckDBWarehouse, name: str) -> None:
    victims = TableRef("main", "victims")
    wh.create_table(victims, [("v", "INTEGER")])
    t = TableRef(name, name)
    wh.create_table(t, [(name, "VARCHAR"), ("n", "INTEGER")])
    wh.insert_rows(t, [name, "n"], [("a", 1), (name, 2)])
    assert wh.table_exists(t)
    assert [c.name for c in wh.columns(t)] == [name, "n"]
    assert wh.row_count(t) == 2
    assert wh.scalar(f"select count(*) from {t.sql} where {quote_ident(name)} = ?", [name]) == 1
    assert wh.table_exists(victims), "an identifier was executed as SQL"
    wh.drop_table(t)
    assert not wh.table_exists(t)


def test_values_are_bind_parameters(wh: DuckDBWarehouse) -> None:
    t = TableRef("s", "t")
    wh.create_table(t, [("v", "VARCHAR")])
    payload = "'); drop table s.t; --"
    wh.insert_rows(t, ["v"], [(payload,)])
    assert wh.fetch(f"select v from {t.sql}") == [(payload,)]


def test_sql_type_uses_physical_type_only_when_plain() -> None:
    assert (
        sql_type({"name": "a", "logicalType": "number", "physicalType": "decimal(18,2)"}, "duckdb") == "decimal(18,2)"
    )
    assert sql_type({"name": "a", "logicalType": "string", "physicalType": "varchar(3)"}, "postgres") == "varchar(3)"
    assert (
        sql_type({"name": "a", "logicalType": "timestamp", "physicalType": "timestamp with time zone"}, "x")
        == "timestamp with time zone"
    )
    assert sql_type({"name": "a", "logicalType": "integer"}, "duckdb") == "BIGINT"
    assert sql_type({"name": "a", "logicalType": "string"}, "postgres") == "TEXT"
    for bad in ("int; drop table x", "varchar(3) default 'x'", "int -- c", "decimal(18,2))", 'int"'):
        with pytest.raises(SqlTypeError):
            sql_type({"name": "a", "logicalType": "string", "physicalType": bad}, "duckdb")
    with pytest.raises(SqlTypeError):
        sql_type({"name": "a", "logicalType": "blob"}, "duckdb")


@pytest.mark.parametrize(
    ("style", "sql", "out"),
    [
        ("qmark", "select ? where a = ?", "select ? where a = ?"),
        (
            "format",
            "select ? from \"a?%\" where b = '?%' and c = ?",
            "select %s from \"a?%%\" where b = '?%%' and c = %s",
        ),
        ("pyformat", "select 100 % 3, ?", "select 100 %% 3, %s"),
        ("numeric", "select ?, ?", "select :1, :2"),
        ("named", "select ?, ?", "select :p1, :p2"),
    ],
)
def test_convert_placeholders(style: str, sql: str, out: str) -> None:
    assert convert_placeholders(sql, style) == out


# ---------------------------------------------------------------------- tables and swap


def test_table_names() -> None:
    h = run_hash("manual__2026-04-15T00:00:00+00:00")
    assert len(h) == 10 and h == run_hash("manual__2026-04-15T00:00:00+00:00") != run_hash("other")
    assert target_table("sales", "orders") == TableRef("sales", "orders")
    assert staging_table("sales", "orders", h) == TableRef("_ca_staging", f"sales__orders__{h}")
    assert quarantine_table("sales", "orders", h) == TableRef("_ca_quarantine", f"sales__orders__{h}")
    long = staging_table("d" * 40, "n" * 40, h)
    assert len(long.name.encode()) <= 63 and long.name.endswith(h)
    assert long != staging_table("d" * 40, "n" * 41, h)


def _fill(wh: DuckDBWarehouse, t: TableRef, values: list[int]) -> None:
    wh.create_table(t, [("v", "INTEGER")])
    wh.insert_rows(t, ["v"], [(v,) for v in values])


def test_swap_replaces_targets_and_drops_staging(wh: DuckDBWarehouse) -> None:
    target, staging = TableRef("sales", "orders"), TableRef("_ca_staging", "sales__orders__x")
    _fill(wh, target, [1, 2])
    _fill(wh, staging, [7, 8, 9])
    wh.swap([(staging, target)])
    assert sorted(r[0] for r in wh.fetch(f"select v from {target.sql}")) == [7, 8, 9]
    assert not wh.table_exists(staging)


def test_swap_creates_missing_target_schema(wh: DuckDBWarehouse) -> None:
    staging = TableRef("_ca_staging", "new__t__x")
    _fill(wh, staging, [1])
    wh.swap([(staging, TableRef("brand_new", "t"))])
    assert wh.row_count(TableRef("brand_new", "t")) == 1


def test_swap_failure_mid_publish_leaves_targets_unchanged(wh: DuckDBWarehouse) -> None:
    t1, s1 = TableRef("sales", "a"), TableRef("_ca_staging", "a__x")
    t2, s2 = TableRef("sales", "b"), TableRef("_ca_staging", "b__x")
    _fill(wh, t1, [1])
    _fill(wh, t2, [2])
    _fill(wh, s1, [10, 11])
    _fill(wh, s2, [20, 21])

    def boom(tx: Any) -> None:
        # both targets have been dropped and replaced inside the transaction by now
        assert tx.row_count(t1) == 2
        raise RuntimeError("crash between swap and commit")

    with pytest.raises(RuntimeError, match="crash"):
        wh.swap([(s1, t1), (s2, t2)], before_commit=boom)
    assert wh.fetch(f"select v from {t1.sql}") == [(1,)]
    assert wh.fetch(f"select v from {t2.sql}") == [(2,)]
    assert wh.row_count(s1) == 2 and wh.row_count(s2) == 2
    # and it still works afterwards
    wh.swap([(s1, t1), (s2, t2)])
    assert wh.row_count(t1) == 2 and wh.row_count(t2) == 2


def test_swap_failure_in_second_pair_rolls_back_the_first(wh: DuckDBWarehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    t1, s1 = TableRef("sales", "a"), TableRef("_ca_staging", "a__x")
    t2, s2 = TableRef("sales", "b"), TableRef("_ca_staging", "b__x")
    for t, v in ((t1, [1]), (t2, [2]), (s1, [10]), (s2, [20])):
        _fill(wh, t, v)
    original = wh._move_table
    calls: list[TableRef] = []

    def failing_move(src: TableRef, dst: TableRef) -> None:
        calls.append(src)
        if src == s2:
            raise RuntimeError("disk full")
        original(src, dst)

    monkeypatch.setattr(wh, "_move_table", failing_move)
    with pytest.raises(RuntimeError, match="disk full"):
        wh.swap([(s1, t1), (s2, t2)])
    assert calls == [s1, s2]
    assert wh.fetch(f"select v from {t1.sql}") == [(1,)]
    assert wh.fetch(f"select v from {t2.sql}") == [(2,)]
    assert wh.table_exists(s1) and wh.table_exists(s2)


def test_swap_refuses_missing_staging_before_touching_anything(wh: DuckDBWarehouse) -> None:
    t = TableRef("sales", "a")
    _fill(wh, t, [1])
    with pytest.raises(WarehouseError, match="missing"):
        wh.swap([(TableRef("_ca_staging", "nope"), t)])
    assert wh.row_count(t) == 1


def test_move_table_and_transaction_rollback(wh: DuckDBWarehouse) -> None:
    src, dst = TableRef("_ca_staging", "s"), TableRef("_ca_quarantine", "s")
    _fill(wh, src, [1, 2, 3])
    wh.move_table(src, dst)
    assert not wh.table_exists(src) and wh.row_count(dst) == 3
    with pytest.raises(ZeroDivisionError), wh.transaction():
        wh.execute(f"delete from {dst.sql}")
        raise ZeroDivisionError
    assert wh.row_count(dst) == 3
    with pytest.raises(WarehouseError), wh.transaction(), wh.transaction():
        pass


def test_released_lets_another_process_open_the_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "lock.duckdb"
    with DuckDBWarehouse(path) as w:
        _fill(w, TableRef("s", "t"), [1])
        code = "import duckdb,sys; c=duckdb.connect(sys.argv[1]); c.execute('insert into s.t values (2)'); c.close()"
        with w.released():
            subprocess.run([sys.executable, "-c", code, str(path)], check=True)
        assert w.row_count(TableRef("s", "t")) == 2


# ---------------------------------------------------------------------- selection


def test_a_missing_named_connection_fails_with_its_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_CA_TEST_NOPE", raising=False)
    monkeypatch.setenv("CONTRACT_ASSETS_WAREHOUSE", str(tmp_path / "env.duckdb"))
    with pytest.raises(WarehouseConfigError, match="the warehouse Connection 'ca_test_nope'.*does not exist"):
        open_warehouse("ca_test_nope")
    assert not (tmp_path / "env.duckdb").exists()
    with open_warehouse(None) as w:
        assert w.path == str(tmp_path / "env.duckdb")


def test_default_path_under_airflow_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONTRACT_ASSETS_WAREHOUSE", raising=False)
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path))
    assert default_duckdb_path() == str(tmp_path / "contract_assets.duckdb")


def test_duckdb_connection_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTRACT_ASSETS_WAREHOUSE", str(tmp_path / "not-this.duckdb"))
    monkeypatch.setenv("AIRFLOW_CONN_CA_TEST_DUCK", f"duckdb://{tmp_path}/conn.duckdb")
    with open_warehouse("ca_test_duck") as w:
        assert isinstance(w, DuckDBWarehouse) and w.path == f"{tmp_path}/conn.duckdb"
        assert w.env() == {"CONTRACT_ASSETS_WAREHOUSE_KIND": "duckdb", "CONTRACT_ASSETS_WAREHOUSE_PATH": w.path}
    monkeypatch.setenv(
        "AIRFLOW_CONN_CA_TEST_DUCK2", json.dumps({"conn_type": "duckdb", "extra": {"path": str(tmp_path / "x.duckdb")}})
    )
    with open_warehouse("ca_test_duck2") as w:
        assert w.path == str(tmp_path / "x.duckdb")
    monkeypatch.setenv("AIRFLOW_CONN_CA_TEST_DUCK3", "duckdb://somehost/x.duckdb")
    with pytest.raises(WarehouseError, match="host"):
        open_warehouse("ca_test_duck3")


# ---------------------------------------------------------------------- manifest and run identity


def test_manifest_cache_version_and_lookup(tmp_path: Path) -> None:
    path = Path(write_manifest(tmp_path, [dag_entry("a.b", domain="a")]))
    m = load_manifest(path)
    assert load_manifest(str(path)) is m
    assert find_dag(m, "a.b")["runtime"]["domain"] == "a"
    with pytest.raises(ManifestError, match="not in the manifest"):
        find_dag(m, "x.y")
    path.write_text(json.dumps({"manifestVersion": 3, "dags": []}) + " ")
    with pytest.raises(ManifestError, match="manifestVersion 3"):
        load_manifest(path)
    # Version 1 (schema and rules stored twice, ADR 0017f): the DAGs are older than this runtime.
    path.write_text(json.dumps({"manifestVersion": 1, "dags": []}) + "  ")
    with pytest.raises(ManifestError, match=r"manifestVersion 1, .*reads version 2 only: recompile the project"):
        load_manifest(path)
    with pytest.raises(ManifestError):
        load_manifest(tmp_path / "missing.json")
    assert project_root(path) == tmp_path.resolve()
    assert resolve_project_path(path, "data/x.csv") == tmp_path.resolve() / "data" / "x.csv"
    for bad in ("/etc/passwd", "../outside.csv"):
        with pytest.raises(ManifestError):
            resolve_project_path(path, bad)


class _TI:
    dag_id = "sales.orders"
    run_id = "scheduled__2026-04-15T00:00:00+00:00"
    task_id = "audit"
    try_number = 2
    max_tries = 2
    map_index = -1


class _DagRun:
    run_id = "scheduled__2026-04-15T00:00:00+00:00"
    logical_date = None
    import datetime as _dt

    run_after = _dt.datetime(2026, 4, 15, 1, 0)


def test_run_identity_from_context() -> None:
    run = RunIdentity.from_context({"ti": _TI(), "dag_run": _DagRun(), "logical_date": None})
    assert run.dag_id == "sales.orders" and run.task_id == "audit" and run.try_number == 2 and run.max_tries == 2
    assert run.logical_date is None and run.run_after.tzinfo is not None
    assert run.reference_date == run.run_after
    assert not run.is_first_try and not run.is_last_try
    env = run.as_env()
    assert env["CONTRACT_ASSETS_LOGICAL_DATE"] == "" and env["CONTRACT_ASSETS_RUN_ID"] == _TI.run_id
    assert run.run_hash == run_hash(_TI.run_id)
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        run.try_number = 3  # type: ignore[misc]
    assert run.clear_number == 0 and run.bundle_version is None  # neither given by the context


class _Bundle:
    version = "0123456789abcdef0123456789abcdef01234567"


class _Task:
    retries = 2


def test_run_identity_reads_clear_number_bundle_version_and_the_first_try_after_a_clear() -> None:
    """Airflow 3.2 gives ``dag_run.clear_number`` and ``ti.bundle_instance.version``; after a clear
    it keeps counting tries (``max_tries = try_number + retries``), so the first try of the cleared
    run is not try 1."""
    import dataclasses

    cleared_run = dataclasses.make_dataclass("DR", [("run_after", object), ("clear_number", int)])
    ti = type("TI", (_TI,), {"try_number": 3, "max_tries": 4, "bundle_instance": _Bundle()})()
    run = RunIdentity.from_context(
        {"ti": ti, "dag_run": cleared_run(_DagRun.run_after, 1), "task": _Task(), "logical_date": None}
    )
    assert (run.clear_number, run.bundle_version) == (1, _Bundle.version)
    assert run.first_try_number == 3 and run.is_first_try  # cleared after try 2: try 3 starts the new run
    later = RunIdentity.from_context(
        {"ti": type("TI", (_TI,), {"try_number": 4, "max_tries": 4})(), "dag_run": _DagRun(), "task": _Task()}
    )
    assert later.first_try_number == 3 and not later.is_first_try and not later.is_last_try
    never_cleared = RunIdentity.from_context(
        {"ti": type("TI", (_TI,), {"try_number": 1, "max_tries": 2})(), "dag_run": _DagRun(), "task": _Task()}
    )
    assert never_cleared.first_try_number == 1 and never_cleared.is_first_try
    # a dag run that says where its bundle is, when the task instance does not
    bundled = RunIdentity.from_context(
        {"ti": _TI(), "dag_run": type("DR", (_DagRun,), {"bundle_version": "abc1234"})(), "task": _Task()}
    )
    assert bundled.bundle_version == "abc1234"


def test_default_duckdb_is_created_with_its_folder(tmp_path: Path) -> None:
    with DuckDBWarehouse(tmp_path / "deep" / "er" / "w.duckdb") as w:
        assert os.path.exists(w.path)
