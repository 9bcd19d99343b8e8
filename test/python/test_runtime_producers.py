"""Producers on a temporary DuckDB: sql, python (context API), command (argv and environment,
no shell) and the ingestion load with watermarks."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_runtime.producers import (
    ProduceRequest,
    ProducerError,
    asset_table,
    run_producer,
)
from contract_runtime.producers.command import CommandFailed, build_env
from contract_runtime.producers.load import read_source
from contract_runtime.producers.python import ProducerContext, load_entrypoint
from contract_runtime.sqlutil import TableRef
from contract_runtime.state import get_watermark
from contract_runtime.tables import staging_table
from contract_runtime.warehouse import DuckDBWarehouse
from runtime_support import ORDERS_SCHEMA, dag_entry, run_identity, write_manifest


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[DuckDBWarehouse]:
    w = DuckDBWarehouse(tmp_path / "p.duckdb")
    yield w
    w.close()


def request_for(tmp_path: Path, wh: DuckDBWarehouse, dag: dict[str, Any], run_id: str = "manual__1") -> ProduceRequest:
    manifest_path = write_manifest(tmp_path, [dag])
    run = run_identity(dag["dag_id"], run_id=run_id)
    domain = dag["runtime"]["domain"]
    staging = {d["name"]: staging_table(domain, d["name"], run.run_hash) for d in dag["runtime"]["datasets"]}
    return ProduceRequest(
        manifest_path=manifest_path,
        manifest=json.loads(Path(manifest_path).read_text()),
        dag=dag,
        run=run,
        warehouse=wh,
        staging=staging,
    )


# ---------------------------------------------------------------------- sql


def test_sql_producer_reads_upstream_tables(tmp_path: Path, wh: DuckDBWarehouse) -> None:
    up = TableRef("billing", "invoices_raw")
    wh.create_table(up, [("id", "VARCHAR"), ("amount", "DOUBLE")])
    wh.insert_rows(up, ["id", "amount"], [("a", 1.0), ("b", 2.5)])
    sql = "-- a comment first\nselect id as order_id, cast(amount as decimal(18,2)) as amount, 'open' as status,\n  now() as updated_at\nfrom billing.invoices_raw;\n"
    req = request_for(tmp_path, wh, dag_entry(producer={"type": "sql", "path": "sql/o.sql", "sql": sql}))
    summary = run_producer(req)
    assert summary == {"rows": {"orders": 2}}
    assert wh.row_count(req.staging["orders"]) == 2


def test_sql_producer_refuses_empty_sql_and_several_datasets(tmp_path: Path, wh: DuckDBWarehouse) -> None:
    with pytest.raises(ProducerError, match="empty"):
        run_producer(request_for(tmp_path, wh, dag_entry(producer={"type": "sql", "path": "x.sql", "sql": " "})))
    two = dag_entry()
    two["runtime"]["datasets"].append(dict(two["runtime"]["datasets"][0], name="other", asset="sales.other"))
    with pytest.raises(ProducerError, match="exactly one"):
        run_producer(request_for(tmp_path, wh, two))
    with pytest.raises(ProducerError, match="no runtime"):
        run_producer(request_for(tmp_path, wh, dag_entry(producer={"type": "spark"})))
    with pytest.raises(ProducerError, match="producer.project is missing"):
        run_producer(request_for(tmp_path, wh, dag_entry(producer={"type": "dbt"})))


# ---------------------------------------------------------------------- python


def test_python_context_write_rows_dicts_sql_and_dataframes(tmp_path: Path, wh: DuckDBWarehouse) -> None:
    req = request_for(tmp_path, wh, dag_entry(producer={"type": "python", "entrypoint": "x:y", "params": {"k": 1}}))
    ctx = ProducerContext(req)
    assert ctx.params == {"k": 1} and ctx.run.dag_id == "sales.orders"
    assert ctx.columns("orders") == ["order_id", "amount", "status", "updated_at"]
    assert ctx.table("finance.contracts_curated") == TableRef("finance", "contracts_curated")
    assert ctx.target("orders") == TableRef("sales", "orders")

    assert ctx.write("orders", [("o1", "1.25", "open", None), ("o2", 2, None, None)]) == 2
    cols = {c.name: c.type for c in wh.columns(req.staging["orders"])}
    assert cols["amount"].upper() == "DECIMAL(18,2)" and cols["updated_at"].upper().startswith("TIMESTAMP")

    assert ctx.write("orders", [{"order_id": "o3", "amount": 3}, {"order_id": "o4"}]) == 2
    assert wh.fetch(f"select order_id, amount, status from {req.staging['orders'].sql} order by 1") == [
        ("o3", __import__("decimal").Decimal("3.00"), None),
        ("o4", None, None),
    ]

    assert ctx.write("orders", "select 'o5' as order_id, 1.0 as amount, 'x' as status, now() as updated_at") == 1

    class FakeFrame:
        columns = ("order_id",)

        def to_dict(self, orient: str) -> list[dict[str, Any]]:
            assert orient == "records"
            return [{"order_id": "f1"}, {"order_id": "f2"}, {"order_id": "f3"}]

    assert ctx.write("orders", FakeFrame()) == 3
    assert ctx.written == {"orders": 3}

    with pytest.raises(ProducerError, match="no dataset"):
        ctx.write("nope", [])
    with pytest.raises(ProducerError, match="not in the contract"):
        ctx.write("orders", [{"order_id": "x", "evil": 1}])
    with pytest.raises(ProducerError, match="4 columns"):
        ctx.write("orders", [("too", "short")])


def test_python_entrypoint_loading(tmp_path: Path, wh: DuckDBWarehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "jobs" / "ca_test_jobs"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "orders.py").write_text(
        "def build(ctx):\n"
        "    ctx.write('orders', [{'order_id': 'p' + str(i), 'amount': i} for i in range(ctx.params['n'])])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "jobs"))
    dag = dag_entry(producer={"type": "python", "entrypoint": "ca_test_jobs.orders:build", "params": {"n": 4}})
    req = request_for(tmp_path, wh, dag)
    assert run_producer(req) == {"entrypoint": "ca_test_jobs.orders:build", "rows": {"orders": 4}}
    with pytest.raises(ProducerError, match="PYTHONPATH"):
        load_entrypoint("ca_no_such_package.mod:f")
    with pytest.raises(ProducerError, match="module:function"):
        load_entrypoint("no_colon")
    with pytest.raises(ProducerError, match="no attribute"):
        load_entrypoint("ca_test_jobs.orders:missing")


# ---------------------------------------------------------------------- command


def write_script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_command_argv_is_not_a_shell(tmp_path: Path, wh: DuckDBWarehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "argv.json"
    script = write_script(
        tmp_path / "shim",
        "import json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'env': dict(os.environ), 'cwd': os.getcwd()}}, open({str(out)!r}, 'w'))\n"
        "import duckdb\n"
        "c = duckdb.connect(os.environ['CONTRACT_ASSETS_WAREHOUSE_PATH'])\n"
        "c.execute('create schema if not exists _ca_staging')\n"
        "c.execute('create table ' + os.environ['CONTRACT_ASSETS_STAGING_ORDERS'] + \" as select 'o' as order_id, 1.0 as amount, 'x' as status, now() as updated_at\")\n",
    )
    monkeypatch.chdir(tmp_path)
    hostile = ["; touch pwned", "$(touch pwned2)", "`touch pwned3`", "a b", "*", "|| true"]
    dag = dag_entry(
        producer={
            "type": "command",
            "family": "x",
            "command": [str(script), "build", *hostile],
            "env": {"FAMILY_VAR": "fam", "CONTRACT_ASSETS_RUN_ID": "spoofed"},
            "params": {"p": 1},
        }
    )
    req = request_for(tmp_path, wh, dag)
    monkeypatch.setenv("INHERITED_VAR", "yes")
    monkeypatch.setenv("FAMILY_VAR", "from-os")
    summary = run_producer(req)
    assert summary["returncode"] == 0
    seen = json.loads(out.read_text())
    assert seen["argv"] == ["build", *hostile]
    for name in ("pwned", "pwned2", "pwned3"):
        assert not (tmp_path / name).exists()
    env = seen["env"]
    assert env["INHERITED_VAR"] == "yes"
    assert env["FAMILY_VAR"] == "fam"  # manifest env beats os.environ
    assert env["CONTRACT_ASSETS_RUN_ID"] == "manual__1"  # run variables beat the manifest env
    assert env["CONTRACT_ASSETS_CONTRACT_ID"] == "sales.orders"
    assert json.loads(env["CONTRACT_ASSETS_PARAMS"]) == {"p": 1}
    assert json.loads(env["CONTRACT_ASSETS_STAGING_TABLES"])["orders"]["sql"] == req.staging["orders"].sql
    assert env["CONTRACT_ASSETS_STAGING_ORDERS"] == req.staging["orders"].sql
    assert env["CONTRACT_ASSETS_WAREHOUSE_KIND"] == "duckdb" and env["CONTRACT_ASSETS_WAREHOUSE_PATH"] == wh.path
    assert Path(seen["cwd"]).resolve() == tmp_path.resolve()  # the project root
    # the warehouse is usable again after the process ran
    assert wh.row_count(req.staging["orders"]) == 1


def test_command_failure_carries_the_stderr_tail(tmp_path: Path, wh: DuckDBWarehouse) -> None:
    script = write_script(
        tmp_path / "fails",
        "import sys\nfor i in range(100):\n    print(f'noise {i}', file=sys.stderr)\nprint('the real reason', file=sys.stderr)\nsys.exit(7)\n",
    )
    req = request_for(tmp_path, wh, dag_entry(producer={"type": "command", "command": [str(script)], "env": {}}))
    with pytest.raises(CommandFailed) as info:
        run_producer(req)
    msg = str(info.value)
    assert "exited with 7" in msg and "the real reason" in msg and "noise 99" in msg and "noise 10\n" not in msg
    missing = request_for(
        tmp_path, wh, dag_entry(producer={"type": "command", "command": ["ca-no-such-command-xyz"], "env": {}})
    )
    with pytest.raises(ProducerError, match="not found"):
        run_producer(missing)


def test_build_env_does_not_mutate_os_environ(tmp_path: Path, wh: DuckDBWarehouse) -> None:
    req = request_for(tmp_path, wh, dag_entry(producer={"type": "command", "command": ["x"], "env": {"A": 1}}))
    before = dict(os.environ)
    env = build_env(req, base={"PATH": "/bin"})
    assert env["A"] == "1" and env["PATH"] == "/bin" and dict(os.environ) == before


# ---------------------------------------------------------------------- load


def load_dag(sample: str, fmt: str, *, incremental: bool = True, drift: str | None = None) -> dict[str, Any]:
    runtime: dict[str, Any] = {
        "kind": "IngestionContract",
        "mode": "load",
        "source": {"name": "shop.orders_export", "uri": "s3://bucket/orders", "format": fmt, "system": "shop"},
        "sample_data": sample,
    }
    if incremental:
        runtime["incremental"] = {"watermark": "updated_at"}
    if drift:
        runtime["on_schema_drift"] = drift
    dag = dag_entry("sales.orders_raw", producer={"type": "load"}, **runtime)
    dag["runtime"]["datasets"][0]["quality"] = []
    return dag


CSV_1 = "order_id,amount,status,updated_at\n001,1.50,open,2026-01-01T10:00:00Z\n002,2.00,open,2026-01-02T10:00:00Z\n"
CSV_2 = CSV_1 + "002,2.00,paid,2026-01-03T10:00:00Z\n003,9.99,open,2026-01-03T11:00:00Z\n"


def publish_all(tmp_path: Path, wh: DuckDBWarehouse, req: ProduceRequest) -> None:
    from contract_runtime.publish import publish_datasets

    verdicts = {n: {"status": "passed", "failed_rules": []} for n in req.staging}
    publish_datasets(wh, req.dag, req.run, verdicts)


def test_load_csv_keeps_strings_as_text_and_casts_types(tmp_path: Path, wh: DuckDBWarehouse) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "orders.csv").write_text(CSV_1)
    req = request_for(tmp_path, wh, load_dag("data/orders.csv", "csv"))
    summary = run_producer(req)
    assert summary["rows_in_file"] == 2 and summary["rows_new"] == 2 and summary["watermark_from"] is None
    rows = wh.fetch(f"select order_id, amount from {req.staging['orders'].sql} order by 1")
    assert rows[0][0] == "001"  # not the integer 1
    assert str(rows[0][1]) == "1.50"


def test_load_watermark_increments(tmp_path: Path, wh: DuckDBWarehouse) -> None:
    data = tmp_path / "data"
    data.mkdir()
    csv = data / "orders.csv"
    csv.write_text(CSV_1)
    dag = load_dag("data/orders.csv", "csv")

    req1 = request_for(tmp_path, wh, dag, run_id="run1")
    run_producer(req1)
    assert get_watermark(wh, "sales.orders_raw", "orders") is None  # not before publish
    publish_all(tmp_path, wh, req1)
    wm1 = get_watermark(wh, "sales.orders_raw", "orders")
    assert wm1 is not None and wm1[0] == "updated_at" and wm1[1].startswith("2026-01-02 10:00:00")

    csv.write_text(CSV_2)
    req2 = request_for(tmp_path, wh, dag, run_id="run2")
    summary = run_producer(req2)
    assert summary["rows_in_file"] == 4 and summary["rows_new"] == 2 and summary["watermark_from"] == wm1[1]
    staged = wh.fetch(f"select order_id, status from {req2.staging['orders'].sql} order by 1")
    # 002 was updated (primary key): the new version replaces the published one
    assert staged == [("001", "open"), ("002", "paid"), ("003", "open")]
    assert get_watermark(wh, "sales.orders_raw", "orders") == wm1  # still, until publish
    publish_all(tmp_path, wh, req2)
    wm2 = get_watermark(wh, "sales.orders_raw", "orders")
    assert wm2 is not None and wm2[1].startswith("2026-01-03 11:00:00")

    req3 = request_for(tmp_path, wh, dag, run_id="run3")
    summary = run_producer(req3)
    assert summary["rows_new"] == 0 and summary["rows"] == {"orders": 3}
    publish_all(tmp_path, wh, req3)
    assert get_watermark(wh, "sales.orders_raw", "orders") == wm2


def test_load_watermark_is_ignored_when_the_target_is_gone(tmp_path: Path, wh: DuckDBWarehouse) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "orders.csv").write_text(CSV_2)
    dag = load_dag("data/orders.csv", "csv")
    req = request_for(tmp_path, wh, dag, run_id="r1")
    run_producer(req)
    publish_all(tmp_path, wh, req)
    wh.drop_table(TableRef("sales", "orders"))
    req2 = request_for(tmp_path, wh, dag, run_id="r2")
    assert run_producer(req2)["rows_new"] == 4


def test_load_jsonl_and_parquet(tmp_path: Path, wh: DuckDBWarehouse) -> None:
    data = tmp_path / "data"
    data.mkdir()
    lines = [
        {"order_id": "a", "amount": 1.5, "status": "open", "updated_at": "2026-01-01T00:00:00Z"},
        {"order_id": "b", "amount": 2, "status": None, "updated_at": "2026-01-02T00:00:00Z"},
    ]
    (data / "orders.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    req = request_for(tmp_path, wh, load_dag("data/orders.jsonl", "jsonl", incremental=False))
    assert run_producer(req)["rows"] == {"orders": 2}
    import duckdb

    con = duckdb.connect()
    con.execute(
        f"copy (select * from read_json('{data / 'orders.jsonl'}', format='newline_delimited')) to '{data / 'orders.parquet'}' (format parquet)"
    )
    con.close()
    req = request_for(tmp_path, wh, load_dag("data/orders.parquet", "parquet", incremental=False), run_id="pq")
    assert run_producer(req)["rows"] == {"orders": 2}


def test_load_from_file_uri(tmp_path: Path, wh: DuckDBWarehouse) -> None:
    (tmp_path / "orders.csv").write_text(CSV_1)
    dag = load_dag("", "csv", incremental=False)
    dag["runtime"].pop("sample_data")
    dag["runtime"]["source"]["uri"] = f"file://{tmp_path}/orders.csv"
    assert run_producer(request_for(tmp_path, wh, dag))["rows"] == {"orders": 2}
    # a scheme no provider registers: a clear error, nothing is contacted
    dag["runtime"]["source"]["uri"] = "nosuchscheme://bucket/orders"
    with pytest.raises(ProducerError, match=r"cannot list 'nosuchscheme://bucket/orders'.*Unsupported filesystem: .nosuchscheme."):
        run_producer(request_for(tmp_path, wh, dag))


def test_load_schema_drift(tmp_path: Path, wh: DuckDBWarehouse) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "extra.csv").write_text("order_id,amount,status,updated_at,surprise\n1,1,open,2026-01-01,x\n")
    (data / "missing.csv").write_text("order_id,amount,updated_at\n1,1,2026-01-01\n")
    assert run_producer(request_for(tmp_path, wh, load_dag("data/extra.csv", "csv", incremental=False)))["rows"] == {
        "orders": 1
    }
    with pytest.raises(ProducerError, match=r"added \[surprise \(string\)\]; removed \[\]"):
        run_producer(request_for(tmp_path, wh, load_dag("data/extra.csv", "csv", incremental=False, drift="abort")))
    with pytest.raises(ProducerError, match=r"added \[\]; removed \[status\]"):
        run_producer(request_for(tmp_path, wh, load_dag("data/missing.csv", "csv", incremental=False)))


def test_load_bad_value_is_a_producer_error(tmp_path: Path) -> None:
    (tmp_path / "bad.csv").write_text("order_id,amount,status,updated_at\n1,not-a-number,open,2026-01-01\n")
    with pytest.raises(ProducerError, match="does not convert"):
        read_source(str(tmp_path / "bad.csv"), "csv", ORDERS_SCHEMA["properties"], abort_on_drift=False)
    with pytest.raises(ProducerError, match="does not exist"):
        read_source(str(tmp_path / "nope.csv"), "csv", ORDERS_SCHEMA["properties"], abort_on_drift=False)


def test_asset_table() -> None:
    assert asset_table("fx.rates_daily") == TableRef("fx", "rates_daily")
    with pytest.raises(ProducerError):
        asset_table("nodot")


def test_dbt_messages_name_the_work_folder_not_its_temporary_path(tmp_path: Path) -> None:
    """dbt runs in a temporary folder of its own; a message about its files says so, not where."""
    from contract_runtime.dbtrun import DbtSetupError, _read_json

    results = tmp_path / "ca-dbt-x" / "target" / "run_results.json"
    results.parent.mkdir(parents=True)
    results.write_text("{not json")
    with pytest.raises(DbtSetupError) as info:
        _read_json(results, "dbt run results", "<dbt work folder>/target/run_results.json")
    assert str(info.value).startswith("cannot read the dbt run results <dbt work folder>/target/run_results.json: ")
    assert str(tmp_path) not in str(info.value)
