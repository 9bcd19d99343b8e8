"""Helpers for the dbt producer tests: the bundled dbt project in a temporary project root, raw
tables, and manifest entries of dbt contracts. Not a test module.

The runtime finds the dbt project from the manifest's folder (``<root>/generated/manifest.json``
-> ``<root>/dbt/finance``), so each test copies the bundled project under its own root (a test may
break a model there) and points ``CONTRACT_ASSETS_DBT_BIN`` at the repository's ``.venv-dbt``.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PROJECT = "dbt/finance"
DBT_BIN = REPO / ".venv-dbt" / "bin"
COMPILED = REPO / "generated" / "manifest.json"


def require_dbt() -> None:
    """Skip unless the dbt environment exists (scripts/python-env.sh builds it)."""
    if not (DBT_BIN / "dbt").exists():
        pytest.skip(f"no dbt environment at {DBT_BIN} (run bash scripts/python-env.sh)")


def project_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root under ``tmp_path`` holding a copy of the bundled dbt project."""
    require_dbt()
    root = tmp_path / "project"
    shutil.copytree(REPO / PROJECT, root / PROJECT, ignore=shutil.ignore_patterns("target", "logs"))
    monkeypatch.setenv("CONTRACT_ASSETS_DBT_BIN", str(DBT_BIN))
    return root


def parse_project(project_dir: Path) -> Path:
    """``dbt parse`` a dbt project a test wrote (``scripts/dbt_parse.py`` with the dbt environment's
    Python, as ``scripts/dbt-parse.sh`` does); returns its ``manifest.json``.

    :raises AssertionError: dbt failed (its output in the message).
    """
    import subprocess

    require_dbt()
    proc = subprocess.run(
        [str(DBT_BIN / "python"), str(REPO / "scripts" / "dbt_parse.py"), str(project_dir)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, f"dbt parse of {project_dir} failed:\n{proc.stdout}\n{proc.stderr}"
    return project_dir / "manifest.json"


def compiled_dag(dag_id: str) -> dict[str, Any]:
    """The compiled ``dags[]`` entry of a bundled contract (``generated/manifest.json``)."""
    manifest = json.loads(COMPILED.read_text(encoding="utf-8"))
    return copy.deepcopy(next(d for d in manifest["dags"] if d["dag_id"] == dag_id))


def write_manifest(root: Path, dags: list[dict[str, Any]], namespace: str = "acme") -> str:
    """``<root>/generated/manifest.json`` with ``dags``; returns its path (``runtime_support.write_manifest``)."""
    from runtime_support import write_manifest as write

    return write(root, dags, namespace)


INVOICES = [
    # invoice_id, account_id, contract_id, invoice_date, due_date, currency, status
    ("i1", "a1", "c1", "2026-01-05", "2026-02-04", "EUR", "open"),
    ("i2", "a1", "c1", "2026-02-05", "2026-03-07", "EUR", "paid"),
    ("i3", "a2", "c2", "2026-02-10", "2026-03-12", "USD", "open"),
    ("i4", "a2", "c2", "2026-02-11", "2026-03-13", "USD", "void"),
]
LINES = [
    # invoice_line_id, invoice_id, amount, tax_amount
    ("l1", "i1", 100.0, 19.0),
    ("l2", "i2", 50.0, 9.5),
    ("l3", "i3", 80.0, 0.0),
    ("l4", "i4", 10.0, 0.0),
]


def seed_raw(wh: Any, invoices: list[tuple[Any, ...]] | None = None, lines: list[tuple[Any, ...]] | None = None) -> None:
    """Create the billing, CRM and FX tables the bundled models read (``billing.invoices_raw``...)."""
    for schema in ("billing", "crm", "fx"):
        wh.execute(f"create schema if not exists {schema}")
    wh.execute("drop table if exists billing.invoices_raw")
    wh.execute(
        "create table billing.invoices_raw (invoice_id varchar, account_id varchar, contract_id varchar, "
        "invoice_date date, due_date date, currency varchar, status varchar, updated_at timestamp)"
    )
    for row in INVOICES if invoices is None else invoices:
        wh.execute(
            "insert into billing.invoices_raw values (?, ?, ?, cast(? as date), cast(? as date), ?, ?, "
            "cast('2026-03-01 00:00:00' as timestamp))",
            list(row),
        )
    wh.execute("drop table if exists billing.invoice_lines_raw")
    wh.execute(
        "create table billing.invoice_lines_raw (invoice_line_id varchar, invoice_id varchar, line_number integer, "
        "sku varchar, quantity decimal(18,4), unit_price decimal(18,4), amount decimal(18,2), tax_amount decimal(18,2), "
        "updated_at timestamp)"
    )
    for line_id, invoice_id, amount, tax in LINES if lines is None else lines:
        wh.execute(
            "insert into billing.invoice_lines_raw values (?, ?, 1, 'sku', 1, ?, ?, ?, "
            "cast('2026-03-01 00:00:00' as timestamp))",
            [line_id, invoice_id, amount, amount, tax],
        )
    wh.execute("drop table if exists billing.credit_notes_raw")
    wh.execute(
        "create table billing.credit_notes_raw (credit_note_id varchar, invoice_id varchar, issued_date date, "
        "currency varchar, amount decimal(18,2), reason varchar, updated_at timestamp)"
    )
    wh.execute(
        "insert into billing.credit_notes_raw values ('n1', 'i2', cast('2026-02-20' as date), 'EUR', 5, 'goodwill', "
        "cast('2026-03-01 00:00:00' as timestamp))"
    )
    wh.execute("drop table if exists fx.rates_daily")
    wh.execute("create table fx.rates_daily (rate_date date, base_currency varchar, quote_currency varchar, rate decimal(18,6))")
    wh.execute("insert into fx.rates_daily values (cast('2025-01-01' as date), 'EUR', 'USD', 1.25)")


def model(name: str, package: str = "finance_models") -> dict[str, str]:
    """A ``runtime.producer.models[]`` entry of the bundled project."""
    return {"name": name, "unique_id": f"model.{package}.{name}", "path": f"models/{name}.sql"}


def dbt_dag(dag_id: str, **producer: Any) -> dict[str, Any]:
    """A bundled contract's compiled entry with a ``dbt`` producer on the bundled project.

    When the compiled manifest already has the dbt producer (as it does once the contract says
    ``type: dbt``), its fields stay unless given here.
    """
    dag = compiled_dag(dag_id)
    runtime = dag["runtime"]
    current = runtime.get("producer") or {}
    if current.get("type") != "dbt":
        names = [str(d["name"]) for d in runtime["datasets"]]
        current = {
            "type": "dbt",
            "project": PROJECT,
            "select": " ".join(names),
            "manifest": f"{PROJECT}/manifest.json",
            "models": [model(n) for n in names],
            "seeds": [],
            "upstream_models": {},
            "params": {},
        }
    current.update(producer)
    runtime["producer"] = current
    runtime["warehouse_conn_id"] = "warehouse"
    return dag


def wap(opener: Any, manifest: str, contract_id: str, run_id: str) -> tuple[dict[str, Any], Any]:
    """produce, audit and (when the gate lets it) publish one contract's run.

    :returns: ``(audit summary, publish outputs)``, or ``(the blocked summary, the
        QualityGateFailed)`` when the gate stops the run.
    """
    from contract_runtime import stages
    from runtime_support import run_identity

    run = run_identity(dag_id=contract_id, run_id=run_id)
    stages.produce(manifest, contract_id, run, opener=opener)
    try:
        summary = stages.audit(manifest, contract_id, run, opener=opener)
    except stages.QualityGateFailed as exc:
        return exc.summary, exc
    return summary, stages.publish(manifest, contract_id, run, summary, opener=opener)
