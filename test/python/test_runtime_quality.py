"""Quality rules on a temporary DuckDB: every metric, every operator with its boundaries,
percent units, severities and the gate's status."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_runtime.quality import (
    OPERATORS,
    DatasetVerdict,
    QualityRuleError,
    compare,
    evaluate_dataset,
    evaluate_rule,
    operator_of,
)
from contract_runtime.sqlutil import TableRef
from contract_runtime.warehouse import DuckDBWarehouse

T = TableRef("sales", "orders")


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[DuckDBWarehouse]:
    w = DuckDBWarehouse(tmp_path / "q.duckdb")
    w.create_table(T, [("id", "VARCHAR"), ("n", "INTEGER"), ("status", "VARCHAR"), ("flag", "BOOLEAN")])
    w.insert_rows(
        T,
        ["id", "n", "status", "flag"],
        [
            ("a", 1, "open", True),
            ("b", 2, "paid", False),
            ("b", 3, "", None),
            (None, 4, None, True),
            ("c", None, "void", False),
            ("c", 6, "open", True),
            ("c", 7, "weird", True),
            ("d", 8, "paid", None),
            ("e", 9, "open", False),
            ("f", 10, "open", True),
        ],
    )
    yield w
    w.close()


def rule(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "r", "severity": "error"}
    base.update(kw)
    return base


# ---------------------------------------------------------------------- operators


@pytest.mark.parametrize(
    ("op", "expected", "actual", "ok"),
    [
        ("mustBe", 0, 0, True),
        ("mustBe", 0, 1, False),
        ("mustBe", 2.5, 2.5, True),
        ("mustNotBe", 0, 0, False),
        ("mustNotBe", 0, 1, True),
        ("mustBeGreaterThan", 10, 10, False),
        ("mustBeGreaterThan", 10, 11, True),
        ("mustBeGreaterThan", 10, 10.0001, True),
        ("mustBeGreaterOrEqualTo", 10, 10, True),
        ("mustBeGreaterOrEqualTo", 10, 9.999, False),
        ("mustBeLessThan", 5, 5, False),
        ("mustBeLessThan", 5, 4, True),
        ("mustBeLessOrEqualTo", 5, 5, True),
        ("mustBeLessOrEqualTo", 5, 6, False),
        ("mustBeBetween", [1, 50], 1, True),
        ("mustBeBetween", [1, 50], 50, True),
        ("mustBeBetween", [1, 50], 0, False),
        ("mustBeBetween", [1, 50], 51, False),
        ("mustNotBeBetween", [0, 11], 0, False),
        ("mustNotBeBetween", [0, 11], 11, False),
        ("mustNotBeBetween", [0, 11], 12, True),
        ("mustNotBeBetween", [0, 11], -1, True),
        ("mustBe", 0, None, False),
        ("mustNotBe", 0, None, False),
        ("mustNotBeBetween", [0, 11], None, False),
    ],
)
def test_operator_boundaries(op: str, expected: Any, actual: Any, ok: bool) -> None:
    assert compare(op, expected, actual) is ok


def test_every_operator_is_covered() -> None:
    assert set(OPERATORS) == {
        "mustBe",
        "mustNotBe",
        "mustBeGreaterThan",
        "mustBeGreaterOrEqualTo",
        "mustBeLessThan",
        "mustBeLessOrEqualTo",
        "mustBeBetween",
        "mustNotBeBetween",
    }


def test_operator_of_requires_exactly_one() -> None:
    assert operator_of({"mustBe": 0}) == ("mustBe", 0)
    with pytest.raises(QualityRuleError):
        operator_of({"name": "x"})
    with pytest.raises(QualityRuleError):
        operator_of({"mustBe": 0, "mustNotBe": 1})
    with pytest.raises(QualityRuleError):
        compare("mustBeBetween", 3, 1)
    with pytest.raises(QualityRuleError):
        compare("mustBeRoughly", 3, 1)


# ---------------------------------------------------------------------- metrics


def test_null_values(wh: DuckDBWarehouse) -> None:
    r = evaluate_rule(wh, T, rule(metric="nullValues", column="id", mustBe=1))
    assert (r["actual"], r["success"], r["type"], r["metric"], r["column"]) == (1, True, "library", "nullValues", "id")
    r = evaluate_rule(wh, T, rule(metric="nullValues", column="n", mustBe=0))
    assert (r["actual"], r["success"]) == (1, False)


def test_missing_values_default_is_null_and_empty_string(wh: DuckDBWarehouse) -> None:
    # status: "" once, NULL once
    r = evaluate_rule(wh, T, rule(metric="missingValues", column="status", mustBe=2))
    assert r["actual"] == 2 and r["success"]


def test_missing_values_custom_list(wh: DuckDBWarehouse) -> None:
    r = evaluate_rule(wh, T, rule(metric="missingValues", column="status", missingValues=["weird", "void"], mustBe=2))
    assert r["actual"] == 2 and r["success"]
    # a number compares with the column as is
    r = evaluate_rule(wh, T, rule(metric="missingValues", column="n", missingValues=[None, 8, 9], mustBe=3))
    assert r["actual"] == 3 and r["success"]
    # an empty list counts nothing
    r = evaluate_rule(wh, T, rule(metric="missingValues", column="status", missingValues=[], mustBe=0))
    assert r["actual"] == 0 and r["success"]


def test_invalid_values_ignores_nulls(wh: DuckDBWarehouse) -> None:
    r = evaluate_rule(wh, T, rule(metric="invalidValues", column="status", validValues=["open", "paid"], mustBe=0))
    # "", "void", "weird" are invalid; NULL is not counted
    assert r["actual"] == 3 and not r["success"]
    r = evaluate_rule(wh, T, rule(metric="invalidValues", column="n", validValues=[1, 2, 3], mustBeLessOrEqualTo=6))
    assert r["actual"] == 6 and r["success"]
    r = evaluate_rule(wh, T, rule(metric="invalidValues", column="flag", validValues=[True], mustBe=3))
    assert r["actual"] == 3 and r["success"]
    with pytest.raises(QualityRuleError):
        evaluate_rule(wh, T, rule(metric="invalidValues", column="n", mustBe=0))


def test_duplicate_values_counts_repeats_of_non_null_values(wh: DuckDBWarehouse) -> None:
    # ids: a, b, b, NULL, c, c, c, d, e, f -> 9 non-null, 6 distinct -> 3 repeats
    r = evaluate_rule(wh, T, rule(metric="duplicateValues", column="id", mustBe=0))
    assert r["actual"] == 3 and not r["success"]


def test_row_count(wh: DuckDBWarehouse) -> None:
    r = evaluate_rule(wh, T, rule(metric="rowCount", mustBeGreaterThan=9))
    assert r["actual"] == 10 and r["success"] and r["column"] is None
    r = evaluate_rule(wh, T, rule(metric="rowCount", mustBeGreaterThan=10))
    assert not r["success"]


def test_percent_unit(wh: DuckDBWarehouse) -> None:
    r = evaluate_rule(wh, T, rule(metric="nullValues", column="id", unit="percent", mustBeLessOrEqualTo=10))
    assert r["actual"] == 10 and r["success"] and r["unit"] == "percent"
    r = evaluate_rule(wh, T, rule(metric="duplicateValues", column="id", unit="percent", mustBeLessThan=30))
    assert r["actual"] == 30 and not r["success"]
    empty = TableRef("sales", "empty")
    wh.create_table(empty, [("id", "VARCHAR")])
    r = evaluate_rule(wh, empty, rule(metric="nullValues", column="id", unit="percent", mustBe=0))
    assert r["actual"] == 0 and r["success"]


def test_sql_rule_substitutes_the_quoted_table(wh: DuckDBWarehouse) -> None:
    r = evaluate_rule(wh, T, rule(type="sql", query="select count(*) from {dataset} where n > 5", mustBe=5))
    assert (r["actual"], r["success"], r["type"], r["metric"]) == (5, True, "sql", None)
    r = evaluate_rule(wh, T, rule(type="sql", query="select max(n) from {dataset}", mustBeBetween=[1, 10]))
    assert r["actual"] == 10 and r["success"]
    r = evaluate_rule(wh, T, rule(type="sql", query="select avg(n) from {dataset}", mustBeGreaterThan=5.5))
    assert r["actual"] == pytest.approx(5.5556, abs=1e-3) and r["success"]


def test_sql_rule_null_result_fails(wh: DuckDBWarehouse) -> None:
    r = evaluate_rule(wh, T, rule(type="sql", query="select max(n) from {dataset} where n > 100", mustBe=0))
    assert r["actual"] is None and not r["success"]


def test_sql_rule_on_hostile_table_name(tmp_path: Path) -> None:
    with DuckDBWarehouse(tmp_path / "h.duckdb") as w:
        t = TableRef('we"ird schema', 'x"; drop table y; --')
        w.create_table(t, [("v", "INTEGER")])
        w.insert_rows(t, ["v"], [(1,), (2,)])
        r = evaluate_rule(w, t, rule(type="sql", query="select count(*) from {dataset}", mustBe=2))
        assert r["success"]


def test_result_shape(wh: DuckDBWarehouse) -> None:
    r = evaluate_rule(wh, T, rule(name="n_nulls", metric="nullValues", column="n", mustBe=0, severity="warning"))
    assert set(r) >= {"name", "metric", "column", "severity", "operator", "expected", "actual", "success", "type"}
    assert r["name"] == "n_nulls" and r["severity"] == "warning" and r["operator"] == "mustBe" and r["expected"] == 0


# ---------------------------------------------------------------------- severities and gate


def verdict(results: list[tuple[str, str, bool]]) -> DatasetVerdict:
    v = DatasetVerdict(dataset="orders", asset="sales.orders")
    v.results = [
        {"name": n, "severity": s, "success": ok, "actual": 0, "expected": 0, "operator": "mustBe"}
        for n, s, ok in results
    ]
    return v


@pytest.mark.parametrize(
    ("results", "on_failure", "status", "failed_rules"),
    [
        ([("a", "error", True), ("b", "warning", True)], "block_publish", "passed", []),
        ([("a", "error", True), ("b", "warning", False)], "block_publish", "degraded", ["b"]),
        ([("a", "error", False), ("b", "warning", False)], "block_publish", "blocked", ["b"]),
        ([("a", "error", False), ("b", "warning", False)], "quarantine", "blocked", ["b"]),
        ([("a", "error", False), ("b", "warning", False)], "warn", "degraded", ["a", "b"]),
        ([("a", "error", False)], "warn", "degraded", ["a"]),
        ([("i", "info", False)], "block_publish", "passed", []),
    ],
)
def test_status_by_severity(
    results: list[tuple[str, str, bool]], on_failure: str, status: str, failed_rules: list[str]
) -> None:
    v = verdict(results)
    assert v.status(on_failure) == status
    assert v.failed_rules(on_failure) == failed_rules
    summary = v.summary(on_failure)
    assert summary["status"] == status and summary["failed_rules"] == failed_rules


def test_evaluate_dataset_runs_every_rule(wh: DuckDBWarehouse) -> None:
    ds = {
        "name": "orders",
        "asset": "sales.orders",
        "quality": [
            {"name": "ids", "metric": "nullValues", "column": "id", "mustBe": 0, "severity": "error"},
            {"name": "rows", "metric": "rowCount", "mustBeGreaterThan": 0, "severity": "warning"},
            {
                "name": "statuses",
                "metric": "invalidValues",
                "column": "status",
                "validValues": ["open"],
                "mustBe": 0,
                "severity": "info",
            },
        ],
    }
    v = evaluate_dataset(wh, T, ds)
    assert [r["name"] for r in v.results] == ["ids", "rows", "statuses"]
    assert v.failed("error") == ["ids"] and v.failed("info") == ["statuses"] and v.failed("warning") == []
