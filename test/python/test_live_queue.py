"""Event-driven ingestion on the live stack (issue 36 item 4, ADR 0034): a load on
``trigger: {queue: ...}`` runs when its SQS queue receives an S3 event notification, with no
schedule, and loads the object the notification names.

One moto server on loopback serves S3 and SQS (:func:`servers.s3_server`); the AWS Connection
``aws_events`` (``endpoint_url`` to it) is created through the REST API, so the triggerer and the
tasks read it from the metadata database as a deployment's would. The project (one contract,
compiled here with the moto queue URL) is brought with :meth:`LiveStack.add_project`.

The scenario, on the session's ``live_stack`` (LocalExecutor, PostgreSQL warehouse):

1. The DAG is unpaused; the dag-processor, parsing it again, registers the source Asset's watcher,
   and the triggerer starts the ``SqsSensorTrigger`` (``MessageQueueTrigger(scheme="sqs")``).
2. An object is put and its notification sent to the queue: the trigger receives and deletes it,
   Airflow records an Asset event of the source with the message in ``extra.payload``, and the
   scheduler starts an ``asset_triggered`` run; its rows are in the warehouse.
3. A notification naming an object that does not exist: the next run fails in ``produce``, once
   (not retried), and the task log names the contract, the object's URI and the Connection.

The DAG is paused again and the Connection deleted at the end; the stack is left quiescent.
"""

from __future__ import annotations

import json
import shutil
import urllib.parse
from collections.abc import Iterator
from typing import Any

import dagcheck
import pytest
from livestack import LiveStack
from servers import s3_client, s3_server, sqs_client

DAG_ID = "eventshop.orders_raw"
SOURCE = "eventshop_platform.orders_export"
CONN_ID = "aws_events"
BUCKET = "eventshop-exports"
TIMEOUT_S = 300

CONTRACT = """apiVersion: contract-assets/v1
kind: IngestionContract
id: eventshop.orders_raw
version: 1.0.0
status: active
domain: eventshop
owner: team-eventshop
description: Orders the shop exports; the bucket notifies an SQS queue of each new object.
mode: load
source:
  name: eventshop_platform.orders_export
  uri: "s3://{bucket}/orders/"
  system: eventshop_platform
  format: csv
  connection_id: {conn_id}
trigger:
  queue: "{queue}"
  poll_interval: PT2S
datasets:
  - name: orders_raw
    schema:
      version: 1
      properties:
        - {{name: order_id, logicalType: string, required: true, primaryKey: true}}
        - {{name: amount, logicalType: number, required: true}}
"""


def notification(key: str) -> str:
    """An S3 event notification (AWS "Event message structure") of one put, the key URL-encoded."""
    return json.dumps(
        {
            "Records": [
                {
                    "eventVersion": "2.1",
                    "eventSource": "aws:s3",
                    "awsRegion": "us-east-1",
                    "eventName": "ObjectCreated:Put",
                    "s3": {"bucket": {"name": BUCKET}, "object": {"key": urllib.parse.quote_plus(key, safe="/")}},
                }
            ]
        }
    )


@pytest.fixture(scope="module")
def aws() -> Iterator[dict[str, Any]]:
    with s3_server() as server:
        yield server


@pytest.fixture(scope="module")
def queued(live_stack: LiveStack, aws: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    s3, sqs = s3_client(aws), sqs_client(aws)
    s3.create_bucket(Bucket=BUCKET)
    queue = sqs.create_queue(QueueName="eventshop-orders-exports")["QueueUrl"]
    root = tmp_path_factory.mktemp("queue") / "project"
    shutil.copytree(dagcheck.PROJECT_CASES / "_base", root)
    (root / "contracts" / "eventshop").mkdir(parents=True)
    (root / "contracts" / "eventshop" / "orders_raw.yaml").write_text(
        CONTRACT.format(bucket=BUCKET, conn_id=CONN_ID, queue=queue), encoding="utf-8"
    )
    compiled = dagcheck.run_compile(root)
    assert compiled.returncode == 0, compiled.describe()
    extra = json.dumps({"endpoint_url": aws["endpoint_url"], "region_name": "us-east-1"})
    status, body = live_stack.api(
        "POST", "/connections",
        {"connection_id": CONN_ID, "conn_type": "aws", "login": aws["access_key"], "password": aws["secret_key"], "extra": extra},
    )
    assert status in (200, 201), (status, body)
    live_stack.add_project("queue", root)
    live_stack.wait_for_dags([DAG_ID])
    known = {r["dag_run_id"] for r in live_stack.dag_runs(DAG_ID)}
    live_stack.unpause(DAG_ID)
    try:
        # 1. the dag-processor registers the watcher of an unpaused DAG's Asset at its next parse
        registered = live_stack.wait(lambda: _watchers(live_stack) or None, f"the watcher of {SOURCE}", TIMEOUT_S, interval=2)
        # 2. an object and its notification: the watcher starts the load
        s3.put_object(Bucket=BUCKET, Key="orders/2026-04-15 a.csv", Body=b"order_id,amount\nq1,1.50\nq2,2.25\n")
        sqs.send_message(QueueUrl=queue, MessageBody=notification("orders/2026-04-15 a.csv"))
        first = _wait_for_run(live_stack, known, 1)
        # 3. a notification of an object that is not there
        sqs.send_message(QueueUrl=queue, MessageBody=notification("orders/never-put.csv"))
        second = _wait_for_run(live_stack, known, 2)
        left = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", [])
        yield {"queue": queue, "runs": [first, second], "left": left, "watchers": registered}
    finally:
        live_stack.unpause(DAG_ID, paused=True)
        # paused, its Asset has no watcher any more (next parse): nothing polls the queue after this module
        live_stack.wait(lambda: _watchers(live_stack) == [] or None, f"the watcher of {SOURCE} removed", TIMEOUT_S, interval=2)
        live_stack.wait_until_quiescent(timeout=TIMEOUT_S)
        live_stack.api("DELETE", f"/connections/{CONN_ID}")


def _watchers(stack: LiveStack) -> list[str]:
    """The names of the source Asset's watchers (``GET /assets``)."""
    assets = [a for a in stack.get("/assets", key="assets", name_pattern=SOURCE) if a["name"] == SOURCE]
    return sorted(w["name"] for a in assets for w in a["watchers"])


def _wait_for_run(stack: LiveStack, known: set[str], n: int) -> dict[str, Any]:
    """The ``n``-th new run of the DAG once it has ended."""

    def ended() -> dict[str, Any] | None:
        runs = [r for r in stack.dag_runs(DAG_ID) if r["dag_run_id"] not in known]
        if len(runs) < n or runs[n - 1]["state"] not in ("success", "failed"):
            return None
        return runs[n - 1]

    try:
        return dict(stack.wait(ended, f"run {n} of {DAG_ID} ends", TIMEOUT_S, interval=1))
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- triggerer log\n{stack.log('triggerer', 80)}") from None


def test_a_notification_starts_the_load_with_no_schedule(queued: dict[str, Any], live_stack: LiveStack) -> None:
    assert queued["watchers"] == [f"{DAG_ID}.queue"]
    run = queued["runs"][0]
    assert (run["run_type"], run["state"]) == ("asset_triggered", "success"), (
        live_stack.failed_task_logs([run]) + live_stack.diagnose([run])
    )
    (event,) = live_stack.triggering_events(DAG_ID, run["dag_run_id"])
    assert event["name"] == SOURCE and event["extra"]["from_trigger"] is True
    (message,) = event["extra"]["payload"]["message_batch"]
    assert json.loads(message["Body"])["Records"][0]["s3"]["object"]["key"] == "orders/2026-04-15+a.csv"
    assert live_stack.postgres is not None
    rows = live_stack.postgres.psql("warehouse", "select order_id || '=' || round(amount::numeric, 2) from eventshop.orders_raw order by 1")
    assert rows.split() == ["q1=1.50", "q2=2.25"], rows
    log = live_stack.task_log(DAG_ID, run["dag_run_id"], "produce")
    assert f"s3://{BUCKET}/orders/2026-04-15 a.csv" in log, log[-3000:]


def test_a_notification_of_a_missing_object_fails_the_run_with_a_clear_error(queued: dict[str, Any], live_stack: LiveStack) -> None:
    run = queued["runs"][1]
    assert (run["run_type"], run["state"]) == ("asset_triggered", "failed"), run
    tasks = {t["task_id"]: (t["state"], t["try_number"]) for t in live_stack.task_instances(DAG_ID, run["dag_run_id"])}
    # failed at once: the error is not retryable (the defaults allow one retry)
    assert tasks["produce"] == ("failed", 1) and tasks["publish"][0] == "upstream_failed", tasks
    log = live_stack.task_log(DAG_ID, run["dag_run_id"], "produce")
    expected = f"{DAG_ID}: queue message "
    assert expected in log and f"names 's3://{BUCKET}/orders/never-put.csv', which does not exist (read with Connection {CONN_ID!r})" in log, log[-4000:]
    # the triggerer deleted both messages on reception
    assert queued["left"] == []
