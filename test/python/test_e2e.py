"""End to end: every bundled DAG in real Airflow 3.2, on the embedded DuckDB warehouse and the
bundled sample data, then seeded quality failures in a copy of the project.

Setup (once per module):

- ``airflow db migrate`` once into a template ``AIRFLOW_HOME`` (SQLite); each run gets a fresh
  home holding a copy of that metadata DB.
- Environment of every Airflow process: ``AIRFLOW__CORE__DAGS_FOLDER=<project>/generated/dags``,
  ``CONTRACT_ASSETS_WAREHOUSE`` = a DuckDB file in the home (no ``warehouse`` connection is
  defined, so the embedded default is used), ``PYTHONPATH=<project>/orchestration/jobs`` for
  the python producer, ``PATH`` starting with the venv, ``CONTRACT_ASSETS_DBT_BIN`` = the
  repository's ``.venv-dbt/bin`` (real dbt for the four dbt contracts), and the OpenLineage file
  transport into the home (``lineage.jsonl``). The Airflow OpenLineage provider is installed
  (from the lock) and writes its DAG-run and task events to the same file.

Main run: ``scripts/localrun.py run`` runs every DAG in dependency order (derived from the
manifest's edges) with ``DAG.test()`` in one process, the call ``airflow dags test`` makes.
Seeded run: a copy of the project gets a failing ``error`` rule (billing.invoices_raw,
``block_publish``; its tasks have ``retries: 2`` from the config defaults), a failing
``warning`` rule (crm.accounts_raw) and a failing ``error`` rule under ``quarantine``
(revrec.monthly); finance.fiscal_calendar (a dbt model) gets ``retries: 1`` with a 1 s delay and
a dbt stand-in (``test/python/shims/dbt-fail-once``) whose first call fails without results (a
transient, retryable failure) before it hands over to the real dbt. The copy is recompiled with the CLI and
run on a copy of the main run's warehouse; the blocked DAG goes through the real ``airflow dags
test`` command.

Lineage: every event of both runs (ours and the provider's) validates against the OpenLineage
spec copy and each facet against its own schema; each of our DAG runs follows the run cycle, its
runId is derived from the provider's DAG-run runId and the contract id, with ``parent`` and
``root`` naming that DAG run (ADR 0010), every runId has one job, and the observed counts per
emitter and event type are asserted and printed in the terminal summary.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from contract_runtime.lineage.facets import PRODUCER as OUR_PRODUCER
from openlineage.client.uuid import generate_static_uuid
from lineage_testkit import check_run_cycle, read_events, requires_spec, validate_event

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
DBT_BIN = REPO / ".venv-dbt" / "bin"
DBT_FAIL_ONCE_BIN = Path(__file__).resolve().parent / "shims" / "dbt-fail-once"
LOCALRUN = REPO / "scripts" / "localrun.py"
LOGICAL_DATE = "2026-04-15T00:00:00+00:00"
TIMEOUT = 1800

#: Rows each published table holds after the main run, from the bundled sample data.
EXPECTED_ROWS = {
    "billing.adjustments_extract": 3,
    "billing.adjustments_raw": 3,
    "billing.credit_notes_raw": 20,
    "billing.invoice_lines_raw": 49,
    "billing.invoices_raw": 38,
    "billing.payments_raw": 29,
    "crm.accounts_raw": 22,
    "crm.contracts_raw": 24,
    "finance.contracts_curated": 24,
    "finance.fiscal_calendar": 24,
    "finance.invoices_curated": 37,
    "finance.billings_by_contract": 37,
    "revrec.revenue_schedule": 436,
    "revrec.deferred_revenue_balance": 77,
    "revrec.close_summary": 23,
}
#: Assets whose dataset is an extract's manifest in (local stand-in) object storage, not a table.
EXTRACTS = {"billing.adjustments_extract"}


# ---------------------------------------------------------------------- helpers


def airflow_env(home: Path, project: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "OPENLINEAGE", "CONTRACT_ASSETS_"))}
    env.pop("AIRFLOW_CONFIG", None)
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__DAGS_FOLDER=str(project / "generated" / "dags"),
        CONTRACT_ASSETS_WAREHOUSE=str(home / "warehouse.duckdb"),
        # The bundled config names warehouse_conn_id "warehouse": a named Connection must exist.
        AIRFLOW_CONN_WAREHOUSE=f"duckdb://{home / 'warehouse.duckdb'}",
        PYTHONPATH=str(project / "orchestration" / "jobs"),
        PATH=os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")]),
        CONTRACT_ASSETS_DBT_BIN=str(DBT_BIN),
        OPENLINEAGE__TRANSPORT__TYPE="file",
        OPENLINEAGE__TRANSPORT__LOG_FILE_PATH=str(home / "lineage.jsonl"),
        OPENLINEAGE__TRANSPORT__APPEND="true",
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.update(extra)
    return env


def new_home(base: Path, name: str, template_db: Path) -> Path:
    home = base / name
    home.mkdir()
    shutil.copy2(template_db, home / "airflow.db")
    return home


def localrun(home: Path, project: Path, *extra: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(LOCALRUN), "run", "--project", str(project), "--logical-date", LOGICAL_DATE, *extra],
        env=airflow_env(home, project, **(env or {})),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    (home / "localrun.log").write_text(proc.stdout + proc.stderr)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (
        f"localrun failed (rc {proc.returncode}); log: {home / 'localrun.log'}\n{proc.stderr[-3000:]}"
    )
    return json.loads(lines[-1][len("RESULT ") :])


def asset_events(home: Path) -> list[dict[str, Any]]:
    con = sqlite3.connect(f"file:{home / 'airflow.db'}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "select a.name, e.extra, e.source_dag_id, e.source_task_id, e.source_run_id "
            "from asset_event e join asset a on a.id = e.asset_id order by e.id"
        ).fetchall()
    finally:
        con.close()
    return [
        {"asset": r[0], "extra": json.loads(r[1]) if r[1] else {}, "dag_id": r[2], "task_id": r[3], "run_id": r[4]}
        for r in rows
    ]


def xcom_value(home: Path, dag_id: str, task_id: str, key: str) -> Any:
    con = sqlite3.connect(f"file:{home / 'airflow.db'}?mode=ro", uri=True)
    try:
        row = con.execute(
            "select value from xcom where dag_id = ? and task_id = ? and key = ?", (dag_id, task_id, key)
        ).fetchone()
    finally:
        con.close()
    if row is None:
        return None
    value = json.loads(row[0]) if isinstance(row[0], (str, bytes)) else row[0]
    return json.loads(value) if isinstance(value, str) else value


def warehouse(path: Path) -> Any:
    import duckdb

    return duckdb.connect(str(path), read_only=True)


def table_rows(path: Path, table: str) -> list[tuple[Any, ...]] | None:
    schema, name = table.split(".", 1)
    con = warehouse(path)
    try:
        exists = con.execute(
            "select count(*) from information_schema.tables where table_schema = ? and table_name = ?", [schema, name]
        ).fetchone()[0]
        if not exists:
            return None
        return sorted(con.execute(f'select * from "{schema}"."{name}"').fetchall(), key=repr)
    finally:
        con.close()


def tables_in(path: Path, schema: str) -> dict[str, int]:
    con = warehouse(path)
    try:
        names = [
            r[0]
            for r in con.execute(
                "select table_name from information_schema.tables where table_schema = ? order by 1", [schema]
            ).fetchall()
        ]
        return {n: con.execute(f'select count(*) from "{schema}"."{n}"').fetchone()[0] for n in names}
    finally:
        con.close()


# ---------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="module")
def template_db(workdir: Path) -> Path:
    home = workdir / "template-home"
    home.mkdir()
    env = airflow_env(home, REPO)
    proc = subprocess.run(
        [str(VENV_BIN / "airflow"), "db", "migrate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return home / "airflow.db"


def without_partitioned(manifest: dict[str, Any]) -> dict[str, Any]:
    """The part of the corpus ``DAG.test()`` runs: Airflow 3.2's ``DAG.test()`` starts a run without a
    partition key, which a partitioned DAG refuses (``scripts/localrun.py`` leaves them out), so the
    partitioned DAGs, the assets they publish and their edges are dropped here; the live stack runs
    them with keys (``test_live_partitions.py``)."""
    partitioned = {d["dag_id"] for d in manifest["dags"] if d["runtime"].get("partitioning")}
    return {
        **manifest,
        "dags": [d for d in manifest["dags"] if d["dag_id"] not in partitioned],
        "assets": [a for a in manifest["assets"] if a.get("producer") not in partitioned],
        "edges": [e for e in manifest["edges"] if e["via"] not in partitioned],
    }


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    """The bundled manifest as a task reads it (each runtime dataset joined to its asset, ADR
    0017f), without its partitioned DAGs (:func:`without_partitioned`)."""
    from contract_runtime.manifest import load_manifest

    return without_partitioned(copy.deepcopy(dict(load_manifest(REPO / "generated" / "manifest.json"))))


#: Wall time of the main run (every DAG in dependency order with DAG.test(), one process), in
#: seconds, once the fixture ran; the live-stack suite reports it beside the scheduler's time.
MAIN_RUN_SECONDS: list[float] = []


@pytest.fixture(scope="module")
def main_run(workdir: Path, template_db: Path) -> dict[str, Any]:
    home = new_home(workdir, "main-home", template_db)
    started = time.monotonic()
    result = localrun(home, REPO)
    MAIN_RUN_SECONDS.append(time.monotonic() - started)
    return {"home": home, "warehouse": home / "warehouse.duckdb", "result": result, "events": asset_events(home)}


SEEDS = {
    "contracts/billing/invoices_raw.yaml": "{name: seeded_error, metric: rowCount, mustBeLessThan: 1, severity: error}",
    "contracts/crm/accounts_raw.yaml": "{name: seeded_warning, metric: rowCount, mustBeLessThan: 1, severity: warning}",
    "contracts/revrec/monthly.yaml": '{name: seeded_quarantine, type: sql, query: "select count(*) from {dataset}", mustBe: 0, severity: error}',
}


#: finance.fiscal_calendar in the seeded project: one retry, after 1 s (DAG.test() waits for it).
RETRY_OVERRIDE = "  - match: {contract: finance.fiscal_calendar}\n    retries: 1\n    retry_delay: PT1S\n"


def seed_project(dest: Path) -> None:
    """Copy the project's inputs to ``dest``, add one failing rule to three contracts and a retry
    to finance.fiscal_calendar."""
    for part in ("contracts", "sql", "dbt", "orchestration/airflow", "orchestration/sample_data", "orchestration/jobs"):
        shutil.copytree(REPO / part, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
    for rel, rule in SEEDS.items():
        path = dest / rel
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if line.strip() == "quality:")
        indent = len(lines[at]) - len(lines[at].lstrip()) + 2
        lines.insert(at + 1, " " * indent + "- " + rule + "\n")
        path.write_text("".join(lines), encoding="utf-8")
    config = dest / "orchestration" / "airflow" / "sources" / "config.yaml"
    text = config.read_text(encoding="utf-8")
    override = "  - match: {contract: finance.fiscal_calendar}\n    retries: 0\n"
    assert override in text
    config.write_text(text.replace(override, RETRY_OVERRIDE), encoding="utf-8")
    proc = subprocess.run(
        ["node", str(REPO / "bin" / "contract-assets.js"), "compile", "--root", str(dest)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def seeded_run(workdir: Path, template_db: Path, main_run: dict[str, Any]) -> dict[str, Any]:
    project = workdir / "seeded-project"
    seed_project(project)
    home = new_home(workdir, "seeded-home", template_db)
    shutil.copy2(main_run["warehouse"], home / "warehouse.duckdb")
    result = localrun(
        home,
        project,
        "--no-seed",
        "--only",
        "crm.accounts_raw",
        "finance.fiscal_calendar",
        "revrec.monthly",
        env={
            "CONTRACT_ASSETS_DBT_BIN": str(DBT_FAIL_ONCE_BIN),
            "DBT_REAL_BIN": str(DBT_BIN),
            "DBT_FAIL_ONCE": str(home / "dbt-failed-once"),
        },
    )
    cli = subprocess.run(
        [str(VENV_BIN / "airflow"), "dags", "test", "billing.invoices_raw", LOGICAL_DATE],
        env=airflow_env(home, project),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    (home / "dags-test.log").write_text(cli.stdout + cli.stderr)
    return {
        "home": home,
        "project": project,
        "warehouse": home / "warehouse.duckdb",
        "result": result,
        "cli": cli,
        "events": asset_events(home),
    }


# ---------------------------------------------------------------------- main run


def test_every_dag_runs_in_dependency_order(main_run: dict[str, Any], manifest: dict[str, Any]) -> None:
    order = main_run["result"]["order"]
    assert sorted(order) == sorted(d["dag_id"] for d in manifest["dags"])
    producer = {a["name"]: a["producer"] for a in manifest["assets"]}
    for edge in manifest["edges"]:
        if producer.get(edge["from"]) and edge["via"] in order:  # a draft contract has edges, no DAG
            assert order.index(producer[edge["from"]]) < order.index(edge["via"]), edge
    states = {d: r["state"] for d, r in main_run["result"]["runs"].items()}
    assert states == {d: "success" for d in order}, f"see {main_run['home'] / 'localrun.log'}"


def test_published_tables_and_row_counts(main_run: dict[str, Any], manifest: dict[str, Any]) -> None:
    produced = sorted(a["name"] for a in manifest["assets"] if a["producer"])
    assert produced == sorted(EXPECTED_ROWS)
    for table, count in EXPECTED_ROWS.items():
        if table in EXTRACTS:
            continue
        rows = table_rows(main_run["warehouse"], table)
        assert rows is not None, f"{table} was not published"
        assert len(rows) == count, table
    # raw tables hold exactly the sample files' rows
    for dag in manifest["dags"]:
        sample = dag["runtime"].get("sample_data")
        if sample:
            lines = [line for line in (REPO / sample).read_text(encoding="utf-8").splitlines() if line.strip()]
            data_rows = len(lines) - (1 if sample.endswith(".csv") else 0)
            assert EXPECTED_ROWS[dag["outlets"][0]] == data_rows, sample
    assert tables_in(main_run["warehouse"], "_ca_staging") == {}
    assert tables_in(main_run["warehouse"], "_ca_quarantine") == {}
    watermarks = tables_in(main_run["warehouse"], "_ca_state")
    assert set(watermarks) == {"watermarks", "publications", "objects"} and watermarks["watermarks"] == 4


def test_one_asset_event_per_published_dataset(main_run: dict[str, Any], manifest: dict[str, Any]) -> None:
    events = main_run["events"]
    counts = Counter(e["asset"] for e in events)
    assert counts == Counter({name: 1 for name in EXPECTED_ROWS}), counts
    dags = {d["dag_id"]: d for d in manifest["dags"]}
    for ev in events:
        dag = dags[ev["dag_id"]]
        assert ev["task_id"] == "publish" and ev["asset"] in dag["outlets"]
        extra = ev["extra"]
        manifest_keys = {"manifest_uri", "file_count", "size_bytes"} if ev["asset"] in EXTRACTS else set()
        keys = {"row_count", "quality_status", "failed_rules", "contract_id", "contract_version", "openlineage"} | manifest_keys
        if dag["runtime"]["producer"]["type"] == "dbt":  # the dbt test summary of the audit
            assert set(extra) == keys | {"dbt_tests"}
            tests = extra["dbt_tests"]
            assert tests["total"] > 0 and tests["passed"] == tests["total"], (ev["asset"], tests)
        else:
            assert set(extra) == keys
        assert extra["row_count"] == EXPECTED_ROWS[ev["asset"]]
        assert extra["contract_id"] == dag["dag_id"] and extra["contract_version"] == dag["contract_version"]
        assert extra["quality_status"] in ("passed", "degraded")
        assert (extra["quality_status"] == "degraded") == bool(extra["failed_rules"])
        warning_names = {
            q["name"] for ds in dag["runtime"]["datasets"] for q in ds["quality"] if q["severity"] == "warning"
        }
        assert set(extra["failed_rules"]) <= warning_names
    # the bundled data has unbilled revenue: the balance's warning rule degrades it, as designed
    balance = next(e for e in events if e["asset"] == "revrec.deferred_revenue_balance")["extra"]
    assert balance["quality_status"] == "degraded" and balance["failed_rules"] == ["no_unbilled_revenue"]


def test_extract_manifest_feeds_the_load(main_run: dict[str, Any]) -> None:
    """The bundled extract → manifest event → load → publish chain, from the bundled data."""
    import hashlib
    import urllib.parse

    event = next(e for e in main_run["events"] if e["asset"] == "billing.adjustments_extract")
    uri = event["extra"]["manifest_uri"]
    assert uri.startswith("file://") and uri.endswith("/_manifest.json") and "/object-store/s3/acme-billing-landing/" in uri
    listed = json.loads(Path(urllib.parse.unquote(urllib.parse.urlsplit(uri).path)).read_text(encoding="utf-8"))
    assert listed["row_count"] == 3 and event["extra"]["file_count"] == len(listed["files"]) == 1
    for f in listed["files"]:
        data = Path(urllib.parse.unquote(urllib.parse.urlsplit(f["uri"]).path)).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f["sha256"] and len(data) == f["size"]
    loaded = table_rows(main_run["warehouse"], "billing.adjustments_raw")
    assert loaded is not None and sorted(r[0] for r in loaded) == ["ADJ-9001", "ADJ-9002", "ADJ-9003"]
    # the load ran after the event, in the same run order
    order = main_run["result"]["order"]
    assert order.index("billing.adjustments_extract") < order.index("billing.adjustments_raw")


def test_audit_verdict_is_in_xcom(main_run: dict[str, Any]) -> None:
    verdict = xcom_value(main_run["home"], "finance.billings_by_contract", "audit", "quality")
    assert verdict["status"] == "passed"
    # a dbt model: its dbt tests (schema.yml) first, then the contract's own rules
    assert [r["name"] for r in verdict["datasets"][0]["results"]] == [
        "not_null_billings_by_contract_billing_month",
        "not_null_billings_by_contract_contract_id",
        "not_null_billings_by_contract_net_billed_amount_eur",
        "relationships_billings_by_contract_contract_id__contract_id__ref_contracts_curated_",
        "nullValues_contract_id",
        "every_month_converted",
        "one_row_per_contract_month",
        "credits_within_billings",
        "rowCount",
        # the implicit rules of the declared constraints (required, the composite primary key)
        "account_id_required",
        "billing_month_required",
        "currency_required",
        "invoiced_amount_required",
        "credited_amount_required",
        "net_billed_amount_required",
        "primary_key_unique",
    ]
    assert all(r["success"] for r in verdict["datasets"][0]["results"])
    assert verdict["datasets"][0]["dbt_tests"] == {"total": 4, "passed": 4, "failed": 0, "warned": 0}


# ---------------------------------------------------------------------- seeded failures


def test_seeded_error_rule_blocks_publish(seeded_run: dict[str, Any], main_run: dict[str, Any]) -> None:
    cli = seeded_run["cli"]
    assert cli.returncode != 0 and "DagRun failed" in cli.stdout + cli.stderr, (
        f"see {seeded_run['home'] / 'dags-test.log'}"
    )
    assert not [e for e in seeded_run["events"] if e["asset"] == "billing.invoices_raw"]
    assert table_rows(seeded_run["warehouse"], "billing.invoices_raw") == table_rows(
        main_run["warehouse"], "billing.invoices_raw"
    )
    verdict = xcom_value(seeded_run["home"], "billing.invoices_raw", "audit", "quality")
    assert verdict["status"] == "blocked" and verdict["datasets"][0]["failed_errors"] == ["seeded_error"]
    con = warehouse(seeded_run["warehouse"])
    try:
        wm = con.execute(
            "select watermark_value, run_id from _ca_state.watermarks where contract_id = 'billing.invoices_raw'"
        ).fetchall()
        published = con.execute(
            "select count(*) from _ca_state.publications where contract_id = 'billing.invoices_raw'"
        ).fetchone()[0]
    finally:
        con.close()
    assert len(wm) == 1 and wm[0][1] == main_run["result"]["runs"]["billing.invoices_raw"]["run_id"]  # not advanced
    assert published == 1  # only the main run's publication
    assert tables_in(seeded_run["warehouse"], "_ca_staging") == {}


def test_seeded_warning_rule_publishes_degraded(seeded_run: dict[str, Any]) -> None:
    assert seeded_run["result"]["runs"]["crm.accounts_raw"]["state"] == "success"
    events = [e for e in seeded_run["events"] if e["asset"] == "crm.accounts_raw"]
    assert len(events) == 1
    ours = [
        e
        for e in lineage_events(seeded_run["home"])
        if is_ours(e) and e["job"]["name"] == "crm.accounts_raw" and e["eventType"] == "COMPLETE"
    ]
    assert events[0]["extra"] == {
        "row_count": 22,
        "quality_status": "degraded",
        "failed_rules": ["seeded_warning"],
        "contract_id": "crm.accounts_raw",
        "contract_version": events[0]["extra"]["contract_version"],
        # the run of our contract job that published the batch, in the provider's convention
        "openlineage": {
            "parentJobNamespace": "acme.crm",
            "parentJobName": "crm.accounts_raw",
            "parentRunId": ours[0]["run"]["runId"],
        },
    }
    assert len(table_rows(seeded_run["warehouse"], "crm.accounts_raw") or []) == 22


def test_seeded_quarantine_leaves_targets_and_fills_quarantine(
    seeded_run: dict[str, Any], main_run: dict[str, Any]
) -> None:
    assert seeded_run["result"]["runs"]["revrec.monthly"]["state"] == "failed"
    assert not [e for e in seeded_run["events"] if e["asset"].startswith("revrec.")]
    for table in ("revrec.revenue_schedule", "revrec.deferred_revenue_balance"):
        assert table_rows(seeded_run["warehouse"], table) == table_rows(main_run["warehouse"], table), table
    quarantined = tables_in(seeded_run["warehouse"], "_ca_quarantine")
    by_dataset = {name.split("__")[1]: rows for name, rows in quarantined.items()}
    assert by_dataset == {"revenue_schedule": 436, "deferred_revenue_balance": 77}, quarantined
    verdict = xcom_value(seeded_run["home"], "revrec.monthly", "audit", "quality")
    assert verdict["status"] == "quarantined" and verdict["datasets"][0]["failed_errors"] == ["seeded_quarantine"]
    assert sorted(q["table"].split(".", 1)[1] for q in verdict["quarantine"]) == sorted(quarantined)


# ---------------------------------------------------------------------- lineage


def _load_localrun() -> Any:
    """``scripts/localrun.py`` as a module: the test counts events the way the demo does."""
    spec = importlib.util.spec_from_file_location("localrun", LOCALRUN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LOCALRUN_MODULE = _load_localrun()

#: Events per emitter and type in each home, as observed with the lock (Airflow 3.2.2,
#: apache-airflow-providers-openlineage 2.20.3). Ours follow from the corpus: one START and one
#: terminal event per DAG run, one OTHER per audited dataset (revrec.monthly has two). The
#: provider sends one START and one terminal event per task try and a terminal event per DAG run,
#: but no DAG-run START here: its listener sends that only from a scheduler, and DAG.test() /
#: ``airflow dags test`` have none. Seeded home: crm.accounts_raw and finance.fiscal_calendar
#: publish, revrec.monthly and billing.invoices_raw fail in audit (publish is upstream_failed: no
#: task events), and fiscal_calendar's produce runs twice (try 1 fails, try 2 succeeds).
EXPECTED_LINEAGE_COUNTS: dict[str, dict[str, dict[str, int]]] = {
    "main": {
        "contract-assets": {"START": 14, "OTHER": 15, "COMPLETE": 14},
        "provider DAG run": {"COMPLETE": 14},
        "provider task": {"START": 42, "COMPLETE": 42},
    },
    "seeded": {
        "contract-assets": {"START": 4, "OTHER": 5, "COMPLETE": 2, "FAIL": 2},
        "provider DAG run": {"COMPLETE": 2, "FAIL": 2},
        "provider task": {"START": 11, "COMPLETE": 8, "FAIL": 3},
    },
}


#: dbt calls of the dbt contracts, each one wrapping run of dbt-ol: main, four contracts with
#: ``dbt run`` and ``dbt test`` each, plus ``dbt seed`` for the fiscal calendar; seeded, the fiscal
#: calendar's second try (its first fails before dbt-ol starts).
EXPECTED_DBT_CALLS: dict[str, dict[str, int]] = {
    "main": {"START": 9, "COMPLETE": 9},
    "seeded": {"START": 3, "COMPLETE": 3},
}


def lineage_events(home: Path) -> list[dict[str, Any]]:
    return read_events(home / "lineage.jsonl")


def is_ours(event: dict[str, Any]) -> bool:
    return event["producer"] == OUR_PRODUCER


def airflow_dag_runs(home: Path) -> dict[str, list[str]]:
    con = sqlite3.connect(f"file:{home / 'airflow.db'}?mode=ro", uri=True)
    try:
        rows = con.execute("select dag_id, run_id from dag_run order by id").fetchall()
    finally:
        con.close()
    runs: dict[str, list[str]] = {}
    for dag_id, run_id in rows:
        runs.setdefault(dag_id, []).append(run_id)
    return runs


def task_tries(home: Path, dag_id: str) -> dict[str, dict[str, Any]]:
    """``{task_id: {"try_number", "max_tries", "state", "earlier": [(try, state), ...]}}``."""
    con = sqlite3.connect(f"file:{home / 'airflow.db'}?mode=ro", uri=True)
    try:
        current = con.execute(
            "select task_id, try_number, max_tries, state from task_instance where dag_id = ?", (dag_id,)
        ).fetchall()
        history = con.execute(
            "select task_id, try_number, state from task_instance_history where dag_id = ? order by try_number",
            (dag_id,),
        ).fetchall()
    finally:
        con.close()
    tries = {t: {"try_number": n, "max_tries": m, "state": s, "earlier": []} for t, n, m, s in current}
    for task_id, number, state in history:
        tries[task_id]["earlier"].append((number, state))
    return tries


def warehouse_identity(home: Path, table: str) -> tuple[str, str]:
    """What lineage must call a table of the home's DuckDB warehouse (DESIGN §6.3): the file's
    ``duckdb://`` namespace and ``<catalog>.<schema>.<table>`` (the catalog is the file's stem)."""
    return f"duckdb://{os.path.abspath(home / 'warehouse.duckdb')}", f"warehouse.{table}"


def asset_of(dataset: dict[str, Any]) -> str:
    (link,) = [i for i in dataset["facets"]["symlinks"]["identifiers"] if i["type"] == "ASSET"]
    return str(link["name"])


def check_dag_run_lineage(
    events: list[dict[str, Any]], home: Path, dag: dict[str, Any], terminal: str
) -> list[dict[str, Any]]:
    """Our events of the DAG's one run in ``home``: the run cycle, one identity for what audit
    tested and publish wrote, and the provider's DAG-run runId. Returns our events of the run."""
    dag_id = dag["dag_id"]
    (airflow_run_id,) = airflow_dag_runs(home)[dag_id]
    ours = [e for e in events if is_ours(e) and e["job"]["name"] == dag_id]
    check_run_cycle(ours, terminal)  # one START first, one terminal last, OTHER between, UUID, tz
    times = [datetime.fromisoformat(e["eventTime"]) for e in ours]
    assert times == sorted(times), [e["eventTime"] for e in ours]
    types = [e["eventType"] for e in ours]
    assert types.count("OTHER") == len(dag["runtime"]["datasets"]), types

    # the provider's event of the same Airflow DAG run (found by the run_id it reports)
    provider = [
        e
        for e in events
        if LOCALRUN_MODULE.emitter_of(e) == "provider DAG run"
        and e["run"]["facets"]["airflowDagRun"]["dagRun"]["run_id"] == airflow_run_id
    ]
    assert [e["eventType"] for e in provider] == [terminal], [e["eventType"] for e in provider]
    provider_run_id = provider[0]["run"]["runId"]
    # our contract run nests under the provider's DAG run (ADR 0010): its own runId, derived from
    # the DAG run's and the contract id, with parent and root naming the DAG run
    expected_run_id = str(
        generate_static_uuid(instant=datetime.fromisoformat(LOGICAL_DATE), data=f"{provider_run_id}.{dag_id}".encode())
    )
    assert ours[0]["run"]["runId"] == expected_run_id != provider_run_id, (dag_id, ours[0]["run"]["runId"])
    parent = ours[0]["run"]["facets"]["parent"]
    assert parent["run"]["runId"] == parent["root"]["run"]["runId"] == provider_run_id
    assert (parent["job"]["namespace"], parent["job"]["name"]) == (
        provider[0]["job"]["namespace"],
        provider[0]["job"]["name"],
    )
    tasks = [
        e
        for e in events
        if LOCALRUN_MODULE.emitter_of(e) == "provider task" and e["job"]["name"].startswith(f"{dag_id}.")
    ]
    assert tasks and {t["run"]["facets"]["parent"]["run"]["runId"] for t in tasks} == {provider_run_id}

    # what audit tested (OTHER) is what publish wrote (COMPLETE): one physical identity
    domain = dag["runtime"]["domain"]
    expected = {
        d["asset"]: warehouse_identity(home, f"{domain}.{d['name']}") for d in dag["runtime"]["datasets"]
    }
    if dag["runtime"].get("mode") == "extract":
        # an extract's dataset is its landing location (s3://bucket + key prefix), not a table
        landing = dag["runtime"]["landing"]["uri"]
        bucket, _, key = landing.removeprefix("s3://").partition("/")
        expected = {d["asset"]: (f"s3://{bucket}", key) for d in dag["runtime"]["datasets"]}
    tested = {}
    is_dbt = dag["runtime"]["producer"]["type"] == "dbt"
    for event in (e for e in ours if e["eventType"] == "OTHER"):
        (dataset,) = event["inputs"]
        rules = [a["name"] for a in dataset["inputFacets"]["dataQualityAssertions"]["assertions"]]
        declared = next(d for d in dag["runtime"]["datasets"] if d["asset"] == asset_of(dataset))
        own = [q["name"] for q in declared["quality"]]
        if is_dbt:  # the model's dbt tests first, then the contract's own rules
            assert len(rules) > len(own) and rules[len(rules) - len(own):] == own, rules
        else:
            assert rules == own
        tested[asset_of(dataset)] = (dataset["namespace"], dataset["name"])
    assert tested == expected
    if terminal == "COMPLETE":
        written = {asset_of(o): (o["namespace"], o["name"]) for o in ours[-1]["outputs"]}
        assert written == expected
    return ours


def failed_assertions(events: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    return [
        (a["name"], a["success"])
        for e in events
        if e["eventType"] == "OTHER"
        for a in e["inputs"][0]["inputFacets"]["dataQualityAssertions"]["assertions"]
        if not a["success"]
    ]


def official_facets_only(event: dict[str, Any]) -> dict[str, Any]:
    """A dbt-ol event without the facets whose schema is openlineage-dbt's own (``dbt_version``,
    ``dbt_run``: not in the spec copy), so the rest is checked like every other event."""
    from lineage_testkit import spec_registry

    registry = spec_registry()

    def known(facet: Any) -> bool:
        try:
            registry.contents(str(facet.get("_schemaURL", "")).partition("#")[0])
        except Exception:  # noqa: BLE001 - an unknown document: a facet of openlineage-dbt's own
            return False
        return True

    copy = json.loads(json.dumps(event))
    for owner, field in (("run", "facets"), ("job", "facets")):
        facets = copy.get(owner, {}).get(field) or {}
        copy[owner][field] = {k: v for k, v in facets.items() if known(v)}
    for side in ("inputs", "outputs"):
        for dataset in copy.get(side, []):
            for field in ("facets", "inputFacets", "outputFacets"):
                if field in dataset:
                    dataset[field] = {k: v for k, v in (dataset[field] or {}).items() if known(v)}
    return copy


@requires_spec
def test_every_lineage_event_is_spec_valid(main_run: dict[str, Any], seeded_run: dict[str, Any]) -> None:
    """Every event in both homes, ours and the provider's, validates against the spec copy, and
    each facet against its own schema (ours: official facet files or contract_runtime/facets)."""
    generic: Counter[str] = Counter()
    for run in (main_run, seeded_run):
        events = lineage_events(run["home"])
        assert events, f"no lineage events in {run['home']}"
        for event in events:
            if LOCALRUN_MODULE.emitter_of(event) == "dbt-ol":
                event = official_facets_only(event)
            for where in validate_event(event, allow_generic_facets=not is_ours(event)):
                generic[where.rsplit(".", 1)[-1]] += 1
    # only the provider's Airflow facets name a core base definition (RunFacet) as their schema
    assert set(generic) <= {"airflow", "airflowDagRun", "airflowState", "unknownSourceAttribute"}, generic


def test_every_run_id_has_one_job(main_run: dict[str, Any], seeded_run: dict[str, Any]) -> None:
    """Every runId (ours and the provider's) belongs to exactly one job; each of our runs has one
    START and one terminal event (ADR 0010: no more sharing the provider's DAG-run runId)."""
    for run in (main_run, seeded_run):
        jobs: dict[str, set[tuple[str, str]]] = {}
        ours: dict[str, Counter[str]] = {}
        for event in lineage_events(run["home"]):
            jobs.setdefault(event["run"]["runId"], set()).add((event["job"]["namespace"], event["job"]["name"]))
            if is_ours(event):
                ours.setdefault(event["run"]["runId"], Counter())[event["eventType"]] += 1
        assert {r: j for r, j in jobs.items() if len(j) != 1} == {}
        for run_id, counts in ours.items():
            assert counts["START"] == 1 and counts["COMPLETE"] + counts["FAIL"] + counts["ABORT"] == 1, (run_id, counts)


def test_lineage_of_every_published_run(main_run: dict[str, Any], manifest: dict[str, Any]) -> None:
    events = lineage_events(main_run["home"])
    for dag in manifest["dags"]:
        ours = check_dag_run_lineage(events, main_run["home"], dag, "COMPLETE")
        failed = failed_assertions(ours)
        if dag["dag_id"] == "revrec.monthly":  # the degraded balance (see the Asset event test)
            assert failed == [("no_unbilled_revenue", False)]
        else:
            assert failed == [], (dag["dag_id"], failed)
    # the graph joins: a consumer names its upstream exactly as the upstream's producer named it
    completes = [e for e in events if is_ours(e) and e["eventType"] == "COMPLETE"]
    written = {asset_of(o): (o["namespace"], o["name"]) for e in completes for o in e["outputs"]}
    read = {asset_of(i): (i["namespace"], i["name"]) for e in completes for i in e["inputs"]}
    joined = {asset for asset in read if asset in written}
    assert joined and all(read[asset] == written[asset] for asset in joined), (read, written)
    assert read["fx.rates_daily"] == warehouse_identity(main_run["home"], "fx.rates_daily")  # external, seeded


def test_lineage_of_the_seeded_runs(seeded_run: dict[str, Any], manifest: dict[str, Any]) -> None:
    home = seeded_run["home"]
    events = lineage_events(home)
    from contract_runtime.manifest import load_manifest

    # As a task reads it: each runtime dataset joined to its asset (ADR 0017f).
    seeded_manifest = load_manifest(seeded_run["project"] / "generated" / "manifest.json")
    dags = {d["dag_id"]: d for d in seeded_manifest["dags"]}

    # blocked: START, OTHER naming the failing rule, one FAIL; AirflowFailException spent no retry
    blocked = check_dag_run_lineage(events, home, dags["billing.invoices_raw"], "FAIL")
    assert [e["eventType"] for e in blocked] == ["START", "OTHER", "FAIL"]
    assert failed_assertions(blocked) == [("seeded_error", False)]
    message = blocked[-1]["run"]["facets"]["errorMessage"]["message"]
    assert "task audit failed: QualityGateFailed" in message and "seeded_error" in message
    assert dags["billing.invoices_raw"]["default_args"]["retries"] >= 1
    audit = task_tries(home, "billing.invoices_raw")["audit"]
    assert (audit["try_number"], audit["max_tries"], audit["state"], audit["earlier"]) == (1, 2, "failed", [])

    quarantined = check_dag_run_lineage(events, home, dags["revrec.monthly"], "FAIL")
    assert [e["eventType"] for e in quarantined] == ["START", "OTHER", "OTHER", "FAIL"]
    assert ("seeded_quarantine", False) in failed_assertions(quarantined)

    degraded = check_dag_run_lineage(events, home, dags["crm.accounts_raw"], "COMPLETE")
    assert failed_assertions(degraded) == [("seeded_warning", False)]

    # a retried task: try 1 failed (retryable), try 2 succeeded; no FAIL of ours, one START
    retried = check_dag_run_lineage(events, home, dags["finance.fiscal_calendar"], "COMPLETE")
    assert [e["eventType"] for e in retried] == ["START", "OTHER", "COMPLETE"]
    produce = task_tries(home, "finance.fiscal_calendar")["produce"]
    assert produce["try_number"] == 2 and produce["state"] == "success", produce
    assert [n for n, _ in produce["earlier"]] == [1] and produce["earlier"][0][1] != "success", produce
    assert (home / "dbt-failed-once").exists()
    provider_produce = [
        e["eventType"]
        for e in events
        if LOCALRUN_MODULE.emitter_of(e) == "provider task" and e["job"]["name"] == "finance.fiscal_calendar.produce"
    ]
    # the provider saw both tries and sent a task FAIL for try 1; we sent no FAIL for it
    assert provider_produce == ["START", "FAIL", "START", "COMPLETE"], provider_produce


def test_lineage_event_counts(
    main_run: dict[str, Any], seeded_run: dict[str, Any], terminal_summary: list[str]
) -> None:
    """The observed counts per emitter and type, asserted and printed in the terminal summary."""
    observed = {
        name: {
            emitter: dict(sorted(counts.items()))
            for emitter, counts in sorted(LOCALRUN_MODULE.count_events(lineage_events(run["home"])).items())
        }
        for name, run in (("main", main_run), ("seeded", seeded_run))
    }
    lines = []
    for name, by_emitter in observed.items():
        for emitter, counts in by_emitter.items():
            kinds = ", ".join(f"{t} {counts[t]}" for t in LOCALRUN_MODULE.EVENT_TYPES if t in counts)
            lines.append(f"e2e lineage, {name} run, {emitter}: {kinds}")
    terminal_summary.extend(lines)
    # dbt-ol's events: one wrapping run (START, COMPLETE) per dbt call, and node events inside;
    # how many nodes dbt-ol reports is openlineage-dbt's business, the wrapping runs are ours
    for name, run in (("main", main_run), ("seeded", seeded_run)):
        observed[name].pop("dbt-ol", None)
        wrappers = Counter(
            e["eventType"]
            for e in lineage_events(run["home"])
            if LOCALRUN_MODULE.emitter_of(e) == "dbt-ol" and e["job"]["name"].startswith("dbt-run-")
        )
        assert dict(wrappers) == EXPECTED_DBT_CALLS[name], (name, wrappers)
    assert observed == EXPECTED_LINEAGE_COUNTS, "\n".join(lines)


def test_dbt_lineage_nests_under_the_contract_runs(main_run: dict[str, Any], manifest: dict[str, Any]) -> None:
    """Each wrapping dbt run (job ``dbt-run-*``) has the contract run as its parent, and every
    dbt-ol event has that contract run's root, the DAG run, as its root (ADR 0010: our run is a
    child of the DAG run; dbt's runs are children of ours)."""
    events = lineage_events(main_run["home"])
    ours = {e["run"]["runId"]: e["job"]["name"] for e in events if is_ours(e)}
    root_of = {
        e["run"]["runId"]: e["run"]["facets"]["parent"]["root"]["run"]["runId"]
        for e in events
        if is_ours(e) and "parent" in e["run"]["facets"]
    }
    dbt_events = [e for e in events if LOCALRUN_MODULE.emitter_of(e) == "dbt-ol"]
    dbt_contracts = {d["dag_id"] for d in manifest["dags"] if d["runtime"]["producer"]["type"] == "dbt"}
    assert dbt_events
    wrapper_root = {}
    parents = set()
    for event in dbt_events:
        parent = event["run"]["facets"]["parent"]
        if event["job"]["name"].startswith("dbt-run-"):
            assert parent["run"]["runId"] in ours, event["job"]["name"]
            assert parent["job"]["name"] == ours[parent["run"]["runId"]]
            assert parent["root"]["run"]["runId"] == root_of[parent["run"]["runId"]], event["job"]["name"]
            wrapper_root[event["run"]["runId"]] = parent["root"]["run"]["runId"]
            parents.add(parent["job"]["name"])
    for event in dbt_events:  # the model and test runs under a wrapper share its root
        parent = event["run"]["facets"]["parent"]
        if not event["job"]["name"].startswith("dbt-run-"):
            assert parent["run"]["runId"] in wrapper_root, event["job"]["name"]
            assert parent["root"]["run"]["runId"] == wrapper_root[parent["run"]["runId"]], event["job"]["name"]
    assert parents == dbt_contracts
