"""``upstreams[].require: passed`` (``contract_runtime.gate``): which triggering events a run
refuses. The live behaviour (a skipped run under the scheduler) is in test_live_gating.py."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from contract_runtime.gate import describe, parse_duration, unmet_requirements
from runtime_support import run_identity

MANIFEST = {"assets": [{"name": "sales.orders", "extra": {"freshness": {"max_age": "PT26H", "degrade_after": "PT48H"}}}]}
RUN_AFTER = datetime(2026, 4, 15, 12, 0, tzinfo=UTC)


def dag(require: str | None = "passed", trigger: bool = True) -> dict:
    upstream = {"asset": "sales.orders", "trigger": trigger, **({"require": require} if require else {})}
    return {"dag_id": "sales.report", "runtime": {"upstreams": [upstream, {"asset": "sales.refunds", "trigger": True}]}}


def event(status: str | None, age: timedelta, asset: str = "sales.orders", run_id: str = "manual__1") -> dict:
    extra = {"failed_rules": ["rowCount"]} if status == "degraded" else {}
    if status is not None:
        extra["quality_status"] = status
    return {
        "asset": asset,
        "extra": extra,
        "source_dag_id": "sales.orders",
        "source_run_id": run_id,
        "timestamp": (RUN_AFTER - age).isoformat(),
    }


def run(*events: dict):
    return dataclasses.replace(run_identity(run_after=RUN_AFTER), triggering_events=tuple(events))


def test_durations_as_the_contract_format_spells_them() -> None:
    assert parse_duration("PT48H") == timedelta(hours=48)
    assert parse_duration("P1W2DT3H4M5.5S") == timedelta(weeks=1, days=2, hours=3, minutes=4, seconds=5.5)
    for bad in ("P1M", "PT", "P", "48H", ""):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_a_passed_fresh_event_is_accepted() -> None:
    assert unmet_requirements(MANIFEST, dag(), run(event("passed", timedelta(hours=1)))) == []


def test_a_degraded_event_is_refused_with_its_rules() -> None:
    (unmet,) = unmet_requirements(MANIFEST, dag(), run(event("degraded", timedelta(hours=1))))
    assert (unmet["asset"], unmet["reason"], unmet["failed_rules"], unmet["age_seconds"]) == (
        "sales.orders",
        "degraded",
        ["rowCount"],
        3600.0,
    )
    assert describe("sales.report", [unmet]) == (
        "sales.report: skipped, require: passed not met: sales.orders from sales.orders run manual__1 is "
        "degraded (failed rules: rowCount)"
    )


def test_an_event_older_than_degrade_after_is_stale() -> None:
    (unmet,) = unmet_requirements(MANIFEST, dag(), run(event("passed", timedelta(hours=49))))
    assert (unmet["reason"], unmet["degrade_after"]) == ("stale", "172800s")
    assert unmet_requirements(MANIFEST, dag(), run(event("passed", timedelta(hours=47)))) == []


def test_the_latest_event_of_the_upstream_counts() -> None:
    old_bad = event("degraded", timedelta(hours=2), run_id="manual__old")
    new_good = event("passed", timedelta(hours=1), run_id="manual__new")
    assert unmet_requirements(MANIFEST, dag(), run(old_bad, new_good)) == []
    (unmet,) = unmet_requirements(MANIFEST, dag(), run(new_good, event("degraded", timedelta(minutes=5))))
    assert unmet["reason"] == "degraded"


def test_only_required_triggering_upstreams_with_an_event_are_checked() -> None:
    degraded = event("degraded", timedelta(hours=1))
    assert unmet_requirements(MANIFEST, dag(require=None), run(degraded)) == []
    assert unmet_requirements(MANIFEST, dag(trigger=False), run(degraded)) == []
    # the other branch of an any triggered the run: nothing of sales.orders to check
    assert unmet_requirements(MANIFEST, dag(), run(event("degraded", timedelta(hours=1), asset="sales.refunds"))) == []
    # an external producer writes no quality_status: not degraded
    assert unmet_requirements(MANIFEST, dag(), run(event(None, timedelta(hours=1)))) == []
