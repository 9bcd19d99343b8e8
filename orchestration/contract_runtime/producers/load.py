"""The ingestion ``load`` producer: objects (CSV, JSON lines, Parquet) into staging.

Where the objects come from (:func:`source_objects`):

- the manifest's ``sample_data`` (project-relative; the bundled demo), read as a ``file://``
  object;
- ``source.manifest`` (compiled when the source is an ``extract`` contract's dataset): every
  extract manifest (``<landing>/run-*/_manifest.json``) and exactly the files each one lists;
  a file whose SHA-256 differs from its manifest fails the task;
- an event-driven load (``runtime.queue``, ``trigger: {queue: ...}``; ADR 0034): the objects the
  S3 event notifications of its triggering Asset events name (:func:`queued_objects`,
  :mod:`contract_runtime.s3_events`), each of which must exist (else :class:`QueuedObjectMissing`)
  and be at ``source.uri``; a run with no message among its events (a manual run) lists
  ``source.uri`` instead;
- else ``source.uri`` with ``source.connection_id``, through
  :mod:`contract_runtime.objectstore` (Airflow's ``ObjectStoragePath``): one object, a prefix or
  a glob, on any scheme a provider registers.

Each object is copied to a temporary folder (its size and SHA-256 measured on the way) and read
there with DuckDB (``read_csv`` with every column as text, ``read_json`` newline-delimited,
``read_parquet``); each contract column is cast to its contract type, so the file's own type
guesses never decide (``00123`` stays a string). Every object's URI, key, size, ETag, SHA-256
and row count is in the produce summary and in ``_ca_state.objects``. Messages name the object's
URI, never the temporary copy: a value that does not convert to its contract type fails with
:class:`SourceValueError` naming the object, the line (CSV, JSON lines) or row (Parquet), the
property, the value and the contract type.

Schema drift is checked per object (:mod:`contract_runtime.drift`); a blocking diff writes a
proposed contract and fails with the diff.

Incremental (``incremental.watermark: <column>``):

- an object already loaded by another run (same URI and version: ETag, else SHA-256) is not
  read again; a new object, or a new version of one, is;
- only rows with ``column > stored watermark`` are new; staging = the new rows + the current
  target rows, except target rows whose primary key appears among the new rows;
- the objects turn ``loaded`` and the watermark advances only in the publish transaction, so a
  failed run loads its objects again next time, and a re-run of a published DAG run finds the
  publication and does not swap again (no duplicate rows).

An event-driven load accumulates as an incremental one does, with or without a watermark: its
objects are added to the published rows (a primary key they repeat takes the new row), and an
object already loaded (a redelivered message) is skipped.

When the target table does not exist, the stored watermark and object records are ignored and
everything is loaded. Without ``incremental`` (and without a queue) every object is loaded on
every run, and the objects' rows replace the table.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import tempfile
import urllib.parse
from typing import Any

from contract_runtime import objectstore
from contract_runtime.drift import (
    SchemaDiff,
    SchemaDriftError,
    proposal_location,
    schema_diff,
    write_proposal,
)
from contract_runtime.manifest import project_root, resolve_project_path
from contract_runtime.objectstore import StoredObject
from contract_runtime.partitions import partition_of
from contract_runtime.producers import ProduceRequest, ProducerError
from contract_runtime.s3_events import named_objects
from contract_runtime.sqlutil import quote_ident, sql_type
from contract_runtime.state import get_watermark, loaded_versions, record_objects

__all__ = [
    "MANIFEST_NAME",
    "PARTITION_PLACEHOLDER",
    "QueuedObjectMissing",
    "SourceValueError",
    "describe_source",
    "fail_on_drift",
    "local_stand_in",
    "produce",
    "queued_objects",
    "read_source",
    "source_objects",
    "with_partition",
]

log = logging.getLogger(__name__)

#: File name of an extract run's manifest object, under its run prefix.
MANIFEST_NAME: str = "_manifest.json"

_READERS: dict[str, str] = {
    "csv": "read_csv(?, header = true, all_varchar = true)",
    "jsonl": "read_json(?, format = 'newline_delimited')",
    "json": "read_json(?, format = 'auto')",
    "parquet": "read_parquet(?)",
}


def local_stand_in(uri: str, base_dir: str) -> str:
    """The local ``file://`` folder that stands in for an object-store location in the demo.

    ``s3://bucket/a/b`` under ``base_dir`` gives ``file://<base_dir>/object-store/s3/bucket/a/b``.
    """
    parts = urllib.parse.urlsplit(uri)
    path = os.path.join(os.path.abspath(base_dir), "object-store", parts.scheme or "file", parts.netloc, parts.path.lstrip("/"))
    return "file://" + urllib.parse.quote(path)


def warehouse_dir(request: ProduceRequest) -> str | None:
    """The folder of an embedded (DuckDB) warehouse file, else None."""
    try:
        location = request.warehouse.location()
    except Exception:  # noqa: BLE001 - a warehouse that cannot tell has no folder
        return None
    return os.path.dirname(os.path.abspath(location.duckdb_file)) if location.duckdb_file else None


#: Environment variable naming the folder under which ``object-store/`` stands in for object
#: storage when a contract runs on its sample data (:func:`local_stand_in`).
STAND_IN_DIR_ENV = "CONTRACT_ASSETS_OBJECT_STORE_DIR"


def _demo_base(request: ProduceRequest) -> str:
    """Where the sample-data stand-in for object storage lives: ``$CONTRACT_ASSETS_OBJECT_STORE_DIR``,
    else the embedded warehouse's folder, else the project root."""
    return os.environ.get(STAND_IN_DIR_ENV) or warehouse_dir(request) or str(project_root(request.manifest_path))


#: The placeholder a partitioned ingestion's ``source.uri`` (or its local ``sample_data``) may hold.
PARTITION_PLACEHOLDER = "{partition}"


def with_partition(request: ProduceRequest, location: str) -> str:
    """``location`` with every ``{partition}`` replaced by the run's partition key (issue 35;
    docs/contract-format.md "Partitions"): ``s3://exports/events/{partition}/`` reads
    ``s3://exports/events/2026-04-15T09/`` in the run of key ``2026-04-15T09``. The compiler
    refuses the placeholder in an unpartitioned contract (CA4611); here it is then left as is.

    :raises contract_runtime.partitions.PartitionKeyError: A partitioned run without a valid key.
    """
    partition = partition_of(request.dag, request.run.partition_key)
    if partition is None:
        return location
    return location.replace(PARTITION_PLACEHOLDER, partition.key)


def source_objects(request: ProduceRequest) -> tuple[list[StoredObject], str | None, str]:
    """The objects this run may load (module doc), the Connection id to read them, and what was listed.

    :returns: ``(objects sorted by URI, connection id, the listed URI)``; manifest-listed objects
        carry the manifest's ``sha256`` (verified after download).
    :raises ObjectStoreError: The location cannot be listed, or nothing matches a non-manifest source.
    """
    runtime = request.runtime
    source = runtime.get("source") or {}
    sample = runtime.get("sample_data")
    manifest_source = source.get("manifest")
    if sample and not manifest_source:
        path = resolve_project_path(request.manifest_path, with_partition(request, str(sample)))
        if not path.is_file():
            raise ProducerError(f"{request.contract_id}: source file {str(path)!r} (sample_data) does not exist")
        uri = "file://" + urllib.parse.quote(str(path))
        return objectstore.list_objects(uri, None, contract_id=request.contract_id), None, uri
    if manifest_source:
        root = str(manifest_source["uri"])
        conn_id = manifest_source.get("connection_id")
        if manifest_source.get("local_demo"):
            root, conn_id = local_stand_in(root, _demo_base(request)), None
        pattern = objectstore.join_uri(root, "run-*", MANIFEST_NAME)
        objects: list[StoredObject] = []
        for entry in objectstore.list_objects(pattern, conn_id, contract_id=request.contract_id):
            listed = json.loads(objectstore.read_bytes(entry.uri, conn_id, contract_id=request.contract_id))
            for f in listed.get("files", []):
                objects.append(StoredObject(str(f["uri"]), str(f["key"]), int(f["size"]), None, str(f["sha256"])))
        return sorted(objects, key=lambda o: o.uri), conn_id, pattern
    uri = with_partition(request, str(source.get("uri", "")))
    conn_id = source.get("connection_id")
    queue = runtime.get("queue")
    if queue:
        named = queued_objects(request, uri, conn_id)
        if named is not None:
            return named
    objects = objectstore.list_objects(uri, conn_id, contract_id=request.contract_id)
    if not objects:
        raise objectstore.ObjectStoreError(
            f"{request.contract_id}: no object matches {uri!r} (Connection {conn_id!r})"
        )
    return objects, conn_id, uri


class QueuedObjectMissing(objectstore.ObjectStoreError):
    """A queue message names an object that does not exist (not retryable: the message is gone)."""


def _under(uri: str, location: str) -> bool:
    """Whether object ``uri`` is at ``location``: the object itself, under the prefix, or matching the glob."""
    if any(ch in location for ch in "*?["):
        return fnmatch.fnmatchcase(uri, location)
    return uri == location or uri.startswith(location if location.endswith("/") else location + "/")


def queued_objects(request: ProduceRequest, location: str, conn_id: str | None) -> tuple[list[StoredObject], str | None, str] | None:
    """The objects an event-driven run loads (``runtime.queue``; ADR 0034): those the queue
    messages of its triggering Asset events name (:func:`contract_runtime.s3_events.named_objects`),
    or None when no event carries a message (a manual run: the caller lists ``location``, and
    objects loaded before are skipped).

    :param location: ``source.uri``; every named object must be at it.
    :returns: ``(objects sorted by URI, connection id, "queue <url>: n message object(s)")``.
    :raises QueuedObjectMissing: A named object does not exist (names the contract, the object,
        the Connection and the message).
    :raises ObjectStoreError: A named object outside ``location``, or one that cannot be read.
    :raises QueueMessageError: A message that is not an S3 event notification.
    """
    queue = request.runtime["queue"]
    source = request.runtime.get("source") or {}
    named, skipped = named_objects(
        request.run.triggering_events, source_asset=str(source.get("name", "")), contract_id=request.contract_id, queue=str(queue["queue"])
    )
    for line in skipped:
        log.info("%s: skipped %s", request.contract_id, line)
    if not named:
        if skipped:
            log.info("%s: the queue messages name no new object", request.contract_id)
            return [], conn_id, f"queue {queue['queue']}: 0 objects"
        log.info("%s: no queue message among the triggering events: listing %s", request.contract_id, location)
        return None
    objects: list[StoredObject] = []
    for item in named:
        if not _under(item.uri, location):
            raise objectstore.ObjectStoreError(
                f"{request.contract_id}: queue message {item.message_id} names {item.uri!r}, which is not under "
                f"source.uri {location!r}: not loaded (the bucket notifies this queue of objects the contract does not read)"
            )
        if not objectstore.exists(item.uri, conn_id, contract_id=request.contract_id):
            raise QueuedObjectMissing(
                f"{request.contract_id}: queue message {item.message_id} ({item.event_name}) names {item.uri!r}, "
                f"which does not exist (read with Connection {conn_id!r}): nothing was loaded"
            )
        log.info("%s: queue message %s (%s) names %s", request.contract_id, item.message_id, item.event_name, item.uri)
        objects.extend(objectstore.list_objects(item.uri, conn_id, contract_id=request.contract_id))
    # Sort for determinism: messages arrive in any order.
    return sorted(objects, key=lambda o: o.uri), conn_id, f"queue {queue['queue']}: {len(objects)} object(s)"


def describe_source(
    con: Any, path: str, fmt: str, *, uri: str | None = None, contract_id: str | None = None
) -> list[tuple[str, str]]:
    """``[(column, DuckDB type)]`` of one local file.

    :param uri: The object the file is a copy of, named in messages instead of ``path`` (a
        temporary copy the user never sees); default ``path``.
    :param contract_id: The contract, named first in messages.
    :raises ProducerError: An unknown format, or a file DuckDB cannot read as ``fmt``.
    """
    import duckdb

    reader = _READERS.get(fmt)
    if reader is None:
        raise ProducerError(f"source format {fmt!r} is not supported (csv, jsonl, parquet)")
    try:
        return [(str(r[0]), str(r[1])) for r in con.execute(f"describe select * from {reader}", [path]).fetchall()]
    except duckdb.Error as exc:
        who = f"{contract_id}: " if contract_id else ""
        raise ProducerError(f"{who}cannot read {fmt} object {uri or path!r}: {_said(exc, path, uri)}") from exc


def _said(exc: BaseException, path: str, uri: str | None) -> str:
    """What DuckDB said, with the local copy's path replaced by the object's URI (its messages name
    the file they read, ``file = /tmp/ca-load-…/…``)."""
    text = str(exc)
    return text.replace(path, uri) if uri else text


class SourceValueError(ProducerError):
    """A value of a source object does not convert to its contract type.

    :ivar uri: The source object (never a local copy).
    :ivar place: ``"line"`` (CSV, JSON lines: the physical line the record starts on, the header
        being line 1) or ``"row"`` (Parquet, JSON: the 1-based record number); None when the
        record could not be located.
    :ivar number: The line or row number, or None.
    :ivar column: The contract property, or None.
    :ivar value: The value as read (text), or None.
    """

    def __init__(
        self, message: str, *, uri: str, place: str | None, number: int | None, column: str | None, value: str | None
    ) -> None:
        super().__init__(message)
        self.uri = uri
        self.place = place
        self.number = number
        self.column = column
        self.value = value


#: Longest value quoted in a conversion message (characters).
_VALUE_SHOWN = 80


def _first_bad_value(
    con: Any, path: str, fmt: str, properties: list[dict[str, Any]]
) -> tuple[int, dict[str, Any], str] | None:
    """``(1-based record number, property, value as text)`` of the first value (record order, then
    schema order) that does not convert to its contract type, or None.

    Runs only after a cast failed: one thread, so ``row_number() over ()`` follows the file's order.
    """
    reader = _READERS[fmt]
    bad = [
        f"({quote_ident(p['name'])} is not null and try_cast({quote_ident(p['name'])} as {sql_type(p, 'duckdb')}) is null)"
        for p in properties
    ]
    shown = ", ".join(f"{b}, cast({quote_ident(p['name'])} as varchar)" for b, p in zip(bad, properties, strict=True))
    con.execute("set threads = 1")
    row = con.execute(
        f"select ordinal, {shown} from (select row_number() over () as ordinal, * from {reader}) as src "
        f"where {' or '.join(bad)} order by ordinal limit 1",
        [path],
    ).fetchone()
    if row is None:
        return None
    for i, prop in enumerate(properties):
        if row[1 + 2 * i]:
            return int(row[0]), prop, str(row[2 + 2 * i])
    return None


def _record_line(con: Any, path: str, fmt: str, record: int) -> tuple[str, int]:
    """Where record ``record`` (1-based, in DuckDB's order) is in the file: ``("line", n)`` for CSV
    and JSON lines (the physical line it starts on, blank lines skipped as DuckDB skips them;
    a CSV header is line 1), else ``("row", record)``."""
    if fmt == "csv":
        import csv

        sniffed = con.execute("select Delimiter, Quote, Escape from sniff_csv(?)", [path]).fetchone()
        delimiter, quote, escape = (str(v) for v in sniffed) if sniffed else (",", '"', "")
        options: dict[str, Any] = {"delimiter": delimiter[:1] or ","}
        if quote and quote != "(empty)":
            options["quotechar"] = quote[:1]
        if escape and escape not in ("(empty)", quote):
            options["escapechar"], options["doublequote"] = escape[:1], False
        with open(path, encoding="utf-8", errors="replace", newline="") as handle:
            reader = csv.reader(handle, **options)
            seen = -1  # the header is record 0
            while True:
                start = reader.line_num + 1
                try:
                    fields = next(reader)
                except (StopIteration, csv.Error):
                    break
                if not fields:
                    continue
                seen += 1
                if seen == record:
                    return "line", start
    elif fmt == "jsonl":
        with open(path, encoding="utf-8", errors="replace") as handle:
            seen = 0
            for number, text in enumerate(handle, start=1):
                if text.strip():
                    seen += 1
                    if seen == record:
                        return "line", number
    return "row", record


def _conversion_error(
    con: Any, path: str, fmt: str, properties: list[dict[str, Any]], uri: str | None, contract_id: str | None,
    exc: BaseException,
) -> SourceValueError:
    """The message of a value that does not convert: the object's URI, the line (or row), the
    property, the value and the contract type; never the local copy's path."""
    import duckdb

    where = uri or path
    who = f"{contract_id}: " if contract_id else ""
    try:
        found = _first_bad_value(con, path, fmt, properties)
        placed = _record_line(con, path, fmt, found[0]) if found else None
    except (duckdb.Error, OSError, ValueError):
        found, placed = None, None
    if found is None or placed is None:
        return SourceValueError(
            f"{who}a value of {where!r} does not convert to its contract type: {_said(exc, path, uri)}",
            uri=where, place=None, number=None, column=None, value=None,
        )
    _, prop, value = found
    place, number = placed
    shown = value if len(value) <= _VALUE_SHOWN else value[: _VALUE_SHOWN - 1] + "\u2026"
    declared = f"logicalType {prop.get('logicalType')}" if prop.get("physicalType") is None else "physicalType"
    return SourceValueError(
        f"{who}{where!r} {place} {number}: value {shown!r} of property {prop['name']!r} does not convert to its "
        f"contract type {sql_type(prop, 'duckdb')} ({declared})",
        uri=where, place=place, number=number, column=str(prop["name"]), value=value,
    )


def _read_rows(
    con: Any,
    path: str,
    fmt: str,
    properties: list[dict[str, Any]],
    watermark: tuple[str, str] | None,
    *,
    uri: str | None = None,
    contract_id: str | None = None,
) -> tuple[list[tuple[Any, ...]], int]:
    import duckdb

    reader = _READERS[fmt]
    casts = ", ".join(
        f"cast({quote_ident(p['name'])} as {sql_type(p, 'duckdb')}) as {quote_ident(p['name'])}" for p in properties
    )
    query = f"select {casts} from {reader}"
    params: list[Any] = [path]
    try:
        total = int(con.execute(f"select count(*) from {reader}", [path]).fetchone()[0])
    except duckdb.Error as exc:
        who = f"{contract_id}: " if contract_id else ""
        raise ProducerError(f"{who}cannot read {fmt} object {uri or path!r}: {_said(exc, path, uri)}") from exc
    if watermark is not None:
        column, value = watermark
        prop = next((p for p in properties if p["name"] == column), None)
        if prop is None:
            raise ProducerError(f"watermark column {column!r} is not in the contract schema")
        query = f"select * from ({query}) as src where {quote_ident(column)} > cast(? as {sql_type(prop, 'duckdb')})"
        params.append(value)
    try:
        return [tuple(r) for r in con.execute(query, params).fetchall()], total
    except duckdb.ConversionException as exc:
        raise _conversion_error(con, path, fmt, properties, uri, contract_id, exc) from exc


def read_source(
    path: str,
    fmt: str,
    properties: list[dict[str, Any]],
    *,
    abort_on_drift: bool,
    watermark: tuple[str, str] | None = None,
    uri: str | None = None,
    contract_id: str | None = None,
) -> tuple[list[tuple[Any, ...]], int]:
    """Read one local file with DuckDB, cast to the contract's types, keep rows above the watermark.

    :param path: File path.
    :param fmt: ``csv``, ``jsonl`` (``json``) or ``parquet``.
    :param properties: The dataset's ``schema.properties``.
    :param abort_on_drift: Fail on any schema difference (``abort``), else only on removed or
        type-changed columns (no proposal is written here; :func:`produce` writes one).
    :param watermark: ``(column, value as text)`` to keep only rows with ``column > value``.
    :param uri: The object ``path`` is a local copy of, named in every message instead of ``path``;
        default ``path``.
    :param contract_id: The contract, named first in every message.
    :returns: ``(rows in schema column order, number of rows in the file)``.
    :raises SourceValueError: A value that does not convert to its contract type (names the
        object, the line or row, the property, the value and the type).
    :raises ProducerError: An unknown format, a missing file, drift.
    """
    import duckdb

    who = f"{contract_id}: " if contract_id else ""
    if not os.path.exists(path):
        raise ProducerError(f"{who}source file {uri or path!r} does not exist")
    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'UTC'")
        diff = schema_diff(properties, describe_source(con, path, fmt, uri=uri, contract_id=contract_id), fmt)
        if diff.blocking("abort" if abort_on_drift else None):
            raise ProducerError(f"{who}schema drift in {uri or path!r}: {diff.describe()}")
        return _read_rows(con, path, fmt, properties, watermark, uri=uri, contract_id=contract_id)
    finally:
        con.close()


def fail_on_drift(request: ProduceRequest, dataset: str, diff: SchemaDiff, where: str) -> None:
    """Apply ``on_schema_drift`` to a diff: report added columns, or write a proposal and raise.

    :param where: The URI (or query) whose schema was observed, named in the message.
    :raises SchemaDriftError: When the diff blocks; its message has the diff and the proposal.
    """
    mode = request.runtime.get("on_schema_drift")
    if not diff.blocking(mode):
        if diff.added:
            log.warning(
                "%s: columns not in the contract are ignored (on_schema_drift: %s) in %s: %s",
                request.contract_id,
                mode or "allow_additive",
                where,
                ", ".join(n for n, _ in diff.added),
            )
        return
    contract_file = str(request.dag.get("contract") or "")
    contract = _contract_document(request, contract_file)
    proposal: str | None
    try:
        proposal = write_proposal(
            contract=contract,
            contract_file=contract_file,
            dataset=dataset,
            diff=diff,
            run_id=request.run.run_id,
            dag_id=request.contract_id,
            location=proposal_location(request.runtime, warehouse_dir(request), str(project_root(request.manifest_path))),
            file_stem=f"{request.contract_id}.{request.run.run_hash}",
        )
        written = f"proposed contract written to {proposal}"
    except Exception as exc:  # noqa: BLE001 - the drift is the error to report; the proposal is a help
        proposal = None
        written = f"no proposed contract written ({type(exc).__name__}: {exc})"
    log.error("%s: schema drift in %s: %s", request.contract_id, where, diff.describe())
    raise SchemaDriftError(
        f"{request.contract_id}: schema drift in {where!r} (on_schema_drift: {mode or 'allow_additive'}): "
        f"{diff.describe()}; {written}",
        diff,
        proposal,
    )


def _contract_document(request: ProduceRequest, contract_file: str) -> dict[str, Any]:
    """The contract as written (when the worker has the project), else rebuilt from the manifest."""
    import yaml

    if contract_file:
        path = resolve_project_path(request.manifest_path, contract_file)
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
            if isinstance(loaded, dict):
                return loaded
        except (OSError, yaml.YAMLError):
            pass
    runtime = request.runtime
    return {
        "apiVersion": "contract-assets/v1",
        "kind": runtime.get("kind", "IngestionContract"),
        "id": request.contract_id,
        "version": str(request.dag.get("contract_version", "")),
        "domain": runtime.get("domain"),
        "datasets": [{"name": d["name"], "schema": json.loads(json.dumps(d["schema"]))} for d in runtime["datasets"]],
    }


def produce(request: ProduceRequest) -> dict[str, Any]:
    """Load the source objects into the one dataset's staging table (module doc for the rules).

    :returns: ``{"source", "connection_id", "files": [{"uri", "key", "size", "etag", "sha256",
        "rows"}], "files_skipped", "bytes", "rows_in_file", "rows_new", "watermark_from",
        "drift_added", "rows": {dataset: n}}``.
    """
    import duckdb

    runtime = request.runtime
    datasets = list(request.datasets)
    if len(datasets) != 1:
        raise ProducerError(f"{request.contract_id}: a load producer fills exactly one dataset, got {datasets}")
    name = datasets[0]
    dataset = request.datasets[name]
    properties = list(dataset["schema"]["properties"])
    wh = request.warehouse
    staging = request.staging[name]
    target = request.target(name)
    source = runtime.get("source") or {}
    fmt = "parquet" if source.get("manifest") else str(source.get("format", "csv")).lower()
    if runtime.get("sample_data") and not source.get("manifest"):
        fmt = os.path.splitext(str(runtime["sample_data"]))[1].lstrip(".").lower() or fmt
    wm_column = (runtime.get("incremental") or {}).get("watermark")
    # An event-driven load adds the objects its messages name to what is published (ADR 0034):
    # it keeps the target's rows and skips loaded objects as an incremental load does.
    accumulate = bool(wm_column) or bool(runtime.get("queue"))
    target_exists = wh.table_exists(target)

    watermark: tuple[str, str] | None = None
    skip: set[tuple[str, str]] = set()
    if accumulate and target_exists:
        if wm_column:
            stored = get_watermark(wh, request.contract_id, name)
            if stored is not None and stored[1] is not None:
                watermark = (str(wm_column), stored[1])
        skip = loaded_versions(wh, request.contract_id, name, except_run=request.run.run_id)
    elif accumulate:
        log.info("%s: target %s does not exist: loading every object", request.contract_id, target.dotted)

    objectstore.forget_connections()
    objects, conn_id, listed = source_objects(request)
    rows: list[tuple[Any, ...]] = []
    files: list[dict[str, Any]] = []
    skipped = 0
    total = 0
    added: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ca-load-") as tmp:
        con = duckdb.connect()
        try:
            con.execute("set TimeZone = 'UTC'")
            for obj in objects:
                if obj.etag and (obj.uri, obj.version) in skip:
                    skipped += 1
                    continue
                local, got = objectstore.download(obj, conn_id, tmp, contract_id=request.contract_id)
                if obj.sha256 and got.sha256 != obj.sha256:
                    raise objectstore.ObjectStoreError(
                        f"{request.contract_id}: {obj.uri!r} (Connection {conn_id!r}) has SHA-256 {got.sha256}, "
                        f"its manifest lists {obj.sha256}: not loaded"
                    )
                if (got.uri, got.version) in skip:
                    skipped += 1
                    os.unlink(local)
                    continue
                diff = schema_diff(properties, describe_source(con, local, fmt, uri=got.uri, contract_id=request.contract_id), fmt)
                fail_on_drift(request, name, diff, got.uri)
                added.extend(n for n, _ in diff.added if n not in added)
                new, in_file = _read_rows(
                    con, local, fmt, properties, watermark, uri=got.uri, contract_id=request.contract_id
                )
                rows.extend(new)
                total += in_file
                files.append({**got.record(), "version": got.version, "rows": in_file})
                os.unlink(local)
        finally:
            con.close()
    log.info(
        "load %s: %s object(s) from %s (Connection %s), %s skipped as already loaded; %s rows, %s new "
        "(watermark %s > %s)",
        request.contract_id,
        len(files),
        listed,
        conn_id,
        skipped,
        total,
        len(rows),
        wm_column,
        watermark[1] if watermark else None,
    )
    types = request.column_types(name)
    names = [n for n, _ in types]
    with wh.transaction():
        wh.create_table(staging, types)
        wh.insert_rows(staging, names, rows)
        if accumulate and target_exists:
            cols = ", ".join(quote_ident(n) for n in names)
            keys = [str(p["name"]) for p in properties if p.get("primaryKey")]
            keep = ""
            if keys:
                match = " and ".join(f"s.{quote_ident(k)} = t.{quote_ident(k)}" for k in keys)
                keep = f" where not exists (select 1 from {staging.sql} as s where {match})"
            wh.execute(f"insert into {staging.sql} ({cols}) select {cols} from {target.sql} as t{keep}")
        record_objects(wh, request.contract_id, name, request.run.run_id, files)
    return {
        "source": listed,
        "connection_id": conn_id,
        "files": [{k: f[k] for k in ("uri", "key", "size", "etag", "sha256", "rows")} for f in files],
        "files_skipped": skipped,
        "bytes": sum(int(f["size"]) for f in files),
        "rows_in_file": total,
        "rows_new": len(rows),
        "watermark_from": watermark[1] if watermark else None,
        "drift_added": added,
        "rows": {name: wh.row_count(staging)},
    }
