"""The ingestion ``load`` producer: objects (CSV, JSON lines, Parquet) into staging.

Where the objects come from (:func:`source_objects`):

- the manifest's ``sample_data`` (project-relative; the bundled demo), read as a ``file://``
  object;
- ``source.manifest`` (compiled when the source is an ``extract`` contract's dataset): every
  extract manifest (``<landing>/run-*/_manifest.json``) and exactly the files each one lists;
  a file whose SHA-256 differs from its manifest fails the task;
- else ``source.uri`` with ``source.connection_id``, through
  :mod:`contract_runtime.objectstore` (Airflow's ``ObjectStoragePath``): one object, a prefix or
  a glob, on any scheme a provider registers.

Each object is copied to a temporary folder (its size and SHA-256 measured on the way) and read
there with DuckDB (``read_csv`` with every column as text, ``read_json`` newline-delimited,
``read_parquet``); each contract column is cast to its contract type, so the file's own type
guesses never decide (``00123`` stays a string). Every object's URI, key, size, ETag, SHA-256
and row count is in the produce summary and in ``_ca_state.objects``.

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

When the target table does not exist, the stored watermark and object records are ignored and
everything is loaded. Without ``incremental`` every object is loaded on every run.
"""

from __future__ import annotations

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
from contract_runtime.producers import ProduceRequest, ProducerError
from contract_runtime.sqlutil import quote_ident, sql_type
from contract_runtime.state import get_watermark, loaded_versions, record_objects

__all__ = [
    "MANIFEST_NAME",
    "describe_source",
    "fail_on_drift",
    "local_stand_in",
    "produce",
    "read_source",
    "source_objects",
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
        path = resolve_project_path(request.manifest_path, str(sample))
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
    uri = str(source.get("uri", ""))
    conn_id = source.get("connection_id")
    objects = objectstore.list_objects(uri, conn_id, contract_id=request.contract_id)
    if not objects:
        raise objectstore.ObjectStoreError(
            f"{request.contract_id}: no object matches {uri!r} (Connection {conn_id!r})"
        )
    return objects, conn_id, uri


def describe_source(con: Any, path: str, fmt: str) -> list[tuple[str, str]]:
    """``[(column, DuckDB type)]`` of one local file.

    :raises ProducerError: An unknown format, or a file DuckDB cannot read as ``fmt``.
    """
    import duckdb

    reader = _READERS.get(fmt)
    if reader is None:
        raise ProducerError(f"source format {fmt!r} is not supported (csv, jsonl, parquet)")
    try:
        return [(str(r[0]), str(r[1])) for r in con.execute(f"describe select * from {reader}", [path]).fetchall()]
    except duckdb.Error as exc:
        raise ProducerError(f"cannot read {fmt} file {path!r}: {exc}") from exc


def _read_rows(
    con: Any, path: str, fmt: str, properties: list[dict[str, Any]], watermark: tuple[str, str] | None
) -> tuple[list[tuple[Any, ...]], int]:
    import duckdb

    reader = _READERS[fmt]
    casts = ", ".join(
        f"cast({quote_ident(p['name'])} as {sql_type(p, 'duckdb')}) as {quote_ident(p['name'])}" for p in properties
    )
    query = f"select {casts} from {reader}"
    params: list[Any] = [path]
    total = int(con.execute(f"select count(*) from {reader}", [path]).fetchone()[0])
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
        raise ProducerError(f"{path!r}: a value does not convert to its contract type: {exc}") from exc


def read_source(
    path: str,
    fmt: str,
    properties: list[dict[str, Any]],
    *,
    abort_on_drift: bool,
    watermark: tuple[str, str] | None = None,
) -> tuple[list[tuple[Any, ...]], int]:
    """Read one local file with DuckDB, cast to the contract's types, keep rows above the watermark.

    :param path: File path.
    :param fmt: ``csv``, ``jsonl`` (``json``) or ``parquet``.
    :param properties: The dataset's ``schema.properties``.
    :param abort_on_drift: Fail on any schema difference (``abort``), else only on removed or
        type-changed columns (no proposal is written here; :func:`produce` writes one).
    :param watermark: ``(column, value as text)`` to keep only rows with ``column > value``.
    :returns: ``(rows in schema column order, number of rows in the file)``.
    :raises ProducerError: An unknown format, a missing file, drift, or a value that does not
        convert to its contract type.
    """
    import duckdb

    if not os.path.exists(path):
        raise ProducerError(f"source file {path!r} does not exist")
    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'UTC'")
        diff = schema_diff(properties, describe_source(con, path, fmt), fmt)
        if diff.blocking("abort" if abort_on_drift else None):
            raise ProducerError(f"schema drift in {path!r}: {diff.describe()}")
        return _read_rows(con, path, fmt, properties, watermark)
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
    target_exists = wh.table_exists(target)

    watermark: tuple[str, str] | None = None
    skip: set[tuple[str, str]] = set()
    if wm_column and target_exists:
        stored = get_watermark(wh, request.contract_id, name)
        if stored is not None and stored[1] is not None:
            watermark = (str(wm_column), stored[1])
        skip = loaded_versions(wh, request.contract_id, name, except_run=request.run.run_id)
    elif wm_column:
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
                diff = schema_diff(properties, describe_source(con, local, fmt), fmt)
                fail_on_drift(request, name, diff, got.uri)
                added.extend(n for n, _ in diff.added if n not in added)
                new, in_file = _read_rows(con, local, fmt, properties, watermark)
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
        if wm_column and target_exists:
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
