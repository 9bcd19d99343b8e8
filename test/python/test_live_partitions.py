"""The bundled partitioned chain on the live stack (issue 35 item 7; ADR 0028): the hourly ingestion
``web.page_views_raw`` (``CronPartitionTimetable``) feeds the daily ``web.page_views_daily``
(``PartitionedAssetTimetable``, ``StartOfDayMapper``), scheduled by the scheduler, with keys.

The scenario (fixture ``live_stack``, PostgreSQL warehouse; ``test_live_e2e`` leaves both DAGs
paused):

1. Both DAGs are unpaused; neither starts by itself: the stack's clock stands at 2026-04-15 10:xx
   UTC (``TEST_CLOCK`` plus the time since the stack started) and the hourly cron fires at :45,
   more than Airflow's 6-minute "run immediately" window after 09:45 (``CronTriggerTimetable.
   _calc_first_run``).
2. ``contract-assets backfill web.page_views_raw --from 2026-04-15T09 --to 2026-04-15T10 --run``
   against the api-server starts key ``2026-04-15T09``, whose sample file holds five good rows
   (``orchestration/sample_data/web_platform/page_views/{partition}.csv``). Its published Asset
   event carries the key; the scheduler maps it to ``2026-04-15`` and starts the daily run.
3. A backfill of ``2026-04-15T07`` (three good rows) publishes a second hour of that day, and the
   scheduler starts the daily run of ``2026-04-15`` again (3.2 does not wait for a day's 24 hours:
   each hour recomputes it). ``2026-04-15T08`` stays a gap.
4. A backfill of ``2026-04-14T09``, whose file holds a row of 10:02, outside the hour: the audit's
   ``partition_bounds`` blocks it, nothing is published, and no daily run starts for
   ``2026-04-14``.

Asserted from the REST API and the warehouse: each run's key and state, the Asset events' keys,
the consumer's runs (two, both ``2026-04-15``, each triggered by exactly one hour's event), that
the tables hold exactly the good partitions' rows, what a later dry-run backfill over the range
reports per key (done, failed, missing), and what ``contract-assets freshness`` and one run of the
bundled freshness monitor DAG report of the hourly asset (newest partition ``2026-04-15T09``, the
missing ``2026-04-15T08``). Measured
(terminal summary): the wall time from the first backfill to the daily publish, and the hop from
the hourly publish to the daily run's start.
"""

from __future__ import annotations

import datetime
import json
import subprocess
from typing import Any

import dagcheck
import pytest
from dagcheck import REPO_ROOT
from livestack import LiveStack

RAW = "web.page_views_raw"
DAILY = "web.page_views_daily"
GOOD_KEY = "2026-04-15T09"
EARLIER_KEY = "2026-04-15T07"
BAD_KEY = "2026-04-14T09"
MONITOR = "contract_assets_freshness_monitor"
TIMEOUT_S = 900


def _time(value: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))


def _backfill(stack: LiveStack, *args: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [dagcheck.node_executable(), str(dagcheck.CLI), "backfill", RAW, *args, "--root", str(REPO_ROOT),
         "--airflow-url", stack.url, "--token", stack.token(), "--format", "json"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _freshness(stack: LiveStack) -> dict[str, Any]:
    proc = subprocess.run(
        [dagcheck.node_executable(), str(dagcheck.CLI), "freshness", "--root", str(REPO_ROOT), "--airflow-url", stack.url,
         "--token", stack.token(), "--format", "json"],
        # ages are read against the CLI's wall clock: put it on the stack's
        env=dagcheck.subprocess_env(**stack.faketime_env()),
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return dict(json.loads(proc.stdout))


def _monitor_run(stack: LiveStack) -> dict[str, dict[str, Any]]:
    """One run of the bundled freshness monitor DAG; its evaluation (the ``evaluate`` task's XCom) by asset."""
    stack.unpause(MONITOR)
    run = stack.trigger(MONITOR)

    def ended() -> dict[str, Any] | None:
        current = stack.get(f"/dags/{MONITOR}/dagRuns/{run['dag_run_id']}")
        return current if current["state"] in ("success", "failed") else None

    done = stack.wait(ended, f"{MONITOR} run ends", TIMEOUT_S, interval=1)
    assert done["state"] == "success", (done, stack.task_instances(MONITOR, run["dag_run_id"]))
    value = stack.get(f"/dags/{MONITOR}/dagRuns/{run['dag_run_id']}/taskInstances/evaluate/xcomEntries/return_value")["value"]
    return {e["asset"]: e for e in (json.loads(value) if isinstance(value, str) else value)}


def _rows(stack: LiveStack, sql: str) -> list[str]:
    assert stack.postgres is not None
    return [line for line in stack.postgres.psql("warehouse", sql).splitlines() if line.strip()]


@pytest.fixture(scope="module")
def chain(live_stack: LiveStack) -> dict[str, Any]:
    manifest = json.loads((REPO_ROOT / "generated" / "manifest.json").read_text(encoding="utf-8"))
    partitioned = sorted(d["dag_id"] for d in manifest["dags"] if d["runtime"].get("partitioning"))
    assert partitioned == [DAILY, RAW], partitioned
    live_stack.wait_for_dags(partitioned)
    known = {(r["dag_id"], r["dag_run_id"]) for r in live_stack.dag_runs()}
    known_events = {e["id"] for e in live_stack.asset_events()}
    clock = live_stack.now()
    assert clock.strftime("%Y-%m-%dT%H") == "2026-04-15T10" and clock.minute < 45, f"the stack's clock ({clock}) has reached the :45 cron"
    live_stack.unpause(DAILY)
    live_stack.unpause(RAW)
    backfills = []
    for key in (GOOD_KEY, EARLIER_KEY, BAD_KEY):
        start = datetime.datetime.strptime(key, "%Y-%m-%dT%H")
        backfills.append(_backfill(live_stack, "--from", key, "--to", (start + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H"), "--run"))
        live_stack.wait_until_quiescent(timeout=TIMEOUT_S)
    runs = [r for r in live_stack.dag_runs() if (r["dag_id"], r["dag_run_id"]) not in known and r["dag_id"] in partitioned]
    events = [e for e in live_stack.asset_events() if e["id"] not in known_events and e["name"] in (RAW, DAILY)]
    _, again = _backfill(live_stack, "--from", "2026-04-14T09", "--to", "2026-04-15T10")
    freshness = _freshness(live_stack)
    monitor = _monitor_run(live_stack)
    # paused again: no cron of theirs (the monitor's every 15 minutes) fires during the later tests
    for dag_id in (MONITOR, RAW, DAILY):
        live_stack.unpause(dag_id, paused=True)
    return {"clock": clock, "backfills": backfills, "again": again, "runs": runs, "events": events, "freshness": freshness, "monitor": monitor}


def test_partition_chain_runs_the_good_keys_and_blocks_the_bad_one(chain: dict[str, Any], live_stack: LiveStack) -> None:
    raw = {r["partition_key"]: r for r in chain["runs"] if r["dag_id"] == RAW}
    daily = sorted((r for r in chain["runs"] if r["dag_id"] == DAILY), key=lambda r: str(r["queued_at"]))
    assert sorted(raw) == [BAD_KEY, EARLIER_KEY, GOOD_KEY] and len(chain["runs"]) == 5, (chain["runs"], live_stack.diagnose())
    for key, state in ((GOOD_KEY, "success"), (EARLIER_KEY, "success"), (BAD_KEY, "failed")):
        assert (raw[key]["run_type"], raw[key]["state"]) == ("manual", state), raw[key]
    # each published hour started the day's run once, triggered by that hour's event alone
    assert [(r["partition_key"], r["run_type"], r["state"]) for r in daily] == [("2026-04-15", "asset_triggered", "success")] * 2, daily
    triggered_by = [[(e["name"], e["partition_key"]) for e in live_stack.triggering_events(DAILY, r["dag_run_id"])] for r in daily]
    assert triggered_by == [[(RAW, GOOD_KEY)], [(RAW, EARLIER_KEY)]], triggered_by
    # the blocked key: audit failed on the bounds rule, publish never ran
    bad = raw[BAD_KEY]
    states = {t["task_id"]: t["state"] for t in live_stack.task_instances(RAW, bad["dag_run_id"])}
    assert states == {"produce": "success", "audit": "failed", "publish": "upstream_failed"}, states
    log = live_stack.task_log(RAW, bad["dag_run_id"], "audit")
    failed = f"quality FAIL {'error':<8} {'partition_bounds':<40} actual=1 == 0"
    assert [failed] == [line.strip() for line in log.splitlines() if "partition_bounds" in line and "quality" in line], log


def test_partition_asset_events_carry_their_keys(chain: dict[str, Any]) -> None:
    keys = [(e["name"], e["partition_key"]) for e in sorted(chain["events"], key=lambda e: int(e["id"]))]
    assert keys == [(RAW, GOOD_KEY), (DAILY, "2026-04-15"), (RAW, EARLIER_KEY), (DAILY, "2026-04-15")], chain["events"]


def test_partition_tables_hold_exactly_the_good_partitions(chain: dict[str, Any], live_stack: LiveStack) -> None:
    raw = _rows(live_stack, "select page_view_id || '|' || to_char(viewed_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24') from web.page_views_raw order by 1")
    assert raw == [f"pv-070{i}|{EARLIER_KEY}" for i in range(1, 4)] + [f"pv-090{i}|{GOOD_KEY}" for i in range(1, 6)], raw
    # the day recomputed from both published hours
    daily = _rows(live_stack, "select view_date || '|' || page || '|' || views || '|' || visitors from web.page_views_daily order by page")
    assert daily == ["2026-04-15|/docs|4|4", "2026-04-15|/pricing|3|3", "2026-04-15|/signup|1|1"], daily
    assert _rows(live_stack, "select count(*) from information_schema.tables where table_schema = '_ca_staging' and table_name like 'web__%'") == ["0"]


def test_partition_backfill_starts_missing_keys_and_reports_each_state(chain: dict[str, Any], terminal_summary: list[str]) -> None:
    for (code, started), key in zip(chain["backfills"], (GOOD_KEY, EARLIER_KEY, BAD_KEY)):
        assert code == 0, started
        assert [(k["key"], k["state"], k["action"]) for k in started["keys"]] == [(key, "missing", "start")], started
        assert started["keys"][0]["started"].startswith("manual__"), started
    again = {k["key"]: (k["state"], k["action"]) for k in chain["again"]["keys"]}
    assert len(again) == 25, again
    assert [again[k] for k in (GOOD_KEY, EARLIER_KEY, BAD_KEY, "2026-04-15T08")] == [
        ("success", "skip"), ("success", "skip"), ("failed", "start"), ("missing", "start")
    ], again
    runs = sorted(chain["runs"], key=lambda r: r["queued_at"])
    good = next(r for r in runs if r["dag_id"] == RAW and r["partition_key"] == GOOD_KEY)
    daily = next(r for r in runs if r["dag_id"] == DAILY)
    published = next(e for e in sorted(chain["events"], key=lambda e: int(e["id"])) if e["name"] == RAW)
    hop = (_time(daily["start_date"]) - _time(published["timestamp"])).total_seconds()
    wall = (_time(daily["end_date"]) - _time(good["queued_at"])).total_seconds()
    terminal_summary.append(
        f"live partitions: hourly key {GOOD_KEY} (backfill) -> daily 2026-04-15 published in {wall:.1f} s "
        f"(hop, hourly publish -> daily run start: {hop:.1f} s); {EARLIER_KEY} recomputed the day; "
        f"blocked key {BAD_KEY} published nothing"
    )


def test_partition_freshness_reports_the_newest_partition_and_the_gap(chain: dict[str, Any]) -> None:
    entry = next(a for a in chain["freshness"]["assets"] if a["asset"] == RAW)
    partitions = entry["partitions"]
    assert (partitions["first"], partitions["newest"], partitions["missing"], partitions["missing_count"]) == (
        EARLIER_KEY, GOOD_KEY, ["2026-04-15T08"], 1
    ), entry
    # the newest hour ended at 10:00 on the stack's clock, which stands at 10:xx: fresh (max_age PT2H)
    assert entry["state"] == "fresh" and 0 < entry["age_seconds"] < 3600, entry
    assert DAILY not in {a["asset"] for a in chain["freshness"]["assets"]}  # no freshness policy


def test_partition_freshness_monitor_reads_the_keys_of_the_asset_events(chain: dict[str, Any]) -> None:
    """The monitor DAG reads the events through the Task SDK (inlet events), not the REST API: the
    same newest partition and gap as the command."""
    entry = chain["monitor"][RAW]
    cli = next(a for a in chain["freshness"]["assets"] if a["asset"] == RAW)
    assert entry["state"] == "fresh", entry
    assert {k: entry["partitions"][k] for k in ("first", "newest", "missing", "missing_count")} == {
        k: cli["partitions"][k] for k in ("first", "newest", "missing", "missing_count")
    } == {"first": EARLIER_KEY, "newest": GOOD_KEY, "missing": ["2026-04-15T08"], "missing_count": 1}, (entry, cli)
