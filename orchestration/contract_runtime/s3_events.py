"""The objects an event-driven ingestion's queue messages name (issue 36, ADR 0034).

An ingestion on ``trigger: {queue: <SQS queue URL>}`` has an ``AssetWatcher`` on its source Asset:
the triggerer runs ``MessageQueueTrigger(scheme="sqs")``, i.e. the Amazon provider's
``SqsSensorTrigger``, which receives up to ``max_messages`` messages, deletes them from the queue
and yields ``TriggerEvent({"status": "success", "message_batch": [message, ...]})``. Airflow
(``airflow/models/trigger.py`` ``Trigger.submit_event``) records that as an Asset event of the
source Asset with ``extra = {"from_trigger": True, "payload": <the event's payload>}``; the DAG
run it starts sees it in ``triggering_asset_events``. Each message is the SQS
``ReceiveMessage`` shape (``MessageId``, ``ReceiptHandle``, ``Body``, ...), its ``Body`` an S3 event
notification (AWS, "Event message structure"): ``{"Records": [{"eventSource": "aws:s3",
"eventName": "ObjectCreated:Put", "s3": {"bucket": {"name": ...}, "object": {"key": ...}}}]}``,
whose keys are URL-encoded as in an HTML form (a space is ``+``). A bucket that notifies an SNS
topic that fans out to the queue wraps it: ``{"Type": "Notification", "Message": "<the S3 JSON>"}``.

Read here: every ``ObjectCreated:*`` record, as ``s3://<bucket>/<decoded key>``. Skipped, with a
reason: ``s3:TestEvent`` messages (S3 sends one when the notification is configured) and records of
other events (``ObjectRemoved:*``, ...). A message that is not an S3 event notification is an
error: it was deleted from the queue on reception, so ignoring it would lose what it announced.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from contract_runtime.errors import ProducerError

__all__ = ["NamedObject", "QueueMessageError", "named_objects"]


class QueueMessageError(ProducerError):
    """A queue message is not an S3 event notification (not retryable: the message is gone)."""


@dataclass(frozen=True)
class NamedObject:
    """One object a message names.

    :ivar uri: ``s3://<bucket>/<key>``, the key URL-decoded.
    :ivar message_id: The SQS ``MessageId`` of the message that named it.
    :ivar event_name: The S3 event (``ObjectCreated:Put``, ...).
    """

    uri: str
    message_id: str
    event_name: str


def _notification(body: Any) -> Mapping[str, Any] | None:
    """The S3 notification document of a message body (unwrapping SNS), or None when it is none."""
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return None
    if not isinstance(body, Mapping):
        return None
    if body.get("Type") == "Notification" and "Message" in body:
        return _notification(body["Message"])
    return body


def named_objects(
    events: Iterable[Mapping[str, Any]], *, source_asset: str, contract_id: str, queue: str
) -> tuple[list[NamedObject], list[str]]:
    """The objects named by the queue messages of the triggering Asset events of ``source_asset``.

    :param events: ``RunIdentity.triggering_events`` (``{"asset", "extra", ...}``), oldest first.
    :param source_asset: The source Asset's name; events of other Assets are not read.
    :param contract_id: Named first in every message.
    :param queue: The queue URL, named in messages.
    :returns: ``(objects in message order, each URI once, skipped: one line per skipped
        message or record)``. No watcher event at all gives ``([], [])``.
    :raises QueueMessageError: A message whose body is not an S3 event notification, or a record
        without a bucket name or object key.
    """
    found: list[NamedObject] = []
    seen: set[str] = set()
    skipped: list[str] = []
    for event in events:
        if event.get("asset") != source_asset:
            continue
        extra = event.get("extra") or {}
        payload = extra.get("payload") if isinstance(extra, Mapping) else None
        batch = payload.get("message_batch") if isinstance(payload, Mapping) else None
        if not isinstance(batch, list):
            continue
        for message in batch:
            message_id = str(message.get("MessageId", "?")) if isinstance(message, Mapping) else "?"
            body = message.get("Body") if isinstance(message, Mapping) else None
            document = _notification(body)
            if document is None:
                raise QueueMessageError(
                    f"{contract_id}: message {message_id} from the queue {queue!r} is not an S3 event notification "
                    f"(its body is not a JSON object): nothing was loaded; the message is no longer in the queue"
                )
            if document.get("Event") == "s3:TestEvent":
                skipped.append(f"message {message_id}: s3:TestEvent")
                continue
            records = document.get("Records")
            if not isinstance(records, list):
                raise QueueMessageError(
                    f"{contract_id}: message {message_id} from the queue {queue!r} is not an S3 event notification "
                    f"(no \"Records\" list): nothing was loaded; the message is no longer in the queue"
                )
            for i, record in enumerate(records):
                name = str(record.get("eventName", "")) if isinstance(record, Mapping) else ""
                if not isinstance(record, Mapping) or record.get("eventSource") != "aws:s3" or not name.startswith("ObjectCreated:"):
                    skipped.append(f"message {message_id} record {i}: {name or 'not an S3 record'}")
                    continue
                s3 = record.get("s3") or {}
                bucket = (s3.get("bucket") or {}).get("name") if isinstance(s3, Mapping) else None
                key = (s3.get("object") or {}).get("key") if isinstance(s3, Mapping) else None
                if not bucket or not key:
                    raise QueueMessageError(
                        f"{contract_id}: message {message_id} from the queue {queue!r}, record {i}: "
                        f"no s3.bucket.name or s3.object.key"
                    )
                uri = f"s3://{bucket}/{urllib.parse.unquote_plus(str(key))}"
                # A redelivered message, or two notifications of one put: the object is read once.
                if uri in seen:
                    continue
                seen.add(uri)
                found.append(NamedObject(uri, message_id, name))
    return found, skipped
