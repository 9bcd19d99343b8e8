"""Write-audit-publish stages without Airflow, on a temporary DuckDB: on_failure modes, the
publish transaction, retries, and the lineage hook calls (a fake hook module; the real one is
another module's business and may be absent or broken)."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import stages
from contract_runtime.sqlutil import TableRef
from contract_runtime.tables import quarantine_table, staging_table
from contract_runtime.warehouse import DuckDBWarehouse, Warehouse
from runtime_support import dag_entry, run_identity, write_manifest

GOOD_SQL = "select 'o' || i as order_id, cast(i as decimal(18,2)) as amount, 'open' as status, now() as updated_at from range(1, 4) t(i)"
NULL_ID_SQL = "select case when i = 2 then null else 'o' || i end as order_id, 1.0 as amount, 'open' as status, now() as updated_at from range(1, 4) t(i)"


class Hook:
    """A fake contract_runtime.lineage recording calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.module = types.ModuleType("contract_runtime.lineage")
        for name in ("emit_start", "emit_assertions", "emit_complete", "emit_fail"):
            setattr(self.module, name, self._recorder(name))
        self.module.duckdb_warehouse_namespace = lambda path: f"duckdb://{path}"  # type: ignore[attr-defined]

    def _recorder(self, name: str) -> Any:
        def record(*args: Any) -> None:
            self.calls.append((name, args))

        return record

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> Hook:
    h = Hook()
    monkeypatch.setitem(sys.modules, "contract_runtime.lineage", h.module)
    return h


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, Any]]:
    path = tmp_path / "s.duckdb"

    def opener(conn_id: str | None) -> Warehouse:
        assert conn_id == "warehouse"
        return DuckDBWarehouse(path)

    yield {"opener": opener, "path": path, "root": tmp_path}


def setup(
    env: dict[str, Any], sql: str, on_failure: str, extra_rules: list[dict[str, Any]] | None = None
) -> tuple[str, dict[str, Any]]:
    dag = dag_entry(producer={"type": "sql", "path": "x.sql", "sql": sql}, on_failure=on_failure)
    dag["runtime"]["datasets"][0]["quality"].extend(extra_rules or [])
    return write_manifest(env["root"], [dag]), dag


def wap(env: dict[str, Any], manifest: str, run_id: str = "manual__1") -> tuple[dict[str, Any] | None, Any]:
    """produce + audit (+ publish when the gate lets it); returns (audit summary, outputs or exception)."""
    run = run_identity(run_id=run_id)
    stages.produce(manifest, "sales.orders", run, opener=env["opener"])
    try:
        summary = stages.audit(manifest, "sales.orders", run, opener=env["opener"])
    except stages.QualityGateFailed as exc:
        return exc.summary, exc
    return summary, stages.publish(manifest, "sales.orders", run, summary, opener=env["opener"])


def rows(env: dict[str, Any], table: TableRef) -> int | None:
    with DuckDBWarehouse(env["path"]) as w:
        return w.row_count(table) if w.table_exists(table) else None


TARGET = TableRef("sales", "orders")


def test_passing_run_publishes(env: dict[str, Any], hook: Hook) -> None:
    manifest, _ = setup(env, GOOD_SQL, "block_publish")
    summary, outputs = wap(env, manifest)
    assert summary is not None and summary["status"] == "passed"
    assert outputs == [
        {
            "dataset": "orders",
            "asset": "sales.orders",
            "table": "sales.orders",
            "row_count": 3,
            "columns": outputs[0]["columns"],
            "quality_status": "passed",
            "quarantined": False,
            "failed_rules": [],
        }
    ]
    assert [c["name"] for c in outputs[0]["columns"]] == ["order_id", "amount", "status", "updated_at"]
    assert rows(env, TARGET) == 3
    assert hook.names() == ["emit_start", "emit_assertions", "emit_complete"]
    # both events name the dataset after the warehouse it is in and its target table (one identity)
    naming = {"warehouse_namespace": f"duckdb://{env['path']}", "warehouse_database": "s"}
    _, args = hook.calls[1]
    assert args[3]["name"] == "orders" and [r["name"] for r in args[4]] == ["order_id_not_null", "rowCount", "order_id_unique"]
    assert {k: args[3][k] for k in ("table", *naming)} == {"table": "sales.orders", **naming}
    _, args = hook.calls[2]
    assert set(args[3][0]) == {
        "dataset",
        "asset",
        "table",
        "row_count",
        "columns",
        "quality_status",
        "quarantined",
        "warehouse_namespace",
        "warehouse_database",
    }
    assert {k: args[3][0][k] for k in ("table", *naming)} == {"table": "sales.orders", **naming}
    with DuckDBWarehouse(env["path"]) as w:
        assert w.list_tables("_ca_staging") == []


def test_error_rule_blocks_publish(env: dict[str, Any], hook: Hook) -> None:
    manifest, _ = setup(env, GOOD_SQL, "block_publish")
    wap(env, manifest, run_id="first")
    manifest, _ = setup(env, NULL_ID_SQL, "block_publish")
    summary, exc = wap(env, manifest, run_id="second")
    assert isinstance(exc, stages.QualityGateFailed) and isinstance(exc, stages.NonRetryableError)
    assert "order_id_not_null" in str(exc) and "publish blocked" in str(exc)
    assert summary is not None and summary["status"] == "blocked"
    assert summary["datasets"][0]["failed_errors"] == ["order_id_not_null"]
    assert rows(env, TARGET) == 3  # the previous publication, untouched
    with DuckDBWarehouse(env["path"]) as w:
        assert w.list_tables("_ca_staging") == [] and not w.table_exists(
            quarantine_table("sales", "orders", run_identity(run_id="second").run_hash)
        )
    assert hook.names()[-2:] == ["emit_start", "emit_assertions"]


def test_quarantine_moves_staging_and_leaves_target(env: dict[str, Any], hook: Hook) -> None:
    manifest, _ = setup(env, GOOD_SQL, "quarantine")
    wap(env, manifest, run_id="first")
    manifest, _ = setup(env, NULL_ID_SQL, "quarantine")
    summary, exc = wap(env, manifest, run_id="second")
    assert isinstance(exc, stages.QualityGateFailed) and "quarantined" in str(exc)
    assert summary is not None and summary["status"] == "quarantined"
    q = quarantine_table("sales", "orders", run_identity(run_id="second").run_hash)
    assert summary["quarantine"] == [
        {"dataset": "orders", "asset": "sales.orders", "table": q.dotted, "row_count": 3, "quarantined": True}
    ]
    assert rows(env, q) == 3
    assert rows(env, TARGET) == 3
    with DuckDBWarehouse(env["path"]) as w:
        assert w.scalar(f"select count(*) from {TARGET.sql} where order_id is null") == 0
        assert w.list_tables("_ca_staging") == []


def test_warn_publishes_degraded_with_the_error_rule(env: dict[str, Any], hook: Hook) -> None:
    manifest, _ = setup(env, NULL_ID_SQL, "warn")
    summary, outputs = wap(env, manifest)
    assert summary is not None and summary["status"] == "degraded"
    assert outputs[0]["quality_status"] == "degraded" and outputs[0]["failed_rules"] == ["order_id_not_null"]
    assert rows(env, TARGET) == 3


def test_warning_rule_degrades_and_info_only_records(env: dict[str, Any], hook: Hook) -> None:
    extra = [
        {"name": "few_rows", "metric": "rowCount", "mustBeGreaterThan": 100, "severity": "warning"},
        {"name": "noted", "metric": "rowCount", "mustBeLessThan": 1, "severity": "info"},
    ]
    manifest, dag = setup(env, GOOD_SQL, "block_publish", extra)
    summary, outputs = wap(env, manifest)
    assert outputs[0]["quality_status"] == "degraded" and outputs[0]["failed_rules"] == ["few_rows"]
    assert summary is not None and summary["datasets"][0]["failed_info"] == ["noted"]
    extra_of = stages.asset_event_extra(outputs[0], dag)
    assert extra_of == {
        "row_count": 3,
        "quality_status": "degraded",
        "failed_rules": ["few_rows"],
        "contract_id": "sales.orders",
        "contract_version": "1.0.0",
    }


def test_publish_retry_after_commit_does_not_swap_again(env: dict[str, Any], hook: Hook) -> None:
    manifest, _ = setup(env, GOOD_SQL, "block_publish")
    run = run_identity(run_id="r")
    summary, _ = wap(env, manifest, run_id="r")
    again = stages.publish(manifest, "sales.orders", run, summary, opener=env["opener"])
    assert [o["row_count"] for o in again] == [3] and again[0]["quality_status"] == "passed"


def test_produce_retry_starts_from_a_clean_staging(env: dict[str, Any], hook: Hook) -> None:
    manifest, _ = setup(env, GOOD_SQL, "block_publish")
    run = run_identity(run_id="r")
    stages.produce(manifest, "sales.orders", run, opener=env["opener"])
    stages.produce(manifest, "sales.orders", run_identity(run_id="r", try_number=2, max_tries=1), opener=env["opener"])
    assert rows(env, staging_table("sales", "orders", run.run_hash)) == 3
    assert hook.names().count("emit_start") == 1  # first try only


def test_produce_checks_contract_columns(env: dict[str, Any], hook: Hook) -> None:
    manifest, _ = setup(env, "select 'o' as order_id", "block_publish")
    with pytest.raises(stages.NonRetryableError, match=r"lacks contract columns \['amount', 'status', 'updated_at'\]"):
        stages.produce(manifest, "sales.orders", run_identity(), opener=env["opener"])


def test_audit_and_publish_need_their_inputs(env: dict[str, Any], hook: Hook) -> None:
    manifest, _ = setup(env, GOOD_SQL, "block_publish")
    with pytest.raises(stages.NonRetryableError, match="did produce run"):
        stages.audit(manifest, "sales.orders", run_identity(run_id="never"), opener=env["opener"])
    with pytest.raises(stages.NonRetryableError, match="no audit result"):
        stages.publish(manifest, "sales.orders", run_identity(), None, opener=env["opener"])
    blocked = {"datasets": [{"dataset": "orders", "status": "blocked", "failed_rules": []}]}
    with pytest.raises(stages.NonRetryableError, match="blocked"):
        stages.publish(manifest, "sales.orders", run_identity(), blocked, opener=env["opener"])
    with pytest.raises(stages.NonRetryableError, match="not in the manifest"):
        stages.produce(manifest, "sales.nope", run_identity(), opener=env["opener"])


def test_lineage_never_changes_the_outcome(
    env: dict[str, Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    broken = types.ModuleType("contract_runtime.lineage")

    def explode(*args: Any) -> None:
        raise RuntimeError("backend answered 500")

    for name in ("emit_start", "emit_assertions", "emit_complete", "emit_fail"):
        setattr(broken, name, explode)
    monkeypatch.setitem(sys.modules, "contract_runtime.lineage", broken)
    manifest, _ = setup(env, GOOD_SQL, "block_publish")
    _, outputs = wap(env, manifest)
    assert outputs[0]["row_count"] == 3
    assert sum("backend answered 500" in r.getMessage() for r in caplog.records) == 3  # one line per failure
    stages.lineage_fail(manifest, "sales.orders", run_identity(), RuntimeError("x"), "audit")

    # a module without the hook functions, and a module that is absent
    monkeypatch.setitem(sys.modules, "contract_runtime.lineage", types.ModuleType("contract_runtime.lineage"))
    stages._lineage("emit_start", {}, {}, run_identity())
    monkeypatch.setitem(sys.modules, "contract_runtime.lineage", None)  # import raises ImportError
    stages._lineage("emit_start", {}, {}, run_identity())


def test_unknown_warehouse_location_names_datasets_in_the_lineage_namespace(
    env: dict[str, Any], hook: Hook, caplog: pytest.LogCaptureFixture
) -> None:
    """A warehouse that cannot tell its location costs only the physical names: one warning, no key."""

    class Nowhere(DuckDBWarehouse):
        def location(self) -> Any:
            raise RuntimeError("postgres://etl:hunter2@db/x is unreachable")

    def opener(conn_id: str | None) -> Warehouse:
        return Nowhere(env["path"])

    manifest, _ = setup(env, GOOD_SQL, "block_publish")
    run = run_identity()
    stages.produce(manifest, "sales.orders", run, opener=opener)
    summary = stages.audit(manifest, "sales.orders", run, opener=opener)
    stages.publish(manifest, "sales.orders", run, summary, opener=opener)
    _, args = hook.calls[-1]
    assert "warehouse_namespace" not in args[3][0] and args[3][0]["table"] == "sales.orders"
    warnings = [r.getMessage() for r in caplog.records if "location is unknown" in r.getMessage()]
    assert len(warnings) == 2 and not any("hunter2" in w for w in warnings)


def test_lineage_fail_passes_the_error_and_task(env: dict[str, Any], hook: Hook) -> None:
    manifest, _ = setup(env, GOOD_SQL, "block_publish")
    err = ValueError("boom")
    stages.lineage_fail(manifest, "sales.orders", run_identity(task_id="audit"), err, "audit")
    name, args = hook.calls[-1]
    assert name == "emit_fail" and args[3] is err and args[4] == "audit" and args[1]["dag_id"] == "sales.orders"
    stages.lineage_fail(str(env["root"] / "missing.json"), "sales.orders", run_identity(), err, "audit")  # never raises
