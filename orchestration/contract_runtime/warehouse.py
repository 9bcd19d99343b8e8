"""One SQL interface over the warehouse: the embedded DuckDB file or any common-sql database.

Selection (:func:`open_warehouse`), from the contract's ``warehouse_conn_id``:

1. no ``warehouse_conn_id`` -> the embedded DuckDB file: ``$CONTRACT_ASSETS_WAREHOUSE``, else
   ``$AIRFLOW_HOME/contract_assets.duckdb``;
2. a Connection of ``conn_type`` ``duckdb`` -> DuckDB at the connection's path
   (``duckdb:///abs/path.duckdb`` or ``duckdb://?path=/abs/path.duckdb``), else as in 1;
3. any other ``conn_type`` -> that connection's common-sql hook (``conn.get_hook()``, a
   ``DbApiHook``, e.g. ``PostgresHook``) wrapped in :class:`DbApiWarehouse`.

A named Connection that does not exist is a :class:`WarehouseConfigError` naming its id, never
replaced by the embedded default (the data would land in a local file nobody reads); a failure to
look it up (other than "not found") is raised as it is.

A DuckDB file (1 or 2) under a distributed executor (Airflow's ``[core] executor`` names one that
is not single-host, :func:`distributed_executors`) is refused before the file is opened, with a
:class:`DuckDBUnderDistributedExecutorError` that says to use a server database: the tasks of one
DAG run land on workers that share no disk, and DuckDB takes one writer process (ADR 0030).

Every method takes identifiers as :class:`~contract_runtime.sqlutil.TableRef` or plain names and
quotes them; values travel as bind parameters (``?`` markers, converted per driver). Outside
:meth:`Warehouse.transaction` each statement commits on its own; inside, nothing commits until
the block ends, and an exception rolls everything back.

Heavy imports (duckdb, Airflow) happen inside functions, never at module import.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from contract_runtime.sqlutil import (
    Column,
    TableRef,
    convert_placeholders,
    dialect_of,
    named_params,
    quote_ident,
)

__all__ = [
    "SINGLE_HOST_EXECUTORS",
    "DbApiWarehouse",
    "DuckDBUnderDistributedExecutorError",
    "DuckDBWarehouse",
    "Warehouse",
    "WarehouseConfigError",
    "WarehouseError",
    "WarehouseUnavailableError",
    "WarehouseLocation",
    "configured_executors",
    "default_duckdb_path",
    "distributed_executors",
    "open_warehouse",
    "refuse_duckdb_under_distributed_executor",
    "require_connection",
]

log = logging.getLogger(__name__)

#: Rows per ``executemany`` batch in :meth:`Warehouse.insert_rows`.
INSERT_BATCH: int = 1000


class WarehouseError(Exception):
    """The warehouse cannot be selected or opened, or a swap precondition failed."""


class WarehouseConfigError(WarehouseError):
    """A Connection the contract names does not exist (the warehouse's, and through
    :func:`require_connection` an object store's or a source database's), or the warehouse
    configuration is wrong (a DuckDB connection with a host, a connection type without a DB-API
    hook): a retry cannot fix it."""


class WarehouseUnavailableError(WarehouseError):
    """The warehouse server refused or dropped the connection (down, restarting, refusing
    connections, out of connection slots). Retryable: Airflow's retries try again, and a publish
    that did not commit left every target as it was. The message names the Connection id, never
    its secrets."""


class DuckDBUnderDistributedExecutorError(WarehouseConfigError):
    """A DuckDB file (the embedded one, or a ``duckdb`` Connection's) is the warehouse while
    Airflow runs tasks on several workers.

    Raised by :func:`open_warehouse` before the file is opened, instead of the lock timeout or
    the file of another worker a task would otherwise meet (ADR 0030). Non-retryable: no retry
    moves the task to the one host that holds the file.

    :ivar executors: The executors of ``[core] executor`` that are distributed.
    :ivar path: The DuckDB file the contract would have written.
    """

    def __init__(self, message: str, *, executors: Sequence[str], path: str) -> None:
        super().__init__(message)
        self.executors: tuple[str, ...] = tuple(executors)
        self.path: str = path


@dataclass(frozen=True)
class WarehouseLocation:
    """Where a warehouse's tables physically are, so lineage can name them (DESIGN §6.3).

    Exactly one of ``duckdb_file`` and ``connection_uri`` is set.

    :ivar duckdb_file: Absolute path of the embedded DuckDB file.
    :ivar connection_uri: The Airflow connection's URI of a server database. It may hold
        credentials: it is only for ``contract_runtime.lineage.sql_warehouse_namespace``, which
        keeps scheme, host and port; ``repr`` leaves it out.
    :ivar database: The database (catalog) the tables live in, the first part of an OpenLineage
        dataset name: DuckDB's catalog (the file's stem), or the connection's database; None
        when unknown.
    """

    duckdb_file: str | None = None
    connection_uri: str | None = field(default=None, repr=False)
    database: str | None = None


class Warehouse(ABC):
    """The operations the runtime needs from a SQL warehouse.

    :ivar dialect: ``"duckdb"``, ``"postgres"`` or the connection's ``conn_type``.
    :ivar description: Human-readable location for logs (never holds a password).
    """

    dialect: str
    description: str

    def __init__(self) -> None:
        self._in_transaction: bool = False

    # ------------------------------------------------------------------ primitives

    @abstractmethod
    def _run(self, sql: str, params: Sequence[Any] | None, fetch: bool) -> list[tuple[Any, ...]]:
        """Execute one statement (``?`` markers), return its rows when ``fetch``."""

    @abstractmethod
    def _run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Execute one statement (``?`` markers) once per row."""

    @abstractmethod
    def _begin(self) -> None: ...

    @abstractmethod
    def _commit(self) -> None: ...

    @abstractmethod
    def _rollback(self) -> None: ...

    @abstractmethod
    def close(self) -> None:
        """Close the connection (idempotent). An open transaction is rolled back."""

    @abstractmethod
    def _move_table(self, src: TableRef, dst: TableRef) -> None:
        """Move ``src`` to ``dst`` (which must not exist) inside the current transaction."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _autocommit(self, fn: Callable[[], Any]) -> Any:
        if self._in_transaction:
            return fn()
        self._begin()
        try:
            result = fn()
        except BaseException:
            with contextlib.suppress(Exception):
                self._rollback()
            raise
        self._commit()
        return result

    # ------------------------------------------------------------------ statements

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        """Execute one statement.

        :param sql: SQL text; ``?`` marks each bind parameter.
        :param params: Values for the markers, or None for a statement without markers (its
            text is then passed through untouched, ``?`` and ``%`` included).
        """
        self._autocommit(lambda: self._run(sql, params, False))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Execute one parameterised statement for each row of ``rows``."""
        if rows:
            self._autocommit(lambda: self._run_many(sql, rows))

    def fetch(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """Run a query and return all rows as tuples."""
        return list(self._autocommit(lambda: self._run(sql, params, True)))

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        """Run a query and return the first column of its first row (None when no row)."""
        rows = self.fetch(sql, params)
        return rows[0][0] if rows and rows[0] else None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Warehouse]:
        """Group statements into one transaction: commit at the end, roll back on any exception.

        :raises WarehouseError: When a transaction is already open (no nesting).
        """
        if self._in_transaction:
            raise WarehouseError("nested transactions are not supported")
        self._begin()
        self._in_transaction = True
        try:
            yield self
        except BaseException:
            self._in_transaction = False
            with contextlib.suppress(Exception):
                self._rollback()
            raise
        self._in_transaction = False
        self._commit()

    # ------------------------------------------------------------------ catalogue

    def table_exists(self, table: TableRef) -> bool:
        """True when ``table`` exists (as a table or view)."""
        n = self.scalar(
            "select count(*) from information_schema.tables where table_schema = ? and table_name = ?",
            [table.schema, table.name],
        )
        return bool(n)

    def materialize_view(self, table: TableRef) -> bool:
        """Replace the view ``table`` by a table of the same name holding its rows, in one
        transaction (``CREATE TABLE AS SELECT``, ``DROP VIEW``, ``ALTER TABLE ... RENAME``); a
        table or a missing relation is left alone.

        Write-audit-publish publishes what it audited: a view would read its sources again after
        the audit, and one in a staging schema is dropped with that schema.

        :returns: True when a view was replaced.
        """
        kind = self.scalar(
            "select table_type from information_schema.tables where table_schema = ? and table_name = ?",
            [table.schema, table.name],
        )
        if kind is None or "VIEW" not in str(kind).upper():
            return False
        tmp = TableRef(table.schema, f"{table.name}__ca_table")
        with self.transaction():
            self._run(f"drop table if exists {tmp.sql}", None, False)
            self._run(f"create table {tmp.sql} as select * from {table.sql}", None, False)
            self._run(f"drop view {table.sql}", None, False)
            self._run(f"alter table {tmp.sql} rename to {quote_ident(table.name)}", None, False)
        return True

    def columns(self, table: TableRef) -> list[Column]:
        """The columns of ``table`` in ordinal order (empty when it does not exist)."""
        rows = self.fetch(
            "select column_name, data_type from information_schema.columns "
            "where table_schema = ? and table_name = ? order by ordinal_position",
            [table.schema, table.name],
        )
        return [Column(str(r[0]), str(r[1])) for r in rows]

    def row_count(self, table: TableRef) -> int:
        """``count(*)`` of ``table``."""
        return int(self.scalar(f"select count(*) from {table.sql}") or 0)

    def list_tables(self, schema: str) -> list[str]:
        """Names of the tables in ``schema``, sorted."""
        rows = self.fetch(
            "select table_name from information_schema.tables where table_schema = ? order by table_name",
            [schema],
        )
        return [str(r[0]) for r in rows]

    # ------------------------------------------------------------------ DDL and DML

    def create_schema(self, schema: str) -> None:
        """``CREATE SCHEMA IF NOT EXISTS``."""
        self.execute(f"create schema if not exists {quote_ident(schema)}")

    def drop_table(self, table: TableRef) -> None:
        """``DROP TABLE IF EXISTS``."""
        self.execute(f"drop table if exists {table.sql}")

    def create_table(self, table: TableRef, columns: Sequence[tuple[str, str]], *, replace: bool = True) -> None:
        """Create ``table`` with ``columns`` (name, SQL type); its schema is created as needed.

        :param replace: Drop an existing table of that name first.
        """
        cols = ", ".join(f"{quote_ident(n)} {t}" for n, t in columns)

        def run() -> None:
            self._run(f"create schema if not exists {quote_ident(table.schema)}", None, False)
            if replace:
                self._run(f"drop table if exists {table.sql}", None, False)
            self._run(f"create table {table.sql} ({cols})", None, False)

        self._autocommit(run)

    def create_table_as(self, table: TableRef, select_sql: str, *, replace: bool = True) -> None:
        """``CREATE TABLE table AS <select_sql>``; the schema is created as needed.

        :param select_sql: A query, trailing semicolons and whitespace are stripped. It runs as
            written (it is the contract author's SQL or the runtime's own).
        """
        body = select_sql.strip().rstrip(";").rstrip()

        def run() -> None:
            self._run(f"create schema if not exists {quote_ident(table.schema)}", None, False)
            if replace:
                self._run(f"drop table if exists {table.sql}", None, False)
            self._run(f"create table {table.sql} as\n{body}\n", None, False)

        self._autocommit(run)

    def insert_rows(self, table: TableRef, column_names: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        """Insert ``rows`` (sequences in ``column_names`` order) into ``table``.

        :returns: The number of rows inserted.
        """
        marks = ", ".join("?" for _ in column_names)
        cols = ", ".join(quote_ident(c) for c in column_names)
        sql = f"insert into {table.sql} ({cols}) values ({marks})"
        total = 0
        batch: list[Sequence[Any]] = []

        def flush() -> None:
            nonlocal batch
            if batch:
                self._run_many(sql, batch)
                batch = []

        def run() -> None:
            nonlocal total
            for row in rows:
                batch.append(tuple(row))
                total += 1
                if len(batch) >= INSERT_BATCH:
                    flush()
            flush()

        self._autocommit(run)
        return total

    def move_table(self, src: TableRef, dst: TableRef, *, replace: bool = True) -> None:
        """Move ``src`` to ``dst`` in one transaction (``dst``'s schema is created as needed).

        :param replace: Drop an existing ``dst`` first (in the same transaction).
        """

        def run() -> None:
            self._run(f"create schema if not exists {quote_ident(dst.schema)}", None, False)
            if replace:
                self._run(f"drop table if exists {dst.sql}", None, False)
            self._move_table(src, dst)

        self._autocommit(run)

    def swap(
        self,
        pairs: Sequence[tuple[TableRef, TableRef]],
        *,
        before_commit: Callable[[Warehouse], None] | None = None,
    ) -> None:
        """Replace each target by its staging table, all in ONE transaction.

        For each ``(staging, target)``: create the target's schema if needed, drop the target,
        move the staging table into its place. Then ``before_commit(self)`` runs inside the same
        transaction (state updates such as the watermark). Any failure rolls everything back:
        every target keeps its previous content and every staging table stays.

        :param pairs: ``(staging, target)`` tables.
        :param before_commit: Optional extra work that must commit with the swap.
        :raises WarehouseError: When a staging table does not exist (checked before any change).
        """
        missing = [s.dotted for s, _ in pairs if not self.table_exists(s)]
        if missing:
            raise WarehouseError(f"staging table(s) missing, nothing published: {', '.join(missing)}")
        with self.transaction():
            for staging, target in pairs:
                self._run(f"create schema if not exists {quote_ident(target.schema)}", None, False)
                self._run(f"drop table if exists {target.sql}", None, False)
                self._move_table(staging, target)
            if before_commit is not None:
                before_commit(self)

    def replace_partitions(
        self,
        pairs: Sequence[tuple[TableRef, TableRef]],
        column: str,
        start: Any,
        end: Any,
        *,
        before_commit: Callable[[Warehouse], None] | None = None,
    ) -> None:
        """Replace one partition of each target by its staging table's rows, all in ONE transaction.

        For each ``(staging, target)``: a target that does not exist yet becomes the staging table
        (moved); otherwise its rows with ``start <= column < end`` are deleted and the staging
        table's rows inserted (by column name), and the staging table dropped. Rows of other
        partitions are never touched. ``before_commit(self)`` runs in the same transaction; any
        failure rolls everything back (every target keeps every partition, staging stays).

        :param column: The partition column, a column of both tables.
        :param start: Start of the partition (inclusive), a timezone-aware datetime.
        :param end: End of the partition (exclusive).
        :raises WarehouseError: When a staging table does not exist (checked before any change).
        """
        missing = [s.dotted for s, _ in pairs if not self.table_exists(s)]
        if missing:
            raise WarehouseError(f"staging table(s) missing, nothing published: {', '.join(missing)}")
        col = quote_ident(column)
        with self.transaction():
            for staging, target in pairs:
                self._run(f"create schema if not exists {quote_ident(target.schema)}", None, False)
                if not self.table_exists(target):
                    self._move_table(staging, target)
                    continue
                names = ", ".join(quote_ident(c.name) for c in self.columns(staging))
                self._run(f"delete from {target.sql} where {col} >= ? and {col} < ?", [start, end], False)
                self._run(f"insert into {target.sql} ({names}) select {names} from {staging.sql}", None, False)
                self._run(f"drop table {staging.sql}", None, False)
            if before_commit is not None:
                before_commit(self)

    def env(self) -> dict[str, str]:
        """``CONTRACT_ASSETS_WAREHOUSE_*`` variables telling a subprocess where the warehouse is."""
        return {"CONTRACT_ASSETS_WAREHOUSE_KIND": self.dialect}

    def location(self) -> WarehouseLocation:
        """Where the tables physically are (for lineage dataset names); call while open.

        :raises WarehouseError: When the location cannot be told (this base class cannot).
        """
        raise WarehouseError(f"{type(self).__name__} cannot tell its location")

    @contextlib.contextmanager
    def released(self) -> Iterator[None]:
        """Let another process use the warehouse for the duration of the block.

        A server database needs nothing; the embedded DuckDB file closes its connection (one
        writer process at a time) and reopens it afterwards.
        """
        yield


# ---------------------------------------------------------------------- DuckDB


class DuckDBWarehouse(Warehouse):
    """The embedded warehouse: one DuckDB database file.

    DuckDB lets one process at a time open a file for writing. Opening retries while another
    process holds the lock, for up to ``lock_timeout`` seconds; the runtime closes the
    connection at the end of every task (and before starting a command producer).

    :param path: The database file (created when missing, with its folder).
    :param lock_timeout: Seconds to wait for another process's lock
        (env ``CONTRACT_ASSETS_DUCKDB_LOCK_TIMEOUT``, default 120).
    """

    dialect = "duckdb"

    def __init__(self, path: str | os.PathLike[str], *, lock_timeout: float | None = None) -> None:
        super().__init__()
        self.path: str = os.path.abspath(os.fspath(path))
        self.description = f"duckdb:{self.path}"
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        if lock_timeout is None:
            lock_timeout = float(os.environ.get("CONTRACT_ASSETS_DUCKDB_LOCK_TIMEOUT", "120"))
        self.lock_timeout: float = lock_timeout
        self._con: Any = None
        self._open()

    def _open(self) -> None:
        import duckdb

        deadline = time.monotonic() + self.lock_timeout
        delay = 0.05
        while True:
            try:
                self._con = duckdb.connect(self.path)
                break
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower() or time.monotonic() >= deadline:
                    raise WarehouseError(f"cannot open DuckDB warehouse {self.path}: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        self._con.execute("set TimeZone = 'UTC'")

    @property
    def connection(self) -> Any:
        """The underlying ``duckdb.DuckDBPyConnection`` (for DuckDB-only fast paths)."""
        return self._con

    def _run(self, sql: str, params: Sequence[Any] | None, fetch: bool) -> list[tuple[Any, ...]]:
        cur = self._con.execute(sql, list(params)) if params is not None else self._con.execute(sql)
        return cur.fetchall() if fetch else []

    def _run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._con.executemany(sql, [list(r) for r in rows])

    def _begin(self) -> None:
        self._con.execute("begin transaction")

    def _commit(self) -> None:
        self._con.execute("commit")

    def _rollback(self) -> None:
        self._con.execute("rollback")

    def _move_table(self, src: TableRef, dst: TableRef) -> None:
        # DuckDB cannot move a table to another schema with ALTER TABLE: copy, then drop.
        self._run(f"create table {dst.sql} as select * from {src.sql}", None, False)
        self._run(f"drop table {src.sql}", None, False)

    def close(self) -> None:
        con = getattr(self, "_con", None)
        if con is not None:
            if self._in_transaction:
                with contextlib.suppress(Exception):
                    con.execute("rollback")
            self._in_transaction = False
            con.close()
            self._con = None

    def env(self) -> dict[str, str]:
        return {"CONTRACT_ASSETS_WAREHOUSE_KIND": "duckdb", "CONTRACT_ASSETS_WAREHOUSE_PATH": self.path}

    def location(self) -> WarehouseLocation:
        """The DuckDB file and its catalog name (DuckDB names the catalog after the file's stem)."""
        catalog = self.scalar("select current_database()")
        return WarehouseLocation(duckdb_file=self.path, database=str(catalog) if catalog else None)

    @contextlib.contextmanager
    def released(self) -> Iterator[None]:
        if self._in_transaction:
            raise WarehouseError("cannot release the DuckDB file inside a transaction")
        self.close()
        try:
            yield
        finally:
            self._open()


# ---------------------------------------------------------------------- common-sql


def _paramstyle_of(hook: Any, conn: Any) -> str:
    placeholder = getattr(hook, "placeholder", None)
    if placeholder == "?":
        return "qmark"
    if placeholder in ("%s", None):
        module = type(conn).__module__.split(".")[0]
        import sys

        style = getattr(sys.modules.get(module), "paramstyle", None)
        return style if isinstance(style, str) else "format"
    if isinstance(placeholder, str) and placeholder.startswith(":"):
        return "numeric" if placeholder[1:].isdigit() else "named"
    return "format"


class DbApiWarehouse(Warehouse):
    """A warehouse reached through an Airflow common-sql hook (``DbApiHook``).

    :param hook: A ``DbApiHook`` (for example ``PostgresHook``); its ``get_conn()`` gives the
        DB-API connection the warehouse owns and closes.
    :param dialect: ``"postgres"`` for PostgreSQL (enables ``ALTER TABLE ... SET SCHEMA``),
        else the connection type (tables are then moved by copy).
    :param conn_id: The Airflow connection id, for messages and :meth:`env`.
    :param connection: The Airflow Connection (for :meth:`location`); default the hook's own
        ``connection``.
    """

    def __init__(self, hook: Any, *, dialect: str, conn_id: str, connection: Any = None) -> None:
        super().__init__()
        self.hook = hook
        self.dialect = dialect
        self.conn_id = conn_id
        self._airflow_connection = connection
        self.description = f"{dialect} connection {conn_id!r}"
        try:
            self._con = hook.get_conn()
        except Exception as exc:
            raise WarehouseUnavailableError(
                f"the warehouse Connection {conn_id!r} ({dialect}) could not be connected to: "
                f"{_masked_error(exc, connection or getattr(hook, 'connection', None))}; the task retries"
            ) from exc
        with contextlib.suppress(Exception):
            self._con.autocommit = False
        self._paramstyle = _paramstyle_of(hook, self._con)

    def _prepare(self, sql: str, params: Sequence[Any] | None) -> tuple[str, Any]:
        if params is None:
            return sql, None
        text = convert_placeholders(sql, self._paramstyle)
        if self._paramstyle == "named":
            return text, named_params(params)
        return text, tuple(params)

    def _run(self, sql: str, params: Sequence[Any] | None, fetch: bool) -> list[tuple[Any, ...]]:
        text, args = self._prepare(sql, params)
        cur = self._con.cursor()
        try:
            if args is None:
                cur.execute(text)
            else:
                cur.execute(text, args)
            return [tuple(r) for r in cur.fetchall()] if fetch else []
        finally:
            cur.close()

    def _run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        text, _ = self._prepare(sql, [])
        if self._paramstyle == "named":
            args: list[Any] = [named_params(r) for r in rows]
        else:
            args = [tuple(r) for r in rows]
        cur = self._con.cursor()
        try:
            cur.executemany(text, args)
        finally:
            cur.close()

    def _begin(self) -> None:
        # DB-API connections open a transaction implicitly with the first statement.
        pass

    def _commit(self) -> None:
        self._con.commit()

    def _rollback(self) -> None:
        self._con.rollback()

    def _move_table(self, src: TableRef, dst: TableRef) -> None:
        if dialect_of(self.dialect).moves_tables_by_schema:
            # Transactional DDL: move the table into the target schema, then rename it there.
            self._run(f"alter table {src.sql} set schema {quote_ident(dst.schema)}", None, False)
            moved = TableRef(dst.schema, src.name)
            if src.name != dst.name:
                self._run(f"alter table {moved.sql} rename to {quote_ident(dst.name)}", None, False)
            return
        self._run(f"create table {dst.sql} as select * from {src.sql}", None, False)
        self._run(f"drop table {src.sql}", None, False)

    def close(self) -> None:
        con = getattr(self, "_con", None)
        if con is not None:
            with contextlib.suppress(Exception):
                con.rollback()
            self._in_transaction = False
            with contextlib.suppress(Exception):
                con.close()
            self._con = None

    def env(self) -> dict[str, str]:
        return {"CONTRACT_ASSETS_WAREHOUSE_KIND": self.dialect, "CONTRACT_ASSETS_WAREHOUSE_CONN_ID": self.conn_id}

    def location(self) -> WarehouseLocation:
        """The connection's URI and database (the hook's ``database`` override, else the
        connection's ``schema`` field, which Airflow's SQL connections use for the database)."""
        conn = self._airflow_connection or getattr(self.hook, "connection", None)
        if conn is None or not hasattr(conn, "get_uri"):
            raise WarehouseError(f"connection {self.conn_id!r}: no Airflow Connection to tell its location")
        database = getattr(self.hook, "database", None) or getattr(conn, "schema", None)
        return WarehouseLocation(connection_uri=str(conn.get_uri()), database=str(database) if database else None)


# ---------------------------------------------------------------------- selection


def default_duckdb_path() -> str:
    """``$CONTRACT_ASSETS_WAREHOUSE``, else ``$AIRFLOW_HOME/contract_assets.duckdb``
    (``AIRFLOW_HOME`` defaulting to ``~/airflow`` as in Airflow)."""
    explicit = os.environ.get("CONTRACT_ASSETS_WAREHOUSE")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    home = os.environ.get("AIRFLOW_HOME") or os.path.join(os.path.expanduser("~"), "airflow")
    return os.path.join(os.path.abspath(os.path.expanduser(home)), "contract_assets.duckdb")


def _duckdb_path_of(conn: Any) -> str | None:
    extra: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        extra = conn.extra_dejson or {}
    if extra.get("path"):
        return os.path.abspath(os.path.expanduser(str(extra["path"])))
    if conn.host:
        raise WarehouseConfigError(f"DuckDB connection {conn.conn_id!r} names a host; write duckdb:///absolute/path.duckdb")
    if conn.schema:
        schema = str(conn.schema)
        return schema if schema.startswith("/") else "/" + schema
    return None


def _get_connection(conn_id: str) -> Any | None:
    """The Airflow Connection ``conn_id``, or None when it is not defined anywhere."""
    from airflow.sdk import Connection
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        return Connection.get(conn_id)
    except AirflowNotFoundException:
        return None


def require_connection(conn_id: str, what: str) -> Any:
    """The Airflow Connection ``conn_id`` that a contract names; never a stand-in for it.

    Every runtime module that resolves a contract's Connection by id (the object store's, the
    extract source's) asks here first, so a named Connection that does not exist fails the task at
    once instead of being replaced by the worker's own identity: Airflow's providers log a warning
    and carry on with an empty Connection (the Amazon provider's ``AwsGenericHook.conn_config``:
    "Unable to find AWS Connection ID ..., switching to empty"), and boto then reads the
    worker's environment variables or instance profile.

    The lookup is the Task SDK's (``airflow.sdk.Connection.get``: the task's secrets backends,
    ``AIRFLOW_CONN_<ID>`` environment variables, the API server), which raises
    ``AirflowNotFoundException`` when no backend has the id.

    :param conn_id: The Connection id as compiled into the manifest.
    :param what: Who needs it, to open the message: ``"<contract id>: cannot list 's3://b/p/'"``.
    :returns: The Connection (``airflow.sdk.Connection``).
    :raises WarehouseConfigError: When no secrets backend defines ``conn_id``; the message is
        ``what`` + the id + how to define it. Another failure of the lookup is raised as it is.
    """
    conn = _get_connection(conn_id)
    if conn is None:
        raise WarehouseConfigError(
            f"{what}: the Connection {conn_id!r} does not exist; define it in Airflow (e.g. "
            f"AIRFLOW_CONN_{conn_id.upper()}) — the worker's own credentials are never used in its place"
        )
    return conn


#: Executors that run every task on the scheduler's host, where one DuckDB file can serve them
#: (one writer process at a time, ADR 0030): Airflow 3's ``LocalExecutor``, and the
#: ``SequentialExecutor`` and ``DebugExecutor`` of Airflow 2 should a configuration still name
#: them. Any other executor (``CeleryExecutor``, ``KubernetesExecutor``, the Edge provider's
#: ``EdgeExecutor``, the Amazon provider's ECS, Batch and Lambda executors, an unknown custom one)
#: counts as distributed: its workers share no disk, so a task cannot count on the file.
SINGLE_HOST_EXECUTORS: frozenset[str] = frozenset({"LocalExecutor", "SequentialExecutor", "DebugExecutor"})


def configured_executors() -> list[str]:
    """The executors of Airflow's ``[core] executor``, as read through the Task SDK.

    The setting is a comma-separated list (Airflow 2.10+ multiple executors); each entry is a
    core executor's name (``CeleryExecutor``), a class path, or ``alias:class.path``. The Task
    SDK's configuration (``airflow.sdk.configuration.conf``: ``AIRFLOW__CORE__EXECUTOR`` and its
    ``_CMD``/``_SECRET`` forms over ``airflow.cfg``, Airflow's default else) is what a worker of Airflow 3
    reads; the core's ``airflow.configuration`` is not used (a task touches nothing of the core,
    ``test_task_sdk_only.py``).

    :returns: The entries in the order written, stripped, empty ones dropped; Airflow's default
        ``["LocalExecutor"]`` when the option is empty.
    """
    from airflow.sdk.configuration import conf

    value = str(conf.get("core", "executor", fallback="") or "")
    entries = [entry.strip() for entry in value.split(",") if entry.strip()]
    return entries or ["LocalExecutor"]


def distributed_executors(entries: Sequence[str]) -> list[str]:
    """The entries of a ``[core] executor`` list that are not single-host.

    An entry is judged by its class name: the part after an ``alias:``, then after the last
    ``.`` (``airflow.providers.celery.executors.celery_executor.CeleryExecutor`` is
    ``CeleryExecutor``). Not in :data:`SINGLE_HOST_EXECUTORS` means distributed.

    :param entries: What :func:`configured_executors` returns.
    :returns: The distributed entries, as written, in order; empty when all are single-host.
    """
    return [entry for entry in entries if entry.rsplit(":", 1)[-1].rsplit(".", 1)[-1] not in SINGLE_HOST_EXECUTORS]


def refuse_duckdb_under_distributed_executor(path: str, conn_id: str | None) -> None:
    """Fail before opening the DuckDB file ``path`` when ``[core] executor`` is distributed.

    :param path: The DuckDB file the warehouse would be.
    :param conn_id: The contract's ``warehouse_conn_id`` (None: the embedded default), for the message.
    :raises DuckDBUnderDistributedExecutorError: When :func:`distributed_executors` of
        :func:`configured_executors` is not empty; the message names the executor(s) and the
        file, and says to set ``warehouse_conn_id`` to a PostgreSQL Connection.
    """
    executors = configured_executors()
    distributed = distributed_executors(executors)
    if not distributed:
        return
    which = f"the DuckDB Connection {conn_id!r}" if conn_id else "the embedded DuckDB file (no warehouse_conn_id)"
    names = ", ".join(distributed)
    raise DuckDBUnderDistributedExecutorError(
        f"the warehouse is {which} at {path}, but Airflow's [core] executor is {','.join(executors)!r}: "
        f"{names} runs tasks on several workers, which neither share that file nor may write it at once "
        f"(DuckDB takes one writer process); set warehouse_conn_id to a PostgreSQL Connection "
        f"(conn_type postgres) for this contract, or run it on the LocalExecutor",
        executors=distributed,
        path=path,
    )


def _masked_error(exc: BaseException, connection: Any) -> str:
    """The first line of ``exc``'s message, with the Connection's password and every URI
    credential (:func:`contract_runtime.redact.mask_text`) masked."""
    from contract_runtime.redact import mask_text

    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    password = str(getattr(connection, "password", "") or "")
    if len(password) >= 4:
        text = text.replace(password, "***")
    return mask_text(text)


def open_warehouse(conn_id: str | None) -> Warehouse:
    """Open the warehouse named by a contract's ``warehouse_conn_id`` (rules in the module doc).

    :param conn_id: The Airflow connection id, or None for the embedded default.
    :returns: An open warehouse; close it (it is a context manager).
    :raises WarehouseConfigError: When ``conn_id`` names no Airflow Connection, or one that cannot
        be used as a warehouse.
    :raises DuckDBUnderDistributedExecutorError: When the warehouse is a DuckDB file and
        Airflow's executor is distributed (:func:`refuse_duckdb_under_distributed_executor`).
    :raises WarehouseUnavailableError: (retryable) When the server does not take the connection.
    """
    conn = _get_connection(conn_id) if conn_id else None
    if conn_id and conn is None:
        raise WarehouseConfigError(
            f"the warehouse Connection {conn_id!r} (warehouse_conn_id) does not exist; define it in Airflow "
            f"(e.g. AIRFLOW_CONN_{conn_id.upper()}), or remove warehouse_conn_id to use the embedded DuckDB file"
        )
    if conn is None or (conn.conn_type or "").lower() == "duckdb":
        path = (_duckdb_path_of(conn) if conn is not None else None) or default_duckdb_path()
        refuse_duckdb_under_distributed_executor(path, conn_id)
        wh: Warehouse = DuckDBWarehouse(path)
    else:
        conn_type = (conn.conn_type or "").lower()
        hook = conn.get_hook()
        if not hasattr(hook, "get_conn"):
            raise WarehouseConfigError(f"connection {conn_id!r} ({conn_type}) has no DB-API hook")
        dialect = "postgres" if conn_type in ("postgres", "postgresql") else conn_type
        wh = DbApiWarehouse(hook, dialect=dialect, conn_id=str(conn_id), connection=conn)
    log.info("warehouse: %s", wh.description)
    return wh
