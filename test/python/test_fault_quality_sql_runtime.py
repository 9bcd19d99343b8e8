"""Fault 2 (run time) replayed: a quality rule whose query cannot be evaluated is that rule failing.

The database's own message is the rule's ``error``; its severity decides what follows (a
``warning`` degrades, an ``error`` blocks as ``on_failure`` says), and the task never crashes with
the driver's exception. The other rules of the dataset are still evaluated.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import stages
from contract_runtime.quality import evaluate_dataset
from contract_runtime.sqlutil import TableRef
from contract_runtime.warehouse import DuckDBWarehouse, Warehouse
from runtime_support import dag_entry, run_identity, write_manifest

GOOD_SQL = "select 'o' || i as order_id, cast(i as decimal(18,2)) as amount, 'open' as status, now() as updated_at from range(1, 4) t(i)"
BROKEN = {"type": "sql", "query": "select count(*) from {dataset} where no_such_column > 0", "mustBe": 0}


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...]]]:
    calls: list[tuple[str, tuple[Any, ...]]] = []
    module = types.ModuleType("contract_runtime.lineage")
    for name in ("emit_start", "emit_assertions", "emit_complete", "emit_fail"):
        setattr(module, name, lambda *args, _n=name: calls.append((_n, args)))
    module.duckdb_warehouse_namespace = lambda path: f"duckdb://{path}"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "contract_runtime.lineage", module)
    return calls


def _run(tmp_path: Path, severity: str, on_failure: str = "block_publish") -> tuple[dict[str, Any], str]:
    dag = dag_entry(producer={"type": "sql", "path": "x.sql", "sql": GOOD_SQL}, on_failure=on_failure)
    dag["runtime"]["datasets"][0]["quality"].insert(0, {**BROKEN, "name": "broken_rule", "severity": severity})
    manifest = write_manifest(tmp_path, [dag])
    db = tmp_path / "w.duckdb"

    def opener(conn_id: str | None) -> Warehouse:
        return DuckDBWarehouse(db)

    run = run_identity(run_id="manual__1")
    stages.produce(manifest, "sales.orders", run, opener=opener)
    try:
        return stages.audit(manifest, "sales.orders", run, opener=opener), ""
    except stages.QualityGateFailed as exc:
        return exc.summary, str(exc)


def test_a_broken_warning_rule_degrades_and_the_other_rules_still_run(tmp_path: Path, hook: list[Any]) -> None:
    summary, gate = _run(tmp_path, "warning")
    assert gate == ""
    assert summary["status"] == "degraded"
    (dataset,) = summary["datasets"]
    assert dataset["failed_warnings"] == ["broken_rule"]
    results = {r["name"]: r for r in dataset["results"]}
    assert results["broken_rule"]["success"] is False and results["broken_rule"]["actual"] is None
    # the database's message, as DuckDB words it, names the missing column
    assert "no_such_column" in results["broken_rule"]["error"]
    assert "Binder Error" in results["broken_rule"]["error"]
    assert results["order_id_not_null"]["success"] is True
    # lineage carries the failure and its cause
    (assertions,) = [args[4] for name, args in hook if name == "emit_assertions"]
    broken = next(r for r in assertions if r["name"] == "broken_rule")
    assert "no_such_column" in broken["error"]


def test_a_broken_error_rule_blocks_with_the_database_message(tmp_path: Path, hook: list[Any]) -> None:
    summary, gate = _run(tmp_path, "error")
    assert summary["status"] == "blocked"
    assert summary["datasets"][0]["failed_errors"] == ["broken_rule"]
    assert "broken_rule" in gate and "no_such_column" in gate


def test_a_broken_info_rule_only_records(tmp_path: Path, hook: list[Any]) -> None:
    summary, gate = _run(tmp_path, "info")
    assert (summary["status"], gate) == ("passed", "")
    assert summary["datasets"][0]["failed_info"] == ["broken_rule"]


def test_the_facet_reports_the_error(tmp_path: Path) -> None:
    from contract_runtime.lineage.facets import assertions_facet

    wh = DuckDBWarehouse(tmp_path / "f.duckdb")
    try:
        wh.execute("create table t as select 1 as a")
        verdict = evaluate_dataset(wh, TableRef("main", "t"), {"name": "t", "quality": [{**BROKEN, "name": "b", "severity": "warning"}]})
    finally:
        wh.close()
    facet = assertions_facet(verdict.results, [{**BROKEN, "name": "b"}])
    (assertion,) = facet.assertions
    assert assertion.success is False
    assert assertion.params is not None and "no_such_column" in assertion.params["error"]
