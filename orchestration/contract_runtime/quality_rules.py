"""The quality rules a task's audit runs, derived from what the manifest stores once (ADR 0017f).

Since ``manifestVersion`` 2 a ``dags[].runtime.datasets[]`` entry names its asset, and the asset
(``assets[]``) holds the dataset's URI, schema and authored quality rules. The audit runs those
rules, then the implicit rules of the key constraints, then the data-time rules of
``freshness.column``; this module derives the last two exactly as the compiler does
(``compiler/plan/implicitQualityRules.ts``, ``runtimeQuality`` and ``dataTimeRules`` in
``compiler/plan/planDags.ts``); ``test/python/test_quality_rules.py`` holds the two equal on every
golden manifest. Imports only the standard library.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["data_time_rules", "duration_seconds", "implicit_quality_rules", "resolve_datasets", "runtime_quality"]

# ISO-8601 durations of weeks, days, hours, minutes and seconds, as the compiler's parseDurationSeconds.
_DURATION = re.compile(r"^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def duration_seconds(text: str) -> int | float:
    """The seconds of an ISO-8601 duration (``PT2H``, ``P1DT30M``, ``P2W``), as the compiler reads it.

    :param text: A duration the compiler accepted (``compiler/support/duration.ts``).
    :returns: Whole seconds as an int, else a float rounded to milliseconds (half up, as JavaScript's ``Math.round``).
    :raises ValueError: When ``text`` is not of that form (a manifest the compiler did not write).
    """
    m = _DURATION.match(text)
    if m is None or text == "P" or text.endswith("T"):
        raise ValueError(f"{text!r} is not an ISO-8601 duration of weeks, days, hours, minutes and seconds")
    w, d, h, mi, s = (m.group(i) for i in range(1, 6))
    seconds = int(w or 0) * 604800 + int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi or 0) * 60 + float(s or 0)
    rounded = math.floor(seconds * 1000 + 0.5) / 1000
    return int(rounded) if rounded == int(rounded) else rounded


def implicit_quality_rules(properties: Sequence[Mapping[str, Any]], authored: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The implicit ``error`` rules of a dataset's key constraints (ODCS v3 schema properties).

    ``required`` and every ``primaryKey`` member: ``nullValues`` = 0 (``<column>_required``);
    ``unique`` and a one-property ``primaryKey``: ``duplicateValues`` = 0 on the column
    (``<column>_unique``); a composite key: ``duplicateValues`` = 0 on the tuple
    (``primary_key_unique``, ``arguments.properties`` in declaration order). A rule is left out
    when an authored ``error`` rule of the same metric and column with ``mustBe: 0`` enforces it.

    :param properties: The asset's ``schema.properties``.
    :param authored: The asset's ``quality`` (severity already decided).
    :returns: The rules in property order, ``required`` rules first, each with ``implied_by``;
        names are not yet made unique against ``authored`` (:func:`runtime_quality` does).
    """

    def covered(metric: str, column: str) -> bool:
        return any(
            q.get("metric") == metric and q.get("column") == column and q.get("severity", "error") == "error" and q.get("mustBe") == 0
            for q in authored
        )

    def column_rule(column: str, suffix: str, metric: str, by: str, what: str) -> dict[str, Any]:
        return {
            "name": f"{column}_{suffix}",
            "description": f"implied by {by}: true on {column}: {what}",
            "metric": metric,
            "column": column,
            "mustBe": 0,
            "severity": "error",
            "implied_by": by,
        }

    keys = [str(p["name"]) for p in properties if p.get("primaryKey") is True]
    rules: list[dict[str, Any]] = []
    for p in properties:
        name = str(p["name"])
        if (p.get("required") is True or p.get("primaryKey") is True) and not covered("nullValues", name):
            by = "required" if p.get("required") is True else "primaryKey"
            rules.append(column_rule(name, "required", "nullValues", by, "no NULL values"))
    for p in properties:
        name = str(p["name"])
        sole_key = p.get("primaryKey") is True and len(keys) == 1
        if (p.get("unique") is True or sole_key) and not covered("duplicateValues", name):
            by = "unique" if p.get("unique") is True else "primaryKey"
            rules.append(column_rule(name, "unique", "duplicateValues", by, "no repeated non-NULL value"))
    if len(keys) > 1:
        rules.append({
            "name": "primary_key_unique",
            "description": f"implied by primaryKey: true on {', '.join(keys)}: no repeated key among rows without a NULL member",
            "metric": "duplicateValues",
            "arguments": {"properties": keys},
            "mustBe": 0,
            "severity": "error",
            "implied_by": "primaryKey",
        })
    return rules


def data_time_rules(freshness: Mapping[str, Any] | None, properties: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The data-time rules of ``freshness.column`` (DESIGN §5.5), when the dataset has that property.

    ``now - max(column)`` in seconds at most ``max_age`` (``freshness_max_age``, ``warning``) and at
    most ``degrade_after`` when set (``freshness_degrade_after``, ``error``).

    :param freshness: The DAG's ``runtime.freshness`` (None: no rules).
    :param properties: The dataset's ``schema.properties``.
    """
    column = (freshness or {}).get("column")
    if not freshness or not column or not any(p.get("name") == column for p in properties):
        return []

    def rule(name: str, duration: str, severity: str) -> dict[str, Any]:
        return {
            "name": name,
            "metric": "freshness",
            "column": column,
            "unit": "seconds",
            "mustBeLessOrEqualTo": duration_seconds(duration),
            "severity": severity,
            "description": f"data time: now - max({column}) at most {duration}",
        }

    out = [rule("freshness_max_age", str(freshness["max_age"]), "warning")]
    if freshness.get("degrade_after"):
        out.append(rule("freshness_degrade_after", str(freshness["degrade_after"]), "error"))
    return out


def runtime_quality(asset: Mapping[str, Any], freshness: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Every rule the audit runs for one produced dataset, in order, as manifestVersion 1 stored them.

    The asset's authored rules, then :func:`implicit_quality_rules` (one whose name an earlier
    rule has gets the suffix ``_<position>``, 1-based, as the compiler's ``qualityNames``), then
    :func:`data_time_rules`.

    :param asset: The dataset's ``assets[]`` entry.
    :param freshness: The producing DAG's ``runtime.freshness``.
    """
    authored = [dict(q) for q in asset.get("quality") or []]
    schema = asset.get("schema")
    if not schema:
        return authored
    properties = schema["properties"]
    implicit = implicit_quality_rules(properties, authored)
    names = [str(q["name"]) for q in authored] + [str(q["name"]) for q in implicit]
    for j, q in enumerate(implicit):
        i = len(authored) + j
        if names.index(names[i]) != i:
            q["name"] = f"{names[i]}_{i + 1}"
    return [*authored, *implicit, *data_time_rules(freshness, properties)]


def resolve_datasets(assets: Mapping[str, Mapping[str, Any]], dag: Mapping[str, Any]) -> None:
    """Joins each of ``dag``'s ``runtime.datasets[]`` to its asset, in place: adds ``uri``,
    ``schema`` and ``quality`` (:func:`runtime_quality`), the keys version 1 stored there.

    The stages read those keys; :func:`contract_runtime.manifest.load_manifest` calls this for the
    DAGs a task reads. An entry that already has ``quality`` is left as it is (joined before).

    :param assets: The manifest's ``assets[]`` by name.
    :param dag: One of its ``dags[]`` entries.
    :raises KeyError: When a dataset names an asset the manifest does not hold with a schema (the
        caller reports it as a damaged manifest).
    """
    runtime = dag["runtime"]
    for d in runtime["datasets"]:
        if "quality" in d:
            continue
        asset = assets.get(d["asset"])
        if asset is None or not asset.get("schema"):
            raise KeyError(d["asset"])
        d["uri"] = asset["uri"]
        d["schema"] = asset["schema"]
        d["quality"] = runtime_quality(asset, runtime.get("freshness"))
