"""The ingestion ``load`` producer against a real S3 API on loopback (moto in server mode).

The module fixture starts ``python -m moto.server`` on 127.0.0.1 and a free port
(:func:`servers.s3_server`: an IAM user, then request authentication switched on), and stops it
at the end. The Airflow Connection is defined the standard way, ``AIRFLOW_CONN_CA_S3`` as JSON
(``conn_type: aws``, key pair in login/password, ``endpoint_url`` in ``extra``); the runtime
reads it through ``airflow.sdk.ObjectStoragePath`` and the Amazon provider's ``s3`` filesystem.
Buckets and objects are made with boto3 on the side (setup only).

Each test runs the real stages (produce → audit → publish) on a DuckDB warehouse file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import stages
from contract_runtime.state import get_watermark, run_objects
from contract_runtime.warehouse import DuckDBWarehouse, Warehouse
from lineage_testkit import (
    read_events,
    requires_spec,
    use_file_transport,
    validate_event,
)
from runtime_support import dag_entry, run_identity, write_manifest
from servers import S3_CONN_ID, s3_client, s3_connection_json, s3_server

CONTRACT = "sales.orders_raw"


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, Any]]:
    with s3_server() as server:
        yield server


@pytest.fixture
def bucket(s3: dict[str, Any], request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A fresh bucket per test, and the Connection in the environment."""
    name = "ca-" + hashlib.sha256(request.node.name.encode()).hexdigest()[:12]
    client = s3_client(s3)
    client.create_bucket(Bucket=name)
    monkeypatch.setenv(f"AIRFLOW_CONN_{S3_CONN_ID.upper()}", s3_connection_json(s3))
    return {"name": name, "client": client, "server": s3}


def put(bucket: dict[str, Any], key: str, body: bytes) -> str:
    bucket["client"].put_object(Bucket=bucket["name"], Key=key, Body=body)
    return f"s3://{bucket['name']}/{key}"


def csv_rows(*rows: tuple[str, str, str, str]) -> bytes:
    return ("order_id,amount,status,updated_at\n" + "".join(",".join(r) + "\n" for r in rows)).encode()


def ingest_dag(uri: str, fmt: str = "csv", *, incremental: bool = True, conn_id: str = S3_CONN_ID, **runtime: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "IngestionContract",
        "mode": "load",
        "source": {"name": "shop.orders_export", "uri": uri, "format": fmt, "system": "shop", "connection_id": conn_id},
        **runtime,
    }
    if incremental:
        body["incremental"] = {"watermark": "updated_at"}
    dag = dag_entry(CONTRACT, producer={"type": "load"}, **body)
    dag["runtime"]["datasets"][0]["quality"] = []
    dag["inlets"] = ["shop.orders_export"]
    return dag


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "warehouse.duckdb"

    def opener(conn_id: str | None) -> Warehouse:
        return DuckDBWarehouse(path)

    return {"opener": opener, "root": tmp_path, "path": path}


def run_all(env: dict[str, Any], dag: dict[str, Any], run_id: str) -> dict[str, Any]:
    manifest = write_manifest(env["root"], [dag])
    run = run_identity(CONTRACT, run_id)
    produced = stages.produce(manifest, CONTRACT, run, opener=env["opener"])
    verdict = stages.audit(manifest, CONTRACT, run, opener=env["opener"])
    outputs = stages.publish(manifest, CONTRACT, run, verdict, opener=env["opener"])
    return {"produce": produced["producer"], "outputs": outputs, "manifest": manifest, "run": run}


def target_rows(env: dict[str, Any]) -> list[tuple[Any, ...]]:
    with DuckDBWarehouse(env["path"]) as wh:
        return wh.fetch("select order_id, status from sales.orders order by 1")


def test_prefix_glob_and_single_object_in_three_formats(bucket: dict[str, Any], env: dict[str, Any]) -> None:
    a = put(bucket, "orders/2026/a.csv", csv_rows(("001", "1.50", "open", "2026-01-01T00:00:00Z")))
    b = put(bucket, "orders/2026/b.csv", csv_rows(("002", "2.00", "open", "2026-01-02T00:00:00Z")))
    put(bucket, "orders/2026/_SUCCESS", b"")  # a marker, not data
    put(bucket, "other/c.csv", csv_rows(("999", "9.00", "open", "2026-01-09T00:00:00Z")))

    got = run_all(env, ingest_dag(f"s3://{bucket['name']}/orders/", incremental=False), "prefix")
    files = got["produce"]["files"]
    assert [f["uri"] for f in files] == [a, b]
    head = bucket["client"].head_object(Bucket=bucket["name"], Key="orders/2026/a.csv")
    assert files[0]["key"] == "orders/2026/a.csv" and files[0]["size"] == head["ContentLength"]
    assert files[0]["etag"] == head["ETag"].strip('"')
    body = bucket["client"].get_object(Bucket=bucket["name"], Key="orders/2026/a.csv")["Body"].read()
    assert files[0]["sha256"] == hashlib.sha256(body).hexdigest() and files[0]["rows"] == 1
    assert got["produce"]["bytes"] == sum(f["size"] for f in files)
    assert target_rows(env) == [("001", "open"), ("002", "open")]
    with DuckDBWarehouse(env["path"]) as wh:
        recorded = run_objects(wh, CONTRACT, "orders", "prefix", "loaded")
    assert [(o["uri"], o["sha256"], o["rows"]) for o in recorded] == [(f["uri"], f["sha256"], 1) for f in files]

    lines = [{"order_id": "j1", "amount": 1, "status": "open", "updated_at": "2026-02-01T00:00:00Z"}]
    put(bucket, "json/x.jsonl", "".join(json.dumps(r) + "\n" for r in lines).encode())
    put(bucket, "json/y.txt", b"not matched by the glob")
    got = run_all(env, ingest_dag(f"s3://{bucket['name']}/json/*.jsonl", "jsonl", incremental=False), "glob")
    assert [f["key"] for f in got["produce"]["files"]] == ["json/x.jsonl"]
    assert target_rows(env) == [("j1", "open")]

    import duckdb

    con = duckdb.connect()
    out = env["root"] / "p.parquet"
    con.execute(
        "copy (select 'p1' as order_id, 3.25::decimal(18,2) as amount, 'paid' as status, "
        f"timestamptz '2026-03-01 00:00:00+00' as updated_at) to '{out}' (format parquet)"
    )
    con.close()
    put(bucket, "pq/one.parquet", out.read_bytes())
    got = run_all(env, ingest_dag(f"s3://{bucket['name']}/pq/one.parquet", "parquet", incremental=False), "single")
    assert [f["key"] for f in got["produce"]["files"]] == ["pq/one.parquet"]
    assert target_rows(env) == [("p1", "paid")]


def test_incremental_new_object_next_run_and_idempotent_rerun(bucket: dict[str, Any], env: dict[str, Any]) -> None:
    uri = f"s3://{bucket['name']}/in/"
    put(bucket, "in/1.csv", csv_rows(("001", "1.00", "open", "2026-01-01T00:00:00Z")))
    put(bucket, "in/2.csv", csv_rows(("002", "2.00", "open", "2026-01-02T00:00:00Z")))
    dag = ingest_dag(uri)
    first = run_all(env, dag, "run1")
    assert [f["key"] for f in first["produce"]["files"]] == ["in/1.csv", "in/2.csv"]
    with DuckDBWarehouse(env["path"]) as wh:
        wm1 = get_watermark(wh, CONTRACT, "orders")
    assert wm1 is not None and wm1[1] is not None and wm1[1].startswith("2026-01-02")

    # one new object (and an update of 001 in it): only it is read
    put(bucket, "in/3.csv", csv_rows(("001", "1.00", "paid", "2026-01-03T00:00:00Z"), ("003", "3.00", "open", "2026-01-03T00:00:00Z")))
    manifest = write_manifest(env["root"], [dag])
    run2 = run_identity(CONTRACT, "run2")
    produced = stages.produce(manifest, CONTRACT, run2, opener=env["opener"])["producer"]
    assert [f["key"] for f in produced["files"]] == ["in/3.csv"] and produced["files_skipped"] == 2
    with DuckDBWarehouse(env["path"]) as wh:
        assert get_watermark(wh, CONTRACT, "orders") == wm1  # not before publish
    verdict = stages.audit(manifest, CONTRACT, run2, opener=env["opener"])
    stages.publish(manifest, CONTRACT, run2, verdict, opener=env["opener"])
    assert target_rows(env) == [("001", "paid"), ("002", "open"), ("003", "open")]
    with DuckDBWarehouse(env["path"]) as wh:
        wm2 = get_watermark(wh, CONTRACT, "orders")
    assert wm2 is not None and wm2[1] is not None and wm2[1].startswith("2026-01-03")

    # the same DAG run again (cleared and re-run): no duplicate rows, publish does not swap again
    again = run_all(env, dag, "run2")
    assert [f["key"] for f in again["produce"]["files"]] == ["in/3.csv"]
    assert target_rows(env) == [("001", "paid"), ("002", "open"), ("003", "open")]

    # a run with nothing new reads nothing and keeps the table
    nothing = run_all(env, dag, "run3")
    assert nothing["produce"]["files"] == [] and nothing["produce"]["files_skipped"] == 3
    assert target_rows(env) == [("001", "paid"), ("002", "open"), ("003", "open")]

    # a failed run (produce only, never published) leaves its object to the next run
    put(bucket, "in/4.csv", csv_rows(("004", "4.00", "open", "2026-01-04T00:00:00Z")))
    stages.produce(manifest, CONTRACT, run_identity(CONTRACT, "run4-failed"), opener=env["opener"])
    retry = run_all(env, dag, "run5")
    assert [f["key"] for f in retry["produce"]["files"]] == ["in/4.csv"]
    assert [r[0] for r in target_rows(env)] == ["001", "002", "003", "004"]


SECRET = "wr0ng-s3cret-never-logged"


@pytest.mark.parametrize(
    "fault",
    ["missing bucket", "wrong credentials", "unreadable object"],
)
def test_faults_name_contract_uri_and_connection_without_secret(
    fault: str,
    bucket: dict[str, Any],
    env: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    put(bucket, "ok/a.csv", csv_rows(("001", "1.00", "open", "2026-01-01T00:00:00Z")))
    put(bucket, "locked/a.csv", csv_rows(("001", "1.00", "open", "2026-01-01T00:00:00Z")))
    conn_id = S3_CONN_ID
    if fault == "missing bucket":
        uri = "s3://ca-no-such-bucket/ok/"
    elif fault == "wrong credentials":
        conn_id = "ca_s3_wrong"
        monkeypatch.setenv(
            "AIRFLOW_CONN_CA_S3_WRONG", s3_connection_json(bucket["server"], access_key="AKIAWRONGKEY", secret_key=SECRET)
        )
        uri = f"s3://{bucket['name']}/ok/"
    else:
        # listed (ListBucket is allowed) but GetObject is denied under locked/
        uri = f"s3://{bucket['name']}/locked/"
    events = env["root"] / "lineage.jsonl"
    use_file_transport(monkeypatch, events)
    dag = ingest_dag(uri, conn_id=conn_id)
    manifest = write_manifest(env["root"], [dag])
    run = run_identity(CONTRACT, "fault")
    with pytest.raises(stages.NonRetryableError) as info:
        stages.produce(manifest, CONTRACT, run, opener=env["opener"])
    message = str(info.value)
    named = f"s3://{bucket['name']}/locked/a.csv" if fault == "unreadable object" else uri
    assert CONTRACT in message and repr(named) in message and f"Connection {conn_id!r}" in message
    expected = {
        "missing bucket": "does not exist",
        "wrong credentials": "was refused",
        "unreadable object": "was refused",
    }[fault]
    assert expected in message
    assert ("cannot read" if fault == "unreadable object" else "cannot list") in message
    stages.lineage_fail(manifest, CONTRACT, run, info.value, "produce")
    written = events.read_text(encoding="utf-8")
    fail = [e for e in read_events(events) if e["eventType"] == "FAIL"]
    assert len(fail) == 1 and repr(named) in fail[0]["run"]["facets"]["errorMessage"]["message"]
    for text in (message, written, caplog.text):
        assert SECRET not in text and bucket["server"]["secret_key"] not in text
    # nothing was staged or recorded
    with DuckDBWarehouse(env["path"]) as wh:
        assert run_objects(wh, CONTRACT, "orders", "fault", "staged") == []



@requires_spec
def test_lineage_names_the_bucket_and_lists_the_objects(
    bucket: dict[str, Any], env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """COMPLETE's input is ``s3://<bucket>`` + key prefix (OpenLineage naming), with
    ``inputStatistics`` (rows, bytes, files) and our ``contractAssets_files`` facet; every event
    validates against the spec and the facet against its schema; no secret anywhere."""
    events = env["root"] / "lineage.jsonl"
    use_file_transport(monkeypatch, events)
    put(bucket, "orders/a.csv", csv_rows(("001", "1.50", "open", "2026-01-01T00:00:00Z")))
    put(bucket, "orders/b.csv", csv_rows(("002", "2.00", "open", "2026-01-02T00:00:00Z"), ("003", "3.00", "open", "2026-01-02T00:00:00Z")))
    got = run_all(env, ingest_dag(f"s3://{bucket['name']}/orders/"), "lineage")
    sent = read_events(events)
    for event in sent:
        validate_event(event)
    complete = next(e for e in sent if e["eventType"] == "COMPLETE")
    (source,) = complete["inputs"]
    assert (source["namespace"], source["name"]) == (f"s3://{bucket['name']}", "orders")
    stats = source["inputFacets"]["inputStatistics"]
    files = got["produce"]["files"]
    assert stats["rowCount"] == 3 and stats["fileCount"] == 2 and stats["size"] == sum(f["size"] for f in files)
    listed = source["inputFacets"]["contractAssets_files"]["files"]
    assert [(f["uri"], f["checksum"]["value"], f["etag"], f["rowCount"]) for f in listed] == [
        (f["uri"], f["sha256"], f["etag"], f["rows"]) for f in files
    ]
    assert complete["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 3
    text = events.read_text(encoding="utf-8")
    assert bucket["server"]["secret_key"] not in text and bucket["server"]["access_key"] not in text


def ambient_identity(monkeypatch: pytest.MonkeyPatch, server: dict[str, Any]) -> None:
    """Valid AWS credentials in the worker's environment, and the moto server as boto's default
    S3 endpoint: with them, a read that falls back to the worker's identity succeeds."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", server["access_key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server["secret_key"])
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", server["endpoint_url"])
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", server["endpoint_url"])


def test_named_connection_that_does_not_exist_fails_at_once_not_with_the_worker_identity(
    bucket: dict[str, Any], env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``source.connection_id`` names no Connection while the worker holds valid credentials for
    the store: produce fails non-retryable, naming the contract and the Connection id, before any
    object is listed or read (issue 38; on 898d7c0 the Amazon provider logged "Unable to find AWS
    Connection ID" and the load read the objects with the environment's keys)."""
    put(bucket, "orders/a.csv", csv_rows(("001", "1.00", "open", "2026-01-01T00:00:00Z")))
    ambient_identity(monkeypatch, bucket["server"])
    monkeypatch.delenv("AIRFLOW_CONN_CA_S3_MISSING", raising=False)
    uri = f"s3://{bucket['name']}/orders/"
    dag = ingest_dag(uri, conn_id="ca_s3_missing")
    manifest = write_manifest(env["root"], [dag])
    run = run_identity(CONTRACT, "missing")
    with pytest.raises(stages.non_retryable_errors()) as info:
        stages.produce(manifest, CONTRACT, run, opener=env["opener"])
    message = str(info.value)
    assert message.startswith(f"{CONTRACT}: cannot list {uri!r}: the Connection 'ca_s3_missing' does not exist"), message
    assert "AIRFLOW_CONN_CA_S3_MISSING" in message
    with DuckDBWarehouse(env["path"]) as wh:
        assert run_objects(wh, CONTRACT, "orders", "missing", "staged") == []
        assert not wh.table_exists(stages.staging_tables(dag, run)["orders"])

    # Through the operator, the task fails at once (AirflowFailException, never retried).
    from airflow.sdk.exceptions import AirflowFailException
    from contract_runtime.operators import ProduceOperator
    from test_runtime_operators import FakeTI, context

    monkeypatch.setenv("AIRFLOW_CONN_WAREHOUSE", f"duckdb://{env['path']}")
    operator = ProduceOperator(task_id="produce", contract_id=CONTRACT, manifest_path=manifest)
    with pytest.raises(AirflowFailException, match="the Connection 'ca_s3_missing' does not exist"):
        operator.execute(context(FakeTI()))


def test_without_connection_id_the_store_is_read_with_the_providers_defaults(
    bucket: dict[str, Any], env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``source.connection_id`` is the documented other case: the provider's default
    credentials (for ``s3`` boto's chain, here the environment), so the objects load."""
    put(bucket, "orders/a.csv", csv_rows(("001", "1.00", "open", "2026-01-01T00:00:00Z")))
    ambient_identity(monkeypatch, bucket["server"])
    dag = ingest_dag(f"s3://{bucket['name']}/orders/", incremental=False)
    del dag["runtime"]["source"]["connection_id"]
    got = run_all(env, dag, "defaults")
    assert got["produce"]["connection_id"] is None
    assert target_rows(env) == [("001", "open")]


def test_store_messages_mask_query_string_credentials(
    bucket: dict[str, Any], env: dict[str, Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A signed URL's signature (``X-Amz-Signature``, ``X-Amz-Credential``, Azure's ``sig``) in a
    URI never reaches the task's error, its log or the FAIL event's facet."""
    events = env["root"] / "lineage.jsonl"
    use_file_transport(monkeypatch, events)
    signature = "5d41402abc4b2a76b9719d911017c592sig"
    uri = (
        f"s3://ca-no-such-bucket/orders/?X-Amz-Credential=AKIAEXAMPLE%2F20261207&X-Amz-Signature={signature}"
        f"&sig={signature}&X-Amz-Expires=60"
    )
    dag = ingest_dag(uri)
    manifest = write_manifest(env["root"], [dag])
    run = run_identity(CONTRACT, "signed")
    with pytest.raises(stages.NonRetryableError) as info:
        stages.produce(manifest, CONTRACT, run, opener=env["opener"])
    message = str(info.value)
    assert "X-Amz-Signature=***" in message and "sig=***" in message and "X-Amz-Credential=***" in message
    assert "X-Amz-Expires=60" in message
    stages.lineage_fail(manifest, CONTRACT, run, info.value, "produce")
    for text in (message, events.read_text(encoding="utf-8"), caplog.text):
        assert signature not in text and "AKIAEXAMPLE" not in text


def _no_local_copy(text: str) -> None:
    """No temporary folder and no local path at all appears in a message about an object."""
    import tempfile

    assert tempfile.gettempdir() not in text and "/tmp" not in text and "ca-load-" not in text, text


def test_a_value_that_does_not_convert_names_the_object_and_its_line(bucket: dict[str, Any], env: dict[str, Any]) -> None:
    """Issue 38 item 5: the message names ``s3://bucket/key``, the line in it and the contract,
    never the temporary copy the object was read from. Line 6 because a quoted value spans two
    lines and a blank line is skipped: the number is the object's physical line (header = 1)."""
    body = (
        b"order_id,amount,status,updated_at\n"
        b"001,1.50,open,2026-01-01T00:00:00Z\n"
        b"\n"
        b'002,2.00,"open\nwith a note",2026-01-02T00:00:00Z\n'
        b"003,not-a-number,open,2026-01-03T00:00:00Z\n"
        b"004,4.00,open,2026-01-04T00:00:00Z\n"
    )
    good = put(bucket, "bad/a.csv", csv_rows(("000", "1.00", "open", "2026-01-01T00:00:00Z")))
    uri = put(bucket, "bad/b.csv", body)
    manifest = write_manifest(env["root"], [ingest_dag(f"s3://{bucket['name']}/bad/", incremental=False)])
    with pytest.raises(stages.NonRetryableError) as info:
        stages.produce(manifest, CONTRACT, run_identity(CONTRACT, "bad-value"), opener=env["opener"])
    message = str(info.value)
    assert message == (
        f"{CONTRACT}: {uri!r} line 6: value 'not-a-number' of property 'amount' does not convert to its "
        "contract type decimal(18,2) (physicalType)"
    ), message
    assert good not in message
    _no_local_copy(message)

    # JSON lines: the line in the object; Parquet: the row
    lines = [
        {"order_id": "j1", "amount": 1, "status": "open", "updated_at": "2026-02-01T00:00:00Z"},
        {"order_id": "j2", "amount": 2, "status": "open", "updated_at": "not a time"},
    ]
    juri = put(bucket, "json/x.jsonl", ("\n" + "".join(json.dumps(r) + "\n" for r in lines)).encode())
    manifest = write_manifest(env["root"], [ingest_dag(juri, "jsonl", incremental=False)])
    with pytest.raises(stages.NonRetryableError) as info:
        stages.produce(manifest, CONTRACT, run_identity(CONTRACT, "bad-json"), opener=env["opener"])
    assert str(info.value).startswith(f"{CONTRACT}: {juri!r} line 3: value 'not a time' of property 'updated_at'"), info.value
    _no_local_copy(str(info.value))

    import duckdb

    con = duckdb.connect()
    out = env["root"] / "p.parquet"
    con.execute(
        "copy (select order_id, amount::double as amount, status, updated_at::timestamptz as updated_at from "
        "(values ('p1', 3.25, 'paid', '2026-03-01 00:00:00+00'), ('p2', 1e30, 'paid', '2026-03-01 00:00:00+00')) "
        "as t(order_id, amount, status, updated_at)) "
        f"to '{out}' (format parquet)"
    )
    con.close()
    puri = put(bucket, "pq/one.parquet", out.read_bytes())
    manifest = write_manifest(env["root"], [ingest_dag(puri, "parquet", incremental=False)])
    with pytest.raises(stages.NonRetryableError) as info:
        stages.produce(manifest, CONTRACT, run_identity(CONTRACT, "bad-parquet"), opener=env["opener"])
    assert str(info.value).startswith(f"{CONTRACT}: {puri!r} row 2: value '1e+30' of property 'amount'"), info.value
    _no_local_copy(str(info.value))


def test_an_unreadable_object_is_named_by_its_uri_not_its_local_copy(bucket: dict[str, Any], env: dict[str, Any]) -> None:
    """DuckDB names the file it read (``file = /tmp/…``): the message names the object instead."""
    uri = put(bucket, "broken/a.csv", b"order_id,amount,status,updated_at\n001,1.00,op\xffen,2026-01-01\n")
    manifest = write_manifest(env["root"], [ingest_dag(uri, incremental=False)])
    with pytest.raises(stages.NonRetryableError) as info:
        stages.produce(manifest, CONTRACT, run_identity(CONTRACT, "broken"), opener=env["opener"])
    message = str(info.value)
    assert message.startswith(f"{CONTRACT}: cannot read csv object {uri!r}: ") and "not utf-8 encoded" in message
    assert f"file = {uri}" in message, message  # DuckDB's own account, about the object
    _no_local_copy(message)
