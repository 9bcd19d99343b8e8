"""SQL text helpers: identifier quoting, table references, column types, parameter markers.

Rule of the runtime: a name that comes from a contract (schema, table, column) reaches SQL only
through :func:`quote_ident`; a value only as a bind parameter. The two exceptions are documented
where they happen: a contract's SQL text (producer ``sql`` and ``type: sql`` rules) is the
contract author's own SQL and runs as written, and a ``physicalType`` is spliced as a type name
only after it matches :data:`PHYSICAL_TYPE_PATTERN`.

Imports only the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DIALECTS",
    "Column",
    "Dialect",
    "SqlTypeError",
    "TableRef",
    "convert_placeholders",
    "dialect_of",
    "quote_ident",
    "sql_type",
]


def quote_ident(name: str) -> str:
    """Quote one SQL identifier: wrap it in double quotes and double any embedded double quote.

    :param name: Any string, e.g. ``'we"ird; drop table x'``.
    :returns: ``'"we""ird; drop table x"'``.
    :raises ValueError: When ``name`` is empty or holds a NUL character (no database accepts it).
    """
    if not isinstance(name, str) or name == "" or "\x00" in name:
        raise ValueError(f"invalid SQL identifier {name!r}")
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class TableRef:
    """A table by schema and name (both unquoted, as the database stores them).

    :ivar schema: The schema name, e.g. ``"billing"`` or ``"_ca_staging"``.
    :ivar name: The table name.
    """

    schema: str
    name: str

    @property
    def sql(self) -> str:
        """The quoted, qualified identifier, e.g. ``'"billing"."invoices_raw"'``."""
        return f"{quote_ident(self.schema)}.{quote_ident(self.name)}"

    @property
    def dotted(self) -> str:
        """``schema.table`` unquoted, for messages, lineage and XCom (never for SQL)."""
        return f"{self.schema}.{self.name}"

    def __str__(self) -> str:
        return self.sql

    def as_dict(self) -> dict[str, str]:
        """``{"schema", "name", "sql"}``: JSON-friendly, for XCom and environment variables."""
        return {"schema": self.schema, "name": self.name, "sql": self.sql}


@dataclass(frozen=True)
class Column:
    """A column as the warehouse reports it.

    :ivar name: Column name.
    :ivar type: The database's type name, e.g. ``"VARCHAR"`` or ``"numeric"``.
    """

    name: str
    type: str


class SqlTypeError(ValueError):
    """A contract property's type cannot be turned into a SQL type safely."""


#: A physicalType is spliced into DDL only when it matches this: words, optionally with one
#: parenthesised list of one or two integers, e.g. ``decimal(18,2)``, ``varchar(3)``,
#: ``double precision``, ``timestamp with time zone``. No quotes, semicolons or comments.
PHYSICAL_TYPE_PATTERN: re.Pattern[str] = re.compile(
    r"^[A-Za-z][A-Za-z0-9_]*(?: [A-Za-z][A-Za-z0-9_]*){0,3}(?: ?\(\s*\d{1,4}\s*(?:,\s*\d{1,4}\s*)?\))?$"
)

@dataclass(frozen=True)
class Dialect:
    """What differs between warehouses, in one place (no ``if dialect == ...`` elsewhere).

    :ivar logical_types: ODCS ``logicalType`` -> SQL type.
    :ivar timestamp_type: The type of the runtime's own timestamp columns (state tables).
    :ivar moves_tables_by_schema: Whether ``ALTER TABLE ... SET SCHEMA`` moves a table into another
        schema inside a transaction (PostgreSQL); else publish copies and drops.
    """

    logical_types: Mapping[str, str]
    timestamp_type: str
    moves_tables_by_schema: bool


#: Every warehouse dialect the runtime knows; ``other`` is any common-sql database.
DIALECTS: Mapping[str, Dialect] = {
    "duckdb": Dialect(
        logical_types={
            "string": "VARCHAR",
            "date": "DATE",
            "timestamp": "TIMESTAMP WITH TIME ZONE",
            "time": "TIME",
            "number": "DOUBLE",
            "integer": "BIGINT",
            "boolean": "BOOLEAN",
            "object": "JSON",
            "array": "JSON",
        },
        timestamp_type="timestamp with time zone",
        moves_tables_by_schema=False,
    ),
    "postgres": Dialect(
        logical_types={
            "string": "TEXT",
            "date": "DATE",
            "timestamp": "TIMESTAMP WITH TIME ZONE",
            "time": "TIME",
            "number": "DOUBLE PRECISION",
            "integer": "BIGINT",
            "boolean": "BOOLEAN",
            "object": "JSONB",
            "array": "JSONB",
        },
        timestamp_type="timestamp with time zone",
        moves_tables_by_schema=True,
    ),
    "other": Dialect(
        logical_types={
            "string": "VARCHAR(4000)",
            "date": "DATE",
            "timestamp": "TIMESTAMP",
            "time": "TIME",
            "number": "DOUBLE PRECISION",
            "integer": "BIGINT",
            "boolean": "BOOLEAN",
            "object": "VARCHAR(4000)",
            "array": "VARCHAR(4000)",
        },
        timestamp_type="timestamp",
        moves_tables_by_schema=False,
    ),
}


def dialect_of(name: str) -> Dialect:
    """The :class:`Dialect` of a warehouse's ``dialect`` name; unknown names are ``other``."""
    return DIALECTS.get(name, DIALECTS["other"])


def sql_type(prop: Mapping[str, Any], dialect: str) -> str:
    """The SQL type of one contract schema property.

    :param prop: A ``schema.properties[]`` item: ``logicalType`` and optional ``physicalType``.
    :param dialect: ``"duckdb"``, ``"postgres"`` or anything else (generic SQL types).
    :returns: ``physicalType`` when given (after the :data:`PHYSICAL_TYPE_PATTERN` check), else
        the dialect's type for ``logicalType``.
    :raises SqlTypeError: When ``physicalType`` does not match the pattern, or ``logicalType``
        is unknown.
    """
    physical = prop.get("physicalType")
    if physical is not None:
        text = str(physical).strip()
        if not PHYSICAL_TYPE_PATTERN.match(text):
            raise SqlTypeError(
                f"physicalType {physical!r} of column {prop.get('name')!r} is not a plain SQL type name "
                "(letters, digits, underscores, spaces, and one (n) or (p,s))"
            )
        return text
    table = dialect_of(dialect).logical_types
    logical = str(prop.get("logicalType"))
    if logical not in table:
        raise SqlTypeError(f"logicalType {logical!r} of column {prop.get('name')!r} is not supported")
    return table[logical]


def convert_placeholders(sql: str, paramstyle: str) -> str:
    """Rewrite ``?`` parameter markers for a DB-API driver's ``paramstyle``.

    The runtime writes its own parameterised statements with ``?`` (qmark). Markers inside
    single-quoted literals and double-quoted identifiers are left alone. For ``format`` and
    ``pyformat`` (psycopg2) every literal ``%`` outside markers is doubled, so an identifier
    holding ``%`` survives.

    :param sql: Statement text with ``?`` markers.
    :param paramstyle: The driver's DB-API paramstyle: ``qmark``, ``format``, ``pyformat``,
        ``numeric`` or ``named``.
    :returns: The statement for that driver.
    :raises ValueError: For an unknown paramstyle.
    """
    if paramstyle == "qmark":
        return sql
    if paramstyle not in ("format", "pyformat", "numeric", "named"):
        raise ValueError(f"unsupported DB-API paramstyle {paramstyle!r}")
    out: list[str] = []
    quote: str | None = None
    n = 0
    for ch in sql:
        if quote is not None:
            if ch == quote:
                quote = None
            out.append("%%" if ch == "%" and paramstyle in ("format", "pyformat") else ch)
            continue
        if ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "?":
            n += 1
            if paramstyle in ("format", "pyformat"):
                out.append("%s")
            elif paramstyle == "numeric":
                out.append(f":{n}")
            else:
                out.append(f":p{n}")
        elif ch == "%" and paramstyle in ("format", "pyformat"):
            out.append("%%")
        else:
            out.append(ch)
    return "".join(out)


def named_params(params: Sequence[Any]) -> dict[str, Any]:
    """Parameters for the ``named`` paramstyle produced by :func:`convert_placeholders`."""
    return {f"p{i + 1}": v for i, v in enumerate(params)}
