"""The ingestion ``load`` producer: local files (CSV, JSON lines, Parquet) into staging.

Source file: the manifest's ``sample_data`` (project-relative; the bundled demo), else
``source.uri`` when it is ``file://`` (a path or a DuckDB glob). Other schemes are not read by
this runtime (an error says so).

Reading happens in an in-memory DuckDB (``read_csv`` with every column as text, ``read_json``
newline-delimited, ``read_parquet``); each contract column is cast to its contract type there, so
the file's own type guesses never decide (``00123`` stays a string). The typed rows are then
written into the warehouse's staging table, typed by the contract.

Schema drift: a contract column missing from the file always fails; a file column that is not in
the contract fails when ``on_schema_drift: abort`` and is ignored otherwise. The error carries the
column-level diff. (Writing a proposed contract, DESIGN §3.2, is not done yet.)

Incremental (``incremental.watermark: <column>``): the stored watermark is read from
``_ca_state.watermarks``; only file rows with ``column > watermark`` are new. Staging = the new
rows + the current target rows, except target rows whose primary key (the schema's
``primaryKey`` columns) appears among the new rows, which the new version replaces; without a
primary key every target row is kept. The watermark advances only when ``publish`` commits (to
``max(column)`` of what it publishes). When the target table does not exist, the stored
watermark is ignored and the whole file is loaded.
"""

from __future__ import annotations

import logging
import os
import urllib.parse
from typing import Any

from contract_runtime.manifest import resolve_project_path
from contract_runtime.producers import ProduceRequest, ProducerError
from contract_runtime.sqlutil import quote_ident, sql_type
from contract_runtime.state import get_watermark

__all__ = ["produce", "read_source", "source_path"]

log = logging.getLogger(__name__)

_READERS: dict[str, str] = {
    "csv": "read_csv(?, header = true, all_varchar = true)",
    "jsonl": "read_json(?, format = 'newline_delimited')",
    "json": "read_json(?, format = 'auto')",
    "parquet": "read_parquet(?)",
}


def source_path(request: ProduceRequest) -> str:
    """The local file (or glob) to load, from ``sample_data`` or a ``file://`` source URI.

    :raises ProducerError: When neither is available.
    """
    runtime = request.runtime
    sample = runtime.get("sample_data")
    if sample:
        return str(resolve_project_path(request.manifest_path, str(sample)))
    uri = str((runtime.get("source") or {}).get("uri", ""))
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ProducerError(f"file URI {uri!r} names a host; write file:///absolute/path")
        return urllib.parse.unquote(parsed.path)
    raise ProducerError(
        f"{request.contract_id}: source {uri!r} is not a local file; the load producer reads the manifest's "
        "sample_data or a file:// source uri"
    )


def read_source(
    path: str,
    fmt: str,
    properties: list[dict[str, Any]],
    *,
    abort_on_drift: bool,
    watermark: tuple[str, str] | None = None,
) -> tuple[list[tuple[Any, ...]], int]:
    """Read a file with DuckDB, cast to the contract's types, keep rows above the watermark.

    :param path: File path or glob.
    :param fmt: ``csv``, ``jsonl`` (``json``) or ``parquet``.
    :param properties: The dataset's ``schema.properties``.
    :param abort_on_drift: Fail on file columns not in the contract.
    :param watermark: ``(column, value as text)`` to keep only rows with ``column > value``.
    :returns: ``(rows in schema column order, number of rows in the file)``.
    :raises ProducerError: For an unknown format, a missing file, drift, or a value that does not
        convert to its contract type.
    """
    import duckdb

    reader = _READERS.get(fmt)
    if reader is None:
        raise ProducerError(f"source format {fmt!r} is not supported (csv, jsonl, parquet)")
    if not any(ch in path for ch in "*?[") and not os.path.exists(path):
        raise ProducerError(f"source file {path!r} does not exist")
    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'UTC'")
        try:
            file_cols = [str(r[0]) for r in con.execute(f"describe select * from {reader}", [path]).fetchall()]
        except duckdb.Error as exc:
            raise ProducerError(f"cannot read {fmt} file {path!r}: {exc}") from exc
        wanted = [str(p["name"]) for p in properties]
        missing = [c for c in wanted if c not in file_cols]
        extra = [c for c in file_cols if c not in wanted]
        if missing or (extra and abort_on_drift):
            raise ProducerError(
                f"schema drift in {path!r}: missing contract columns {missing}, columns not in the contract {extra}"
            )
        casts = ", ".join(
            f"cast({quote_ident(p['name'])} as {sql_type(p, 'duckdb')}) as {quote_ident(p['name'])}" for p in properties
        )
        query = f"select {casts} from {reader}"
        params: list[Any] = [path]
        counted = con.execute(f"select count(*) from {reader}", [path]).fetchone()
        total = int(counted[0]) if counted is not None else 0
        if watermark is not None:
            column, value = watermark
            prop = next((p for p in properties if p["name"] == column), None)
            if prop is None:
                raise ProducerError(f"watermark column {column!r} is not in the contract schema")
            query = (
                f"select * from ({query}) as src where {quote_ident(column)} > cast(? as {sql_type(prop, 'duckdb')})"
            )
            params.append(value)
        try:
            rows = [tuple(r) for r in con.execute(query, params).fetchall()]
        except duckdb.ConversionException as exc:
            raise ProducerError(f"{path!r}: a value does not convert to its contract type: {exc}") from exc
        return rows, total
    finally:
        con.close()


def produce(request: ProduceRequest) -> dict[str, Any]:
    """Load the source file into the one dataset's staging table (module doc for the rules).

    :returns: ``{"source": path, "rows_in_file", "rows_new", "watermark_from", "rows": {dataset: n}}``.
    """
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
    path = source_path(request)
    fmt = str((runtime.get("source") or {}).get("format", "csv")).lower()
    wm_column = (runtime.get("incremental") or {}).get("watermark")
    target_exists = wh.table_exists(target)

    watermark: tuple[str, str] | None = None
    if wm_column:
        stored = get_watermark(wh, request.contract_id, name)
        if stored is not None and stored[1] is not None:
            if target_exists:
                watermark = (str(wm_column), stored[1])
            else:
                log.warning("watermark %s kept for %s but the target is gone: loading the whole file", stored, name)

    rows, total = read_source(
        path,
        fmt,
        properties,
        abort_on_drift=runtime.get("on_schema_drift") == "abort",
        watermark=watermark,
    )
    log.info(
        "load %s: %s rows in %s, %s new (watermark %s > %s)",
        request.contract_id,
        total,
        path,
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
    return {
        "source": path,
        "rows_in_file": total,
        "rows_new": len(rows),
        "watermark_from": watermark[1] if watermark else None,
        "rows": {name: wh.row_count(staging)},
    }
