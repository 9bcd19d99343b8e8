"""The runtime's own state in the warehouse (schema ``_ca_state``).

- ``watermarks``: one row per (contract, dataset) with the incremental watermark, as text
  (``CAST(max(column) AS VARCHAR)``; read back with ``CAST(? AS <column type>)``). It advances
  only in the publish transaction.
- ``publications``: one row per (contract, dataset, run) that was published, written in the
  publish transaction; a publish retry after a successful swap finds it and does not swap again.
"""

from __future__ import annotations

import datetime
from typing import Any

from contract_runtime.sqlutil import dialect_of, quote_ident
from contract_runtime.tables import PUBLICATIONS, STATE_SCHEMA, WATERMARKS
from contract_runtime.warehouse import Warehouse

__all__ = [
    "ensure_state_tables",
    "get_publication",
    "get_watermark",
    "record_publication",
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
