"""The dbt producer with real dbt (dbt-postgres) against a real PostgreSQL server on loopback (the
server fixture of test_runtime_postgres): the profile comes from the Airflow Connection (the
password only through the environment), a failing ``error`` test blocks and leaves the published
table as it was, a ``warn`` test publishes degraded, and a broken model fails ``produce`` with
dbt's message and the model's file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import stages
from contract_runtime.dbtrun import PASSWORD_VARIABLE, profile_target
from contract_runtime.sqlutil import quote_ident
from contract_runtime.warehouse import Warehouse, open_warehouse
from dbt_support import dbt_dag, project_root, seed_raw, wap, write_manifest
from runtime_support import run_identity
from test_runtime_postgres import pg_server  # noqa: F401 - the shared server fixture

CONN_ID = "ca_dbt_pg"
INVOICES_CURATED = "finance.invoices_curated"


@pytest.fixture
def env(pg_server: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:  # noqa: F811
    root = project_root(tmp_path, monkeypatch)
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", pg_server["uri"])
    monkeypatch.setenv("OPENLINEAGE_DISABLED", "true")
    with open_warehouse(CONN_ID) as wh:
        for (schema,) in wh.fetch(
            "select nspname from pg_namespace where nspname not like 'pg\\_%' and nspname not in ('information_schema', 'public')"
        ):
            wh.execute(f"drop schema {quote_ident(schema)} cascade")
        seed_raw(wh)

    def opener(conn_id: str | None) -> Warehouse:
        return open_warehouse(CONN_ID)

    yield {"root": root, "opener": opener}


def dag() -> dict[str, Any]:
    entry = dbt_dag(INVOICES_CURATED)
    entry["runtime"]["warehouse_conn_id"] = CONN_ID
    return entry


def fetch(sql: str) -> list[tuple[Any, ...]]:
    with open_warehouse(CONN_ID) as wh:
        return wh.fetch(sql)


def test_profile_comes_from_the_connection_without_the_password(env: dict[str, Any], pg_server: dict[str, Any]) -> None:  # noqa: F811
    with open_warehouse(CONN_ID) as wh:
        output, secret_env = profile_target(wh, "_ca_dbt__x")
    assert output["type"] == "postgres" and output["port"] == pg_server["port"] and output["dbname"] == "postgres"
    assert output["host"] == "127.0.0.1" and output["schema"] == "_ca_dbt__x"
    assert output["password"] == "{{ env_var('" + PASSWORD_VARIABLE + "', '') }}"
    assert set(secret_env) == {PASSWORD_VARIABLE}


def test_write_audit_publish_on_postgres(env: dict[str, Any]) -> None:
    manifest = write_manifest(env["root"], [dag()])
    summary, outputs = wap(env["opener"], manifest, INVOICES_CURATED, "manual__pg1")
    assert summary["status"] == "passed", summary
    assert summary["datasets"][0]["dbt_tests"] == {"total": 5, "passed": 5, "failed": 0, "warned": 0}
    assert outputs[0]["row_count"] == 3
    published = fetch("select invoice_id, amount_gross from finance.invoices_curated order by 1")
    assert [(i, float(a)) for i, a in published] == [("i1", 119.0), ("i2", 59.5), ("i3", 80.0)]

    # an error test fails: blocked, the published table is what it was, staging is gone
    with open_warehouse(CONN_ID) as wh:
        wh.execute("insert into billing.invoices_raw values ('i1', 'a1', 'c1', '2026-01-05', '2026-02-04', 'EUR', 'paid', now())")
    summary, error = wap(env["opener"], manifest, INVOICES_CURATED, "manual__pg2")
    assert isinstance(error, stages.QualityGateFailed) and summary["status"] == "blocked"
    assert "unique_invoices_curated_invoice_id" in summary["datasets"][0]["failed_errors"]
    assert fetch("select invoice_id, amount_gross from finance.invoices_curated order by 1") == published
    assert fetch("select count(*) from pg_namespace where nspname like '\\_ca\\_dbt\\_\\_%'") == [(0,)]

    # a warn test fails: published, degraded
    with open_warehouse(CONN_ID) as wh:
        wh.execute("delete from billing.invoices_raw where invoice_id = 'i1' and status = 'paid'")
        wh.execute("insert into billing.invoices_raw values ('i5', 'a1', 'c1', '2026-03-01', '2026-03-31', 'EUR', 'open', now())")
    summary, outputs = wap(env["opener"], manifest, INVOICES_CURATED, "manual__pg3")
    assert summary["status"] == "degraded"
    assert outputs[0]["quality_status"] == "degraded" and "invoice_has_lines" in outputs[0]["failed_rules"]
    assert fetch("select count(*) from finance.invoices_curated") == [(4,)]


def test_a_broken_model_fails_produce_on_postgres(env: dict[str, Any]) -> None:
    sql = env["root"] / "dbt/finance/models/invoices_curated.sql"
    sql.write_text(sql.read_text(encoding="utf-8").replace("i.status,\n    cast", "i.no_such_column,\n    cast", 1), encoding="utf-8")
    manifest = write_manifest(env["root"], [dag()])
    with pytest.raises(stages.NonRetryableError) as caught:
        stages.produce(manifest, INVOICES_CURATED, run_identity(dag_id=INVOICES_CURATED), opener=env["opener"])
    assert "dbt/finance/models/invoices_curated.sql (invoices_curated)" in str(caught.value)
    assert "no_such_column" in str(caught.value)
