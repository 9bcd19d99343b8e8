"""Quality rules (DESIGN §5.3): measure each rule on a table and compare with its operator.

A rule is one ``datasets[].quality[]`` item of the manifest. Measures:

===================  ==========================================================================
``nullValues``       rows where the column is NULL
``missingValues``    rows where the column is one of ``missingValues`` (default ``[null, ""]``);
                     strings compare with the column cast to text, numbers and booleans with the
                     column as is
``invalidValues``    non-NULL rows whose value is not in ``validValues`` (same comparison rule)
``duplicateValues``  non-NULL values minus distinct non-NULL values (``count(c) -
                     count(distinct c)``: the rows that repeat an earlier value; NULLs are left
                     to ``nullValues``). With ``arguments: {properties: [a, b]}`` (the compiler's
                     implicit rule of a composite primary key) the same over the tuple, among
                     rows without a NULL member
``rowCount``         rows
``freshness``        data time: ``now - max(column)`` in seconds (``unit: seconds``), for the rules
                     the compiler derives from ``freshness.column`` (``freshness_max_age``,
                     severity ``warning``; ``freshness_degrade_after``, severity ``error``); an
                     empty column measures None and fails
``type: sql``        the first column of the first row of ``query`` with ``{dataset}`` replaced
                     by the quoted table identifier (NULL -> ``actual`` None, the rule fails)

A rule whose query the database refuses fails with the database's message in ``error``
(:func:`evaluate_rule`); the audit goes on with the next rule.
===================  ==========================================================================

``unit: percent`` turns a row count into ``100 * count / rows`` (0 for an empty table) before
the comparison (not for ``rowCount`` or ``type: sql``, whose value is used as is).

Operators: ``mustBe`` (=), ``mustNotBe`` (!=), ``mustBeGreaterThan`` (>),
``mustBeGreaterOrEqualTo`` (>=), ``mustBeLessThan`` (<), ``mustBeLessOrEqualTo`` (<=),
``mustBeBetween`` [lo, hi] (lo <= v <= hi, inclusive), ``mustNotBeBetween`` [lo, hi]
(v < lo or v > hi).

Severities: ``error`` blocks (what happens then is the contract's ``on_failure``), ``warning``
degrades (published, marked), ``info`` records only.
"""

from __future__ import annotations

import datetime
import decimal
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract_runtime.sqlutil import TableRef, quote_ident
from contract_runtime.warehouse import Warehouse

__all__ = [
    "OPERATORS",
    "DatasetVerdict",
    "QualityRuleError",
    "compare",
    "data_time_age_seconds",
    "database_message",
    "evaluate_dataset",
    "evaluate_rule",
    "log_result",
    "operator_of",
]

log = logging.getLogger(__name__)

#: The ODCS comparison operators, in the order they are looked for.
OPERATORS: tuple[str, ...] = (
    "mustBe",
    "mustNotBe",
    "mustBeGreaterThan",
    "mustBeGreaterOrEqualTo",
    "mustBeLessThan",
    "mustBeLessOrEqualTo",
    "mustBeBetween",
    "mustNotBeBetween",
)

DEFAULT_MISSING_VALUES: tuple[Any, ...] = (None, "")


class QualityRuleError(ValueError):
    """A rule is malformed (no operator, unknown metric, missing column or query)."""


def operator_of(rule: Mapping[str, Any]) -> tuple[str, Any]:
    """The rule's one operator and its expected value.

    :returns: ``(operator, expected)``, e.g. ``("mustBeBetween", [1, 50])``.
    :raises QualityRuleError: When the rule has no operator or more than one.
    """
    found = [op for op in OPERATORS if op in rule]
    if len(found) != 1:
        raise QualityRuleError(f"rule {rule.get('name')!r} needs exactly one mustBe... operator, has {found}")
    return found[0], rule[found[0]]


def _number(value: Any) -> float | int | None:
    if value is None or isinstance(value, bool):
        return None if value is None else int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, (float, decimal.Decimal)):
        f = float(value)
        if math.isnan(f):
            return None
        return int(f) if f.is_integer() and abs(f) < 2**53 else f
    try:
        return _number(decimal.Decimal(str(value)))
    except (decimal.InvalidOperation, ValueError):
        return None


def compare(operator: str, expected: Any, actual: float | None) -> bool:
    """Apply an ODCS operator.

    :param operator: One of :data:`OPERATORS`.
    :param expected: A number, or ``[low, high]`` for the two range operators.
    :param actual: The measured value; None never passes.
    :raises QualityRuleError: For an unknown operator or a malformed range.
    """
    if actual is None:
        return False
    if operator in ("mustBeBetween", "mustNotBeBetween"):
        if not isinstance(expected, Sequence) or isinstance(expected, str) or len(expected) != 2:
            raise QualityRuleError(f"{operator} needs [low, high], got {expected!r}")
        lo, hi = float(expected[0]), float(expected[1])
        inside = lo <= actual <= hi
        return inside if operator == "mustBeBetween" else not inside
    e = float(expected)
    if operator == "mustBe":
        return actual == e
    if operator == "mustNotBe":
        return actual != e
    if operator == "mustBeGreaterThan":
        return actual > e
    if operator == "mustBeGreaterOrEqualTo":
        return actual >= e
    if operator == "mustBeLessThan":
        return actual < e
    if operator == "mustBeLessOrEqualTo":
        return actual <= e
    raise QualityRuleError(f"unknown operator {operator!r}")


def _value_match(column_sql: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
    """A predicate true when the column equals one of ``values`` (NULL handled with IS NULL)."""
    parts: list[str] = []
    params: list[Any] = []
    for v in values:
        if v is None:
            parts.append(f"{column_sql} is null")
        elif isinstance(v, str):
            parts.append(f"cast({column_sql} as varchar) = ?")
            params.append(v)
        else:
            parts.append(f"{column_sql} = ?")
            params.append(v)
    return ("(" + " or ".join(parts) + ")" if parts else "(1 = 0)"), params


def _measure(wh: Warehouse, table: TableRef, rule: Mapping[str, Any]) -> tuple[Any, int | None]:
    """Return ``(raw value, row count for percent or None)``."""
    if rule.get("type") == "sql":
        query = rule.get("query")
        if not query:
            raise QualityRuleError(f"sql rule {rule.get('name')!r} has no query")
        # The contract author's own SQL; only the table reference is substituted, quoted.
        return wh.scalar(str(query).replace("{dataset}", table.sql)), None
    metric = rule.get("metric")
    if metric == "rowCount":
        return wh.row_count(table), None
    key = (rule.get("arguments") or {}).get("properties") if isinstance(rule.get("arguments"), Mapping) else None
    if metric == "duplicateValues" and key:
        return _tuple_duplicates(wh, table, [str(p) for p in key])
    column = rule.get("column")
    if not column:
        raise QualityRuleError(f"rule {rule.get('name')!r} ({metric}) needs a column")
    col = quote_ident(str(column))
    t = table.sql
    if metric == "freshness":
        return data_time_age_seconds(wh.scalar(f"select max({col}) from {t}")), None
    if metric == "nullValues":
        sql, params = f"select count(*) - count({col}), count(*) from {t}", None
    elif metric == "missingValues":
        values = rule.get("missingValues")
        pred, params_list = _value_match(col, list(DEFAULT_MISSING_VALUES if values is None else values))
        sql, params = f"select sum(case when {pred} then 1 else 0 end), count(*) from {t}", params_list
    elif metric == "invalidValues":
        valid = rule.get("validValues")
        if not valid:
            raise QualityRuleError(f"rule {rule.get('name')!r} (invalidValues) needs validValues")
        pred, params_list = _value_match(col, list(valid))
        sql = f"select sum(case when {col} is not null and not {pred} then 1 else 0 end), count(*) from {t}"
        params = params_list
    elif metric == "duplicateValues":
        sql, params = f"select count({col}) - count(distinct {col}), count(*) from {t}", None
    else:
        raise QualityRuleError(f"rule {rule.get('name')!r} has unknown metric {metric!r}")
    rows = wh.fetch(sql, params)
    value, total = rows[0] if rows else (0, 0)
    return (value or 0), int(total or 0)


def _tuple_duplicates(wh: Warehouse, table: TableRef, columns: Sequence[str]) -> tuple[Any, int]:
    """Rows whose key tuple repeats an earlier row's, among rows without a NULL member."""
    cols = ", ".join(quote_ident(c) for c in columns)
    complete = " and ".join(f"{quote_ident(c)} is not null" for c in columns)
    t = table.sql
    sql = (
        f"select (select count(*) from {t} where {complete})"
        f" - (select count(*) from (select distinct {cols} from {t} where {complete}) d),"
        f" (select count(*) from {t})"
    )
    rows = wh.fetch(sql)
    value, total = rows[0] if rows else (0, 0)
    return (value or 0), int(total or 0)


def evaluate_rule(wh: Warehouse, table: TableRef, rule: Mapping[str, Any]) -> dict[str, Any]:
    """Measure one rule on ``table`` and compare.

    :returns: ``{"name", "metric" (None for sql), "column" (or None), "severity", "operator",
        "expected", "actual" (number or None), "success": bool, "type": "library"|"sql",
        "unit"}``. ``actual`` is a percentage (0-100) when ``unit`` is ``percent``.
        A rule the database cannot evaluate (bad SQL in a ``type: sql`` rule, a missing
        column, a type error) fails: ``actual`` None, ``success`` False, and ``error`` holds the
        database's message (:func:`database_message`); its severity decides what follows.
    :raises QualityRuleError: When the rule is malformed.
    :raises Exception: The driver's exception when the warehouse no longer answers at all
        (connection lost): that is the task failing, and a retry may help.
    """
    operator, expected = operator_of(rule)
    kind = "sql" if rule.get("type") == "sql" else "library"
    unit = rule.get("unit", "rows")
    error: str | None = None
    try:
        raw, total = _measure(wh, table, rule)
    except QualityRuleError:
        raise
    except Exception as exc:  # noqa: BLE001 - the driver's own error types differ per warehouse
        _raise_unless_warehouse_answers(wh, exc)
        error = database_message(exc)
        raw, total = None, None
    actual = _number(raw)
    if unit == "percent" and total is not None and actual is not None:
        actual = _number(100.0 * actual / total) if total else 0
    result = {
        # Name and severity are decided by the compiler (the manifest schema requires both).
        "name": str(rule["name"]),
        "metric": None if kind == "sql" else rule.get("metric"),
        "column": rule.get("column"),
        "severity": rule["severity"],
        "operator": operator,
        "expected": expected,
        "actual": actual,
        "success": error is None and compare(operator, expected, actual),
        "type": kind,
        "unit": unit,
    }
    if error is not None:
        result["error"] = error
    return result


def database_message(error: BaseException) -> str:
    """``Type: message`` of a driver error on one line, at most 500 characters."""
    text = " ".join(str(error).split())
    line = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return line if len(line) <= 500 else line[:499] + "\u2026"


def _raise_unless_warehouse_answers(wh: Warehouse, error: BaseException) -> None:
    """Re-raise ``error`` when the warehouse itself is gone (a retry may help), not the query.

    A query the database refuses (syntax, unknown column, type error) leaves the connection
    usable, since every statement outside a transaction is rolled back on failure; a lost
    connection or server does not answer ``select 1`` either, and that is the task's failure.
    """
    try:
        wh.scalar("select 1")
    except Exception:  # noqa: BLE001 - any failure here means the warehouse is unusable
        raise error from None


@dataclass
class DatasetVerdict:
    """The audit of one dataset.

    :ivar dataset: Dataset name.
    :ivar asset: Asset name (``domain.dataset``).
    :ivar results: One dict per rule (see :func:`evaluate_rule`), in contract order.
    """

    dataset: str
    asset: str
    results: list[dict[str, Any]] = field(default_factory=list)

    def failed(self, severity: str) -> list[str]:
        """Names of the failed rules of one severity, in contract order."""
        return [r["name"] for r in self.results if not r["success"] and r["severity"] == severity]

    @property
    def blocking(self) -> bool:
        """True when an ``error`` rule failed."""
        return bool(self.failed("error"))

    def status(self, on_failure: str) -> str:
        """``passed`` | ``degraded`` (a warning failed, or an error under ``warn``) | ``blocked``."""
        if self.blocking and on_failure != "warn":
            return "blocked"
        if self.blocking or self.failed("warning"):
            return "degraded"
        return "passed"

    def failed_rules(self, on_failure: str) -> list[str]:
        """The Asset event's ``failed_rules``: failed warnings, plus failed errors under ``warn``."""
        names = self.failed("warning")
        if on_failure == "warn":
            names = self.failed("error") + names
        return names

    def summary(self, on_failure: str) -> dict[str, Any]:
        """A small JSON-able summary for XCom: status, failed rule names, compact results."""
        return {
            "dataset": self.dataset,
            "asset": self.asset,
            "status": self.status(on_failure),
            "failed_rules": self.failed_rules(on_failure),
            "failed_errors": self.failed("error"),
            "failed_warnings": self.failed("warning"),
            "failed_info": self.failed("info"),
            "results": [
                {k: r[k] for k in ("name", "severity", "success", "actual", "expected", "operator", "error") if k in r}
                for r in self.results
            ],
        }


def evaluate_dataset(wh: Warehouse, table: TableRef, dataset: Mapping[str, Any]) -> DatasetVerdict:
    """Evaluate every rule of one manifest dataset on ``table`` (the staging table).

    :param dataset: A ``runtime.datasets[]`` entry (``name``, ``asset``, ``quality``).
    :returns: The verdict with one result per rule.
    """
    verdict = DatasetVerdict(dataset=str(dataset["name"]), asset=str(dataset.get("asset", "")))
    for rule in dataset.get("quality", []) or []:
        result = evaluate_rule(wh, table, rule)
        log_result(result)
        verdict.results.append(result)
    return verdict


def log_result(result: Mapping[str, Any]) -> None:
    """One task-log line for a rule's result (``quality PASS|FAIL <severity> <name> actual=…``),
    and a warning with the database's message when it could not be evaluated."""
    log.info(
        "quality %s %-8s %-40s actual=%s %s %s",
        "PASS" if result["success"] else "FAIL",
        result["severity"],
        result["name"],
        result["actual"],
        result["operator"],
        result["expected"],
    )
    if "error" in result:
        log.warning("quality rule %s could not be evaluated: %s", result["name"], result["error"])


def data_time_age_seconds(value: Any, now: datetime.datetime | None = None) -> float | None:
    """The ``freshness`` metric (data time): ``now - value`` in seconds for ``max(column)`` of a ``timestamp`` or ``date`` property.

    A naive timestamp is taken as UTC (Airflow's and the warehouse defaults' convention); a date
    stands for its midnight UTC. None (an empty table or only NULLs) gives None, which fails the
    rule: a dataset with no data time has no freshness to show.

    :raises TypeError: For a value that is not a date or timestamp.
    """
    if value is None:
        return None
    now = now or datetime.datetime.now(tz=datetime.UTC)
    if isinstance(value, datetime.datetime):
        moment = _utc(value)
    elif isinstance(value, datetime.date):
        moment = datetime.datetime(value.year, value.month, value.day, tzinfo=datetime.UTC)
    elif isinstance(value, str):
        moment = _utc(datetime.datetime.fromisoformat(value))
    else:
        raise TypeError(f"max(column) is {type(value).__name__}, not a date or timestamp")
    return round((now - moment).total_seconds(), 3)


def _utc(moment: datetime.datetime) -> datetime.datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)
