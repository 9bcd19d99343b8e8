"""Step 1 of ``npm run demo``: the bundled corpus on a live Airflow, driven by Asset events.

    python scripts/livedemo.py --project DIR --work DIR [--warehouse duckdb|postgres]

Starts a :class:`livestack.LiveStack` over ``<project>/generated/dags`` (PostgreSQL metadata
database; the warehouse is the embedded DuckDB file ``<work>/stack/warehouse.duckdb`` or the
stack's PostgreSQL database ``warehouse``), loads the external upstreams' stand-in data
(``localrun.external_sample_files``), unpauses every DAG, triggers through the REST API only the
roots (DAGs without an asset schedule; a root that reads what another DAG publishes after the
first wave is quiescent, as its cron would), waits until the scheduler is quiescent, and prints:

* which runs the scheduler started and from which Asset events (dag_id, run_type, state, the
  triggering assets with the DAG run that published each);
* what was published (asset, rows, quality status) and what was blocked;
* the freshness monitor's state per asset, from one run of the monitor DAG triggered at the end
  (``fresh`` for what the chain just published, ``unknown`` for what was never published).

The stack runs on its fixed clock (``livestack.TEST_CLOCK``, the bundled data's reference date)
so no cron DAG starts by itself. Lineage goes wherever the OpenLineage client's configuration in
the environment says (``OPENLINEAGE__TRANSPORT__*``, ``OPENLINEAGE_CONFIG``, ...); the stack adds
a file transport only when none is set. Writes ``<work>/runs.json`` (the run list) and stops the
stack at the end; its logs stay in ``<work>/stack/logs``. Exit status 0 when every run
succeeded, 1 otherwise.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from livestack import TEST_CLOCK, LiveStack  # noqa: E402


def _localrun() -> Any:
    spec = importlib.util.spec_from_file_location("localrun", Path(__file__).resolve().parent / "localrun.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def say(text: str) -> None:
    print(f"  {text}", flush=True)


def _show_freshness(stack: LiveStack, monitor: dict[str, Any], localrun: Any) -> list[str]:
    """Run the freshness monitor DAG once through the REST API (unpause, trigger, wait) and print
    its states (the ``evaluate`` task's return value); returns ``[dag_id]`` when it did not succeed."""
    dag_id = str(monitor["dag_id"])
    stack.wait_for_dags([dag_id])
    stack.unpause(dag_id)
    run = stack.trigger(dag_id)

    def ended() -> dict[str, Any] | None:
        current = stack.get(f"/dags/{dag_id}/dagRuns/{run['dag_run_id']}")
        return current if current["state"] in ("success", "failed") else None

    done = stack.wait(ended, f"{dag_id} run ends", 300, interval=1)
    if done["state"] != "success":
        print(f"\nFreshness monitor {dag_id}: run {run['dag_run_id']} {done['state']} (logs: {stack.logs})")
        return [dag_id]
    body = stack.get(f"/dags/{dag_id}/dagRuns/{run['dag_run_id']}/taskInstances/evaluate/xcomEntries/return_value")
    value = body["value"]
    entries = json.loads(value) if isinstance(value, str) else value
    print(localrun.describe_freshness(monitor, entries, done["state"]))
    return []


def demo_partition_key(manifest: dict[str, Any], dag_id: str) -> str | None:
    """The key a partitioned root runs in the demo: the period holding the hour before the fixed
    clock (``2026-04-15T09`` for an hourly contract, whose sample file the corpus bundles); None
    for an unpartitioned DAG."""
    dag = next(d for d in manifest["dags"] if d["dag_id"] == dag_id)
    spec = dag["runtime"].get("partitioning")
    if not spec:
        return None
    return (TEST_CLOCK - datetime.timedelta(hours=1)).strftime(str(spec["key_format"]))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="livedemo")
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--warehouse", choices=("duckdb", "postgres"), default="duckdb")
    args = parser.parse_args(argv)
    project = args.project.resolve()
    localrun = _localrun()
    manifest = localrun.load_manifest(project)
    dags = {d["dag_id"]: d for d in manifest["dags"]}
    roots = sorted(d for d, entry in dags.items() if entry["schedule"]["assets"] is None)
    produced = {a["name"] for a in manifest["assets"] if a.get("producer")}
    late = [d for d in roots if set(dags[d]["inlets"]) & produced]

    stack = LiveStack(
        work=args.work / "stack",
        dags_folder=project / "generated" / "dags",
        warehouse=args.warehouse,
        clock=TEST_CLOCK,
        keep=True,
    )
    started = time.monotonic()
    stack.start()
    ok = False
    try:
        say(f"Airflow {stack.url} (api-server, scheduler with the LocalExecutor, dag-processor, triggerer)")
        say(f"metadata database: PostgreSQL on 127.0.0.1:{stack.postgres.port if stack.postgres else '?'}")
        say(f"warehouse: {'PostgreSQL database warehouse' if args.warehouse == 'postgres' else stack.duckdb_path}")
        say(f"clock: {TEST_CLOCK.isoformat()} (fixed: no cron DAG starts by itself); up in {time.monotonic() - started:.0f} s")
        stack.wait_for_dags(dags)
        if args.warehouse == "postgres":
            assert stack.postgres is not None
            seeded = localrun.seed_external_sample_data_postgres(project, manifest, stack.postgres.uri("warehouse"))
        else:
            seeded = localrun.seed_external_sample_data(project, manifest, str(stack.duckdb_path))
        for s in seeded:
            say(f"external {s['asset']} <- {s['file']} ({s['rows']} rows)")
        for dag_id in sorted(dags):
            stack.unpause(dag_id)
        wave = [d for d in roots if d not in late]
        say(f"unpaused {len(dags)} DAGs; triggering the roots through the REST API: {', '.join(wave)}")
        for dag_id in wave:
            stack.trigger(dag_id, partition_key=demo_partition_key(manifest, dag_id))
        stack.wait_until_quiescent(timeout=1200)
        if late:
            say(f"quiescent; triggering the roots that read what the chain publishes: {', '.join(late)}")
            for dag_id in late:
                stack.trigger(dag_id)
        runs = stack.wait_until_quiescent(timeout=1200)
        events = {e["id"]: e for e in stack.asset_events()}
        listing = []
        print("\nRuns (in the order the scheduler queued them):", flush=True)
        print(f"  {'dag_id':<30} {'run_type':<16} {'state':<8} triggered by (Asset <- DAG run that published it)")
        for run in sorted(runs, key=lambda r: r["queued_at"]):
            triggering = (
                stack.triggering_events(run["dag_id"], run["dag_run_id"]) if run["run_type"] == "asset_triggered" else []
            )
            by = [f"{e['name']} <- {e['source_dag_id']}" for e in triggering]
            listing.append({**{k: run[k] for k in ("dag_id", "dag_run_id", "run_type", "state", "queued_at")},
                            "triggering_assets": [e["name"] for e in triggering]})
            print(f"  {run['dag_id']:<30} {run['run_type']:<16} {run['state']:<8} {', '.join(by) or '(REST API trigger)'}")
        print("\nPublished (one Asset event each):")
        for event in sorted(events.values(), key=lambda e: e["timestamp"]):
            extra = event["extra"]
            failed = f" (failed: {', '.join(extra.get('failed_rules', []))})" if extra.get("failed_rules") else ""
            print(f"  {event['name']:<34} {extra.get('row_count', '?'):>5} rows  {extra.get('quality_status', '?')}{failed}")
        blocked = sorted({r["dag_id"] for r in runs if r["state"] != "success"})
        monitor = manifest.get("freshness_monitor")
        if monitor:
            blocked += _show_freshness(stack, monitor, localrun)
        print("\nNot successful: " + (", ".join(blocked) if blocked else "(none)"))
        (args.work / "runs.json").write_text(json.dumps(listing, indent=1) + "\n", encoding="utf-8")
        ok = not blocked
        return 0 if ok else 1
    finally:
        stack.failed = not ok
        stack.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
