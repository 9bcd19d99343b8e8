"""``mode: extract`` from a real PostgreSQL to Parquet landing files on a real S3 API, then a load.

Both servers are real processes on 127.0.0.1 (free ports), started by module fixtures
(:func:`servers.postgres_server`, :func:`servers.s3_server`) and stopped at the end. The
Connections are ``AIRFLOW_CONN_CA_PG_SRC`` (the source database, a ``postgres://`` URI) and
``AIRFLOW_CONN_CA_S3`` (JSON, ``conn_type: aws``, ``endpoint_url`` in ``extra``).

What is asserted: the landing files and the manifest written last under a per-run prefix; the
manifest lists every file with its size, SHA-256 and rows, equal to what S3 holds; a killed
extract (SIGKILL during the source query) and a failed one (a landing file changed before
publish) leave no manifest and publish nothing, and the retry completes; the load contract
whose source is the extract's dataset loads exactly the files manifests list (end to end:
extract → manifest → load → publish, twice, the second run loading only the new files).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import stages
from contract_runtime.sqlutil import TableRef
from contract_runtime.state import get_publication
from contract_runtime.warehouse import DuckDBWarehouse, Warehouse, open_warehouse
from lineage_testkit import (
    read_events,
    requires_spec,
    use_file_transport,
    validate_event,
)
from runtime_support import dag_entry, run_identity, write_manifest
from servers import (
    S3_CONN_ID,
    postgres_server,
    s3_client,
    s3_connection_json,
    s3_server,
)

PG_CONN_ID = "ca_pg_src"
EXTRACT = "billing.adjustments_extract"
LOAD = "billing.adjustments_raw"
SCHEMA: dict[str, Any] = {
    "version": 1,
    "properties": [
        {"name": "adjustment_id", "logicalType": "string", "primaryKey": True, "required": True},
        {"name": "amount", "logicalType": "number", "physicalType": "decimal(18,2)"},
        {"name": "booked_on", "logicalType": "date"},
        {"name": "updated_at", "logicalType": "timestamp"},
    ],
}


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, Any]]:
    with postgres_server() as pg, s3_server() as s3:
        yield {"pg": pg, "s3": s3}


@pytest.fixture
def setup(servers: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> dict[str, Any]:
    monkeypatch.setenv(f"AIRFLOW_CONN_{PG_CONN_ID.upper()}", servers["pg"]["uri"])
    monkeypatch.setenv(f"AIRFLOW_CONN_{S3_CONN_ID.upper()}", s3_connection_json(servers["s3"]))
    bucket = "landing-" + hashlib.sha256(request.node.name.encode()).hexdigest()[:10]
    client = s3_client(servers["s3"])
    client.create_bucket(Bucket=bucket)
    src = open_warehouse(PG_CONN_ID)
    src.execute("drop schema if exists billing_src cascade")
    src.execute("create schema billing_src")
    src.execute(
        "create table billing_src.adjustments (adjustment_id text primary key, amount numeric(18,2), "
        "booked_on date, updated_at timestamptz)"
    )
    insert(src, [("a1", "10.50", "2026-01-01"), ("a2", "-3.00", "2026-01-02"), ("a3", "7.25", "2026-01-03")])
    path = tmp_path / "warehouse.duckdb"

    def opener(conn_id: str | None) -> Warehouse:
        return DuckDBWarehouse(path)

    landing = f"s3://{bucket}/billing/adjustments"
    extract = dag_entry(
        EXTRACT,
        domain="billing",
        producer={"type": "extract"},
        datasets=[{"name": "adjustments_extract", "asset": "billing.adjustments_extract", "layer": "raw",
                   "uri": landing, "schema": SCHEMA, "quality": [
                       {"name": "id_not_null", "metric": "nullValues", "column": "adjustment_id", "mustBe": 0,
                        "severity": "error"}]}],
        kind="IngestionContract",
        mode="extract",
        source={"name": "billing_db.adjustments", "uri": f"postgres://127.0.0.1:{servers['pg']['port']}/postgres.billing_src.adjustments",
                "system": "billing_db", "format": "parquet", "connection_id": PG_CONN_ID, "table": "billing_src.adjustments"},
        landing={"uri": landing, "connection_id": S3_CONN_ID, "rows_per_file": 2},
    )
    extract["inlets"] = ["billing_db.adjustments"]
    load = dag_entry(
        LOAD,
        domain="billing",
        producer={"type": "load"},
        datasets=[{"name": "adjustments_raw", "asset": "billing.adjustments_raw", "layer": "raw",
                   "uri": None, "schema": SCHEMA, "quality": []}],
        kind="IngestionContract",
        mode="load",
        source={"name": "billing.adjustments_extract", "uri": landing, "system": "billing", "format": "parquet",
                "connection_id": S3_CONN_ID, "manifest": {"uri": landing, "connection_id": S3_CONN_ID, "contract": EXTRACT}},
        incremental={"watermark": "updated_at"},
    )
    load["inlets"] = ["billing.adjustments_extract"]
    manifest = write_manifest(tmp_path, [extract, load])
    yield {"client": client, "bucket": bucket, "src": src, "opener": opener, "manifest": manifest,
           "landing": landing, "path": path, "root": tmp_path, "dags": {EXTRACT: extract, LOAD: load}}
    src.close()


def insert(src: Warehouse, rows: list[tuple[str, str, str]]) -> None:
    for adjustment_id, amount, booked_on in rows:
        src.execute(
            "insert into billing_src.adjustments values (?, cast(? as numeric), cast(? as date), "
            "cast(? as date) + interval '12 hours')",
            [adjustment_id, amount, booked_on, booked_on],
        )


def run_contract(setup: dict[str, Any], contract_id: str, run_id: str) -> list[dict[str, Any]]:
    run = run_identity(contract_id, run_id)
    stages.produce(setup["manifest"], contract_id, run, opener=setup["opener"])
    verdict = stages.audit(setup["manifest"], contract_id, run, opener=setup["opener"])
    return stages.publish(setup["manifest"], contract_id, run, verdict, opener=setup["opener"])


def keys_under(setup: dict[str, Any], prefix: str) -> list[str]:
    listed = setup["client"].list_objects_v2(Bucket=setup["bucket"], Prefix=prefix)
    return sorted(o["Key"] for o in listed.get("Contents", []))


def run_prefix(run_id: str) -> str:
    return f"billing/adjustments/run-{run_identity(EXTRACT, run_id).run_hash}/"


def test_extract_manifest_then_load_exactly_the_listed_files(setup: dict[str, Any]) -> None:
    outputs = run_contract(setup, EXTRACT, "x1")
    prefix = run_prefix("x1")
    assert keys_under(setup, prefix) == [f"{prefix}_manifest.json", f"{prefix}part-00000.parquet", f"{prefix}part-00001.parquet"]
    body = setup["client"].get_object(Bucket=setup["bucket"], Key=f"{prefix}_manifest.json")["Body"].read()
    listed = json.loads(body)
    assert listed["row_count"] == 3 and [f["rows"] for f in listed["files"]] == [2, 1]
    assert listed["run"]["run_id"] == "x1" and listed["schema"] == SCHEMA
    for f in listed["files"]:
        data = setup["client"].get_object(Bucket=setup["bucket"], Key=f["key"])["Body"].read()
        assert hashlib.sha256(data).hexdigest() == f["sha256"] and len(data) == f["size"]
    assert outputs[0]["manifest_uri"] == f"s3://{setup['bucket']}/{prefix}_manifest.json"
    extra = stages.asset_event_extra(outputs[0], {"dag_id": EXTRACT, "contract_version": "1.0.0"})
    assert extra["manifest_uri"] == outputs[0]["manifest_uri"] and extra["file_count"] == 2 and extra["row_count"] == 3

    # an orphan part (what a killed extract leaves) is under the landing root but in no manifest
    setup["client"].put_object(Bucket=setup["bucket"], Key="billing/adjustments/run-orphan/part-00000.parquet",
                               Body=setup["client"].get_object(Bucket=setup["bucket"], Key=listed["files"][0]["key"])["Body"].read())
    loaded = run_contract(setup, LOAD, "l1")
    assert loaded[0]["row_count"] == 3
    with DuckDBWarehouse(setup["path"]) as wh:
        rows = wh.fetch("select adjustment_id, cast(amount as varchar), cast(booked_on as varchar) from billing.adjustments_raw order by 1")
    assert rows == [("a1", "10.50", "2026-01-01"), ("a2", "-3.00", "2026-01-02"), ("a3", "7.25", "2026-01-03")]

    # second extract with new rows; the load reads only its files
    insert(setup["src"], [("a4", "1.00", "2026-01-04")])
    run_contract(setup, EXTRACT, "x2")
    run = run_identity(LOAD, "l2")
    produced = stages.produce(setup["manifest"], LOAD, run, opener=setup["opener"])["producer"]
    assert {f["key"].rsplit("/", 2)[-2] for f in produced["files"]} == {f"run-{run_identity(EXTRACT, 'x2').run_hash}"}
    assert produced["files_skipped"] == 2 and produced["rows_in_file"] == 4
    verdict = stages.audit(setup["manifest"], LOAD, run, opener=setup["opener"])
    stages.publish(setup["manifest"], LOAD, run, verdict, opener=setup["opener"])
    with DuckDBWarehouse(setup["path"]) as wh:
        assert [r[0] for r in wh.fetch("select adjustment_id from billing.adjustments_raw order by 1")] == ["a1", "a2", "a3", "a4"]


def test_failed_extract_leaves_no_manifest_and_the_retry_completes(setup: dict[str, Any]) -> None:
    run = run_identity(EXTRACT, "x-fail")
    stages.produce(setup["manifest"], EXTRACT, run, opener=setup["opener"])
    verdict = stages.audit(setup["manifest"], EXTRACT, run, opener=setup["opener"])
    prefix = run_prefix("x-fail")
    # a landing file changes between produce and publish (a truncated upload, another writer)
    setup["client"].put_object(Bucket=setup["bucket"], Key=f"{prefix}part-00001.parquet", Body=b"PAR1 not parquet")
    with pytest.raises(stages.NonRetryableError, match=r"part-00001.parquet.*does not match what was written.*no manifest written"):
        stages.publish(setup["manifest"], EXTRACT, run, verdict, opener=setup["opener"])
    assert f"{prefix}_manifest.json" not in keys_under(setup, prefix)
    with DuckDBWarehouse(setup["path"]) as wh:
        assert get_publication(wh, EXTRACT, "adjustments_extract", "x-fail") is None
    # the load finds no manifest: nothing to load
    assert stages.produce(setup["manifest"], LOAD, run_identity(LOAD, "l0"), opener=setup["opener"])["producer"]["files"] == []
    # the retry of the DAG run rewrites the files and completes
    outputs = run_contract(setup, EXTRACT, "x-fail")
    assert outputs[0]["row_count"] == 3 and f"{prefix}_manifest.json" in keys_under(setup, prefix)


def test_load_refuses_a_file_that_differs_from_its_manifest(setup: dict[str, Any]) -> None:
    run_contract(setup, EXTRACT, "x-tamper")
    prefix = run_prefix("x-tamper")
    setup["client"].put_object(Bucket=setup["bucket"], Key=f"{prefix}part-00000.parquet", Body=b"replaced after publish")
    with pytest.raises(stages.NonRetryableError, match=r"part-00000.parquet' \(Connection 'ca_s3'\) has SHA-256 [0-9a-f]{64}, its manifest lists [0-9a-f]{64}: not loaded"):
        stages.produce(setup["manifest"], LOAD, run_identity(LOAD, "l-tamper"), opener=setup["opener"])
    with DuckDBWarehouse(setup["path"]) as wh:
        assert not wh.table_exists(TableRef("billing", "adjustments_raw"))


KILL_SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from contract_runtime import stages
from contract_runtime.warehouse import DuckDBWarehouse
from runtime_support import run_identity
stages.produce({manifest!r}, {contract!r}, run_identity({contract!r}, "x-kill"), opener=lambda _: DuckDBWarehouse({path!r}))
"""


def test_killed_extract_leaves_no_manifest_and_the_retry_completes(setup: dict[str, Any]) -> None:
    # the source query sleeps, so the kill lands while the extract is running
    manifest = json.loads(Path(setup["manifest"]).read_text())
    manifest["dags"][0]["runtime"]["source"]["query"] = (
        "select *, pg_sleep(0) as _ from billing_src.adjustments, pg_sleep(30)"
    )
    slow = setup["root"] / "slow" / "generated" / "manifest.json"
    slow.parent.mkdir(parents=True)
    slow.write_text(json.dumps(manifest))
    script = KILL_SCRIPT.format(tests=str(Path(__file__).parent), manifest=str(slow), contract=EXTRACT, path=str(setup["path"]))
    proc = subprocess.Popen([sys.executable, "-c", script], env=dict(os.environ))
    try:
        # generous: the child imports Airflow first, which takes long on a loaded machine
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            active = setup["src"].scalar("select count(*) from pg_stat_activity where query like '%pg_sleep(30)%' and pid <> pg_backend_pid()")
            if active:
                break
            assert proc.poll() is None, "the extract ended before it could be killed"
            time.sleep(0.2)
        else:
            pytest.fail("the extract's query never started")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    setup["src"].execute("select pg_terminate_backend(pid) from pg_stat_activity where query like '%pg_sleep(30)%' and pid <> pg_backend_pid()")
    prefix = run_prefix("x-kill")
    assert f"{prefix}_manifest.json" not in keys_under(setup, prefix)
    with DuckDBWarehouse(setup["path"]) as wh:
        assert get_publication(wh, EXTRACT, "adjustments_extract", "x-kill") is None
    outputs = run_contract(setup, EXTRACT, "x-kill")
    assert outputs[0]["row_count"] == 3 and keys_under(setup, prefix)[0] == f"{prefix}_manifest.json"


def test_extract_schema_drift_writes_a_proposal(setup: dict[str, Any]) -> None:
    setup["src"].execute("alter table billing_src.adjustments add column reason text")
    setup["src"].execute("alter table billing_src.adjustments drop column booked_on")
    manifest = json.loads(Path(setup["manifest"]).read_text())
    manifest["dags"][0]["runtime"]["on_schema_drift"] = "abort"
    Path(setup["manifest"]).write_text(json.dumps(manifest))
    with pytest.raises(stages.NonRetryableError) as info:
        stages.produce(setup["manifest"], EXTRACT, run_identity(EXTRACT, "x-drift"), opener=setup["opener"])
    message = str(info.value)
    assert "added [reason (string)]; removed [booked_on]; type changed []" in message
    proposal = Path(message.split("proposed contract written to ")[1])
    assert proposal.parent == setup["root"] / "proposals"
    text = proposal.read_text()
    assert "run x-drift" in text and "removed [booked_on]" in text
    import yaml

    doc = yaml.safe_load(text)
    props = doc["datasets"][0]["schema"]["properties"]
    assert [p["name"] for p in props] == ["adjustment_id", "amount", "updated_at", "reason"]
    assert doc["datasets"][0]["schema"]["version"] == 2
    assert keys_under(setup, run_prefix("x-drift")) == []


@requires_spec
def test_extract_and_load_lineage(setup: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The extract reads ``postgres://host:port`` / ``db.schema.table`` and writes ``s3://<bucket>``
    / the landing key prefix (OpenLineage naming) with statistics and the file list; the load reads
    that same dataset, so the two runs join in lineage."""
    events = setup["root"] / "lineage.jsonl"
    use_file_transport(monkeypatch, events)
    run_contract(setup, EXTRACT, "lx")
    run_contract(setup, LOAD, "ll")
    sent = read_events(events)
    for event in sent:
        validate_event(event)
    extract, load = (next(e for e in sent if e["eventType"] == "COMPLETE" and e["job"]["name"] == j) for j in (EXTRACT, LOAD))
    port = int(setup["src"].scalar("select current_setting('port')"))
    (source,) = extract["inputs"]
    assert (source["namespace"], source["name"]) == (f"postgres://127.0.0.1:{port}", "postgres.billing_src.adjustments")
    assert source["inputFacets"]["inputStatistics"]["rowCount"] == 3
    (landing,) = extract["outputs"]
    assert (landing["namespace"], landing["name"]) == (f"s3://{setup['bucket']}", "billing/adjustments")
    stats = landing["outputFacets"]["outputStatistics"]
    written = landing["outputFacets"]["contractAssets_files"]
    assert stats["rowCount"] == 3 and stats["fileCount"] == 2 == len(written["files"])
    assert stats["size"] == sum(f["size"] for f in written["files"]) and written["manifest"].endswith("/_manifest.json")
    # the audit's assertions name the same dataset as the COMPLETE output
    audited = next(e for e in sent if e["eventType"] == "OTHER" and e["job"]["name"] == EXTRACT)
    assert (audited["inputs"][0]["namespace"], audited["inputs"][0]["name"]) == (landing["namespace"], landing["name"])
    (read,) = load["inputs"]
    assert (read["namespace"], read["name"]) == (landing["namespace"], landing["name"])
    assert [f["uri"] for f in read["inputFacets"]["contractAssets_files"]["files"]] == [f["uri"] for f in written["files"]]
    assert read["inputFacets"]["inputStatistics"]["rowCount"] == 3


@pytest.mark.parametrize("side", ["landing", "source"])
def test_named_connection_that_does_not_exist_fails_at_once_not_with_the_worker_identity(
    setup: dict[str, Any], servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch, side: str
) -> None:
    """``landing.connection_id`` or ``source.connection_id`` names no Connection while the worker
    holds valid credentials for the landing store: produce fails non-retryable, naming the
    contract and the id, and nothing lands (issue 38; on 898d7c0 the landing files were written
    with the environment's keys, and a missing source Connection failed with Airflow's own
    "isn't defined")."""
    s3 = servers["s3"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3["access_key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3["secret_key"])
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3["endpoint_url"])
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3["endpoint_url"])
    monkeypatch.delenv("AIRFLOW_CONN_CA_MISSING", raising=False)
    extract = json.loads(json.dumps(setup["dags"][EXTRACT]))
    extract["runtime"][side]["connection_id"] = "ca_missing"
    manifest = write_manifest(setup["root"], [extract])
    with pytest.raises(stages.non_retryable_errors()) as info:
        stages.produce(manifest, EXTRACT, run_identity(EXTRACT, "x-missing"), opener=setup["opener"])
    message = str(info.value)
    assert message.startswith(f"{EXTRACT}: cannot "), message
    assert "the Connection 'ca_missing' does not exist" in message and "AIRFLOW_CONN_CA_MISSING" in message
    assert keys_under(setup, "billing/") == []
