"""Preflight: what the tasks of a compiled manifest need, checked before deploy (DESIGN §5).

``python -m contract_runtime.preflight --manifest PATH`` (``-`` reads stdin), in the runtime's
environment (the venv and ``PYTHONPATH`` the workers use), checks every active or deprecated DAG:

* ``entrypoint``: a ``python`` producer's ``package.module:function`` imports and is callable
  (:func:`contract_runtime.producers.python.load_entrypoint`, any exception of the import);
* ``sql``: a ``sql`` producer's SQL parses;
* ``quality_sql``: every ``type: sql`` quality query parses, ``{dataset}`` standing for a table;
* ``connection``: every named Airflow Connection exists (``airflow.sdk.Connection.get``: env
  ``AIRFLOW_CONN_*``, a secrets backend, the metadata database): an ingestion
  ``source.connection_id`` must (error); a missing ``warehouse_conn_id`` makes the runtime use the
  ``warehouse_conn_id`` must too (the runtime fails a task whose named warehouse Connection does
  not exist).

SQL is parsed by DuckDB's own parser (``DuckDBPyConnection.extract_statements``: it parses, runs
nothing, needs no database), for the DuckDB warehouse and for PostgreSQL connections alike
(DuckDB's parser derives from PostgreSQL's); for other connection types SQL is not parsed (one
``info`` finding says so).

It also times the import of each module the DAGs import (:func:`import_times`): the runtime's
operators (every DAG module imports them when Airflow parses it), each producer module in use and
each ``python`` producer's entrypoint module (imported by the task).

Output: one JSON document on stdout, ``{"findings": [...], "imports": [...]}``, each finding ``{check, severity
("error"|"warning"|"info"), dag_id, contract, pointer (path of the contract field, e.g.
["producer", "entrypoint"]), message, detail}`` plus ``sql_line`` / ``sql_column`` (1-based,
within the SQL text) for a parse error; each import ``{module, seconds (null when it failed),
error, dag_ids}`` (see :func:`import_times`). ``contract-assets preflight`` turns them into located
diagnostics. Exit status 0 (findings say what failed), 2 when the manifest cannot be read.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import re
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from contract_runtime.partitions import example_key, fill_sql, partition_of
from contract_runtime.quality_rules import resolve_datasets

__all__ = ["DAG_MODULE_IMPORTS", "PRODUCER_MODULES", "check_manifest", "import_times", "main", "parse_sql"]

_LINE = re.compile(r"^LINE (\d+): ", re.MULTILINE)


def parse_sql(sql: str) -> tuple[str, int | None, int | None] | None:
    """Parse ``sql`` with DuckDB's parser; None when it parses.

    :returns: ``(message, line, column)`` of the first error (line and column 1-based within
        ``sql``, None when DuckDB does not say), or None.
    """
    import duckdb

    connection = duckdb.connect(":memory:")
    try:
        statements = connection.extract_statements(sql)
    except duckdb.Error as error:
        text = str(error)
        message = text.split("\n", 1)[0]
        line = column = None
        found = _LINE.search(text)
        if found:
            line = int(found.group(1))
            after = text[found.end() :].split("\n")
            caret = after[1] if len(after) > 1 else ""
            if "^" in caret:
                column = caret.index("^") - len(found.group(0)) + 1
        return message, line, column
    finally:
        connection.close()
    if not statements:
        return "no SQL statement", None, None
    return None


def _connection(conn_id: str) -> tuple[Any | None, str | None]:
    """``(connection, None)``, ``(None, None)`` when it is not defined, ``(None, why)`` when the
    lookup itself failed."""
    try:
        from airflow.sdk import Connection
        from airflow.sdk.exceptions import AirflowNotFoundException
    except Exception as error:  # noqa: BLE001 - Airflow absent or broken: say so
        return None, f"{type(error).__name__}: {error}"
    try:
        return Connection.get(conn_id), None
    except AirflowNotFoundException:
        return None, None
    except Exception as error:  # noqa: BLE001 - a secrets backend or database error
        return None, f"{type(error).__name__}: {error}"


def _finding(dag: Mapping[str, Any], check: str, severity: str, pointer: list[Any], message: str, **extra: Any) -> dict[str, Any]:
    return {
        "check": check,
        "severity": severity,
        "dag_id": dag.get("dag_id"),
        "contract": dag.get("contract"),
        "pointer": pointer,
        "message": message,
        **extra,
    }


def _sql_dialect(conn_type: str | None) -> bool:
    return conn_type in (None, "duckdb", "postgres", "postgresql")


def check_dag(dag: Mapping[str, Any], check_connections: bool = True) -> Iterator[dict[str, Any]]:
    """The findings of one manifest ``dags[]`` entry (see the module doc)."""
    runtime = dag.get("runtime", {})
    producer = runtime.get("producer", {})
    conn_type: str | None = None
    conn_id = runtime.get("warehouse_conn_id")
    if check_connections and conn_id:
        connection, problem = _connection(str(conn_id))
        if problem is not None:
            yield _finding(dag, "connection", "error", ["id"], f"cannot look up the warehouse Connection {conn_id!r}", detail=problem, conn_id=conn_id)
        elif connection is None:
            yield _finding(
                dag,
                "connection",
                "error",
                ["id"],
                f"the warehouse Connection {conn_id!r} is not defined: every task of the contract fails",
                detail="",
                conn_id=conn_id,
            )
        else:
            conn_type = (connection.conn_type or "").lower() or None
    if producer.get("type") == "python":
        from contract_runtime.producers.python import load_entrypoint

        entrypoint = str(producer.get("entrypoint", ""))
        try:
            load_entrypoint(entrypoint)
        except BaseException as error:  # noqa: BLE001 - any import-time failure is the finding
            detail = " ".join(f"{type(error).__name__}: {error}".split())
            yield _finding(dag, "entrypoint", "error", ["producer", "entrypoint"], f"the entrypoint {entrypoint!r} does not load", detail=detail)
    parse = _sql_dialect(conn_type)
    if not parse:
        yield _finding(dag, "sql", "info", ["id"], f"SQL is not parsed for a {conn_type!r} warehouse", detail="")
    if parse and producer.get("type") == "sql":
        spec = (dag.get("runtime") or {}).get("partitioning")
        # a partitioned SQL runs with its placeholders filled in (producers/sql.py): parse it so, with an example key
        example = partition_of(dag, example_key(str(spec["grain"]))) if spec else None
        parsed = parse_sql(fill_sql(str(producer.get("sql") or ""), example))
        if parsed is not None:
            message, line, column = parsed
            yield _finding(dag, "sql", "error", ["producer", "path"], "the SQL producer does not parse", detail=message, file=producer.get("path"), sql_line=line, sql_column=column)
    for d_index, dataset in enumerate(runtime.get("datasets", [])):
        for q_index, rule in enumerate(dataset.get("quality", [])):
            if not parse or rule.get("type") != "sql" or rule.get("implied_by"):
                continue
            parsed = parse_sql(str(rule.get("query") or "").replace("{dataset}", '"_ca_staging"."preflight"'))
            if parsed is not None:
                message, line, column = parsed
                yield _finding(
                    dag,
                    "quality_sql",
                    "error",
                    ["datasets", d_index, "quality", q_index, "query"],
                    f"the query of quality rule {rule.get('name')!r} does not parse",
                    detail=message,
                    sql_line=line,
                    sql_column=column,
                )
    source = runtime.get("source") or {}
    source_conn = source.get("connection_id")
    if check_connections and source_conn:
        connection, problem = _connection(str(source_conn))
        if problem is not None or connection is None:
            yield _finding(
                dag,
                "connection",
                "error",
                ["source", "connection_id"],
                f"the Connection {source_conn!r} is not defined" if problem is None else f"cannot look up the Connection {source_conn!r}",
                detail=problem or "",
                conn_id=source_conn,
            )


def check_manifest(manifest: Mapping[str, Any], check_connections: bool = True) -> list[dict[str, Any]]:
    """Every finding of every active or deprecated DAG of ``manifest``, in dag_id order."""
    findings: list[dict[str, Any]] = []
    # Manifest version 2: a runtime dataset names its asset; its quality rules are the asset's and
    # the derived ones (ADR 0017f), joined as a task's load_manifest joins them.
    assets = {a["name"]: a for a in manifest.get("assets", []) if isinstance(a, Mapping) and "name" in a}
    for dag in sorted(manifest.get("dags", []), key=lambda d: str(d.get("dag_id"))):
        if dag.get("status", "active") in ("active", "deprecated"):
            joined = copy.deepcopy(dag)
            try:
                resolve_datasets(assets, joined)
            except KeyError:
                pass  # a dataset without its asset: nothing of it to check (the compiler writes both)
            findings.extend(check_dag(joined, check_connections))
    return findings


#: What every generated DAG module imports when Airflow parses it (templates/dag_module.py.hbs).
DAG_MODULE_IMPORTS: tuple[str, ...] = ("contract_runtime.operators",)
#: The runtime module of each producer type (as ``contract_runtime.producers.run_producer`` imports it).
PRODUCER_MODULES: dict[str, str] = {
    kind: f"contract_runtime.producers.{kind}" for kind in ("sql", "python", "command", "dbt", "load", "extract")
}


def import_times(manifest: Mapping[str, Any]) -> list[dict[str, Any]]:
    """How long each module the active and deprecated DAGs of ``manifest`` import takes to import.

    The modules, in this order: :data:`DAG_MODULE_IMPORTS` (every DAG), the producer module of
    each producer type in use, then each ``python`` producer's entrypoint module, each group
    sorted by name. Each is imported once, in this process, timed with ``time.perf_counter``:
    what an earlier module (or preflight itself) already imported is not counted again, so a
    time is what importing that module adds. A module that fails to import gets no time (its
    entrypoint's CA8801 finding says why).

    :returns: ``[{"module", "seconds" (float, or None on failure), "error" (the exception's
        type and message, or None), "dag_ids" (sorted: the DAGs that import it)}]``.
    """
    users: dict[str, set[str]] = {}
    order: list[list[str]] = [list(DAG_MODULE_IMPORTS), [], []]
    for dag in manifest.get("dags", []):
        if not isinstance(dag, Mapping) or dag.get("status", "active") not in ("active", "deprecated"):
            continue
        dag_id = str(dag.get("dag_id"))
        producer = (dag.get("runtime") or {}).get("producer") or {}
        named = list(DAG_MODULE_IMPORTS)
        kind = str(producer.get("type"))
        if kind in PRODUCER_MODULES:
            named.append(PRODUCER_MODULES[kind])
            if PRODUCER_MODULES[kind] not in order[1]:
                order[1].append(PRODUCER_MODULES[kind])
        module_name = str(producer.get("entrypoint", "")).partition(":")[0]
        if kind == "python" and module_name:
            named.append(module_name)
            if module_name not in order[2]:
                order[2].append(module_name)
        for name in named:
            users.setdefault(name, set()).add(dag_id)
    timed: list[dict[str, Any]] = []
    for group in order:
        for name in sorted(group):
            if name not in users:
                continue
            seconds: float | None = None
            problem: str | None = None
            started = time.perf_counter()
            try:
                importlib.import_module(name)
            except BaseException as error:  # noqa: BLE001 - any import-time failure: no time to report
                problem = " ".join(f"{type(error).__name__}: {error}".split())
            else:
                seconds = round(time.perf_counter() - started, 6)
            timed.append({"module": name, "seconds": seconds, "error": problem, "dag_ids": sorted(users[name])})
    return timed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m contract_runtime.preflight", description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", required=True, help="the compiled manifest, or - for stdin")
    parser.add_argument("--no-connections", action="store_true", help="do not look up Airflow Connections")
    args = parser.parse_args(argv)
    try:
        text = sys.stdin.read() if args.manifest == "-" else Path(args.manifest).read_text(encoding="utf-8")
        manifest = json.loads(text)
    except (OSError, ValueError, RecursionError) as error:
        print(f"preflight: cannot read the manifest: {error}", file=sys.stderr)
        return 2
    try:
        # Timed first, before the checks import anything of their own.
        imports = import_times(manifest)
        findings = check_manifest(manifest, check_connections=not args.no_connections)
    except RecursionError:
        # A value nested deeper than Python recurses (a hand-made manifest: the compiler writes at
        # most 128 levels, ADR 0019) is a manifest preflight cannot read, not a traceback.
        print("preflight: cannot read the manifest: a value in it is nested too deep", file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps({"findings": findings, "imports": imports}, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
