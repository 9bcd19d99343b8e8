"""The ingestion ``extract`` producer: a database table or query to Parquet landing files, then a manifest.

``produce`` (:func:`produce`):

1. runs ``select * from <source.table>`` or ``source.query`` through the source Connection's
   DB-API hook (``BaseHook.get_connection(source.connection_id).get_hook()``: any common-sql
   hook; PostgreSQL is tested) — in the demo, the ``sample_data`` file stands in for the table;
2. checks schema drift on the result's columns (:mod:`contract_runtime.drift`);
3. writes the rows, cast to the contract's types, as Parquet files of at most
   ``landing.rows_per_file`` rows (default 1,000,000) to ``<landing.uri>/run-<run hash>/part-NNNNN.parquet``
   with ``landing.connection_id`` — a retry first deletes what an earlier try left under that
   prefix — and records each file (URI, size, SHA-256, rows) in ``_ca_state.objects`` as ``staged``;
4. fills the dataset's staging table with the same rows, so ``audit`` runs the quality rules.

``publish`` (:func:`publish_manifest`), after the audit passed: reads every staged file back,
checks its SHA-256 and row count, then writes the **manifest object**
``<landing.uri>/run-<run hash>/_manifest.json`` — last — and only then commits the publication
(files ``published``, the publication record, the staging table dropped). The operator's Asset
event follows the task's success, so the manifest dataset's event exists only for a verified,
complete manifest. A killed or failed extract leaves part files but no manifest, and a load
contract reads only files a manifest lists.

Manifest (JSON, ``manifestVersion`` 1): ``{"manifestVersion", "contract_id", "contract_version",
"dataset", "asset", "run": {"dag_id", "run_id", "run_hash"}, "format": "parquet", "schema":
{"version", "properties"}, "source": {"connection_id", "table" | "query"}, "files": [{"uri",
"key", "size", "sha256", "rows"}], "row_count", "size_bytes"}``. Nothing in it depends on the clock,
so a publish retry writes the same bytes.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import json
import logging
import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from contract_runtime import objectstore
from contract_runtime.drift import schema_diff
from contract_runtime.objectstore import StoredObject
from contract_runtime.producers import ProduceRequest, ProducerError
from contract_runtime.producers.load import (
    _READERS,
    MANIFEST_NAME,
    _demo_base,
    describe_source,
    fail_on_drift,
    local_stand_in,
)
from contract_runtime.sqlutil import quote_ident, sql_type
from contract_runtime.state import (
    ensure_state_tables,
    get_publication,
    mark_objects,
    record_objects,
    record_publication,
    run_objects,
)

__all__ = ["DEFAULT_ROWS_PER_FILE", "landing_prefix", "produce", "publish_manifest", "source_query"]

log = logging.getLogger(__name__)

#: Rows per landing file when the contract's ``landing.rows_per_file`` is absent.
DEFAULT_ROWS_PER_FILE: int = 1_000_000
#: Rows fetched from the source per ``fetchmany`` call.
_FETCH_ROWS: int = 10_000


class ExtractSourceUnavailable(RuntimeError):
    """The source database did not answer: retryable."""


def landing_prefix(request: ProduceRequest) -> tuple[str, str | None]:
    """This run's landing prefix and the Connection id to write it: ``(<landing>/run-<hash>, conn)``.

    In the demo (``sample_data`` compiled in) a local folder beside the warehouse stands in for
    the landing location (:func:`~contract_runtime.producers.load.local_stand_in`).
    """
    landing = request.runtime.get("landing") or {}
    root = str(landing.get("uri") or "")
    if not root:
        raise ProducerError(f"{request.contract_id}: mode extract needs landing.uri")
    conn_id = landing.get("connection_id")
    if request.runtime.get("sample_data"):
        root, conn_id = local_stand_in(root, _demo_base(request)), None
    return objectstore.join_uri(root, f"run-{request.run.run_hash}"), conn_id


def source_query(source: Mapping[str, Any]) -> str:
    """``source.query``, else ``select * from <source.table>`` (each dotted part quoted)."""
    if source.get("query"):
        return str(source["query"])
    table = str(source.get("table") or "")
    if not table:
        raise ProducerError("mode extract needs source.table or source.query")
    return "select * from " + ".".join(quote_ident(part) for part in table.split("."))


def _observed_type(values: Sequence[Any]) -> str:
    """The DuckDB type name of a DB-API column from its first non-null Python value."""
    for v in values:
        if v is None:
            continue
        if isinstance(v, bool):
            return "BOOLEAN"
        if isinstance(v, int):
            return "BIGINT"
        if isinstance(v, (float, decimal.Decimal)):
            return "DOUBLE"
        if isinstance(v, datetime.datetime):
            return "TIMESTAMP"
        if isinstance(v, datetime.date):
            return "DATE"
        if isinstance(v, datetime.time):
            return "TIME"
        if isinstance(v, (dict, list)):
            return "JSON"
        return "VARCHAR"
    return "NULL"


def _read_database(request: ProduceRequest, source: Mapping[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The source's column names and rows, read through ``source.connection_id``'s DB-API hook.

    :raises WarehouseConfigError: ``source.connection_id`` is absent or names no Connection
        (:func:`~contract_runtime.warehouse.require_connection`; never the worker's defaults).
    :raises ProducerError: The table, a column or the query is wrong.
    :raises ExtractSourceUnavailable: The database did not answer (retryable).
    """
    from contract_runtime.warehouse import WarehouseConfigError, require_connection

    conn_id = source.get("connection_id")
    query = source_query(source)
    what = source.get("table") or "query"
    if not conn_id:
        # A database has no anonymous default: without a Connection there is nothing to read.
        raise WarehouseConfigError(
            f"{request.contract_id}: cannot extract {what!r}: source.connection_id is not set; "
            "name the Airflow Connection of the source database"
        )
    # get_hook() is untyped: the hook is any common-sql (DB-API) hook
    source_conn: Any = require_connection(str(conn_id), f"{request.contract_id}: cannot extract {what!r}")
    try:
        hook = source_conn.get_hook()
        with contextlib.closing(hook.get_conn()) as connection:
            cursor = connection.cursor()
            cursor.execute(query)
            names = [str(d[0]) for d in cursor.description or []]
            rows: list[tuple[Any, ...]] = []
            while batch := cursor.fetchmany(_FETCH_ROWS):
                rows.extend(tuple(r) for r in batch)
            cursor.close()
    except Exception as exc:
        reason = objectstore.mask_secrets(f"{type(exc).__name__}: {exc}".strip(), str(conn_id))
        message = f"{request.contract_id}: cannot extract {what!r} with Connection {conn_id!r}: {reason}"
        if type(exc).__name__ in ("ProgrammingError", "UndefinedTable", "UndefinedColumn", "SyntaxError"):
            raise ProducerError(message) from exc
        raise ExtractSourceUnavailable(message) from exc
    return names, rows


def _read_sample(request: ProduceRequest, con: Any) -> tuple[list[str], list[tuple[Any, ...]], list[tuple[str, str]], str]:
    from contract_runtime.manifest import resolve_project_path

    path = str(resolve_project_path(request.manifest_path, str(request.runtime["sample_data"])))
    if not os.path.isfile(path):
        raise ProducerError(f"{request.contract_id}: source file {path!r} (sample_data) does not exist")
    fmt = os.path.splitext(path)[1].lstrip(".").lower()
    observed = describe_source(con, path, fmt)
    rows = [tuple(r) for r in con.execute(f"select * from {_READERS[fmt]}", [path]).fetchall()]
    return [n for n, _ in observed], rows, observed, fmt


def produce(request: ProduceRequest) -> dict[str, Any]:
    """Extract the source into landing files and the staging table (module doc).

    :returns: ``{"landing", "connection_id", "files": [{"uri", "key", "size", "sha256", "rows"}],
        "bytes", "rows": {dataset: n}, "drift_added"}``.
    :raises ProducerError: Configuration, a missing table, drift, a value that does not convert.
    :raises ExtractSourceUnavailable: The source database did not answer (retryable).
    """
    import duckdb

    datasets = list(request.datasets)
    if len(datasets) != 1:
        raise ProducerError(f"{request.contract_id}: an extract fills exactly one dataset, got {datasets}")
    name = datasets[0]
    properties = list(request.datasets[name]["schema"]["properties"])
    runtime = request.runtime
    source = runtime.get("source") or {}
    landing = runtime.get("landing") or {}
    rows_per_file = int(landing.get("rows_per_file") or DEFAULT_ROWS_PER_FILE)
    prefix, landing_conn = landing_prefix(request)
    objectstore.forget_connections()
    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'UTC'")
        if runtime.get("sample_data"):
            names, rows, observed, fmt = _read_sample(request, con)
            where = str(runtime["sample_data"])
        else:
            names, rows = _read_database(request, source)
            observed = [(n, _observed_type([r[i] for r in rows])) for i, n in enumerate(names)]
            fmt = "database"
            where = str(source.get("table") or source.get("query"))
        # a column that is null in every row tells no type: compared by name only
        declared = {str(p["name"]): sql_type(p, "duckdb") for p in properties}
        observed = [(n, declared.get(n, "VARCHAR") if t == "NULL" else t) for n, t in observed]
        diff = schema_diff(properties, observed, fmt)
        fail_on_drift(request, name, diff, where)
        index = [names.index(str(p["name"])) for p in properties]
        columns = ", ".join(f"{quote_ident(p['name'])} {sql_type(p, 'duckdb')}" for p in properties)
        con.execute(f"create table src ({columns})")
        if rows:
            marks = ", ".join("?" for _ in properties)
            try:
                con.executemany(f"insert into src values ({marks})", [[r[i] for i in index] for r in rows])
            except duckdb.ConversionException as exc:
                raise ProducerError(f"{request.contract_id}: a value of {where!r} does not convert to its contract type: {exc}") from exc
        count = _count(con, "select count(*) from src", [])
        deleted = objectstore.delete_prefix(prefix, landing_conn, contract_id=request.contract_id)
        if deleted:
            log.info("%s: removed %s file(s) an earlier try left under %s", request.contract_id, deleted, prefix)
        files: list[dict[str, Any]] = []
        with tempfile.TemporaryDirectory(prefix="ca-extract-") as tmp:
            parts = max(1, -(-count // rows_per_file))
            for part in range(parts):
                local = os.path.join(tmp, f"part-{part:05d}.parquet")
                con.execute(
                    f"copy (select * from src order by rowid limit {rows_per_file} offset {part * rows_per_file}) "
                    f"to '{local.replace(chr(39), chr(39) * 2)}' (format parquet)"
                )
                part_rows = min(rows_per_file, count - part * rows_per_file) if count else 0
                uri = objectstore.join_uri(prefix, f"part-{part:05d}.parquet")
                objectstore.upload(local, uri, landing_conn, contract_id=request.contract_id)
                digest, size = _sha256(local)
                files.append(
                    {"uri": uri, "key": _key(uri), "size": size, "sha256": digest, "etag": None,
                     "version": f"sha256:{digest}", "rows": part_rows}
                )
        typed = con.execute("select * from src order by rowid").fetchall()
    finally:
        con.close()
    wh = request.warehouse
    staging = request.staging[name]
    types = request.column_types(name)
    with wh.transaction():
        wh.create_table(staging, types)
        wh.insert_rows(staging, [n for n, _ in types], typed)
        record_objects(wh, request.contract_id, name, request.run.run_id, files)
    log.info(
        "extract %s: %s rows from %s into %s file(s) under %s (Connection %s)",
        request.contract_id, count, where, len(files), prefix, landing_conn,
    )
    return {
        "landing": prefix,
        "connection_id": landing_conn,
        "files": [{k: f[k] for k in ("uri", "key", "size", "sha256", "rows")} for f in files],
        "bytes": sum(int(f["size"]) for f in files),
        "drift_added": [n for n, _ in diff.added],
        "rows": {name: count},
    }


def _count(con: Any, sql: str, params: list[Any]) -> int:
    """The single integer a ``count(*)`` query returns."""
    row = con.execute(sql, params).fetchone()
    return int(row[0]) if row is not None else 0


def _sha256(path: str) -> tuple[str, int]:
    import hashlib

    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def _key(uri: str) -> str:
    import urllib.parse

    parts = urllib.parse.urlsplit(uri)
    return urllib.parse.unquote(parts.path) if parts.scheme == "file" else parts.path.lstrip("/")


def publish_manifest(request: ProduceRequest, verdicts: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Verify every landing file of the run, write the manifest last, commit the publication.

    :param verdicts: Dataset name -> its audit summary (``status``, ``failed_rules``).
    :returns: One output: ``{"dataset", "asset", "table": None, "row_count", "columns",
        "quality_status", "quarantined": False, "failed_rules", "manifest_uri", "landing",
        "files", "size_bytes", "connection_id"}``.
    :raises ProducerError: No verdict or a blocked one; no staged file; a file whose SHA-256 or
        row count differs from what produce wrote (nothing is published).
    """
    import duckdb

    name = next(iter(request.datasets))
    dataset = request.datasets[name]
    verdict = verdicts.get(name)
    if verdict is None or verdict.get("status") not in ("passed", "degraded"):
        raise ProducerError(f"{request.contract_id}: dataset {name!r} has no publishable audit verdict; no manifest written")
    prefix, conn_id = landing_prefix(request)
    objectstore.forget_connections()
    manifest_uri = objectstore.join_uri(prefix, MANIFEST_NAME)
    wh = request.warehouse
    ensure_state_tables(wh)
    published = get_publication(wh, request.contract_id, name, request.run.run_id)
    files = run_objects(wh, request.contract_id, name, request.run.run_id, "published" if published else "staged")
    if not files:
        raise ProducerError(f"{request.contract_id}: run {request.run.run_id!r} staged no landing file; no manifest written")
    if published is None:
        with tempfile.TemporaryDirectory(prefix="ca-verify-") as tmp:
            con = duckdb.connect()
            try:
                for f in files:
                    obj = StoredObject(f["uri"], _key(f["uri"]), f["size"], None, f["sha256"])
                    local, got = objectstore.download(obj, conn_id, tmp, contract_id=request.contract_id)
                    rows: int | None = None
                    if got.sha256 == f["sha256"]:
                        try:
                            rows = _count(con, "select count(*) from read_parquet(?)", [local])
                        except duckdb.Error as exc:
                            # DuckDB names the file it read: the temporary copy, not the landing file
                            said = str(exc).replace(local, str(f["uri"]))
                            raise ProducerError(
                                f"{request.contract_id}: landing file {f['uri']!r} (Connection {conn_id!r}) "
                                f"cannot be read back as Parquet: {said}; no manifest written"
                            ) from exc
                    if got.sha256 != f["sha256"] or got.size != f["size"] or rows != f["rows"]:
                        raise ProducerError(
                            f"{request.contract_id}: landing file {f['uri']!r} (Connection {conn_id!r}) does not match "
                            f"what was written (SHA-256 {got.sha256} vs {f['sha256']}, {got.size} vs {f['size']} bytes, "
                            f"{rows} vs {f['rows']} rows); no manifest written"
                        )
                    os.unlink(local)
            finally:
                con.close()
    source = request.runtime.get("source") or {}
    document = {
        "manifestVersion": 1,
        "contract_id": request.contract_id,
        "contract_version": str(request.dag.get("contract_version", "")),
        "dataset": name,
        "asset": str(dataset["asset"]),
        "run": {"dag_id": request.run.dag_id, "run_id": request.run.run_id, "run_hash": request.run.run_hash},
        "format": "parquet",
        "schema": dataset["schema"],
        "source": {
            "connection_id": source.get("connection_id"),
            **({"query": source["query"]} if source.get("query") else {"table": source.get("table")}),
        },
        "files": [
            {"uri": f["uri"], "key": _key(f["uri"]), "size": f["size"], "sha256": f["sha256"], "rows": f["rows"]}
            for f in files
        ],
        "row_count": sum(int(f["rows"] or 0) for f in files),
        "size_bytes": sum(int(f["size"]) for f in files),
    }
    # The manifest is the last object written: its presence means every file is complete.
    objectstore.write_bytes(
        manifest_uri,
        conn_id,
        json.dumps(document, indent=2, sort_keys=True).encode("utf-8"),
        contract_id=request.contract_id,
    )
    staging = request.staging[name]
    if published is None:
        with wh.transaction():
            mark_objects(wh, request.contract_id, name, request.run.run_id, "published")
            record_publication(
                wh, request.contract_id, name, request.run.run_id, document["row_count"], str(verdict["status"])
            )
            wh.drop_table(staging)
    log.info("published manifest %s: %s file(s), %s rows", manifest_uri, len(files), document["row_count"])
    return [
        {
            "dataset": name,
            "asset": str(dataset["asset"]),
            "table": None,
            "row_count": document["row_count"],
            "columns": [{"name": str(p["name"]), "type": sql_type(p, "duckdb")} for p in dataset["schema"]["properties"]],
            "quality_status": str(verdict["status"]),
            "quarantined": False,
            "failed_rules": list(verdict.get("failed_rules", [])),
            "manifest_uri": manifest_uri,
            "landing": prefix,
            # the dataset is the declared landing location as a whole (also when the demo stands
            # in for it locally); each run adds a prefix under it
            "location": str((request.runtime.get("landing") or {}).get("uri") or "").rstrip("/"),
            "source": {
                "asset": str(source.get("name")),
                "location": str(source.get("uri") or ""),
                "files": [],
                "rows": document["row_count"],
            },
            "files": document["files"],
            "size_bytes": document["size_bytes"],
            "connection_id": conn_id,
        }
    ]
