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
3. A second backfill starts key ``2026-04-14T09``, whose file holds a row of 10:02, outside the
   hour: the audit's ``partition_bounds`` blocks it, nothing is published, and no daily run
   starts for ``2026-04-14``.

Asserted from the REST API and the warehouse: each run's key and state, the Asset events' keys,
the consumer's runs (exactly one, ``2026-04-15``, triggered by the good key's event), and that the
tables hold exactly the good partition's rows. A second backfill over both hours lists the good
key as done and the blocked one as failed (to start again). Measured (terminal summary): the wall
time from unpause to the daily publish, and the hop from the hourly publish to the daily run's start.
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
BAD_KEY = "2026-04-14T09"
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
    good = _backfill(live_stack, "--from", "2026-04-15T09", "--to", "2026-04-15T10", "--run")
    live_stack.wait_until_quiescent(timeout=TIMEOUT_S)
    bad = _backfill(live_stack, "--from", "2026-04-14T09", "--to", "2026-04-14T10", "--run")
    live_stack.wait_until_quiescent(timeout=TIMEOUT_S)
    runs = [r for r in live_stack.dag_runs() if (r["dag_id"], r["dag_run_id"]) not in known and r["dag_id"] in partitioned]
    events = [e for e in live_stack.asset_events() if e["id"] not in known_events and e["name"] in ("web.page_views_raw", "web.page_views_daily")]
    _, again = _backfill(live_stack, "--from", "2026-04-14T09", "--to", "2026-04-15T10")
    return {"clock": clock, "backfills": (good, bad), "again": again, "runs": runs, "events": events}


def test_partition_chain_runs_the_good_key_and_blocks_the_bad_one(chain: dict[str, Any], live_stack: LiveStack) -> None:
    by = {(r["dag_id"], r["partition_key"]): r for r in chain["runs"]}
    assert sorted(by) == [(DAILY, "2026-04-15"), (RAW, BAD_KEY), (RAW, GOOD_KEY)], (sorted(by), live_stack.diagnose())
    good, bad, daily = by[(RAW, GOOD_KEY)], by[(RAW, BAD_KEY)], by[(DAILY, "2026-04-15")]
    assert (good["run_type"], good["state"]) == ("manual", "success"), good
    assert (bad["run_type"], bad["state"]) == ("manual", "failed"), bad
    assert (daily["run_type"], daily["state"]) == ("asset_triggered", "success"), daily
    # the blocked key: audit failed on the bounds rule, publish never ran
    states = {t["task_id"]: t["state"] for t in live_stack.task_instances(RAW, bad["dag_run_id"])}
    assert states == {"produce": "success", "audit": "failed", "publish": "upstream_failed"}, states
    log = live_stack.task_log(RAW, bad["dag_run_id"], "audit")
    failed = f"quality FAIL {'error':<8} {'partition_bounds':<40} actual=1 == 0"
    assert [failed] == [line.strip() for line in log.splitlines() if "partition_bounds" in line and "quality" in line], log
    # the daily run was triggered by the good hour's event, and by nothing else
    triggering = live_stack.triggering_events(DAILY, daily["dag_run_id"])
    assert [(e["name"], e["partition_key"]) for e in triggering] == [(RAW, GOOD_KEY)], triggering


def test_partition_asset_events_carry_their_keys(chain: dict[str, Any]) -> None:
    keys = sorted((e["name"], e["partition_key"]) for e in chain["events"])
    assert keys == [(DAILY, "2026-04-15"), (RAW, GOOD_KEY)], chain["events"]


def test_partition_tables_hold_exactly_the_good_partition(chain: dict[str, Any], live_stack: LiveStack) -> None:
    raw = _rows(live_stack, "select page_view_id || '|' || to_char(viewed_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24') from web.page_views_raw order by 1")
    assert raw == [f"pv-090{i}|{GOOD_KEY}" for i in range(1, 6)], raw
    daily = _rows(live_stack, "select view_date || '|' || page || '|' || views || '|' || visitors from web.page_views_daily order by page")
    assert daily == ["2026-04-15|/docs|2|2", "2026-04-15|/pricing|2|2", "2026-04-15|/signup|1|1"], daily
    assert _rows(live_stack, "select count(*) from information_schema.tables where table_schema = '_ca_staging' and table_name like 'web__%'") == ["0"]


def test_partition_backfill_starts_the_missing_key_and_reports_each_state(chain: dict[str, Any], terminal_summary: list[str]) -> None:
    for (code, started), key in zip(chain["backfills"], (GOOD_KEY, BAD_KEY)):
        assert code == 0, started
        assert [(k["key"], k["state"], k["action"]) for k in started["keys"]] == [(key, "missing", "start")], started
        assert started["keys"][0]["started"].startswith("manual__"), started
    again = {k["key"]: (k["state"], k["action"]) for k in chain["again"]["keys"]}
    assert len(again) == 25 and again[GOOD_KEY] == ("success", "skip") and again[BAD_KEY] == ("failed", "start"), again
    assert again["2026-04-14T10"] == ("missing", "start")
    runs = {(r["dag_id"], r["partition_key"]): r for r in chain["runs"]}
    good, daily = runs[(RAW, GOOD_KEY)], runs[(DAILY, "2026-04-15")]
    published = next(e for e in chain["events"] if e["name"] == RAW)
    hop = (_time(daily["start_date"]) - _time(published["timestamp"])).total_seconds()
    wall = (_time(daily["end_date"]) - _time(good["queued_at"])).total_seconds()
    terminal_summary.append(
        f"live partitions: hourly key {GOOD_KEY} (backfill) -> daily 2026-04-15 published in {wall:.1f} s "
        f"(hop, hourly publish -> daily run start: {hop:.1f} s); blocked key {BAD_KEY} started by backfill, nothing published"
    )
