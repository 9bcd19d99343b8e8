"""Run a compiled contract-assets project end to end in a local Airflow home, and report.

Used by ``scripts/demo.sh`` (``npm run demo``) and by ``test/python/test_e2e.py``::

    python scripts/localrun.py run --project DIR [--logical-date ISO] [--only DAG_ID ...] [--no-seed]
    python scripts/localrun.py report --project DIR [--runs RESULTS.json]
    python scripts/localrun.py lineage [--log RUN.log ...]

The caller sets the environment first: ``AIRFLOW_HOME`` (a migrated metadata DB),
``AIRFLOW__CORE__DAGS_FOLDER=<project>/generated/dags``, ``CONTRACT_ASSETS_WAREHOUSE`` (the
DuckDB file), ``PYTHONPATH`` with ``<project>/orchestration/jobs`` (python producers) and a
``PATH`` (dbt contracts find dbt in ``<project>/.venv-dbt`` or ``CONTRACT_ASSETS_DBT_BIN``).

``run`` seeds the external upstreams (see :func:`seed_external_sample_data`), then runs every
DAG of the manifest (or the ``--only`` ones) in dependency order with ``DAG.test()``, which is
what ``airflow dags test`` calls after parsing the DAG, in this one process so Airflow is
imported once. It prints one line ``RESULT <json>``: ``{"order": [dag_id], "runs": {dag_id:
{"state", "run_id"}}, "seeded": [...]}``. Exit status 0 whatever the DAG outcomes (the caller
judges them). ``DAG.test()`` runs each schedulable task in this process, one after the other,
without an executor and without pools (``airflow.sdk.definitions.dag.DAG.test``: only the
scheduler counts pool slots), so ``generated/pools.json`` is neither needed nor imported here:
tasks never run at once, and the one DuckDB file has one writer.

``report`` prints what was published (table, rows, quality status) and what was blocked or
quarantined. ``lineage`` prints where the OpenLineage events went and how many of each type
each emitter (contract-assets, the Airflow OpenLineage provider) wrote: read back from the file
when the transport is a file, else counted from the "sent" lines of the run logs given.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

STATE_OK = "success"


# ---------------------------------------------------------------------- manifest helpers


def load_manifest(project: Path) -> dict[str, Any]:
    """``<project>/generated/manifest.json``."""
    return json.loads((project / "generated" / "manifest.json").read_text(encoding="utf-8"))


def dependency_order(manifest: dict[str, Any]) -> list[str]:
    """The DAG ids in an order where every producer runs before its consumers.

    Derived from ``edges[]`` (upstream asset -> produced asset, via the consuming dag) and
    ``assets[].producer``; ties are broken by dag_id, so the order is deterministic.

    :raises ValueError: On a cycle (the compiler rejects those, so it means a broken manifest).
    """
    dags = sorted(d["dag_id"] for d in manifest["dags"])
    producer = {a["name"]: a.get("producer") for a in manifest["assets"]}
    needs: dict[str, set[str]] = {d: set() for d in dags}
    for edge in manifest["edges"]:
        upstream_dag = producer.get(edge["from"])
        if upstream_dag and upstream_dag in needs and edge["via"] in needs and upstream_dag != edge["via"]:
            needs[edge["via"]].add(upstream_dag)
    order: list[str] = []
    done: set[str] = set()
    while len(order) < len(dags):
        ready = [d for d in dags if d not in done and needs[d] <= done]
        if not ready:
            raise ValueError(f"dependency cycle among {sorted(set(dags) - done)}")
        order.append(ready[0])
        done.add(ready[0])
    return order


# ---------------------------------------------------------------------- external upstreams


def external_sample_files(project: Path, manifest: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """The stand-in data of the external Assets that DAGs read as warehouse tables.

    A local-run concern, deliberately not the runtime's: an external Asset (the example's
    ``fx.rates_daily``, loaded by treasury) belongs to a system outside the project, and in a
    deployment its table is that system's data. The runtime never writes it; only the local
    runner and the live-stack tests, on throw-away warehouses, stand in for the outside system.

    The file is the manifest's ``assets[].sample_data`` (the orchestration config's
    ``sample_data`` entry, a project-relative path, resolved inside the project). An external
    Asset that an ingestion contract loads (its ``source``) is skipped: the load producer reads
    that file itself (``dags[].runtime.sample_data``). Every other external Asset read as an
    upstream is loaded into the table ``<first segment>.<rest>`` of its name.

    :returns: ``[(asset, schema, table, absolute file)]``, sorted by asset name.
    """
    from contract_runtime.manifest import resolve_project_path

    manifest_path = project / "generated" / "manifest.json"
    sources = {d["runtime"].get("source", {}).get("name") for d in manifest["dags"]}
    read = {u["asset"] for d in manifest["dags"] for u in d["runtime"].get("upstreams", [])}
    found = []
    for asset in sorted(manifest["assets"], key=lambda a: a["name"]):
        name, sample = asset["name"], asset.get("sample_data")
        if not asset.get("external") or not sample or name in sources or name not in read:
            continue
        schema, _, table = name.partition(".")
        found.append((name, schema, table, str(resolve_project_path(manifest_path, str(sample)))))
    return found


def _reader(file: str) -> str:
    if file.endswith(".parquet"):
        return "read_parquet(?)"
    if file.endswith(".jsonl"):
        return "read_json(?, format = 'newline_delimited')"
    return "read_csv(?, header = true)"


def _rel(project: Path, file: str) -> str:
    return Path(file).resolve().relative_to(project.resolve()).as_posix()


def seed_external_sample_data(project: Path, manifest: dict[str, Any], warehouse_path: str) -> list[dict[str, Any]]:
    """Load :func:`external_sample_files` into the DuckDB warehouse at ``warehouse_path``, with
    DuckDB's type detection, replacing what was there.

    :returns: ``[{"asset", "table", "rows", "file"}]``.
    """
    import duckdb

    seeded: list[dict[str, Any]] = []
    con = duckdb.connect(warehouse_path)
    try:
        for name, schema, table, file in external_sample_files(project, manifest):
            q_schema = '"' + schema.replace('"', '""') + '"'
            q_table = q_schema + '."' + table.replace('"', '""') + '"'
            con.execute(f"create schema if not exists {q_schema}")
            con.execute(f"create or replace table {q_table} as select * from {_reader(file)}", [file])
            rows = con.execute(f"select count(*) from {q_table}").fetchone()[0]
            seeded.append({"asset": name, "table": f"{schema}.{table}", "rows": int(rows), "file": _rel(project, file)})
    finally:
        con.close()
    return seeded


#: DuckDB's detected column types and the PostgreSQL types their values load into.
_POSTGRES_TYPES = {
    "BOOLEAN": "boolean",
    "BIGINT": "bigint",
    "INTEGER": "integer",
    "DOUBLE": "double precision",
    "DATE": "date",
    "TIMESTAMP": "timestamp",
    "TIMESTAMP WITH TIME ZONE": "timestamptz",
    "VARCHAR": "text",
}


def seed_external_sample_data_postgres(project: Path, manifest: dict[str, Any], uri: str) -> list[dict[str, Any]]:
    """Load :func:`external_sample_files` into the PostgreSQL database at ``uri`` (a
    ``postgres://`` URI): types detected by DuckDB as for the embedded warehouse, then
    ``CREATE TABLE`` and the rows inserted with psycopg2, replacing what was there.

    :returns: ``[{"asset", "table", "rows", "file"}]``.
    :raises ValueError: On a detected column type this loader has no PostgreSQL type for.
    """
    import duckdb
    import psycopg2

    seeded: list[dict[str, Any]] = []
    con = psycopg2.connect(uri.replace("postgres://", "postgresql://", 1))
    try:
        for name, schema, table, file in external_sample_files(project, manifest):
            relation = duckdb.sql(f"select * from {_reader(file)}", params=[file])
            columns = []
            for column, kind in zip(relation.columns, relation.types, strict=True):
                text = str(kind)
                pg_type = "numeric" if text.startswith("DECIMAL") else _POSTGRES_TYPES.get(text)
                if pg_type is None:
                    raise ValueError(f"{file}: column {column!r} has type {text}, which has no PostgreSQL type here")
                columns.append((column, pg_type))
            rows = relation.fetchall()
            q_schema = '"' + schema.replace('"', '""') + '"'
            q_table = q_schema + '."' + table.replace('"', '""') + '"'
            quoted = ", ".join('"' + c.replace('"', '""') + '"' for c, _ in columns)
            with con, con.cursor() as cur:
                cur.execute(f"create schema if not exists {q_schema}")
                cur.execute(f"drop table if exists {q_table}")
                cur.execute(f"create table {q_table} (" + ", ".join(f'"{c}" {t}' for c, t in columns) + ")")
                cur.executemany(
                    f"insert into {q_table} ({quoted}) values ({', '.join(['%s'] * len(columns))})", rows
                )
            seeded.append({"asset": name, "table": f"{schema}.{table}", "rows": len(rows), "file": _rel(project, file)})
    finally:
        con.close()
    return seeded


# ---------------------------------------------------------------------- run


def _reuse_in_process_api() -> None:
    """Build Airflow's in-process Execution API once per process instead of once per task.

    ``DAG.test()`` runs each task through ``supervisor.in_process_api_server()``, which builds a
    new FastAPI app every time (seconds each). The app is stateless between requests, so one
    instance serves every task the same way; this only removes the rebuilding.
    """
    from airflow.sdk.execution_time import supervisor

    original = supervisor.in_process_api_server
    cache: list[Any] = []

    def cached() -> Any:
        if not cache:
            cache.append(original())
        return cache[0]

    supervisor.in_process_api_server = cached


def run_dags(dags_folder: str, dag_ids: Iterable[str], logical_date: datetime.datetime | None) -> dict[str, Any]:
    """``DAG.test()`` each DAG in turn (what ``airflow dags test`` does after parsing)."""
    from airflow.dag_processing.dagbag import DagBag

    _reuse_in_process_api()

    bag = DagBag(dag_folder=dags_folder, include_examples=False, safe_mode=False)
    if bag.import_errors:
        raise SystemExit(f"DAG import errors: {json.dumps(bag.import_errors, indent=1)}")
    runs: dict[str, Any] = {}
    for dag_id in dag_ids:
        dag = bag.dags[dag_id]
        print(f"localrun: running {dag_id}", flush=True)
        if dag.deadline:
            # Deadlines are the scheduler's (it creates and checks them; the triggerer runs the
            # callback), and DAG.test() has no scheduler. Airflow 3.2.2's DAG.test() also cannot
            # finish such a run: its scheduler-side DAG holds the serialized alerts instead of
            # their database ids, so marking the run successful raises in
            # DeadlineAlert.get_by_id. The live stack (scripts/livestack.py) runs them for real.
            print(f"localrun: {dag_id}: deadline alerts are not evaluated by DAG.test(); skipped", flush=True)
            dag.deadline = None
        try:
            dr = dag.test(logical_date=logical_date) if logical_date else dag.test()
            state = str(getattr(dr.state, "value", dr.state))
            runs[dag_id] = {"state": state, "run_id": dr.run_id}
        except Exception as exc:  # noqa: BLE001 - reported, the caller judges
            runs[dag_id] = {"state": "error", "run_id": None, "error": f"{type(exc).__name__}: {exc}"}
        print(f"localrun: {dag_id} -> {runs[dag_id]['state']}", flush=True)
    return runs


# ---------------------------------------------------------------------- report


#: ``producer`` prefix of the events contract_runtime emits (``contract_runtime.lineage.facets.PRODUCER``).
OURS_PRODUCER = "https://contract-assets.dev/contract-runtime/"
#: ``producer`` of the Airflow OpenLineage provider's events.
PROVIDER_PRODUCER = "https://github.com/apache/airflow/tree/providers-openlineage"
EVENT_TYPES = ("START", "RUNNING", "OTHER", "COMPLETE", "ABORT", "FAIL")


def _config_source() -> str:
    """Which of the OpenLineage client's configuration sources are present, for humans."""
    found = []
    for path, label in (
        (os.environ.get("OPENLINEAGE_CONFIG"), "OPENLINEAGE_CONFIG={}"),
        (os.path.join(os.getcwd(), "openlineage.yml"), "{}"),
        (os.path.expanduser("~/.openlineage/openlineage.yml"), "{}"),
    ):
        if path and os.path.isfile(path):
            found.append(label.format(path))
            break  # the client reads the first of these only
    if any(k.startswith("OPENLINEAGE__TRANSPORT__") for k in os.environ):
        found.append("OPENLINEAGE__TRANSPORT__*")
    if os.environ.get("OPENLINEAGE_URL"):
        found.append("OPENLINEAGE_URL")
    return ", ".join(found) or "no configuration"


def lineage_destination() -> tuple[str, list[Path] | None]:
    """Where the OpenLineage client sends events: the transport it builds from its own
    configuration (the first of ``OPENLINEAGE_CONFIG``, ``./openlineage.yml``,
    ``~/.openlineage/openlineage.yml``, whose settings win over ``OPENLINEAGE__TRANSPORT__*``;
    then ``OPENLINEAGE_URL``; else the console), exactly as the runtime and the provider get it.

    :returns: ``(description, event files)``; the files are None unless the transport writes
        local files (in append mode one file, else one file per event).
    """
    if os.environ.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return "none: OPENLINEAGE_DISABLED=true", None
    source = _config_source()  # before the client: it aliases OPENLINEAGE_URL into env vars
    try:
        from openlineage.client import OpenLineageClient

        transport = OpenLineageClient().transport
    except Exception as exc:  # noqa: BLE001 - a broken configuration is reported, not raised
        return f"unknown: the OpenLineage client's configuration fails ({type(exc).__name__})", None
    kind = str(getattr(transport, "kind", None) or type(transport).__name__)
    config = getattr(transport, "config", None)
    path = str(getattr(config, "log_file_path", "") or "")
    if kind == "file" and path and "://" not in path:
        if getattr(config, "append", False):
            return f"file transport ({source}): {path}", [Path(path)]
        files = sorted(Path(path).parent.glob(Path(path).name + "-*.json"))
        return f"file transport ({source}), one file per event: {path}-*.json", files
    where = getattr(transport, "url", None) or path
    return f"{kind} transport ({source})" + (f": {where}" if where else ""), None


def emitter_of(event: dict[str, Any]) -> str:
    """``contract-assets``, ``provider DAG run``, ``provider task``, ``dbt-ol`` (openlineage-dbt:
    the dbt runs under a contract run) or ``other``."""
    producer = str(event.get("producer", ""))
    if producer.startswith(OURS_PRODUCER):
        return "contract-assets"
    if "/integration/dbt" in producer:
        return "dbt-ol"
    if producer.startswith(PROVIDER_PRODUCER):
        job_type = ((event.get("job") or {}).get("facets") or {}).get("jobType") or {}
        return "provider DAG run" if job_type.get("jobType") == "DAG" else "provider task"
    return "other"


def count_events(events: Iterable[dict[str, Any]]) -> dict[str, Counter[str]]:
    """Event types per emitter (:func:`emitter_of`)."""
    counts: dict[str, Counter[str]] = {}
    for event in events:
        counts.setdefault(emitter_of(event), Counter())[str(event.get("eventType"))] += 1
    return counts


_OURS_SENT = re.compile(r"lineage: (START|RUNNING|OTHER|COMPLETE|ABORT|FAIL) event of \S+ .*sent")
_PROVIDER_SENT = re.compile(r"Successfully emitted OpenLineage `(\w+)` event")


def count_sent_lines(logs: Iterable[Path]) -> dict[str, Counter[str]]:
    """Event types per emitter, from the emitters' "sent" log lines (for transports that are not files)."""
    counts: dict[str, Counter[str]] = {"contract-assets": Counter(), "provider (DAG runs and tasks)": Counter()}
    for log in logs:
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            if m := _OURS_SENT.search(line):
                counts["contract-assets"][m.group(1)] += 1
            elif m := _PROVIDER_SENT.search(line):
                counts["provider (DAG runs and tasks)"][m.group(1)] += 1
    return counts


def lineage_summary(logs: Iterable[Path] = ()) -> str:
    """Where the lineage events went and how many of each type each emitter wrote."""
    where, files = lineage_destination()
    lines = [f"Lineage events: {where}"]
    if files is not None:
        events = [
            json.loads(line)
            for file in files
            if file.exists()
            for line in file.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        if not events:
            return "\n".join([*lines, "  (no events written)"])
        counts = count_events(events)
        lines.append(f"  {len(events)} events written, by emitter and type:")
    else:
        counts = count_sent_lines(logs)
        lines.append("  not readable back from this transport; counted from the emitters' 'sent' log lines:")
    for emitter in sorted(counts):
        c = counts[emitter]
        kinds = ", ".join(f"{t} {c[t]}" for t in EVENT_TYPES if c[t]) or "none"
        lines.append(f"  {emitter:<30} {kinds}")
    dag_runs = counts.get("provider DAG run")
    if dag_runs and not dag_runs["START"]:
        lines.append(
            "  (the provider sends a DAG-run START only from a scheduler: its listener's executor starts with the"
            " scheduler job, and DAG.test() has none)"
        )
    return "\n".join(lines)


def _asset_events(airflow_home: str) -> list[dict[str, Any]]:
    db = os.path.join(airflow_home, "airflow.db")
    if not os.path.exists(db):
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "select a.name, e.extra, e.source_dag_id, e.source_run_id from asset_event e "
            "join asset a on a.id = e.asset_id order by e.id"
        ).fetchall()
    finally:
        con.close()
    return [{"asset": r[0], "extra": json.loads(r[1] or "{}"), "dag_id": r[2], "run_id": r[3]} for r in rows]


def _audit_verdict(airflow_home: str, dag_id: str, run_id: str | None) -> dict[str, Any] | None:
    """The ``quality`` XCom of a run's audit task, or None."""
    db = os.path.join(airflow_home, "airflow.db")
    if not run_id or not os.path.exists(db):
        return None
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = con.execute(
            "select value from xcom where dag_id = ? and run_id = ? and task_id = 'audit' and key = 'quality'",
            (dag_id, run_id),
        ).fetchone()
    finally:
        con.close()
    if row is None:
        return None
    value = json.loads(row[0]) if isinstance(row[0], (str, bytes)) else row[0]
    return json.loads(value) if isinstance(value, str) else value


def _warehouse_tables(warehouse_path: str) -> dict[str, int]:
    import duckdb

    if not os.path.exists(warehouse_path):
        return {}
    con = duckdb.connect(warehouse_path, read_only=True)
    try:
        tables = con.execute(
            "select table_schema, table_name from information_schema.tables order by table_schema, table_name"
        ).fetchall()
        out: dict[str, int] = {}
        for schema, name in tables:
            q = '"' + schema.replace('"', '""') + '"."' + name.replace('"', '""') + '"'
            out[f"{schema}.{name}"] = int(con.execute(f"select count(*) from {q}").fetchone()[0])
        return out
    finally:
        con.close()


def report(project: Path, runs: dict[str, Any] | None) -> str:
    """The human summary of a local run (published, blocked, quarantined)."""
    manifest = load_manifest(project)
    home = os.environ["AIRFLOW_HOME"]
    warehouse = os.environ["CONTRACT_ASSETS_WAREHOUSE"]
    events = _asset_events(home)
    tables = _warehouse_tables(warehouse)
    table_of = {str(d["asset"]): f"{d['name']}" for dag in manifest["dags"] for d in dag["runtime"]["datasets"]}
    domain_of = {
        str(d["asset"]): str(dag["runtime"]["domain"]) for dag in manifest["dags"] for d in dag["runtime"]["datasets"]
    }
    lines = ["", "Published (one Asset event each):", f"  {'asset':<34} {'table':<34} {'rows':>5}  quality"]
    for ev in events:
        extra = ev["extra"]
        table = f"{domain_of.get(ev['asset'], '?')}.{table_of.get(ev['asset'], '?')}"
        failed = f" (failed: {', '.join(extra.get('failed_rules', []))})" if extra.get("failed_rules") else ""
        lines.append(
            f"  {ev['asset']:<34} {table:<34} {extra.get('row_count', '?'):>5}  {extra.get('quality_status', '?')}{failed}"
        )
    if not events:
        lines.append("  (nothing)")
    published = {ev["dag_id"] for ev in events}
    lines.append("")
    lines.append("Blocked (nothing published):")
    blocked = False
    for dag in manifest["dags"]:
        run = (runs or {}).get(dag["dag_id"])
        if run is not None and run["state"] != STATE_OK and dag["dag_id"] not in published:
            blocked = True
            verdict = _audit_verdict(home, dag["dag_id"], run.get("run_id"))
            why = f"DAG run {run['state']}"
            if verdict and verdict.get("status") in ("blocked", "quarantined"):
                rules = sorted({r for d in verdict.get("datasets", []) for r in d.get("failed_errors", [])})
                why = f"{verdict['status']} by error rule(s) {', '.join(rules)}"
            lines.append(f"  {dag['dag_id']:<34} {why}")
            for ds in dag["runtime"]["datasets"]:
                target = f"{dag['runtime']['domain']}.{ds['name']}"
                now = f"{tables[target]} rows" if target in tables else "absent"
                lines.append(f"  {'':<34} target {target}: {now}, not replaced (no publish, no Asset event)")
    if not blocked:
        lines.append("  (nothing)")
    quarantine = {k: v for k, v in tables.items() if k.startswith("_ca_quarantine.")}
    if quarantine:
        lines.append("")
        lines.append("Quarantined:")
        lines.extend(f"  {k:<60} rows {v}" for k, v in quarantine.items())
    lines.append("")
    lines.append(f"Warehouse (DuckDB): {warehouse}")
    return "\n".join(lines)


# ---------------------------------------------------------------------- freshness


def freshness(project: Path) -> str:
    """Run the project's freshness monitor DAG once (``DAG.test()``) and describe its states.

    The monitor reads each asset's latest Asset event through the Task SDK (inlet events) and
    keeps the states in the warehouse's ``_ca_state.freshness``, which this reads back.
    """
    manifest = load_manifest(project)
    monitor = manifest.get("freshness_monitor")
    if not monitor:
        return "No asset has a freshness policy: no monitor."
    runs = run_dags(os.environ["AIRFLOW__CORE__DAGS_FOLDER"], [monitor["dag_id"]], None)
    import duckdb

    con = duckdb.connect(os.environ["CONTRACT_ASSETS_WAREHOUSE"], read_only=True)
    try:
        rows = con.execute(
            "select asset, state, age_seconds, last_event_at from _ca_state.freshness order by asset"
        ).fetchall()
    finally:
        con.close()
    entries = [{"asset": a, "state": st, "age_seconds": age} for a, st, age, _last in rows]
    return describe_freshness(monitor, entries, f"{runs[monitor['dag_id']]['state']}")


def describe_freshness(monitor: dict[str, Any], entries: Iterable[dict[str, Any]], run_state: str) -> str:
    """The monitor's states as a table for humans (the demo, both on ``DAG.test()`` and on the
    live stack).

    :param monitor: The manifest's ``freshness_monitor`` entry (``dag_id``, ``assets[]`` with
        ``max_age`` / ``degrade_after``, ``notifier``).
    :param entries: ``{asset, state, age_seconds}`` per asset (the monitor task's return value
        or its ``_ca_state.freshness`` rows); ``age_seconds`` None when never published.
    :param run_state: The monitor run's state, shown in the heading.
    """
    policies = {a["name"]: a for a in monitor["assets"]}
    lines = [
        "",
        f"Freshness monitor {monitor['dag_id']} ({run_state}), states kept in _ca_state.freshness:",
        f"  {'asset':<34} {'state':<9} {'age':>9}  policy (max_age / degrade_after)",
    ]
    for entry in sorted(entries, key=lambda e: str(e["asset"])):
        policy = policies.get(entry["asset"], {})
        age = entry.get("age_seconds")
        shown = "-" if age is None else f"{age:.0f} s"
        lines.append(
            f"  {entry['asset']:<34} {entry['state']:<9} {shown:>9}  {policy.get('max_age')} / {policy.get('degrade_after') or '-'}"
        )
    notifier = monitor.get("notifier")
    lines.append(
        "  alerts go only on transitions into stale, degraded or recovered"
        + (f", through notifier {notifier['name']!r} ({notifier['class']})" if notifier else " (no notifier configured)")
    )
    return "\n".join(lines)


# ---------------------------------------------------------------------- CLI


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="localrun")
    sub = parser.add_subparsers(dest="cmd", required=True)
    run_p = sub.add_parser("run")
    run_p.add_argument("--project", required=True, type=Path)
    run_p.add_argument("--logical-date", default=None)
    run_p.add_argument("--only", nargs="*", default=None)
    run_p.add_argument("--no-seed", action="store_true", help="do not load the external upstreams' sample data")
    rep_p = sub.add_parser("report")
    rep_p.add_argument("--project", required=True, type=Path)
    rep_p.add_argument("--runs", default=None, type=Path)
    fr_p = sub.add_parser("freshness", help="run the freshness monitor once and print its states")
    fr_p.add_argument("--project", required=True, type=Path)
    lin_p = sub.add_parser("lineage")
    lin_p.add_argument("--log", nargs="*", default=[], type=Path, help="run logs, for transports that are not files")
    args = parser.parse_args(argv)

    if args.cmd == "lineage":
        print(lineage_summary(args.log))
        return 0
    project = args.project.resolve()
    if args.cmd == "freshness":
        print(freshness(project))
        return 0
    if args.cmd == "report":
        runs = json.loads(args.runs.read_text(encoding="utf-8"))["runs"] if args.runs else None
        print(report(project, runs))
        return 0

    manifest = load_manifest(project)
    # DAG.test() (Airflow 3.2) starts a run without a partition key, which a partitioned DAG refuses:
    # those run on the live stack (test_live_partitions.py), with keys from their timetable or backfill.
    partitioned = sorted(d["dag_id"] for d in manifest["dags"] if d["runtime"].get("partitioning"))
    for dag_id in partitioned:
        grain = next(d for d in manifest["dags"] if d["dag_id"] == dag_id)["runtime"]["partitioning"]["grain"]
        print(f"localrun: {dag_id} is partitioned by {grain}: DAG.test() has no partition key, not run here "
              "(on a running Airflow: contract-assets backfill <asset> --from T --to T --run)", flush=True)
    order = [d for d in dependency_order(manifest) if d not in partitioned]
    if args.only:
        unknown = sorted(set(args.only) - set(order))
        if unknown:
            raise SystemExit(f"unknown dag ids: {unknown}")
        order = [d for d in order if d in set(args.only)]
    seeded = (
        [] if args.no_seed else seed_external_sample_data(project, manifest, os.environ["CONTRACT_ASSETS_WAREHOUSE"])
    )
    for s in seeded:
        print(f"localrun: external {s['asset']} <- {s['file']} ({s['rows']} rows)", flush=True)
    logical = datetime.datetime.fromisoformat(args.logical_date) if args.logical_date else None
    if logical is not None and logical.tzinfo is None:
        logical = logical.replace(tzinfo=datetime.UTC)
    runs = run_dags(os.environ["AIRFLOW__CORE__DAGS_FOLDER"], order, logical)
    print("RESULT " + json.dumps({"order": order, "runs": runs, "seeded": seeded}, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
