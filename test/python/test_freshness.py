"""Freshness that is enforced: the monitor's states and alerts, its lineage, the data-time audit.

Three layers, each with real values:

* the state machine (``classify``, ``should_alert``) over every state and transition;
* ``run_monitor`` — the monitor task's body — against a real DuckDB warehouse (states persist in
  ``_ca_state.freshness`` between evaluations), a notifier that records its calls, and the
  openlineage-python file transport; events validate against the official OpenLineage schemas;
* the audit's ``freshness`` metric on a real table (``now - max(column)``).

The monitor DAG itself, on a live Airflow stack with Asset events read through the Task SDK and
the ``freshness`` CLI against the same stack, is ``test_freshness_live.py``.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import lineage_testkit as kit
import pytest

UTC = datetime.UTC
T0 = datetime.datetime(2026, 11, 2, 8, 0, 0, tzinfo=UTC)

#: Policies in seconds, as a compiled manifest carries them.
ORDERS = {"name": "sales.orders", "uri": "x-datalake://curated/sales/orders", "max_age": "PT10S",
          "max_age_seconds": 10, "degrade_after": "PT20S", "degrade_after_seconds": 20,
          "producer": "sales.orders", "published_by": None}
NEVER = {"name": "sales.never", "uri": "x-datalake://curated/sales/never", "max_age": "PT10S",
         "max_age_seconds": 10, "degrade_after": None, "degrade_after_seconds": None,
         "producer": "sales.never", "published_by": None}


RECORDED: list[dict[str, Any]] = []


def _recording_notifier_class() -> type:
    from airflow.sdk import BaseNotifier

    class RecordingNotifier(BaseNotifier):
        template_fields = ("subject",)

        def __init__(self, subject: str = "{{ freshness.asset }} is {{ freshness.state }}", fail: bool = False) -> None:
            super().__init__()
            self.subject = subject
            self.fail = fail

        def notify(self, context: Any) -> None:
            if self.fail:
                raise ConnectionError("smtp server refused")
            RECORDED.append({"subject": self.subject, **context["freshness"]})

    return RecordingNotifier


# ---------------------------------------------------------------------- states


@pytest.mark.parametrize(
    ("age", "previous", "expected"),
    [
        (None, None, "unknown"),
        (None, "fresh", "unknown"),
        (0.0, None, "fresh"),
        (10.0, "fresh", "fresh"),  # exactly max_age is still fresh
        (10.001, "fresh", "stale"),
        (20.0, "stale", "stale"),  # exactly degrade_after is still only stale
        (20.5, "stale", "degraded"),
        (25.0, "fresh", "degraded"),  # a monitor that missed the stale window goes straight there
        (1.0, "stale", "recovered"),
        (1.0, "degraded", "recovered"),
        (1.0, "recovered", "fresh"),
        (1.0, "unknown", "fresh"),
    ],
)
def test_classify(age: float | None, previous: str | None, expected: str) -> None:
    from contract_runtime.freshness import classify

    assert classify(age, 10, 20, previous) == expected


def test_without_degrade_after_there_is_no_degraded_state() -> None:
    from contract_runtime.freshness import classify

    assert classify(10_000.0, 10, None, "stale") == "stale"


@pytest.mark.parametrize(
    ("previous", "state", "alert"),
    [
        (None, "unknown", False),
        (None, "fresh", False),
        ("unknown", "fresh", False),
        ("fresh", "stale", True),
        ("stale", "stale", False),
        ("stale", "degraded", True),
        ("degraded", "degraded", False),
        ("degraded", "recovered", True),
        ("stale", "recovered", True),
        ("recovered", "fresh", False),
        (None, "stale", True),
    ],
)
def test_alerts_fire_only_on_transitions_into_stale_degraded_recovered(previous: str | None, state: str, alert: bool) -> None:
    from contract_runtime.freshness import should_alert

    assert should_alert(previous, state) is alert


# ---------------------------------------------------------------------- the monitor's body


@pytest.fixture
def monitor_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    import contract_runtime.freshness as freshness
    from contract_runtime.warehouse import DuckDBWarehouse

    RECORDED.clear()
    monkeypatch.setattr(freshness, "build_notifier", lambda spec: _recording_notifier_class()(**spec["kwargs"]))
    kit.use_file_transport(monkeypatch, tmp_path / "events.jsonl")
    wh_path = tmp_path / "warehouse.duckdb"
    manifest = {"lineage": {"namespace": "acme"}, "assets": [], "dags": []}
    monitor = {
        "dag_id": "contract_assets_freshness_monitor",
        "schedule": {"cron": {"expression": "*/15 * * * *", "timezone": "UTC"}},
        "notifier": {"name": "oncall", "class": "tests.RecordingNotifier", "kwargs": {}},
        "warehouse_conn_id": None,
        "assets": [NEVER, ORDERS],
    }
    return {"manifest": manifest, "monitor": monitor, "opener": lambda conn_id: DuckDBWarehouse(wh_path),
            "events": tmp_path / "events.jsonl", "wh_path": wh_path}


def _evaluate(env: dict[str, Any], last_event: datetime.datetime | None, now: datetime.datetime) -> dict[str, dict[str, Any]]:
    from contract_runtime.freshness import run_monitor

    run = kit.make_run("contract_assets_freshness_monitor", "evaluate")
    context = {"ti": type("TI", (), {"dag_id": run.dag_id, "run_id": run.run_id, "task_id": "evaluate",
                                     "try_number": 1, "max_tries": 1, "map_index": -1})(),
               "dag_run": type("DR", (), {"run_after": now, "logical_date": now, "clear_number": 0, "run_id": run.run_id})(),
               "task": type("T", (), {"retries": 0})()}
    latest = {"sales.orders": last_event, "sales.never": None}
    entries = run_monitor(env["manifest"], env["monitor"], latest.__getitem__, context, opener=env["opener"], now=now)
    return {e["asset"]: e for e in entries}


def test_monitor_walks_every_state_with_one_alert_per_transition(monitor_env: dict[str, Any]) -> None:
    published = T0
    steps = [
        # (last event, now, expected orders state, alerts expected so far)
        (None, T0 - datetime.timedelta(seconds=5), "unknown", 0),
        (published, T0 + datetime.timedelta(seconds=3), "fresh", 0),
        (published, T0 + datetime.timedelta(seconds=12), "stale", 1),
        (published, T0 + datetime.timedelta(seconds=15), "stale", 1),  # a repeat: no alert
        (published, T0 + datetime.timedelta(seconds=21), "degraded", 2),
        (published, T0 + datetime.timedelta(seconds=40), "degraded", 2),  # a repeat: no alert
        (T0 + datetime.timedelta(seconds=41), T0 + datetime.timedelta(seconds=42), "recovered", 3),
        (T0 + datetime.timedelta(seconds=41), T0 + datetime.timedelta(seconds=43), "fresh", 3),
        (T0 + datetime.timedelta(seconds=41), T0 + datetime.timedelta(seconds=55), "stale", 4),
        (T0 + datetime.timedelta(seconds=56), T0 + datetime.timedelta(seconds=57), "recovered", 5),
    ]
    observed = []
    for last, now, state, alerts in steps:
        result = _evaluate(monitor_env, last, now)
        orders = result["sales.orders"]
        observed.append((orders["previous_state"], orders["state"]))
        assert orders["state"] == state, (now, orders)
        assert len(RECORDED) == alerts, (now, RECORDED)
        assert result["sales.never"]["state"] == "unknown"
        if last is not None:
            assert orders["age_seconds"] == (now - last).total_seconds()
            assert orders["last_event_at"] == last.isoformat()
        assert (orders["max_age"], orders["degrade_after"]) == ("PT10S", "PT20S")
    assert observed == [
        (None, "unknown"), ("unknown", "fresh"), ("fresh", "stale"), ("stale", "stale"),
        ("stale", "degraded"), ("degraded", "degraded"), ("degraded", "recovered"),
        ("recovered", "fresh"), ("fresh", "stale"), ("stale", "recovered"),
    ]
    assert [(r["asset"], r["previous_state"], r["state"]) for r in RECORDED] == [
        ("sales.orders", "fresh", "stale"),
        ("sales.orders", "stale", "degraded"),
        ("sales.orders", "degraded", "recovered"),
        ("sales.orders", "fresh", "stale"),
        ("sales.orders", "stale", "recovered"),
    ]
    # the notifier's templates see the transition
    assert RECORDED[0]["subject"] == "sales.orders is stale"
    # the states persisted in the warehouse's state schema
    from contract_runtime.freshness import get_states

    with monitor_env["opener"](None) as wh:
        assert get_states(wh) == {"sales.never": "unknown", "sales.orders": "recovered"}


def test_a_failed_alert_keeps_the_state_and_is_sent_again(monitor_env: dict[str, Any]) -> None:
    from contract_runtime.freshness import get_states

    _evaluate(monitor_env, T0, T0 + datetime.timedelta(seconds=1))
    monitor_env["monitor"]["notifier"]["kwargs"] = {"fail": True}
    with pytest.raises(RuntimeError, match=r"notifier 'oncall'.*sales\.orders \(stale\).*smtp server refused"):
        _evaluate(monitor_env, T0, T0 + datetime.timedelta(seconds=12))
    with monitor_env["opener"](None) as wh:
        assert get_states(wh)["sales.orders"] == "fresh"
    monitor_env["monitor"]["notifier"]["kwargs"] = {}
    again = _evaluate(monitor_env, T0, T0 + datetime.timedelta(seconds=13))
    assert again["sales.orders"]["previous_state"] == "fresh"
    assert [(r["previous_state"], r["state"]) for r in RECORDED] == [("fresh", "stale")]


@kit.requires_spec
def test_each_evaluation_is_one_valid_openlineage_event_per_asset(monitor_env: dict[str, Any]) -> None:
    _evaluate(monitor_env, T0, T0 + datetime.timedelta(seconds=12))
    events = kit.read_events(monitor_env["events"])
    assert len(events) == 2
    by_asset = {}
    for event in events:
        kit.validate_event(event)
        assert event["eventType"] == "OTHER"
        assert event["job"] == {**event["job"], "namespace": "acme", "name": "contract_assets_freshness_monitor"}
        (dataset,) = event["inputs"]
        (assertion,) = dataset["inputFacets"]["dataQualityAssertions"]["assertions"]
        symlink = dataset["facets"]["symlinks"]["identifiers"][0]["name"]
        by_asset[symlink] = assertion
    orders = by_asset["sales.orders"]
    assert (orders["assertion"], orders["success"], orders["expected"], orders["actual"]) == ("freshness", False, "10", "12.0")
    assert orders["params"]["state"] == "stale" and orders["params"]["max_age"] == "PT10S"
    never = by_asset["sales.never"]
    assert never["success"] is False and never.get("actual") is None and never["params"]["state"] == "unknown"


# ---------------------------------------------------------------------- data time in the audit


def test_audit_measures_data_time(tmp_path: Path) -> None:
    from contract_runtime.quality import evaluate_rule
    from contract_runtime.sqlutil import TableRef
    from contract_runtime.warehouse import DuckDBWarehouse

    with DuckDBWarehouse(tmp_path / "w.duckdb") as wh:
        wh.create_schema("s")
        wh.execute("create table s.t (id integer, updated_at timestamp with time zone)")
        wh.execute("insert into s.t values (1, now() - interval 3 hour), (2, now() - interval 30 minute)")
        table = TableRef("s", "t")
        rule = {"name": "freshness_max_age", "metric": "freshness", "column": "updated_at", "unit": "seconds",
                "mustBeLessOrEqualTo": 3600, "severity": "warning"}
        result = evaluate_rule(wh, table, rule)
        assert result["success"] is True and 1790 < result["actual"] < 1900
        result = evaluate_rule(wh, table, {**rule, "name": "freshness_degrade_after", "mustBeLessOrEqualTo": 600, "severity": "error"})
        assert result["success"] is False and result["severity"] == "error"
        wh.execute("delete from s.t")
        assert evaluate_rule(wh, table, rule)["actual"] is None
        assert evaluate_rule(wh, table, rule)["success"] is False


def test_compiled_data_time_rules_are_in_the_runtime(tmp_path: Path) -> None:
    """The golden case's manifest: freshness.column became two audit rules with the policy."""
    case = Path(__file__).resolve().parents[1] / "cases" / "freshness-monitor-and-deadlines" / "expected" / "generated" / "manifest.json"
    manifest = json.loads(case.read_text(encoding="utf-8"))
    dag = kit.dag_entry(manifest, "sales.orders_clean")
    rules = {r["name"]: r for r in dag["runtime"]["datasets"][0]["quality"] if r.get("metric") == "freshness"}
    assert (rules["freshness_max_age"]["severity"], rules["freshness_max_age"]["mustBeLessOrEqualTo"]) == ("warning", 7200)
    assert (rules["freshness_degrade_after"]["severity"], rules["freshness_degrade_after"]["mustBeLessOrEqualTo"]) == ("error", 21600)
    assert dag["deadline"]["reference"] == "logical_date" and dag["deadline"]["interval_seconds"] == 1800
    assert kit.dag_entry(manifest, "sales.orders_daily")["deadline"]["reference"] == "queued_at"
