"""An event-driven load (``trigger: {queue: ...}``, issue 36, ADR 0034) against a real S3 API on
loopback (moto in server mode, :func:`servers.s3_server`).

The run's triggering Asset events are what Airflow records for a watcher's TriggerEvent
(``Trigger.submit_event``: ``extra = {"from_trigger": True, "payload": {"status": "success",
"message_batch": [<SQS messages>]}}``), built here as the SQS trigger yields them; the live test
(``test_live_queue.py``) has the triggerer make them. Each test runs the real stages (produce →
audit → publish) on a DuckDB warehouse file.
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import stages
from contract_runtime.producers.load import QueuedObjectMissing
from contract_runtime.s3_events import QueueMessageError, named_objects
from contract_runtime.state import run_objects
from contract_runtime.tables import target_table
from contract_runtime.warehouse import DuckDBWarehouse, Warehouse
from runtime_support import dag_entry, run_identity, write_manifest
from servers import S3_CONN_ID, s3_client, s3_connection_json, s3_server, sqs_client

CONTRACT = "sales.orders_raw"
SOURCE = "shop.orders_export"
QUEUE = "http://127.0.0.1:1/123456789012/orders-exports"


def s3_notification(bucket: str, *keys: str, event: str = "ObjectCreated:Put") -> str:
    """An S3 event notification body (AWS "Event message structure", version 2.1), keys URL-encoded as S3 sends them."""
    return json.dumps(
        {
            "Records": [
                {
                    "eventVersion": "2.1",
                    "eventSource": "aws:s3",
                    "awsRegion": "us-east-1",
                    "eventTime": "2026-04-15T00:00:00.000Z",
                    "eventName": event,
                    "s3": {
                        "s3SchemaVersion": "1.0",
                        "bucket": {"name": bucket, "arn": f"arn:aws:s3:::{bucket}"},
                        "object": {"key": urllib.parse.quote_plus(key, safe="/"), "size": 1},
                    },
                }
                for key in keys
            ]
        }
    )


def watcher_event(*bodies: str, asset: str = SOURCE) -> dict[str, Any]:
    """A triggering event as ``RunIdentity.triggering_events`` holds it, from the SQS trigger's batch."""
    batch = [
        {"MessageId": f"m-{hashlib.sha256(b.encode()).hexdigest()[:8]}", "ReceiptHandle": "r", "Body": b} for b in bodies
    ]
    return {
        "asset": asset,
        "uri": "s3://x",
        "extra": {"from_trigger": True, "payload": {"status": "success", "message_batch": batch}},
        "source_dag_id": None,
        "source_task_id": None,
        "source_run_id": None,
        "timestamp": "2026-04-15T00:00:00+00:00",
    }


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, Any]]:
    with s3_server() as server:
        yield server


@pytest.fixture
def bucket(s3: dict[str, Any], request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    name = "ca-q-" + hashlib.sha256(request.node.name.encode()).hexdigest()[:12]
    client = s3_client(s3)
    client.create_bucket(Bucket=name)
    monkeypatch.setenv(f"AIRFLOW_CONN_{S3_CONN_ID.upper()}", s3_connection_json(s3))
    return {"name": name, "client": client}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "warehouse.duckdb"

    def opener(conn_id: str | None) -> Warehouse:
        return DuckDBWarehouse(path)

    return {"opener": opener, "root": tmp_path, "path": path}


def put(bucket: dict[str, Any], key: str, *rows: tuple[str, str]) -> str:
    body = "order_id,amount,status,updated_at\n" + "".join(f"{i},{a},open,2026-01-01T00:00:00Z\n" for i, a in rows)
    bucket["client"].put_object(Bucket=bucket["name"], Key=key, Body=body.encode())
    return f"s3://{bucket['name']}/{key}"


def queue_dag(bucket: str) -> dict[str, Any]:
    dag = dag_entry(
        CONTRACT,
        producer={"type": "load"},
        kind="IngestionContract",
        mode="load",
        source={"name": SOURCE, "uri": f"s3://{bucket}/orders/", "format": "csv", "system": "shop", "connection_id": S3_CONN_ID},
        queue={"name": f"{CONTRACT}.queue", "scheme": "sqs", "queue": QUEUE, "conn_id": S3_CONN_ID, "poll_interval_seconds": 5},
    )
    dag["runtime"]["datasets"][0]["quality"] = []
    dag["inlets"] = [SOURCE]
    return dag


def run_all(env: dict[str, Any], dag: dict[str, Any], run_id: str, *events: dict[str, Any]) -> dict[str, Any]:
    manifest = write_manifest(env["root"], [dag])
    run = run_identity(CONTRACT, run_id, triggering_events=tuple(events))
    produced = stages.produce(manifest, CONTRACT, run, opener=env["opener"])
    verdict = stages.audit(manifest, CONTRACT, run, opener=env["opener"])
    stages.publish(manifest, CONTRACT, run, verdict, opener=env["opener"])
    return dict(produced["producer"])


def target(env: dict[str, Any]) -> list[tuple[Any, ...]]:
    with DuckDBWarehouse(env["path"]) as wh:
        return wh.fetch("select order_id, amount from sales.orders order by 1")


def test_loads_exactly_the_objects_the_messages_name_and_keeps_earlier_rows(bucket: dict[str, Any], env: dict[str, Any]) -> None:
    name = bucket["name"]
    a = put(bucket, "orders/2026 04/a file.csv", ("001", "1.50"))
    put(bucket, "orders/not-announced.csv", ("999", "9.00"))
    got = run_all(env, queue_dag(name), "q1", watcher_event(s3_notification(name, "orders/2026 04/a file.csv")))
    # The key arrives URL-encoded ("2026+04/a+file.csv") and is read decoded.
    assert [f["uri"] for f in got["files"]] == [a]
    assert got["source"].startswith(f"queue {QUEUE}: 1 object")
    assert [r[0] for r in target(env)] == ["001"]

    b = put(bucket, "orders/b.csv", ("002", "2.00"), ("001", "1.75"))
    sns = json.dumps({"Type": "Notification", "MessageId": "sns-1", "Message": s3_notification(name, "orders/b.csv")})
    got = run_all(env, queue_dag(name), "q2", watcher_event(sns))
    assert [f["uri"] for f in got["files"]] == [b]
    # The earlier run's rows stay; a primary key the new object repeats takes the new row.
    assert [(r[0], float(r[1])) for r in target(env)] == [("001", 1.75), ("002", 2.0)]
    with DuckDBWarehouse(env["path"]) as wh:
        assert [o["uri"] for o in run_objects(wh, CONTRACT, "orders", "q2", "loaded")] == [b]


def test_a_redelivered_message_loads_nothing_twice(bucket: dict[str, Any], env: dict[str, Any]) -> None:
    name = bucket["name"]
    put(bucket, "orders/a.csv", ("001", "1.50"))
    body = s3_notification(name, "orders/a.csv")
    first = run_all(env, queue_dag(name), "r1", watcher_event(body))
    assert len(first["files"]) == 1 and first["files_skipped"] == 0
    # The same message again (SQS delivers at least once), in a batch with itself.
    again = run_all(env, queue_dag(name), "r2", watcher_event(body, body))
    assert again["files"] == [] and again["files_skipped"] == 1
    assert [r[0] for r in target(env)] == ["001"]


def test_a_message_naming_a_missing_object_fails_without_retry(bucket: dict[str, Any], env: dict[str, Any]) -> None:
    name = bucket["name"]
    put(bucket, "orders/present.csv", ("001", "1.50"))
    with pytest.raises(stages.non_retryable_errors()) as caught:
        run_all(env, queue_dag(name), "m1", watcher_event(s3_notification(name, "orders/present.csv", "orders/gone.csv")))
    assert isinstance(caught.value.__cause__, QueuedObjectMissing)
    text = str(caught.value)
    assert CONTRACT in text and f"s3://{name}/orders/gone.csv" in text and f"Connection {S3_CONN_ID!r}" in text
    # Nothing was published: the message's objects are loaded together or not at all.
    with DuckDBWarehouse(env["path"]) as wh:
        assert not wh.table_exists(target_table("sales", "orders"))


def test_an_object_outside_the_source_location_is_refused(bucket: dict[str, Any], env: dict[str, Any]) -> None:
    name = bucket["name"]
    put(bucket, "elsewhere/x.csv", ("001", "1.50"))
    with pytest.raises(stages.non_retryable_errors()) as caught:
        run_all(env, queue_dag(name), "o1", watcher_event(s3_notification(name, "elsewhere/x.csv")))
    assert f"names 's3://{name}/elsewhere/x.csv', which is not under source.uri 's3://{name}/orders/'" in str(caught.value)


def test_a_run_without_messages_lists_the_source_and_skips_what_was_loaded(bucket: dict[str, Any], env: dict[str, Any]) -> None:
    name = bucket["name"]
    put(bucket, "orders/a.csv", ("001", "1.50"))
    run_all(env, queue_dag(name), "n1", watcher_event(s3_notification(name, "orders/a.csv")))
    b = put(bucket, "orders/b.csv", ("002", "2.00"))
    # A manual run (no triggering event): the objects whose messages never came are caught up.
    got = run_all(env, queue_dag(name), "n2")
    assert [f["uri"] for f in got["files"]] == [b] and got["files_skipped"] == 1
    assert [r[0] for r in target(env)] == ["001", "002"]


def test_named_objects_reads_s3_and_sns_bodies_and_refuses_other_messages() -> None:
    test_event = json.dumps({"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": "b"})
    removed = s3_notification("b", "orders/x.csv", event="ObjectRemoved:Delete")
    found, skipped = named_objects(
        [watcher_event(test_event, removed, s3_notification("b", "orders/a%2Bb.csv")), watcher_event("{}", asset="other")],
        source_asset=SOURCE,
        contract_id=CONTRACT,
        queue=QUEUE,
    )
    # quote_plus of "a%2Bb" is "a%252Bb"; decoded once it is the key S3 holds.
    assert [o.uri for o in found] == ["s3://b/orders/a%2Bb.csv"]
    assert len(skipped) == 2 and "s3:TestEvent" in skipped[0] and "ObjectRemoved:Delete" in skipped[1]
    with pytest.raises(QueueMessageError, match=r"sales\.orders_raw: message m-\w+ from the queue .* is not an S3 event notification"):
        named_objects([watcher_event("plain text")], source_asset=SOURCE, contract_id=CONTRACT, queue=QUEUE)
    assert named_objects([], source_asset=SOURCE, contract_id=CONTRACT, queue=QUEUE) == ([], [])


def test_the_watchers_trigger_receives_a_notification_from_moto_sqs(s3: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The trigger the compiler renders (``MessageQueueTrigger(scheme="sqs", ...)``), run as the
    triggerer runs it, against moto's SQS on loopback: its event's payload is what
    :func:`named_objects` reads, and the message is gone from the queue after it."""
    import asyncio

    from airflow.providers.common.messaging.triggers.msg_queue import (
        MessageQueueTrigger,
    )

    monkeypatch.setenv(f"AIRFLOW_CONN_{S3_CONN_ID.upper()}", s3_connection_json(s3))
    sqs = sqs_client(s3)
    url = sqs.create_queue(QueueName="ca-watcher-trigger")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody=s3_notification("bkt", "orders/one two.csv"))
    trigger = MessageQueueTrigger(scheme="sqs", sqs_queue=url, aws_conn_id=S3_CONN_ID, waiter_delay=1)
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow.providers.amazon.aws.triggers.sqs.SqsSensorTrigger" and kwargs["sqs_queue"] == url

    async def first_event() -> Any:
        async for event in trigger.run():
            return event
        return None

    event = asyncio.run(asyncio.wait_for(first_event(), timeout=60))
    assert event is not None and event.payload["status"] == "success"
    extra = {"from_trigger": True, "payload": event.payload}
    found, _ = named_objects(
        [{"asset": SOURCE, "extra": extra}], source_asset=SOURCE, contract_id=CONTRACT, queue=url
    )
    assert [o.uri for o in found] == ["s3://bkt/orders/one two.csv"]
    left = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", [])
    assert left == []
