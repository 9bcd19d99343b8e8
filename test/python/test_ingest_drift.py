"""Schema drift of ``load`` sources: ``abort`` and ``allow_additive``, the diff, the proposed contract.

Local files through the same object-storage code as S3 (``file://``); the stages run on a DuckDB
warehouse file. The contract file is a real YAML file in the temporary project, so the proposal is
the contract as written with the observed columns.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from contract_runtime import stages
from contract_runtime.drift import logical_type, schema_diff
from contract_runtime.warehouse import DuckDBWarehouse, Warehouse
from dagcheck import CLI, REPO_ROOT, node_executable, subprocess_env
from lineage_testkit import read_events, use_file_transport
from runtime_support import ORDERS_SCHEMA, dag_entry, run_identity, write_manifest

CONTRACT = "sales.orders_raw"
CONTRACT_YAML = """apiVersion: contract-assets/v1
kind: IngestionContract
id: sales.orders_raw
version: "1.0.0"
domain: sales
owner: team-sales
mode: load
source: {name: shop.orders_export, uri: "s3://shop/orders", system: shop, format: csv}
trigger: {cron: "0 2 * * *"}
datasets:
  - name: orders
    schema:
      version: 1
      properties:
        - {name: order_id, logicalType: string, primaryKey: true, required: true}
        - {name: amount, logicalType: number, physicalType: "decimal(18,2)"}
        - {name: status, logicalType: string}
        - {name: updated_at, logicalType: timestamp}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "orders_raw.yaml").write_text(CONTRACT_YAML)
    (tmp_path / "data").mkdir()
    events = tmp_path / "lineage.jsonl"
    use_file_transport(monkeypatch, events)
    path = tmp_path / "warehouse.duckdb"

    def opener(conn_id: str | None) -> Warehouse:
        return DuckDBWarehouse(path)

    return {"root": tmp_path, "opener": opener, "events": events}


def manifest_for(project: dict[str, Any], csv: str, drift: str | None, **runtime: Any) -> str:
    (project["root"] / "data" / "orders.csv").write_text(csv)
    body: dict[str, Any] = {
        "kind": "IngestionContract",
        "mode": "load",
        "source": {"name": "shop.orders_export", "uri": "s3://shop/orders", "format": "csv", "system": "shop"},
        "sample_data": "data/orders.csv",
        **runtime,
    }
    if drift:
        body["on_schema_drift"] = drift
    dag = dag_entry(CONTRACT, producer={"type": "load"}, **body)
    dag["contract"] = "contracts/orders_raw.yaml"
    dag["runtime"]["datasets"][0]["quality"] = []
    return write_manifest(project["root"], [dag])


HEADER = "order_id,amount,status,updated_at"


def test_abort_fails_with_the_diff_and_writes_the_proposed_contract(project: dict[str, Any]) -> None:
    manifest = manifest_for(project, "order_id,amount,updated_at,channel\n1,2.5,2026-01-01,web\n", "abort")
    run = run_identity(CONTRACT, "drift-run-1")
    with pytest.raises(stages.NonRetryableError) as info:
        stages.produce(manifest, CONTRACT, run, opener=project["opener"])
    message = str(info.value)
    assert "schema drift in 'file://" in message and "(on_schema_drift: abort)" in message
    assert "added [channel (string)]; removed [status]; type changed []" in message
    proposal = Path(message.split("proposed contract written to ")[1])
    # default location: a proposals folder beside the (DuckDB) warehouse
    assert proposal.parent == project["root"] / "proposals" and proposal.name == f"{CONTRACT}.{run.run_hash}.yaml"
    text = proposal.read_text()
    assert text.startswith("# Proposed by contract-assets from observed schema drift")
    assert "# contract: contracts/orders_raw.yaml (dataset orders)" in text and "run drift-run-1" in text
    doc = yaml.safe_load(text)
    schema = doc["datasets"][0]["schema"]
    assert schema["version"] == 2
    assert schema["properties"] == [
        {"name": "order_id", "logicalType": "string", "primaryKey": True, "required": True},
        {"name": "amount", "logicalType": "number", "physicalType": "decimal(18,2)"},
        {"name": "updated_at", "logicalType": "timestamp"},
        {"name": "channel", "logicalType": "string"},
    ]
    assert doc["trigger"] == {"cron": "0 2 * * *"} and doc["owner"] == "team-sales"  # the rest as written
    # the FAIL event carries the diff in errorMessage
    stages.lineage_fail(manifest, CONTRACT, run, info.value, "produce")
    fail = [e for e in read_events(project["events"]) if e["eventType"] == "FAIL"]
    assert "removed [status]" in fail[0]["run"]["facets"]["errorMessage"]["message"]


def test_proposals_location_from_the_orchestration_config(project: dict[str, Any]) -> None:
    manifest = manifest_for(
        project, f"{HEADER},extra\n1,2.5,open,2026-01-01,x\n", "abort", proposals={"uri": "review/drift"}
    )
    with pytest.raises(stages.NonRetryableError, match=r"proposed contract written to .*/review/drift/sales\.orders_raw\."):
        stages.produce(manifest, CONTRACT, run_identity(CONTRACT, "r"), opener=project["opener"])
    assert len(list((project["root"] / "review" / "drift").glob("*.yaml"))) == 1


def test_allow_additive_ignores_and_reports_new_columns(project: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    manifest = manifest_for(project, f"{HEADER},channel\n1,2.5,open,2026-01-01,web\n", "allow_additive")
    produced = stages.produce(manifest, CONTRACT, run_identity(CONTRACT, "r"), opener=project["opener"])["producer"]
    assert produced["drift_added"] == ["channel"] and produced["rows"] == {"orders": 1}
    assert "columns not in the contract are ignored (on_schema_drift: allow_additive)" in caplog.text
    assert not (project["root"] / "proposals").exists()
    # a removed column is not additive: it fails, with a proposal
    manifest = manifest_for(project, "order_id,amount,updated_at\n1,2.5,2026-01-01\n", "allow_additive")
    with pytest.raises(stages.NonRetryableError, match=r"removed \[status\].*proposed contract written to"):
        stages.produce(manifest, CONTRACT, run_identity(CONTRACT, "r2"), opener=project["opener"])


def test_type_changes_count_for_typed_formats_only(tmp_path: Path) -> None:
    observed = [("order_id", "BIGINT"), ("amount", "VARCHAR"), ("status", "VARCHAR"), ("updated_at", "DATE")]
    parquet = schema_diff(ORDERS_SCHEMA["properties"], observed, "parquet")
    # integer ids in a string column are a change; a date for a timestamp converts
    assert parquet.changed == [("order_id", "string", "integer"), ("amount", "number", "string")]
    assert schema_diff(ORDERS_SCHEMA["properties"], observed, "csv").changed == []
    # JSON has no dates: an ISO string for a timestamp column is not a change
    jsonl = schema_diff(ORDERS_SCHEMA["properties"], [("updated_at", "VARCHAR"), ("amount", "BOOLEAN")], "jsonl")
    assert jsonl.changed == [("amount", "number", "boolean")]
    assert [logical_type(t) for t in ("DECIMAL(18,2)", "HUGEINT", "TIMESTAMP WITH TIME ZONE", "VARCHAR[]", "STRUCT(a INTEGER)")] == [
        "number", "integer", "timestamp", "array", "object"
    ]


def test_a_parquet_type_change_aborts(project: dict[str, Any]) -> None:
    import duckdb

    out = project["root"] / "data" / "orders.parquet"
    con = duckdb.connect()
    con.execute(
        f"copy (select 1 as order_id, 2.5 as amount, 'open' as status, timestamptz '2026-01-01 00:00:00+00' as updated_at) to '{out}' (format parquet)"
    )
    con.close()
    manifest = manifest_for(project, "", "abort", sample_data="data/orders.parquet")
    with pytest.raises(stages.NonRetryableError, match=r"type changed \[order_id: string -> integer\]"):
        stages.produce(manifest, CONTRACT, run_identity(CONTRACT, "pq"), opener=project["opener"])
    proposed = yaml.safe_load(next((project["root"] / "proposals").glob("*.yaml")).read_text())
    assert proposed["datasets"][0]["schema"]["properties"][0] == {
        "name": "order_id", "logicalType": "integer", "primaryKey": True, "required": True
    }


# -- end to end: the proposal the runtime writes is one the compiler's own checks accept ------------

CONFIG_YAML = """apiVersion: contract-assets/v1
kind: OrchestrationConfig
lineage: {namespace: test}
defaults: {warehouse_conn_id: warehouse}
sample_data:
  shop.orders_export: data/orders.csv
"""


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``node bin/contract-assets.js ARGS --root ROOT`` (the built dist/), text output."""
    if not (REPO_ROOT / "dist" / "compiler" / "cli.js").is_file():
        raise AssertionError("dist/ is missing: run `npm run build` before the Python tests")
    return subprocess.run(
        [node_executable(), str(CLI), *args, "--root", str(root)],
        cwd=root, capture_output=True, text=True, timeout=300, check=False,
        env={**subprocess_env(), "NO_COLOR": "1"},
    )


@pytest.mark.parametrize(
    ("drift", "header", "row", "version"),
    [
        # (csv: names count, types never do)
        ("column removed", "order_id,amount,updated_at", "1,2.5,2026-01-01", "2.0.0"),
        ("column added", "order_id,amount,status,updated_at,channel", "1,2.5,open,2026-01-01,web", "1.1.0"),
        ("column added and another removed", "order_id,amount,updated_at,channel", "1,2.5,2026-01-01,web", "2.0.0"),
    ],
)
def test_drift_apply_accepts_the_runtimes_proposal_and_compile_is_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, drift: str, header: str, row: str, version: str
) -> None:
    """A proposal from a real abort passes ``drift apply`` and the next ``compile`` with the version the change needs."""
    root = tmp_path / "project"
    (root / "contracts").mkdir(parents=True)
    (root / "contracts" / "orders_raw.yaml").write_text(CONTRACT_YAML.replace("trigger:", "on_schema_drift: abort\ntrigger:"))
    (root / "orchestration" / "airflow" / "sources").mkdir(parents=True)
    (root / "orchestration" / "airflow" / "sources" / "config.yaml").write_text(CONFIG_YAML)
    (root / "data").mkdir()
    (root / "data" / "orders.csv").write_text(f"{HEADER}\n1,2.5,open,2026-01-01\n")
    compiled = _cli(root, "compile", "--no-cache")
    assert compiled.returncode == 0, compiled.stderr
    # The source drifts; the task fails under abort and writes its proposal.
    (root / "data" / "orders.csv").write_text(f"{header}\n{row}\n")
    use_file_transport(monkeypatch, tmp_path / "lineage.jsonl")
    warehouse = root / "warehouse.duckdb"
    with pytest.raises(stages.NonRetryableError) as info:
        stages.produce(str(root / "generated" / "manifest.json"), CONTRACT, run_identity(CONTRACT, "drift-e2e"), opener=lambda _c: DuckDBWarehouse(warehouse))
    proposal = Path(str(info.value).split("proposed contract written to ")[1])
    assert proposal.parent == root / "proposals", drift
    applied = _cli(root, "drift", "apply", str(proposal.relative_to(root)))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert f"version 1.0.0 -> {version}" in applied.stdout
    assert yaml.safe_load((root / "contracts" / "orders_raw.yaml").read_text())["version"] == version
    again = _cli(root, "compile", "--no-cache")
    assert again.returncode == 0, again.stderr
    assert "CA77" not in again.stderr and " error " not in again.stderr and "compiled 1 DAGs" in again.stderr
