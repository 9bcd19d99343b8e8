"""The runtime's own state in the warehouse (schema ``_ca_state``).

- ``watermarks``: one row per (contract, dataset) with the incremental watermark, as text
  (``CAST(max(column) AS VARCHAR)``; read back with ``CAST(? AS <column type>)``). It advances
  only in the publish transaction.
- ``publications``: one row per (contract, dataset, run) that was published, written in the
  publish transaction; a publish retry after a successful swap finds it and does not swap again.
- ``objects``: one row per object an ingestion run read (``load``) or wrote (``extract``
  landing files): URI, version (ETag, else ``sha256:<hex>``), size, SHA-256, ETag, rows, run.
  ``produce`` records them as ``staged``; the publish transaction turns them ``loaded`` (load)
  or ``published`` (extract). An incremental load skips objects another run already ``loaded``.
"""

from __future__ import annotations

import datetime
from typing import Any

from contract_runtime.sqlutil import dialect_of, quote_ident
from contract_runtime.tables import OBJECTS, PUBLICATIONS, STATE_SCHEMA, WATERMARKS
from contract_runtime.warehouse import Warehouse

__all__ = [
    "ensure_state_tables",
    "get_publication",
    "get_watermark",
    "loaded_versions",
    "mark_objects",
    "record_objects",
    "record_publication",
    "run_objects",
    "set_watermark",
]


def ensure_state_tables(wh: Warehouse) -> None:
    """Create ``_ca_state``, ``watermarks`` and ``publications`` when missing."""
    ts = dialect_of(wh.dialect).timestamp_type
    wh.create_schema(STATE_SCHEMA)
    wh.execute(
        f"create table if not exists {WATERMARKS.sql} ("
        "contract_id varchar(250) not null, dataset varchar(250) not null, "
        "watermark_column varchar(250) not null, watermark_value varchar(1000), "
        f"run_id varchar(250) not null, updated_at {ts} not null)"
    )
    wh.execute(
        f"create table if not exists {PUBLICATIONS.sql} ("
        "contract_id varchar(250) not null, dataset varchar(250) not null, run_id varchar(250) not null, "
        f"row_count bigint not null, quality_status varchar(20) not null, published_at {ts} not null)"
    )
    wh.execute(
        f"create table if not exists {OBJECTS.sql} ("
        "contract_id varchar(250) not null, dataset varchar(250) not null, uri varchar(2000) not null, "
        "version varchar(300) not null, size_bytes bigint not null, sha256 varchar(64), etag varchar(300), "
        f"row_count bigint, run_id varchar(250) not null, status varchar(20) not null, recorded_at {ts} not null)"
    )


def get_watermark(wh: Warehouse, contract_id: str, dataset: str) -> tuple[str, str | None] | None:
    """The stored watermark of a dataset.

    :returns: ``(column, value as text or None)``, or None when never published incrementally.
    """
    if not wh.table_exists(WATERMARKS):
        return None
    rows = wh.fetch(
        f"select watermark_column, watermark_value from {WATERMARKS.sql} where contract_id = ? and dataset = ?",
        [contract_id, dataset],
    )
    return (str(rows[0][0]), None if rows[0][1] is None else str(rows[0][1])) if rows else None


def set_watermark(wh: Warehouse, contract_id: str, dataset: str, column: str, value: str | None, run_id: str) -> None:
    """Upsert a watermark (delete + insert; call inside the publish transaction)."""
    wh.execute(f"delete from {WATERMARKS.sql} where contract_id = ? and dataset = ?", [contract_id, dataset])
    wh.execute(
        f"insert into {WATERMARKS.sql} (contract_id, dataset, watermark_column, watermark_value, run_id, updated_at) "
        "values (?, ?, ?, ?, ?, ?)",
        [contract_id, dataset, column, value, run_id, datetime.datetime.now(tz=datetime.UTC)],
    )


def record_publication(
    wh: Warehouse, contract_id: str, dataset: str, run_id: str, row_count: int, quality_status: str
) -> None:
    """Record that a dataset was published by a run (call inside the publish transaction)."""
    wh.execute(
        f"delete from {PUBLICATIONS.sql} where contract_id = ? and dataset = ? and run_id = ?",
        [contract_id, dataset, run_id],
    )
    wh.execute(
        f"insert into {PUBLICATIONS.sql} (contract_id, dataset, run_id, row_count, quality_status, published_at) "
        "values (?, ?, ?, ?, ?, ?)",
        [contract_id, dataset, run_id, int(row_count), quality_status, datetime.datetime.now(tz=datetime.UTC)],
    )


def get_publication(wh: Warehouse, contract_id: str, dataset: str, run_id: str) -> dict[str, Any] | None:
    """The publication record of a dataset by a run, or None."""
    if not wh.table_exists(PUBLICATIONS):
        return None
    rows = wh.fetch(
        f"select row_count, quality_status from {PUBLICATIONS.sql} "
        "where contract_id = ? and dataset = ? and run_id = ?",
        [contract_id, dataset, run_id],
    )
    return {"row_count": int(rows[0][0]), "quality_status": str(rows[0][1])} if rows else None


def max_as_text(wh: Warehouse, table_sql: str, column: str) -> str | None:
    """``CAST(max(column) AS VARCHAR)`` of a table, the next watermark value."""
    value = wh.scalar(f"select cast(max({quote_ident(column)}) as varchar(1000)) from {table_sql}")
    return None if value is None else str(value)


def record_objects(
    wh: Warehouse, contract_id: str, dataset: str, run_id: str, objects: list[dict[str, Any]]
) -> None:
    """Replace the ``staged`` objects of a run by ``objects`` (call in the produce transaction).

    :param objects: ``[{"uri", "version", "size", "sha256", "etag", "rows"}]``.
    """
    ensure_state_tables(wh)
    wh.execute(
        f"delete from {OBJECTS.sql} where contract_id = ? and dataset = ? and run_id = ? and status = 'staged'",
        [contract_id, dataset, run_id],
    )
    if not objects:
        return
    now = datetime.datetime.now(tz=datetime.UTC)
    rows = [
        [contract_id, dataset, o["uri"], o["version"], int(o["size"]), o.get("sha256"), o.get("etag"), o.get("rows"),
         run_id, now]
        for o in objects
    ]
    wh.executemany(
        f"insert into {OBJECTS.sql} (contract_id, dataset, uri, version, size_bytes, sha256, etag, row_count, "
        "run_id, status, recorded_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, 'staged', ?)",
        rows,
    )


def run_objects(wh: Warehouse, contract_id: str, dataset: str, run_id: str, status: str) -> list[dict[str, Any]]:
    """The objects a run recorded with ``status``, by URI: ``[{"uri", "version", "size", "sha256", "etag", "rows"}]``."""
    if not wh.table_exists(OBJECTS):
        return []
    rows = wh.fetch(
        f"select uri, version, size_bytes, sha256, etag, row_count from {OBJECTS.sql} "
        "where contract_id = ? and dataset = ? and run_id = ? and status = ? order by uri",
        [contract_id, dataset, run_id, status],
    )
    return [
        {"uri": str(r[0]), "version": str(r[1]), "size": int(r[2]), "sha256": r[3], "etag": r[4],
         "rows": None if r[5] is None else int(r[5])}
        for r in rows
    ]


def loaded_versions(wh: Warehouse, contract_id: str, dataset: str, *, except_run: str) -> set[tuple[str, str]]:
    """``(uri, version)`` of every object other runs loaded into a dataset (an incremental load skips them)."""
    if not wh.table_exists(OBJECTS):
        return set()
    rows = wh.fetch(
        f"select uri, version from {OBJECTS.sql} where contract_id = ? and dataset = ? and status = 'loaded' "
        "and run_id <> ?",
        [contract_id, dataset, except_run],
    )
    return {(str(r[0]), str(r[1])) for r in rows}


def mark_objects(wh: Warehouse, contract_id: str, dataset: str, run_id: str, status: str) -> int:
    """Turn a run's ``staged`` objects into ``status`` (call inside the publish transaction); returns how many."""
    if not wh.table_exists(OBJECTS):
        return 0
    n = int(
        wh.scalar(
            f"select count(*) from {OBJECTS.sql} where contract_id = ? and dataset = ? and run_id = ? "
            "and status = 'staged'",
            [contract_id, dataset, run_id],
        )
    )
    wh.execute(
        f"update {OBJECTS.sql} set status = ? where contract_id = ? and dataset = ? and run_id = ? "
        "and status = 'staged'",
        [status, contract_id, dataset, run_id],
    )
    return n
