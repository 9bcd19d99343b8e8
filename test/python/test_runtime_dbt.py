"""The dbt producer with real dbt (dbt-core + dbt-duckdb from .venv-dbt) on a DuckDB file:
write-audit-publish of the bundled dbt project's models, dbt tests as the gate, refs to upstream
models resolved to their published tables, a broken model, and dbt-ol lineage under the contract
run (also with the lineage backend down)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from contract_runtime import stages
from contract_runtime.lineage.facets import PRODUCER
from contract_runtime.tables import dbt_staging_schema
from contract_runtime.warehouse import DuckDBWarehouse, Warehouse
from dbt_support import dbt_dag, project_root, seed_raw, wap, write_manifest
from lineage_testkit import read_events, use_file_transport
from runtime_support import run_identity

INVOICES_CURATED = "finance.invoices_curated"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    root = project_root(tmp_path, monkeypatch)
    path = tmp_path / "warehouse.duckdb"
    monkeypatch.setenv("OPENLINEAGE_DISABLED", "true")

    def opener(conn_id: str | None) -> Warehouse:
        return DuckDBWarehouse(path)

    with DuckDBWarehouse(path) as wh:
        seed_raw(wh)
    return {"root": root, "path": path, "opener": opener}


def rows(env: dict[str, Any], sql: str) -> list[tuple[Any, ...]]:
    with DuckDBWarehouse(env["path"]) as wh:
        return wh.fetch(sql)


def schemas(env: dict[str, Any]) -> set[str]:
    return {r[0] for r in rows(env, "select schema_name from information_schema.schemata")}


def test_dbt_tests_gate_the_publish(env: dict[str, Any]) -> None:
    """Passed: published with the dbt tests in the verdict and the Asset event; then a failing
    error test blocks and leaves the published table untouched; then a warn test degrades."""
    manifest = write_manifest(env["root"], [dbt_dag(INVOICES_CURATED)])
    summary, outputs = wap(env["opener"], manifest, INVOICES_CURATED, "manual__good")
    assert summary["status"] == "passed"
    (dataset,) = summary["datasets"]
    names = [r["name"] for r in dataset["results"]]
    # the model's dbt tests (generic and singular) come first, then the contract's own rules
    assert set(names[:5]) == {
        "unique_invoices_curated_invoice_id",
        "not_null_invoices_curated_invoice_id",
        "accepted_values_invoices_curated_status__open__paid",
        "invoice_gross_covers_net",
        "invoice_has_lines",
    }
    assert "no_void_invoices" in names[5:]
    assert dataset["dbt_tests"] == {"total": 5, "passed": 5, "failed": 0, "warned": 0}
    (out,) = outputs
    assert out["table"] == "finance.invoices_curated" and out["row_count"] == 3
    assert stages.asset_event_extra(out, dbt_dag(INVOICES_CURATED))["dbt_tests"]["passed"] == 5
    published = rows(env, "select invoice_id, amount_gross from finance.invoices_curated order by 1")
    assert [(i, float(a)) for i, a in published] == [("i1", 119.0), ("i2", 59.5), ("i3", 80.0)]
    # nothing of the run is left behind: the dbt staging schema is gone
    assert not [s for s in schemas(env) if s.startswith("_ca_dbt__")]

    # a second header row for i1 with another status: the model yields i1 twice, unique fails
    with DuckDBWarehouse(env["path"]) as wh:
        wh.execute("insert into billing.invoices_raw values ('i1', 'a1', 'c1', date '2026-01-05', date '2026-02-04', 'EUR', 'paid', now())")
    summary, error = wap(env["opener"], manifest, INVOICES_CURATED, "manual__dup")
    assert isinstance(error, stages.QualityGateFailed)
    assert summary["status"] == "blocked"
    assert "unique_invoices_curated_invoice_id" in summary["datasets"][0]["failed_errors"]
    assert "unique_invoices_curated_invoice_id (actual 1, mustBe 0)" in str(error)
    assert rows(env, "select invoice_id, amount_gross from finance.invoices_curated order by 1") == published
    assert dbt_staging_schema(INVOICES_CURATED, run_identity(run_id="manual__dup").run_hash) not in schemas(env)

    # i5 has no lines: the warn test invoice_has_lines fails, the model is published degraded
    with DuckDBWarehouse(env["path"]) as wh:
        wh.execute("delete from billing.invoices_raw where invoice_id = 'i1' and status = 'paid'")
        wh.execute("insert into billing.invoices_raw values ('i5', 'a1', 'c1', date '2026-03-01', date '2026-03-31', 'EUR', 'open', now())")
    summary, outputs = wap(env["opener"], manifest, INVOICES_CURATED, "manual__warn")
    assert summary["status"] == "degraded"
    assert summary["datasets"][0]["dbt_tests"] == {"total": 5, "passed": 4, "failed": 0, "warned": 1}
    (out,) = outputs
    assert out["quality_status"] == "degraded" and "invoice_has_lines" in out["failed_rules"]
    assert out["row_count"] == 4


def test_a_broken_model_fails_produce_with_dbts_message_and_the_model_path(env: dict[str, Any]) -> None:
    sql = env["root"] / "dbt/finance/models/invoices_curated.sql"
    sql.write_text(sql.read_text(encoding="utf-8").replace("i.status,\n    cast", "i.no_such_column,\n    cast", 1), encoding="utf-8")
    manifest = write_manifest(env["root"], [dbt_dag(INVOICES_CURATED)])
    with pytest.raises(stages.NonRetryableError) as caught:
        stages.produce(manifest, INVOICES_CURATED, run_identity(dag_id=INVOICES_CURATED), opener=env["opener"])
    message = str(caught.value)
    assert "dbt/finance/models/invoices_curated.sql (invoices_curated)" in message
    assert "no_such_column" in message


def test_refs_to_upstream_models_read_their_published_tables(env: dict[str, Any]) -> None:
    """billings_by_contract refs invoices_curated and contracts_curated: both resolve to the
    published tables (which here differ from what the raw tables would give), not to staging
    and not to a fresh build."""
    billings = dbt_dag("finance.billings_by_contract")
    assert set(billings["runtime"]["producer"]["upstream_models"]) == {
        "model.finance_models.invoices_curated",
        "model.finance_models.contracts_curated",
    }
    manifest = write_manifest(env["root"], [billings])
    with DuckDBWarehouse(env["path"]) as wh:
        wh.execute("create schema finance")
        wh.execute(
            "create table finance.invoices_curated as select 'i9' as invoice_id, 'a1' as account_id, 'c1' as contract_id, "
            "date '2026-02-05' as invoice_date, date '2026-03-05' as due_date, 'EUR' as currency, 'open' as status, "
            "1 as line_count, cast(45 as decimal(18,2)) as amount_net, cast(0 as decimal(18,2)) as amount_tax, "
            "cast(45 as decimal(18,2)) as amount_gross"
        )
        wh.execute(
            "create table finance.contracts_curated as select 'c1' as contract_id, 'a1' as account_id, 'Acme' as account_name, "
            "'smb' as segment, 'active' as contract_status, date '2026-01-01' as start_date, date '2026-12-31' as end_date, "
            "12 as service_months, 'EUR' as currency, cast(1200 as decimal(18,2)) as total_contract_value, "
            "cast(1200 as decimal(18,2)) as total_contract_value_eur, 'monthly' as billing_frequency"
        )
    summary, _outputs = wap(env["opener"], manifest, "finance.billings_by_contract", "manual__1")
    assert summary["status"] == "passed", summary
    months = rows(env, "select contract_id, billing_month, net_billed_amount from finance.billings_by_contract order by 1, 2")
    assert [(c, str(m), float(a)) for c, m, a in months] == [("c1", "2026-02-01", 45.0)]
    # the relationships test ran against staging (child) and the published contracts (parent)
    results = {r["name"]: r for r in summary["datasets"][0]["results"]}
    assert results["relationships_billings_by_contract_contract_id__contract_id__ref_contracts_curated_"]["success"]


def test_dbt_ol_events_nest_under_the_contract_run(env: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from contract_runtime.lineage import dag_run_id
    from contract_runtime.lineage.runid import contract_run_id

    events_file = tmp_path / "events.jsonl"
    use_file_transport(monkeypatch, events_file)
    manifest = write_manifest(env["root"], [dbt_dag(INVOICES_CURATED)])
    run = run_identity(dag_id=INVOICES_CURATED, run_id="manual__lineage")
    summary, _outputs = wap(env["opener"], manifest, INVOICES_CURATED, "manual__lineage")
    assert summary["status"] == "passed"
    events = read_events(events_file)
    ours = [e for e in events if e["producer"] == PRODUCER]
    dbt_events = [e for e in events if "/integration/dbt" in e["producer"]]
    # ADR 0010: our contract run is a child of the DAG run, whose runId is the root of all
    run_id = contract_run_id(run, INVOICES_CURATED)
    root_id = dag_run_id(run)
    assert {e["eventType"] for e in ours} >= {"START", "OTHER", "COMPLETE"}
    assert all(e["run"]["runId"] == run_id for e in ours)
    # dbt-ol's wrapping jobs (dbt run, dbt test) are children of the contract run; their model
    # and test jobs are children of those; every one has the contract run's root
    parents = [e["run"]["facets"]["parent"] for e in dbt_events]
    # dbt-ol names the wrapping job of every command dbt-run-<project>: one run for dbt run, one for dbt test
    wrappers = [e for e in dbt_events if e["job"]["name"] == "dbt-run-finance_models"]
    assert len({e["run"]["runId"] for e in wrappers}) == 2
    for wrapper in wrappers:
        parent = wrapper["run"]["facets"]["parent"]
        assert parent["run"]["runId"] == run_id
        assert parent["job"] == {"namespace": "acme.finance", "name": INVOICES_CURATED}
    wrapper_ids = {e["run"]["runId"] for e in wrappers}
    nodes = [e for e in dbt_events if e not in wrappers]
    assert nodes and all(e["run"]["facets"]["parent"]["run"]["runId"] in wrapper_ids for e in nodes)
    assert all(p["root"]["run"]["runId"] == root_id for p in parents)
    # every dbt test result is an assertion of the OTHER event, with name, column, success, severity
    (other,) = [e for e in ours if e["eventType"] == "OTHER"]
    assertions = other["inputs"][0]["inputFacets"]["dataQualityAssertions"]["assertions"]
    unique = next(a for a in assertions if a["name"] == "unique_invoices_curated_invoice_id")
    assert unique["assertion"] == "unique" and unique["column"] == "invoice_id"
    assert unique["success"] is True and unique["severity"] == "error"
    assert next(a for a in assertions if a["name"] == "invoice_has_lines")["severity"] == "warning"


def test_a_lineage_outage_changes_no_outcome(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on: every emit is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for key in [k for k in __import__("os").environ if k.startswith("OPENLINEAGE")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("OPENLINEAGE_URL", f"http://127.0.0.1:{port}")
    manifest = write_manifest(env["root"], [dbt_dag(INVOICES_CURATED)])
    summary, outputs = wap(env["opener"], manifest, INVOICES_CURATED, "manual__1")
    assert summary["status"] == "passed" and outputs[0]["row_count"] == 3


PARTITIONED_CONFIG = """apiVersion: contract-assets/v1
kind: OrchestrationConfig
uri_template: "x-datalake://{layer}/{domain}/{name}"
lineage: {namespace: acme}
defaults: {retries: 0, retry_delay: PT1S, execution_timeout: PT10M, pool: default_pool, warehouse_conn_id: warehouse}
"""

PARTITIONED_CONTRACT = """apiVersion: contract-assets/v1
kind: TransformContract
id: web.visits_daily
version: 1.0.0
status: active
domain: web
owner: team-web
producer: {type: dbt, project: dbt/web, select: visits_daily}
trigger: {cron: "0 3 * * *", timezone: UTC}
partitioning: {column: visited_at, grain: day}
datasets:
  - name: visits_daily
    schema:
      version: 1
      properties:
        - {name: visited_at, logicalType: timestamp, required: true}
        - {name: partition_key, logicalType: string, required: true}
        - {name: partition_end, logicalType: timestamp, required: true}
"""

#: One row per hour of the run's day, computed from the vars alone: without them dbt fails.
PARTITIONED_DBT = {
    "dbt_project.yml": "name: web_models\nversion: '1.0.0'\nconfig-version: 2\nprofile: contract_assets\nmodel-paths: [models]\n",
    "models/visits_daily.sql": (
        "select cast('{{ var(\"partition_start\") }}' as timestamp) + to_hours(cast(t.i as integer)) as visited_at,\n"
        "       '{{ var(\"partition_key\") }}' as partition_key,\n"
        "       cast('{{ var(\"partition_end\") }}' as timestamp) as partition_end\n"
        "from range(24) as t(i)\n"
    ),
}


def test_a_partitioned_dbt_model_builds_its_key_from_the_vars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A partitioned dbt contract compiled by the CLI, run by real dbt on DuckDB for two keys: the
    model reads ``partition_key``, ``partition_start`` and ``partition_end`` as dbt vars (it fails
    without them), and publish keeps each key's 24 hours next to the other's."""
    import datetime

    import dagcheck
    from dbt_support import DBT_BIN, parse_project

    root = tmp_path / "project"
    (root / "orchestration" / "airflow" / "sources").mkdir(parents=True)
    (root / "orchestration" / "airflow" / "sources" / "config.yaml").write_text(PARTITIONED_CONFIG, encoding="utf-8")
    (root / "contracts" / "web").mkdir(parents=True)
    (root / "contracts" / "web" / "visits_daily.yaml").write_text(PARTITIONED_CONTRACT, encoding="utf-8")
    for name, text in PARTITIONED_DBT.items():
        (root / "dbt" / "web" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "dbt" / "web" / name).write_text(text, encoding="utf-8")
    parse_project(root / "dbt" / "web")
    compiled = dagcheck.run_compile(root)
    assert compiled.returncode == 0, compiled.describe()
    manifest = str(root / "generated" / "manifest.json")
    monkeypatch.setenv("CONTRACT_ASSETS_DBT_BIN", str(DBT_BIN))
    monkeypatch.setenv("OPENLINEAGE_DISABLED", "true")
    path = tmp_path / "warehouse.duckdb"

    def opener(conn_id: str | None) -> Warehouse:
        return DuckDBWarehouse(path)

    for key in ("2026-04-15", "2026-04-16"):
        run = run_identity(dag_id="web.visits_daily", run_id=f"scheduled__{key}", partition_key=key)
        stages.produce(manifest, "web.visits_daily", run, opener=opener)
        summary = stages.audit(manifest, "web.visits_daily", run, opener=opener)
        assert summary["status"] == "passed", summary
        (out,) = stages.publish(manifest, "web.visits_daily", run, summary, opener=opener)
        assert (out["row_count"], out["partition"]["key"]) == (24, key), out
    with DuckDBWarehouse(path) as wh:
        got = wh.fetch(
            "select partition_key, min(visited_at), max(visited_at), min(partition_end), count(*) "
            "from web.visits_daily group by partition_key order by partition_key"
        )
    day = datetime.timedelta(days=1)
    start = datetime.datetime(2026, 4, 15)
    assert got == [
        ("2026-04-15", start, start + datetime.timedelta(hours=23), start + day, 24),
        ("2026-04-16", start + day, start + day + datetime.timedelta(hours=23), start + 2 * day, 24),
    ]
