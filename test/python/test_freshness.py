"""Freshness that is enforced: the monitor's states and alerts, its lineage, the data-time audit.

Three layers, each with real values:

* the state machine (``classify``, ``should_alert``) over every state and transition;
* ``run_monitor`` — the monitor task's body — against a real DuckDB warehouse (states persist in
  ``_ca_state.freshness`` between evaluations), a notifier that records its calls, and the
  openlineage-python file transport; events validate against the official OpenLineage schemas;
* the audit's ``freshness`` metric on a real table (``now - max(column)``);
* a partitioned asset (issue 35): its newest partition, the age since that partition's end and the
  missing keys, from the shared vector ``test/fixtures/partition-freshness.json`` (the TypeScript
  report is tested with the same one) and through ``run_monitor`` (state, log line, lineage).

* on the session's live Airflow stack (``live_stack``, run last): a project of its own (a producer
  with a DeadlineAlert, a contract never run, an external asset fed through ``POST
  /api/v2/assets/events``), its generated monitor DAG triggered through the REST API, reading the
  Asset events through the Task SDK, alerting through :class:`contract_runtime.notifiers.FileNotifier`
  (which records every call); every state and transition, one alert per transition, none on
  repeats; the producer's missed deadline run by the triggerer; and ``contract-assets freshness``
  against the same stack. Durations are seconds.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import dagcheck
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
    from contract_runtime import freshness
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


def _evaluate(
    env: dict[str, Any],
    last_event: datetime.datetime | None,
    now: datetime.datetime,
    *,
    run_id: str | None = None,
    try_number: int = 1,
    max_tries: int = 1,
    logical_date: datetime.datetime | None = None,
) -> dict[str, dict[str, Any]]:
    from contract_runtime.freshness import run_monitor

    run = kit.make_run("contract_assets_freshness_monitor", "evaluate")
    dag_run_id = run_id or run.run_id
    context = {"ti": type("TI", (), {"dag_id": run.dag_id, "run_id": dag_run_id, "task_id": "evaluate",
                                     "try_number": try_number, "max_tries": max_tries, "map_index": -1})(),
               "dag_run": type("DR", (), {"run_after": logical_date or now, "logical_date": logical_date or now,
                                          "clear_number": 0, "run_id": dag_run_id})(),
               "task": type("T", (), {"retries": max_tries})()}
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


def _by_run(events: list[dict[str, Any]]) -> dict[str, list[str]]:
    runs: dict[str, list[str]] = {}
    for event in events:
        runs.setdefault(event["run"]["runId"], []).append(event["eventType"])
    return runs


@kit.requires_spec
def test_a_monitor_run_is_one_start_and_one_complete_carrying_every_assertion(monitor_env: dict[str, Any]) -> None:
    """Issue 38 item 6: the monitor's run sends START, then one COMPLETE whose inputs are the
    monitored assets with their ``freshness`` assertions (not one OTHER per asset and no START
    or terminal event); every event validates against the OpenLineage spec."""
    _evaluate(monitor_env, T0, T0 + datetime.timedelta(seconds=12), run_id="scheduled__1")
    events = kit.read_events(monitor_env["events"])
    for event in events:
        kit.validate_event(event)
        assert event["job"] == {**event["job"], "namespace": "acme", "name": "contract_assets_freshness_monitor"}
        # our own run, a child of the DAG run (ADR 0010), never the DAG run's runId
        parent = event["run"]["facets"]["parent"]
        assert parent["job"]["name"] == "contract_assets_freshness_monitor"
        assert parent["run"]["runId"] != event["run"]["runId"]
        assert parent["root"]["run"]["runId"] == parent["run"]["runId"]
    assert list(_by_run(events).values()) == [["START", "COMPLETE"]]
    start, complete = events
    assert start["inputs"] == []
    by_asset = {}
    for dataset in complete["inputs"]:
        (assertion,) = dataset["inputFacets"]["dataQualityAssertions"]["assertions"]
        symlink = dataset["facets"]["symlinks"]["identifiers"][0]["name"]
        by_asset[symlink] = assertion
    assert sorted(by_asset) == ["sales.never", "sales.orders"]
    orders = by_asset["sales.orders"]
    assert (orders["assertion"], orders["success"], orders["expected"], orders["actual"]) == ("freshness", False, "10", "12.0")
    assert orders["params"]["state"] == "stale" and orders["params"]["max_age"] == "PT10S"
    never = by_asset["sales.never"]
    assert never["success"] is False and never.get("actual") is None and never["params"]["state"] == "unknown"

    # a second DAG run of the monitor is a run of its own, with its own START and COMPLETE
    _evaluate(monitor_env, T0, T0 + datetime.timedelta(seconds=13), run_id="scheduled__2")
    runs = _by_run(kit.read_events(monitor_env["events"]))
    assert list(runs.values()) == [["START", "COMPLETE"], ["START", "COMPLETE"]]


@kit.requires_spec
def test_a_failing_monitor_run_ends_in_one_fail_and_a_retry_in_one_terminal_event(monitor_env: dict[str, Any]) -> None:
    """A try that fails with a retry left sends no terminal event; the retry sends no second START
    and ends the run; a final failure is one FAIL with the error and the assertions made."""
    monitor_env["monitor"]["notifier"]["kwargs"] = {"fail": True}
    _evaluate(monitor_env, T0, T0 + datetime.timedelta(seconds=1), run_id="retried")
    with pytest.raises(RuntimeError):
        _evaluate(monitor_env, T0, T0 + datetime.timedelta(seconds=12), run_id="failed", try_number=1, max_tries=0)
    with pytest.raises(RuntimeError):
        _evaluate(monitor_env, T0, T0 + datetime.timedelta(seconds=13), run_id="retry", try_number=1, max_tries=1,
                  logical_date=T0)
    monitor_env["monitor"]["notifier"]["kwargs"] = {}
    _evaluate(monitor_env, T0, T0 + datetime.timedelta(seconds=14), run_id="retry", try_number=2, max_tries=1,
              logical_date=T0)
    events = kit.read_events(monitor_env["events"])
    for event in events:
        kit.validate_event(event)
    assert list(_by_run(events).values()) == [["START", "COMPLETE"], ["START", "FAIL"], ["START", "COMPLETE"]]
    fail = next(e for e in events if e["eventType"] == "FAIL")
    assert "notifier 'oncall'" in fail["run"]["facets"]["errorMessage"]["message"]
    assert len(fail["inputs"]) == 2


# ---------------------------------------------------------------------- partitioned assets

VECTOR = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "partition-freshness.json").read_text())

#: A daily partitioned asset with a day's grace: fresh until its newest day ended 26 h ago.
DAILY = {"name": "sales.daily", "uri": "x-datalake://curated/sales/daily", "max_age": "PT26H",
         "max_age_seconds": 26 * 3600, "degrade_after": "P3D", "degrade_after_seconds": 3 * 86400,
         "producer": "sales.daily", "published_by": None, "partition_grain": "day"}


def _instant(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.parametrize("case", VECTOR["cases"], ids=[c["name"] for c in VECTOR["cases"]])
def test_partition_freshness_follows_the_shared_vector(case: dict[str, Any]) -> None:
    from contract_runtime.freshness import partition_freshness

    age, partitions = partition_freshness(case["grain"], case["keys"], _instant(case["now"]))
    assert age == case["age_seconds"]
    expected = dict(case["partitions"])
    got = dict(partitions)
    if expected["newest_end"] is not None:
        assert _instant(got.pop("newest_end")) == _instant(expected.pop("newest_end"))
    assert got == expected


def test_a_partitioned_asset_is_classified_by_its_newest_partition_and_gaps_keep_the_state() -> None:
    from contract_runtime.freshness import evaluate_assets

    now = datetime.datetime(2026, 12, 7, 6, 0, tzinfo=UTC)
    # the newest day, 12-06, ended 6 h ago: fresh, though 12-04 is missing; an old key re-run a
    # minute ago is the latest event and changes neither the newest partition nor its age
    keys = {"sales.daily": ["2026-12-02", "2026-12-03", "2026-12-05", "2026-12-06", "2026-12-02"]}
    latest = {"sales.daily": now - datetime.timedelta(minutes=1), "sales.orders": now - datetime.timedelta(seconds=5)}
    (daily, orders) = evaluate_assets([DAILY, ORDERS], latest.__getitem__, {}, now, keys.__getitem__)
    assert daily == {
        "asset": "sales.daily", "state": "fresh", "previous_state": None, "age_seconds": 21600.0,
        "last_event_at": "2026-12-07T05:59:00+00:00", "max_age": "PT26H", "degrade_after": "P3D",
        "partitions": {"grain": "day", "first": "2026-12-02", "newest": "2026-12-06",
                       "newest_end": "2026-12-07T00:00:00+00:00", "published": 4, "missing": ["2026-12-04"],
                       "missing_count": 1, "ignored_events": 0},
    }
    # an unpartitioned asset's entry is as before, without partitions
    assert orders["age_seconds"] == 5.0 and "partitions" not in orders
    # a day later nothing new: the newest partition ended 30 h ago, stale; 4 days later degraded
    later = evaluate_assets([DAILY], latest.__getitem__, {}, now + datetime.timedelta(days=1), keys.__getitem__)
    assert (later[0]["state"], later[0]["age_seconds"]) == ("stale", 30 * 3600.0)
    assert evaluate_assets([DAILY], latest.__getitem__, {}, now + datetime.timedelta(days=3), keys.__getitem__)[0]["state"] == "degraded"
    # re-publishing the newest key does not make it fresher (the age is the data's, not the event's)
    keys["sales.daily"].append("2026-12-06")
    assert evaluate_assets([DAILY], latest.__getitem__, {}, now + datetime.timedelta(days=1), keys.__getitem__)[0]["state"] == "stale"
    with pytest.raises(ValueError, match=r"'sales.daily' is partitioned by day and no partition keys were read"):
        evaluate_assets([DAILY], latest.__getitem__, {}, now)


def test_keys_between_agree_with_the_compiler() -> None:
    """The Python enumeration of keys is the compiler's ``keysInRange`` over the same span."""
    import shutil
    import subprocess

    from contract_runtime.partitions import bounds, keys_between

    spans = [("hour", "2026-12-31T22", "2027-01-01T02"), ("day", "2024-02-27", "2024-03-02"),
             ("week", "2026-W51", "2027-W02"), ("month", "2025-11", "2026-02"),
             ("quarter", "2025-Q3", "2026-Q2"), ("year", "2023", "2026")]
    node = shutil.which("node") or "node"
    script = (
        "const m = await import(process.argv[1]); const spans = JSON.parse(process.argv[2]);"
        "console.log(JSON.stringify(spans.map(([g, a, b]) => m.keysInRange(g, m.partitionBounds(g, a).start, m.partitionBounds(g, b).end))));"
    )
    module = Path(__file__).resolve().parents[2] / "dist" / "compiler" / "support" / "partitions.js"
    compiler = json.loads(subprocess.run([node, "--input-type=module", "-e", script, module.as_uri(), json.dumps(spans)],
                                         capture_output=True, text=True, check=True).stdout)
    ours = [keys_between(g, a, b) for g, a, b in spans]
    assert ours == compiler
    assert ours[2] == ["2026-W51", "2026-W52", "2026-W53", "2027-W01", "2027-W02"]
    assert ours[1] == ["2024-02-27", "2024-02-28", "2024-02-29", "2024-03-01", "2024-03-02"]
    assert keys_between("day", "2026-12-02", "2026-12-01") == []
    with pytest.raises(ValueError, match=r"must both be week keys"):
        keys_between("week", "2026-W50", "2026-12")
    assert bounds("week", "2026-W53") is not None


def test_the_monitor_reports_a_partitioned_asset_in_its_entries_log_and_lineage(
    monitor_env: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    from contract_runtime.freshness import run_monitor

    monitor_env["monitor"]["assets"] = [DAILY]
    now = datetime.datetime(2026, 12, 8, 7, 0, tzinfo=UTC)
    keys = [f"2026-11-{d:02d}" for d in range(1, 31) if d not in (3, 4)] + ["2026-12-01", "2026-12-03", None]
    run = kit.make_run("contract_assets_freshness_monitor", "evaluate")
    context = {"ti": type("TI", (), {"dag_id": run.dag_id, "run_id": run.run_id, "task_id": "evaluate",
                                     "try_number": 1, "max_tries": 1, "map_index": -1})(),
               "dag_run": type("DR", (), {"run_after": now, "logical_date": now, "clear_number": 0, "run_id": run.run_id})(),
               "task": type("T", (), {"retries": 1})()}
    with caplog.at_level("INFO", logger="contract_runtime.freshness"):
        (entry,) = run_monitor(monitor_env["manifest"], monitor_env["monitor"], {"sales.daily": now}.__getitem__, context,
                               opener=monitor_env["opener"], now=now, partition_keys={"sales.daily": keys}.__getitem__)
    # newest 2026-12-03 ended 2026-12-04T00:00Z, 4 days 7 h ago: past degrade_after (3 days)
    assert (entry["state"], entry["age_seconds"]) == ("degraded", (4 * 86400 + 7 * 3600) * 1.0)
    assert entry["partitions"] == {"grain": "day", "first": "2026-11-01", "newest": "2026-12-03",
                                   "newest_end": "2026-12-04T00:00:00+00:00", "published": 30,
                                   "missing": ["2026-11-03", "2026-11-04", "2026-12-02"], "missing_count": 3,
                                   "ignored_events": 1}
    line = next(r.getMessage() for r in caplog.records if "sales.daily" in r.getMessage())
    assert line.endswith("newest partition 2026-12-03 (day, ended 2026-12-04T00:00:00+00:00), "
                         "3 missing: 2026-11-03, 2026-11-04, 2026-12-02"), line
    # the alert's context carries the partitions too
    assert RECORDED[-1]["partitions"]["missing_count"] == 3
    events = kit.read_events(monitor_env["events"])
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    if (kit.SPEC_DIR / "OpenLineage.json").is_file():
        for event in events:
            kit.validate_event(event)
    (dataset,) = events[-1]["inputs"]
    freshness, missing = dataset["inputFacets"]["dataQualityAssertions"]["assertions"]
    assert (freshness["assertion"], freshness["success"], freshness["actual"]) == ("freshness", False, "370800.0")
    assert (missing["assertion"], missing["name"], missing["success"], missing["expected"], missing["actual"]) == (
        "missingPartitions", "missing_partitions", False, "0", "3")
    for assertion in (freshness, missing):
        params = assertion["params"]
        assert (params["partition_grain"], params["first_partition"], params["newest_partition"]) == ("day", "2026-11-01", "2026-12-03")
        assert params["missing_partitions"] == ["2026-11-03", "2026-11-04", "2026-12-02"]
        assert (params["missing_partitions_count"], params["published_partitions"]) == (3, 30)
        assert params["newest_partition_end"] == "2026-12-04T00:00:00+00:00"


def test_the_operator_reads_every_inlet_events_partition_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``FreshnessMonitorOperator.execute`` on the compiled manifest of the golden case
    ``partition-freshness-monitor``: the latest event of every inlet (newest first, limit 1) and,
    for the hourly partitioned asset only, every event's ``partition_key`` (``AssetEventResult``
    carries it in Airflow 3.2.2)."""
    from airflow.sdk import Asset

    from contract_runtime import freshness, warehouse
    from contract_runtime.warehouse import DuckDBWarehouse

    case = Path(__file__).resolve().parents[1] / "cases" / "partition-freshness-monitor" / "expected" / "generated"
    manifest = json.loads((case / "manifest.json").read_text())
    monitored = {a["name"]: a for a in manifest["freshness_monitor"]["assets"]}
    assert monitored["web.events_hourly"]["partition_grain"] == "hour" and "partition_grain" not in monitored["web.events_daily"]
    monkeypatch.setattr(warehouse, "open_warehouse", lambda conn_id: DuckDBWarehouse(tmp_path / "w.duckdb"))
    monkeypatch.setattr(freshness, "_lineage_run", lambda context: None)
    now = datetime.datetime.now(tz=UTC)
    hour = now.replace(minute=0, second=0, microsecond=0)

    def key(hours_back: int) -> str:
        return (hour - datetime.timedelta(hours=hours_back)).strftime("%Y-%m-%dT%H")

    event = type("AssetEventResult", (), {})

    def made(timestamp: datetime.datetime, partition_key: str | None) -> Any:
        e = event()
        e.timestamp, e.partition_key = timestamp, partition_key
        return e

    stored = {
        "web.events_hourly": [made(now - datetime.timedelta(minutes=50), key(1)), made(now - datetime.timedelta(minutes=40), key(4)),
                              made(now - datetime.timedelta(minutes=30), key(2))],
        "web.events_daily": [made(now - datetime.timedelta(hours=1), None)],
    }
    reads: list[tuple[str, bool, int | None]] = []

    class Accessor:
        def __init__(self, name: str) -> None:
            self.name, self.newest_first, self.count = name, False, None

        def ascending(self, ascending: bool = True) -> Accessor:
            self.newest_first = not ascending
            return self

        def limit(self, count: int) -> Accessor:
            self.count = count
            return self

        def __iter__(self) -> Any:
            reads.append((self.name, self.newest_first, self.count))
            rows = sorted(stored[self.name], key=lambda e: e.timestamp, reverse=self.newest_first)
            return iter(rows if self.count is None else rows[: self.count])

    inlets = [Asset(name=a["name"], uri=a["uri"]) for a in manifest["freshness_monitor"]["assets"]]
    operator = freshness.FreshnessMonitorOperator(task_id="evaluate", manifest_path=str(case / "manifest.json"), inlets=inlets)
    # a fresh accessor per read, as InletEventsAccessors.__getitem__ returns one
    context = {"inlet_events": type("Events", (), {"__getitem__": lambda self, asset: Accessor(asset.name)})()}
    entries = {e["asset"]: e for e in operator.execute(context)}  # type: ignore[arg-type]
    hourly = entries["web.events_hourly"]
    assert hourly["partitions"]["newest"] == key(1) and hourly["partitions"]["missing"] == [key(3)]
    # the newest partition, the hour before the current one, ended at the top of this hour
    assert hourly["age_seconds"] == pytest.approx((now - hour).total_seconds(), abs=2)
    assert hourly["state"] == "fresh"
    assert "partitions" not in entries["web.events_daily"] and entries["web.events_daily"]["state"] == "fresh"
    assert sorted(reads) == [("web.events_daily", True, 1), ("web.events_hourly", False, None), ("web.events_hourly", True, 1)]


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
    # Not stored (manifestVersion 2, ADR 0017f): the runtime derives them from the policy at load.
    assert "quality" not in dag["runtime"]["datasets"][0] and dag["runtime"]["freshness"]["column"]
    from contract_runtime.manifest import load_manifest

    joined = kit.dag_entry(dict(load_manifest(case)), "sales.orders_clean")
    rules = {r["name"]: r for r in joined["runtime"]["datasets"][0]["quality"] if r.get("metric") == "freshness"}
    assert (rules["freshness_max_age"]["severity"], rules["freshness_max_age"]["mustBeLessOrEqualTo"]) == ("warning", 7200)
    assert (rules["freshness_degrade_after"]["severity"], rules["freshness_degrade_after"]["mustBeLessOrEqualTo"]) == ("error", 21600)
    assert dag["deadline"]["reference"] == "logical_date" and dag["deadline"]["interval_seconds"] == 1800
    assert kit.dag_entry(manifest, "sales.orders_daily")["deadline"]["reference"] == "queued_at"


# ---------------------------------------------------------------------- the live stack

#: Policy of the live project's datasets: wide enough that a monitor run (task start included)
#: on a loaded 2-core machine stays inside each window.
LIVE_MAX_AGE = 60
LIVE_DEGRADE_AFTER = 150
LIVE_MONITOR = "freshtest_freshness_monitor"
LIVE_PRODUCER = "freshtest.orders"


def _live_project(root: Path, alerts: Path) -> Path:
    files = {
        "orchestration/airflow/sources/config.yaml": f"""\
apiVersion: contract-assets/v1
kind: OrchestrationConfig
lineage: {{namespace: freshtest}}
defaults: {{retries: 0, warehouse_conn_id: warehouse}}
notifiers:
  recorder:
    class: contract_runtime.notifiers.FileNotifier
    kwargs:
      path: {json.dumps(str(alerts))}
      message: "{{% if freshness is defined %}}{{{{ freshness.asset }}}} is {{{{ freshness.state }}}}{{% else %}}deadline missed by {{{{ dag_run.dag_id }}}}{{% endif %}}"
freshness_monitor: {{dag_id: {LIVE_MONITOR}, cron: "0 0 1 1 *", notifier: recorder}}
""",
        "contracts/freshtest/orders.yaml": f"""\
apiVersion: contract-assets/v1
kind: TransformContract
id: {LIVE_PRODUCER}
version: 1.0.0
domain: freshtest
owner: team-freshness-test
producer: {{type: sql, path: sql/orders.sql}}
trigger: manual
freshness: {{max_age: PT{LIVE_MAX_AGE}S, degrade_after: PT{LIVE_DEGRADE_AFTER}S, column: updated_at, expected_runtime: PT2S}}
datasets:
  - name: orders
    schema: {{version: 1, properties: [{{name: order_id, logicalType: integer, required: true}}, {{name: updated_at, logicalType: timestamp}}]}}
""",
        "contracts/freshtest/never.yaml": f"""\
apiVersion: contract-assets/v1
kind: TransformContract
id: freshtest.never
version: 1.0.0
domain: freshtest
owner: team-freshness-test
producer: {{type: sql, path: sql/orders.sql}}
trigger: manual
freshness: {{max_age: PT{LIVE_MAX_AGE}S}}
datasets:
  - name: never
    schema: {{version: 1, properties: [{{name: order_id, logicalType: integer, required: true}}]}}
""",
        "contracts/freshtest/partner.yaml": f"""\
apiVersion: contract-assets/v1
kind: ExternalAssets
domain: freshtest
owner: team-partner
assets:
  - name: freshtest.partner_feed
    uri: "x-datalake://external/freshtest/partner_feed"
    freshness: {{max_age: PT{LIVE_MAX_AGE}S, degrade_after: PT{LIVE_DEGRADE_AFTER}S}}
    published_by: the partner's export job (POST /api/v2/assets/events)
""",
        # pg_sleep outlasts expected_runtime (PT2S): the DeadlineAlert is missed on purpose.
        "sql/orders.sql": "select 1 as order_id, now() as updated_at from (select pg_sleep(3)) as s\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    result = dagcheck.run_compile(root)
    assert result.returncode == 0, result.stderr
    return root


def _run(stack: Any, dag_id: str, timeout: float = 240) -> dict[str, Any]:
    """Trigger a manual run and wait until it ends; returns the run (state ``success`` asserted)."""
    run = stack.trigger(dag_id)

    def ended() -> dict[str, Any] | None:
        current = stack.get(f"/dags/{dag_id}/dagRuns/{run['dag_run_id']}")
        return current if current["state"] in ("success", "failed") else None

    done = stack.wait(ended, f"{dag_id} run {run['dag_run_id']} ends", timeout, interval=1)
    assert done["state"] == "success", (dag_id, done, stack.task_instances(dag_id, run["dag_run_id"]))
    return dict(done)


def _evaluation(stack: Any, run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    body = stack.get(f"/dags/{LIVE_MONITOR}/dagRuns/{run['dag_run_id']}/taskInstances/evaluate/xcomEntries/return_value")
    value = body["value"]
    entries = json.loads(value) if isinstance(value, str) else value
    return {e["asset"]: e for e in entries}


def _alerts(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def _post_event(stack: Any, asset_name: str) -> None:
    (asset,) = [a for a in stack.get("/assets", key="assets", name_pattern=asset_name) if a["name"] == asset_name]
    status, body = stack.api("POST", "/assets/events", {"asset_id": asset["id"], "extra": {"batch": "test"}})
    assert status == 200, body


def _age_of(stack: Any, asset_name: str) -> float:
    events = [e for e in stack.asset_events() if e["name"] == asset_name]
    latest = max(datetime.datetime.fromisoformat(e["timestamp"]) for e in events)
    return (stack.now() - latest).total_seconds()  # the stack's clock, not the test process's


def _wait_age(stack: Any, asset_name: str, at_least: float) -> None:
    import time

    while (age := _age_of(stack, asset_name)) <= at_least:
        time.sleep(min(5.0, at_least - age + 0.5))


def _freshness_cli(stack: Any, root: Path) -> tuple[int, dict[str, Any]]:
    import subprocess

    proc = subprocess.run(
        [dagcheck.node_executable(), str(dagcheck.CLI), "freshness", "--root", str(root), "--airflow-url", stack.url, "--format", "json"],
        # the CLI reads ages against its wall clock: put it on the stack's
        env=dagcheck.subprocess_env(AIRFLOW_USERNAME="viewer", AIRFLOW_PASSWORD=stack.passwords["viewer"], **stack.faketime_env()),
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_monitor_on_the_live_stack(live_stack: Any, tmp_path: Path, terminal_summary: list[str]) -> None:
    stack = live_stack
    alerts = tmp_path / "alerts.jsonl"
    root = _live_project(tmp_path / "project", alerts)
    stack.add_project("freshtest", root)
    stack.wait_for_dags([LIVE_MONITOR, LIVE_PRODUCER, "freshtest.never"])
    # Both are triggered by hand; the monitor's cron (1 January) never fires during the test.
    for dag_id in (LIVE_MONITOR, LIVE_PRODUCER):
        stack.unpause(dag_id)

    observed: list[tuple[str, str | None, str]] = []

    def evaluate(expect: dict[str, str], alerts_now: int) -> dict[str, dict[str, Any]]:
        result = _evaluation(stack, _run(stack, LIVE_MONITOR))
        for asset, state in expect.items():
            observed.append((asset, result[asset]["previous_state"], result[asset]["state"]))
            assert result[asset]["state"] == state, (asset, result[asset])
        sent = [a for a in _alerts(alerts) if a["kind"] == "freshness"]  # deadline lines come too
        assert len(sent) == alerts_now, sent
        return result

    orders, partner, never = "freshtest.orders", "freshtest.partner_feed", "freshtest.never"
    first = evaluate({orders: "unknown", partner: "unknown", never: "unknown"}, 0)
    assert first[orders]["previous_state"] is None and first[orders]["last_event_at"] is None

    producer_run = _run(stack, LIVE_PRODUCER)
    _post_event(stack, partner)
    fresh = evaluate({orders: "fresh", partner: "fresh", never: "unknown"}, 0)
    assert fresh[orders]["age_seconds"] <= LIVE_MAX_AGE and fresh[orders]["max_age"] == f"PT{LIVE_MAX_AGE}S"

    _wait_age(stack, orders, LIVE_MAX_AGE)
    _wait_age(stack, partner, LIVE_MAX_AGE)
    evaluate({orders: "stale", partner: "stale", never: "unknown"}, 2)
    code, report = _freshness_cli(stack, root)
    assert code == 1
    assert {a["asset"]: a["state"] for a in report["assets"]} == {orders: "stale", partner: "stale", never: "unknown"}
    assert {a["asset"]: a["last_event_source"] for a in report["assets"]}[partner] == "rest_api"
    evaluate({orders: "stale", partner: "stale"}, 2)  # a repeat: no alert

    _wait_age(stack, orders, LIVE_DEGRADE_AFTER)
    _wait_age(stack, partner, LIVE_DEGRADE_AFTER)
    evaluate({orders: "degraded", partner: "degraded"}, 4)
    evaluate({orders: "degraded", partner: "degraded"}, 4)  # a repeat: no alert
    code, report = _freshness_cli(stack, root)
    assert code == 1 and report["summary"]["degraded"] == 2

    _run(stack, LIVE_PRODUCER)  # degraded -> recovered through a real publish ...
    _post_event(stack, partner)  # ... and through the REST API
    evaluate({orders: "recovered", partner: "recovered", never: "unknown"}, 6)
    evaluate({orders: "fresh", partner: "fresh", never: "unknown"}, 6)
    code, report = _freshness_cli(stack, root)
    assert code == 0 and report["summary"] == {"degraded": 0, "fresh": 2, "stale": 0, "unknown": 1}

    sent = [(a["freshness"]["asset"], a["freshness"]["previous_state"], a["freshness"]["state"]) for a in _alerts(alerts) if a["kind"] == "freshness"]
    assert sorted(sent) == sorted([
        (orders, "fresh", "stale"), (partner, "fresh", "stale"),
        (orders, "stale", "degraded"), (partner, "stale", "degraded"),
        (orders, "degraded", "recovered"), (partner, "degraded", "recovered"),
    ])
    assert {a["message"] for a in _alerts(alerts) if a["kind"] == "freshness"} >= {f"{orders} is stale", f"{partner} is recovered"}
    transitions = sorted({(a, p or "none", s) for a, p, s in observed})
    terminal_summary.append("freshness monitor transitions observed on the live stack: " + "; ".join(f"{a} {p}->{s}" for a, p, s in transitions))

    # the producer's DeadlineAlert (expected_runtime PT2S, queued_at) was missed: the triggerer ran the notifier
    def deadline_sent() -> list[dict[str, Any]] | None:
        found = [a for a in _alerts(alerts) if a["kind"] == "deadline" and a["context"].get("dag_run_id") == producer_run["dag_run_id"]]
        return found or None

    (missed, *_) = stack.wait(deadline_sent, "deadline callback of the first producer run", 120, interval=1)
    assert missed["context"]["dag_id"] == LIVE_PRODUCER
    assert missed["message"] == f"deadline missed by {LIVE_PRODUCER}"
    stack.wait_until_quiescent()
