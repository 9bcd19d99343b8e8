"""Scheduler-driven end to end on the bundled corpus: Asset events, and nothing hand-ordered,
start every downstream DAG (the live stack, fixture ``live_stack``; warehouse on PostgreSQL).

The scenario: load the external upstreams' stand-in data into the warehouse (as
``scripts/localrun.py`` does for the embedded one: ``fx.rates_daily`` belongs to a system outside
the project), unpause every DAG of ``generated/manifest.json`` but the partitioned ones (their runs
need keys: ``test_live_partitions.py``), trigger through the REST API only
the DAGs without an asset schedule (cron and manual roots), then wait, bounded, until the
scheduler is quiescent. Everything after the root triggers is the scheduler's doing. A root that
reads (``trigger: false``) what another DAG of the corpus publishes (``revrec.close_summary``, on
the 3rd of the month, reads what ``revrec.monthly`` publishes on the 1st) is triggered only once
the first wave is quiescent, as its cron would start it after the chain; which roots those are
is read from the manifest.

What is asserted, from the REST API and the warehouse (never from the test's own bookkeeping):

* every DAG run succeeded; every root ran exactly once, as the ``manual`` run the test started;
  every asset-scheduled DAG ran, every one of its runs ``asset_triggered``;
* each asset-triggered run's ``triggering_asset_events`` (``upstreamAssetEvents``) are exactly
  the Asset events of the assets in its schedule that were published after the DAG's previous
  asset-triggered run was queued and up to this one (Airflow's rule,
  ``SchedulerJobRunner._create_dag_runs_asset_triggered``), and the assets of those events satisfy
  the schedule's condition tree (so the nested ``all``/``any`` DAG ran only once both of its
  branches held). Every triggering event is at or before the run's ``run_after`` (the time the
  scheduler saw the condition hold, from the same database clock): no run before its condition
  held. (Timestamps written by PostgreSQL and by the Python processes may differ by a fraction
  of a second, so they are not compared with each other.)
* no event was consumed twice by one DAG, and at quiescence every event no run consumed is still
  queued for its consumer (``assets/queuedEvents``) with the condition unmet by the queued assets:
  no run is missing. The one exception is Airflow's: an event of an asset already queued for a
  consumer, published after that consumer's run_after but before the run was queued, is
  neither consumed nor kept queued (the queue holds one row per asset; see the test), so the
  consumer can wait although each of its inputs has published since its last run;
* row counts in the PostgreSQL warehouse equal those of the ``DAG.test()`` run (``test_e2e``);
* lineage nests (ADR 0010): every runId has one job; each DAG run has one run of our contract
  job (one START, one COMPLETE) whose ``parent`` and ``root`` name the provider's DAG-run run
  (the provider's DAG-run START and COMPLETE, sent by the scheduler, carry that runId); each
  Asset event's ``extra.openlineage`` names our run that published it; each asset-triggered run's
  ``consumed_batches`` lists exactly its triggering events, with the publishing run's runId.

Measured (terminal summary, not asserted): wall time from the root triggers to the last publish,
the median scheduler latency per Asset hop (publish, i.e. the Asset event's timestamp, to the
consumer run's start), and the ``DAG.test()`` chain's wall time when ``test_e2e`` ran in the same
session.

The run list (dag_id, run_type, triggering assets) and the lineage event counts per emitter are
printed in the terminal summary.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import pytest
from dagcheck import REPO_ROOT
from livestack import LiveStack
from test_e2e import EXPECTED_ROWS, EXTRACTS, LOCALRUN_MODULE, MAIN_RUN_SECONDS, without_partitioned

#: Bound for the whole corpus to run through the scheduler (observed: about 2-4 minutes).
CORPUS_TIMEOUT_S = 1800


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def condition_holds(tree: dict[str, Any] | None, assets: set[str]) -> bool:
    """Whether a manifest schedule tree (``{"all": [...]}``, ``{"any": [...]}``,
    ``{"asset": name}``) holds when ``assets`` have new events."""
    if tree is None:
        return False
    if "asset" in tree:
        return tree["asset"] in assets
    if "all" in tree:
        return all(condition_holds(t, assets) for t in tree["all"])
    return any(condition_holds(t, assets) for t in tree["any"])


def leaves(tree: dict[str, Any] | None) -> set[str]:
    if tree is None:
        return set()
    if "asset" in tree:
        return {tree["asset"]}
    return set().union(*(leaves(t) for t in tree.get("all", tree.get("any", []))))


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    """The corpus without its partitioned DAGs, which stay paused here: a run of theirs needs a key
    (``test_live_partitions.py`` runs them)."""
    return without_partitioned(json.loads((REPO_ROOT / "generated" / "manifest.json").read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def corpus_run(live_stack: LiveStack, manifest: dict[str, Any]) -> dict[str, Any]:
    """Unpause everything, trigger the roots, wait until quiescent; the runs and events since."""
    known_runs = {(r["dag_id"], r["dag_run_id"]) for r in live_stack.dag_runs()}
    known_events = {e["id"] for e in live_stack.asset_events()}
    dags = {d["dag_id"]: d for d in manifest["dags"]}
    roots = sorted(d for d, entry in dags.items() if entry["schedule"]["assets"] is None)
    produced = {a["name"] for a in manifest["assets"] if a.get("producer")}
    late = [d for d in roots if set(dags[d]["inlets"]) & produced]
    assert live_stack.postgres is not None
    LOCALRUN_MODULE.seed_external_sample_data_postgres(REPO_ROOT, manifest, live_stack.postgres.uri("warehouse"))
    for dag_id in sorted(dags):
        live_stack.unpause(dag_id)
    started = live_stack.now()
    triggered = {dag_id: live_stack.trigger(dag_id)["dag_run_id"] for dag_id in roots if dag_id not in late}
    live_stack.wait_until_quiescent(timeout=CORPUS_TIMEOUT_S)
    triggered.update({dag_id: live_stack.trigger(dag_id)["dag_run_id"] for dag_id in late})
    all_runs = live_stack.wait_until_quiescent(timeout=CORPUS_TIMEOUT_S)
    runs = [r for r in all_runs if (r["dag_id"], r["dag_run_id"]) not in known_runs]
    events = [e for e in live_stack.asset_events() if e["id"] not in known_events]
    triggering = {
        (r["dag_id"], r["dag_run_id"]): live_stack.triggering_events(r["dag_id"], r["dag_run_id"])
        for r in runs
        if r["run_type"] == "asset_triggered"
    }
    queued = {d: live_stack.queued_events(d) for d, entry in dags.items() if entry["schedule"]["assets"]}
    return {
        "dags": dags,
        "roots": roots,
        "late": late,
        "triggered": triggered,
        "runs": runs,
        "events": events,
        "triggering": triggering,
        "queued": queued,
        "started": started,
        "finished": live_stack.now(),
    }


def test_every_run_succeeded_and_roots_ran_once(corpus_run: dict[str, Any], live_stack: LiveStack) -> None:
    runs = corpus_run["runs"]
    failed = [(r["dag_id"], r["dag_run_id"], r["state"]) for r in runs if r["state"] != "success"]
    assert not failed, f"{failed}\n{live_stack.diagnose(runs)}"
    by_dag: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        by_dag.setdefault(r["dag_id"], []).append(r)
    assert set(by_dag) == set(corpus_run["dags"]), sorted(set(corpus_run["dags"]) - set(by_dag))
    for root in corpus_run["roots"]:
        assert [(r["run_type"], r["dag_run_id"]) for r in by_dag[root]] == [
            ("manual", corpus_run["triggered"][root])
        ], root
    for dag_id, dag_runs in by_dag.items():
        if dag_id not in corpus_run["roots"]:
            assert {r["run_type"] for r in dag_runs} == {"asset_triggered"}, (dag_id, dag_runs)


def test_triggering_events_are_exactly_what_each_condition_needed(
    corpus_run: dict[str, Any], terminal_summary: list[str]
) -> None:
    events = sorted(corpus_run["events"], key=lambda e: (_time(e["timestamp"]), e["id"]))
    consumed: dict[str, Counter[int]] = {}
    for dag_id, entry in corpus_run["dags"].items():
        tree = entry["schedule"]["assets"]
        if tree is None:
            continue
        scheduled = leaves(tree)
        dag_runs = sorted(
            (r for r in corpus_run["runs"] if r["dag_id"] == dag_id), key=lambda r: _time(r["run_after"])
        )
        previous = corpus_run["started"]
        consumed[dag_id] = Counter()
        for run in dag_runs:
            run_after = _time(run["run_after"])
            window = [
                e["id"] for e in events if e["name"] in scheduled and previous < _time(e["timestamp"]) <= run_after
            ]
            got = corpus_run["triggering"][(dag_id, run["dag_run_id"])]
            assert sorted(e["id"] for e in got) == sorted(window), (dag_id, run["dag_run_id"], got, window)
            assets = {e["name"] for e in got}
            assert condition_holds(tree, assets), (dag_id, run["dag_run_id"], sorted(assets), tree)
            consumed[dag_id].update(e["id"] for e in got)
            previous = run_after
        # no event consumed twice; what no run consumed is still queued, and cannot start a run
        assert all(n == 1 for n in consumed[dag_id].values()), (dag_id, consumed[dag_id])
        unconsumed = [e for e in events if e["name"] in scheduled and _time(e["timestamp"]) > previous]
        # Airflow queues an asset once per consumer (AssetDagRunQueue, inserted "on conflict do
        # nothing"): a later event of an asset already queued does not refresh the row. The
        # scheduler reads a DAG's rows under a row lock, takes the newest row's time as run_after,
        # creates the run (queued_at), then deletes the rows it read, by key. An event of an asset
        # that run consumed, whose insert met the still-present row between that read and that
        # delete, is neither consumed nor left queued; its timestamp may be later than queued_at
        # (seen in CI), but not later than the run's start, which a later scheduler loop sets after
        # the delete was committed (AssetManager._queue_dagruns_nonpartitioned_postgres,
        # SchedulerJobRunner._create_dag_runs_asset_triggered, Airflow 3.2.2).
        # An event's timestamp is not ordered with a run's start_date to the second: a consumed
        # event can carry a timestamp after the start of the run that consumed it (hops of -0.3 s
        # in CI). That skew, measured on this corpus run's own consumed events, widens the bound;
        # an event within it whose asset is queued was queued after the delete, not dropped.
        skew = max(
            [timedelta(0)]
            + [
                _time(e["timestamp"]) - _time(r["start_date"])
                for r in corpus_run["runs"]
                for e in corpus_run["triggering"].get((r["dag_id"], r["dag_run_id"]), [])
            ]
        )
        queued = {q["asset_id"] for q in corpus_run["queued"][dag_id]}
        last = dag_runs[-1] if dag_runs else None
        dropped = [
            e for e in unconsumed
            if last is not None
            and e["name"] in {t["name"] for t in corpus_run["triggering"][(dag_id, last["dag_run_id"])]}
            and (
                _time(e["timestamp"]) <= _time(last["start_date"])
                or (_time(e["timestamp"]) <= _time(last["start_date"]) + skew and e["asset_id"] not in queued)
            )
        ]
        if dropped:
            terminal_summary.append(
                f"live e2e: {dag_id}: events neither consumed nor queued (Airflow's one queue row per asset): "
                + ", ".join(f"{e['name']}#{e['id']}" for e in dropped)
            )
        # what is left for a next run: the unconsumed events Airflow kept queued
        left = {e["name"] for e in unconsumed if e not in dropped}
        assert queued == {e["asset_id"] for e in unconsumed if e not in dropped}, (
            dag_id, corpus_run["queued"][dag_id], sorted(left), [e["id"] for e in dropped],
            [(e["name"], e["timestamp"]) for e in unconsumed], last and (last["queued_at"], last["start_date"]), skew,
        )
        assert not condition_holds(tree, left), (dag_id, "a run is missing", sorted(left))


def test_row_counts_equal_the_dag_test_run(corpus_run: dict[str, Any], live_stack: LiveStack) -> None:
    assert live_stack.postgres is not None
    counts = {}
    for table in EXPECTED_ROWS:
        if table in EXTRACTS:  # Parquet files in object storage, not a table: their publish event counts them
            (event,) = [e for e in corpus_run["events"] if e["name"] == table]
            counts[table] = int(event["extra"]["row_count"])
            continue
        schema, name = table.split(".", 1)
        counts[table] = int(live_stack.postgres.psql("warehouse", f'select count(*) from "{schema}"."{name}"'))
    assert counts == EXPECTED_ROWS


def our_events(live_stack: LiveStack) -> list[dict[str, Any]]:
    return [json.loads(x) for x in live_stack.lineage_file.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_lineage_runs_nest_under_the_dag_run(corpus_run: dict[str, Any], live_stack: LiveStack) -> None:
    events = our_events(live_stack)
    jobs: dict[str, set[tuple[str, str]]] = {}
    for event in events:
        jobs.setdefault(event["run"]["runId"], set()).add((event["job"]["namespace"], event["job"]["name"]))
    assert {r: j for r, j in jobs.items() if len(j) != 1} == {}
    by_airflow_run: dict[str, dict[str, Any]] = {}
    for event in events:
        if LOCALRUN_MODULE.emitter_of(event) == "provider DAG run":
            dag_run = event["run"]["facets"]["airflowDagRun"]["dagRun"]
            entry = by_airflow_run.setdefault(dag_run["run_id"], {"runId": event["run"]["runId"], "types": []})
            entry["types"].append(event["eventType"])
    ours_by_run: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if LOCALRUN_MODULE.emitter_of(event) == "contract-assets":
            ours_by_run.setdefault(event["run"]["runId"], []).append(event)
    published_by = {}  # our runId -> the Asset events it published
    for e in corpus_run["events"]:
        published_by.setdefault(e["extra"]["openlineage"]["parentRunId"], []).append(e)
    for run in corpus_run["runs"]:
        provider = by_airflow_run[run["dag_run_id"]]
        assert provider["types"] == ["START", "COMPLETE"], (run["dag_id"], provider)
        mine = [
            (run_id, evs)
            for run_id, evs in ours_by_run.items()
            if evs[0]["run"]["facets"]["parent"]["run"]["runId"] == provider["runId"]
        ]
        assert len(mine) == 1, (run["dag_id"], len(mine))
        run_id, evs = mine[0]
        types = [e["eventType"] for e in evs]
        assert types[0] == "START" and types[-1] == "COMPLETE" and types.count("START") == 1, types
        parent = evs[0]["run"]["facets"]["parent"]
        assert parent["root"]["run"]["runId"] == provider["runId"] and parent["job"]["name"] == run["dag_id"]
        assert run_id != provider["runId"]
        assert {e["source_run_id"] for e in published_by[run_id]} == {run["dag_run_id"]}
        batches = evs[0]["run"]["facets"]["contractAssets_provenance"].get("consumed_batches", [])
        triggering = corpus_run["triggering"].get((run["dag_id"], run["dag_run_id"]), [])
        assert sorted((b["asset"], b["source_run_id"], b["runId"]) for b in batches) == sorted(
            (e["name"], e["source_run_id"], e["extra"]["openlineage"]["parentRunId"]) for e in triggering
        ), run["dag_id"]


def test_run_list_and_event_counts(
    corpus_run: dict[str, Any], live_stack: LiveStack, terminal_summary: list[str]
) -> None:
    """The run list the scheduler produced and the lineage events per emitter, in the summary."""
    names = {e["id"]: e["name"] for e in corpus_run["events"]}
    lines = []
    for run in sorted(corpus_run["runs"], key=lambda r: (_time(r["queued_at"]), r["dag_id"])):
        got = corpus_run["triggering"].get((run["dag_id"], run["dag_run_id"]), [])
        assets = ", ".join(sorted(names.get(e["id"], e["name"]) for e in got)) or "-"
        lines.append(f"live run: {run['dag_id']:<30} {run['run_type']:<16} {run['state']:<8} triggered by: {assets}")
    last_publish = max(_time(e["timestamp"]) for e in corpus_run["events"])
    wall = (last_publish - corpus_run["started"]).total_seconds()
    hops = sorted(
        (_time(run["start_date"]) - _time(e["timestamp"])).total_seconds()
        for run in corpus_run["runs"]
        for e in corpus_run["triggering"].get((run["dag_id"], run["dag_run_id"]), [])
    )
    median = hops[len(hops) // 2] if len(hops) % 2 else (hops[len(hops) // 2 - 1] + hops[len(hops) // 2]) / 2
    baseline = f"{MAIN_RUN_SECONDS[0]:.1f} s" if MAIN_RUN_SECONDS else "not run in this session"
    lines.append(
        f"live corpus: {len(corpus_run['runs'])} runs, {len(corpus_run['events'])} Asset events; root triggers to last "
        f"publish {wall:.1f} s (incl. the second wave after quiescence); median Asset hop (publish -> consumer run "
        f"start) {median:.1f} s over {len(hops)} hops (min {hops[0]:.1f}, max {hops[-1]:.1f}); DAG.test() chain: {baseline}"
    )
    events = our_events(live_stack)
    # the corpus's events only (the file is the session's): those whose root is a corpus DAG run
    corpus_runs = {(r["dag_id"], r["dag_run_id"]) for r in corpus_run["runs"]}
    roots = {
        e["run"]["runId"]
        for e in events
        if LOCALRUN_MODULE.emitter_of(e) == "provider DAG run"
        and (e["job"]["name"], e["run"]["facets"]["airflowDagRun"]["dagRun"]["run_id"]) in corpus_runs
    }
    mine = [
        e for e in events
        if e["run"]["runId"] in roots or e["run"]["facets"].get("parent", {}).get("root", {}).get("run", {}).get("runId") in roots
    ]
    counts = LOCALRUN_MODULE.count_events(mine)
    for emitter in sorted(counts):
        kinds = ", ".join(f"{t} {counts[emitter][t]}" for t in LOCALRUN_MODULE.EVENT_TYPES if counts[emitter][t])
        lines.append(f"live lineage of the corpus, {emitter}: {kinds}")
    terminal_summary.extend(lines)
    # every asset-triggered run names what triggered it; every root run was the REST API's
    assert all(
        bool(corpus_run["triggering"].get((r["dag_id"], r["dag_run_id"]))) == (r["run_type"] == "asset_triggered")
        for r in corpus_run["runs"]
    )
