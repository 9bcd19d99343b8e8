"""Fault 1 replayed on the product: declared key constraints are quality rules.

A property marked ``required``, ``unique`` or ``primaryKey`` is enforced by the audit as an
implicit ``error`` rule the compiler writes into the manifest (ODCS: ``required`` "may not contain
null values"; a primary key is required and unique, a composite key unique as a tuple). The
contract is compiled by the real compiler; produce and audit run on a temporary DuckDB.
"""

from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path
from typing import Any

import dagcheck
import pytest
from contract_runtime import stages
from contract_runtime.warehouse import DuckDBWarehouse, Warehouse
from runtime_support import run_identity

BASE_CONFIG = dagcheck.REPO_ROOT / "test" / "cases" / "_base"

ORDERS = """\
apiVersion: contract-assets/v1
kind: TransformContract
id: sales.orders_clean
version: 1.0.0
status: active
domain: sales
owner: team-sales-data
producer: {type: sql, path: sql/orders_clean.sql}
trigger: manual
datasets:
  - name: orders_clean
    schema:
      version: 1
      properties:
        - {name: order_id, logicalType: string, primaryKey: true}
        - {name: customer_id, logicalType: string, required: true}
        - {name: email, logicalType: string, unique: true}
"""

LINES = """\
apiVersion: contract-assets/v1
kind: TransformContract
id: sales.order_lines
version: 1.0.0
status: active
domain: sales
owner: team-sales-data
producer: {type: sql, path: sql/order_lines.sql}
trigger: manual
datasets:
  - name: order_lines
    schema:
      version: 1
      properties:
        - {name: order_id, logicalType: string, primaryKey: true}
        - {name: line_no, logicalType: integer, primaryKey: true}
"""

CLEAN = {
    "orders_clean": "select 'o' || i as order_id, 'c' || i as customer_id, 'e' || i || '@x' as email from range(1, 4) t(i)",
    "order_lines": "select 'o' || (i % 2) as order_id, i as line_no from range(1, 5) t(i)",
}

#: NULL and repeated keys everywhere a constraint is declared; one NULL email (unique allows it).
DIRTY = {
    "orders_clean": "select * from (values ('o1', 'c1', 'a@x'), ('o1', null, 'a@x'), (null, 'c3', null)) v(order_id, customer_id, email)",
    "order_lines": "select * from (values ('o1', 1), ('o1', 1), ('o2', 1), ('o2', null)) v(order_id, line_no)",
}


@pytest.fixture
def no_lineage(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...]]]:
    calls: list[tuple[str, tuple[Any, ...]]] = []
    module = types.ModuleType("contract_runtime.lineage")
    for name in ("emit_start", "emit_assertions", "emit_complete", "emit_fail"):
        setattr(module, name, lambda *args, _n=name: calls.append((_n, args)))
    module.duckdb_warehouse_namespace = lambda path: f"duckdb://{path}"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "contract_runtime.lineage", module)
    return calls


def _compile(tmp_path: Path, sql: dict[str, str]) -> Path:
    root = tmp_path / "project"
    shutil.copytree(BASE_CONFIG, root)
    (root / "contracts" / "sales").mkdir(parents=True)
    (root / "contracts" / "sales" / "orders_clean.yaml").write_text(ORDERS, encoding="utf-8")
    (root / "contracts" / "sales" / "order_lines.yaml").write_text(LINES, encoding="utf-8")
    (root / "sql").mkdir()
    for name, text in sql.items():
        (root / "sql" / f"{name}.sql").write_text(text, encoding="utf-8")
    result = dagcheck.run_compile(root)
    assert result.returncode == 0, result.describe()
    return result.generated / "manifest.json"


def _audit(tmp_path: Path, sql: dict[str, str]) -> dict[str, tuple[dict[str, Any], str]]:
    """produce + audit of both contracts: ``{dataset: (audit summary, gate error or "")}``."""
    manifest = str(_compile(tmp_path, sql))
    db = tmp_path / "w.duckdb"

    def opener(conn_id: str | None) -> Warehouse:
        return DuckDBWarehouse(db)

    out: dict[str, tuple[dict[str, Any], str]] = {}
    for name in ("orders_clean", "order_lines"):
        run = run_identity(dag_id=f"sales.{name}", run_id="manual__1")
        stages.produce(manifest, f"sales.{name}", run, opener=opener)
        try:
            out[name] = (stages.audit(manifest, f"sales.{name}", run, opener=opener), "")
        except stages.QualityGateFailed as exc:
            out[name] = (exc.summary, str(exc))
    return out


def test_the_manifest_names_the_implicit_rules(tmp_path: Path) -> None:
    from contract_runtime.manifest import load_manifest

    # The rules the audit runs (version 2 derives the implicit ones at load, ADR 0017f).
    manifest: dict[str, Any] = dict(load_manifest(_compile(tmp_path, CLEAN)))
    rules = {d["name"]: d["quality"] for dag in manifest["dags"] for d in dag["runtime"]["datasets"]}
    orders = {r["name"]: r for r in rules["orders_clean"]}
    assert orders["order_id_required"] == {
        "name": "order_id_required",
        "description": "implied by primaryKey: true on order_id: no NULL values",
        "metric": "nullValues",
        "column": "order_id",
        "mustBe": 0,
        "severity": "error",
        "implied_by": "primaryKey",
    }
    assert orders["order_id_unique"]["metric"] == "duplicateValues"
    assert orders["order_id_unique"]["implied_by"] == "primaryKey"
    assert orders["customer_id_required"]["implied_by"] == "required"
    assert orders["email_unique"] == {
        "name": "email_unique",
        "description": "implied by unique: true on email: no repeated non-NULL value",
        "metric": "duplicateValues",
        "column": "email",
        "mustBe": 0,
        "severity": "error",
        "implied_by": "unique",
    }
    assert "email_required" not in orders  # unique alone allows NULLs (SQL UNIQUE does too)
    lines = {r["name"]: r for r in rules["order_lines"]}
    # a composite key: each member required, the tuple unique (not each column on its own)
    assert set(lines) == {"order_id_required", "line_no_required", "primary_key_unique"}
    assert lines["primary_key_unique"]["arguments"] == {"properties": ["order_id", "line_no"]}


def test_clean_data_passes(tmp_path: Path, no_lineage: list[Any]) -> None:
    audits = _audit(tmp_path, CLEAN)
    assert {name: (summary["status"], error) for name, (summary, error) in audits.items()} == {
        "orders_clean": ("passed", ""),
        "order_lines": ("passed", ""),
    }


def test_nulls_and_duplicates_in_declared_keys_block_publish(tmp_path: Path, no_lineage: list[Any]) -> None:
    audits = _audit(tmp_path, DIRTY)
    orders, orders_error = audits["orders_clean"]
    lines, lines_error = audits["order_lines"]
    assert "primary_key_unique" in lines_error
    assert (orders["status"], lines["status"]) == ("blocked", "blocked")
    assert sorted(orders["datasets"][0]["failed_errors"]) == [
        "customer_id_required",
        "email_unique",
        "order_id_required",
        "order_id_unique",
    ]
    assert sorted(lines["datasets"][0]["failed_errors"]) == ["line_no_required", "primary_key_unique"]
    results = {r["name"]: r for r in lines["datasets"][0]["results"]}
    # ('o1', 1) twice is one repeat; ('o2', NULL) is left to the required rule
    assert results["primary_key_unique"]["actual"] == 1
    assert "publish blocked" in orders_error and "order_id_unique" in orders_error
    # the implicit rules reach lineage (dataQualityAssertions) like any other rule
    names = {r["name"] for name, args in no_lineage if name == "emit_assertions" for r in args[4]}
    assert {"order_id_required", "email_unique", "primary_key_unique"} <= names
