"""The bundled corpus on the CeleryExecutor stack (issue 36 item 1; fixture ``celery_stack``):
two ``airflow celery worker`` processes that share nothing on disk, a ``redis-server`` broker,
PostgreSQL for the metadata database, Celery's result backend and the warehouse, and the DAGs from
a ``GitDagBundle`` over a bare repository that the test pushes the project to.

The scenario is the LocalExecutor ones (``test_live_e2e.py`` and ``test_live_gating.py``, whose
contracts join the corpus here: one project, one bundle): seed the external upstreams, unpause
every DAG but the partitioned ones, trigger the roots through the REST API, and let the scheduler
start everything else from Asset events. Asserted, from the REST API, the warehouse, the workers'
own folders and their lineage files:

* every run succeeded, every root ran once as the test's ``manual`` run, every other DAG only
  ``asset_triggered``, each on triggering events that satisfy its schedule's condition;
* row counts equal those of the ``DAG.test()`` run (``test_e2e.EXPECTED_ROWS``);
* the tasks ran on both workers (``TaskInstance.hostname``, ``ca-worker-1`` and ``ca-worker-2``),
  some DAG runs on both at once (produce on one, publish on the other), and each task's log is in
  the home of the worker that ran it and in no other: no task read another's disk;
* a blocked publish (a SQL and a dbt ``error`` rule) starts nothing, and ``require: passed`` skips
  its consumer with the reason in the lineage (ABORT, ``contractAssets_skip``);
* lineage nests: each DAG run has one run of our contract job (START first, COMPLETE last, across
  the workers' files) whose ``parent`` is the provider's DAG-run run, and every provenance facet
  names the bundle's commit (``dag_bundle`` ``git``, versioned).

Measured (terminal summary): the corpus' wall time from the root triggers to the last publish and
the tasks per worker.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

import pytest
from dagcheck import REPO_ROOT
from lineage_testkit import read_events
from livestack import LiveStack
from test_e2e import EXPECTED_ROWS, EXTRACTS, LOCALRUN_MODULE, without_partitioned
from test_live_e2e import condition_holds
from test_live_gating import write_project as write_gate_project

CORPUS_TIMEOUT_S = 1800
WORKERS = {"ca-worker-1", "ca-worker-2"}
#: The gating scenario's DAGs (test_live_gating.py), compiled into the same project.
GATE = "gate."


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def celery_run(celery_stack: LiveStack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    stack = celery_stack
    # one project, one bundle: the corpus with the gating scenario's contracts (test_live_gating.py)
    project = write_gate_project(tmp_path_factory.mktemp("celery") / "project", base=REPO_ROOT)
    manifest = without_partitioned(json.loads((project / "generated" / "manifest.json").read_text(encoding="utf-8")))
    commit = stack.commit_project(project, "the bundled corpus and the gating contracts")
    dags = {d["dag_id"]: d for d in manifest["dags"]}
    registered = stack.wait_for_dags(dags, timeout=600)
    roots = sorted(d for d, entry in dags.items() if entry["schedule"]["assets"] is None)
    produced = {a["name"] for a in manifest["assets"] if a.get("producer")}
    late = [d for d in roots if set(dags[d]["inlets"]) & produced]
    assert stack.postgres is not None
    LOCALRUN_MODULE.seed_external_sample_data_postgres(project, manifest, stack.postgres.uri("warehouse"))
    for dag_id in sorted(dags):
        stack.unpause(dag_id)
    started = stack.now()
    triggered = {d: stack.trigger(d)["dag_run_id"] for d in roots if d not in late}
    stack.wait_until_quiescent(timeout=CORPUS_TIMEOUT_S)
    triggered.update({d: stack.trigger(d)["dag_run_id"] for d in late})
    every = [r for r in stack.wait_until_quiescent(timeout=CORPUS_TIMEOUT_S) if r["dag_id"] in dags]
    runs = [r for r in every if not r["dag_id"].startswith(GATE)]
    gate = {d: [r for r in every if r["dag_id"] == d] for d in dags if d.startswith(GATE)}
    tasks = {(r["dag_id"], r["dag_run_id"]): stack.task_instances(r["dag_id"], r["dag_run_id"]) for r in every}
    triggering = {
        (r["dag_id"], r["dag_run_id"]): stack.triggering_events(r["dag_id"], r["dag_run_id"])
        for r in runs
        if r["run_type"] == "asset_triggered"
    }
    events = sorted((e for f in stack.lineage_files for e in read_events(f)), key=lambda e: e["eventTime"])
    corpus = {d: entry for d, entry in dags.items() if not d.startswith(GATE)}
    return {
        "commit": commit, "dags": corpus, "registered": registered, "roots": [r for r in roots if r in corpus],
        "triggered": triggered, "gate": gate,
        "runs": runs, "tasks": tasks, "triggering": triggering, "events": events,
        "asset_events": stack.asset_events(), "started": started,
    }


def test_celery_every_run_succeeded_on_asset_events(celery_run: dict[str, Any], celery_stack: LiveStack) -> None:
    assert {d["bundle_name"] for d in celery_run["registered"].values()} == {"git"}
    failed = [(r["dag_id"], r["state"]) for r in celery_run["runs"] if r["state"] != "success"]
    assert not failed, f"{failed}\n{celery_stack.diagnose(celery_run['runs'])}"
    by_dag: dict[str, list[dict[str, Any]]] = {}
    for r in celery_run["runs"]:
        by_dag.setdefault(r["dag_id"], []).append(r)
    assert set(by_dag) == set(celery_run["dags"]), sorted(set(celery_run["dags"]) - set(by_dag))
    for root in celery_run["roots"]:
        assert [(r["run_type"], r["dag_run_id"]) for r in by_dag[root]] == [("manual", celery_run["triggered"][root])], root
    for dag_id, dag_runs in by_dag.items():
        if dag_id in celery_run["roots"]:
            continue
        assert {r["run_type"] for r in dag_runs} == {"asset_triggered"}, (dag_id, dag_runs)
        tree = celery_run["dags"][dag_id]["schedule"]["assets"]
        for r in dag_runs:
            assets = {e["name"] for e in celery_run["triggering"][(dag_id, r["dag_run_id"])]}
            assert condition_holds(tree, assets), (dag_id, sorted(assets), tree)
    for r in celery_run["runs"]:
        assert r["bundle_version"] == celery_run["commit"], r


def test_celery_row_counts_equal_the_dag_test_run(celery_run: dict[str, Any], celery_stack: LiveStack) -> None:
    assert celery_stack.postgres is not None
    counts = {}
    for table in EXPECTED_ROWS:
        if table in EXTRACTS:
            continue
        schema, name = table.split(".", 1)
        counts[table] = int(celery_stack.postgres.psql("warehouse", f'select count(*) from "{schema}"."{name}"'))
    assert counts == {t: n for t, n in EXPECTED_ROWS.items() if t not in EXTRACTS}


def test_celery_tasks_ran_on_both_workers_each_on_its_own_disk(
    celery_run: dict[str, Any], celery_stack: LiveStack, terminal_summary: list[str]
) -> None:
    per_worker: Counter[str] = Counter()
    spanning = 0
    for (dag_id, run_id), tis in celery_run["tasks"].items():
        ran = [t for t in tis if t["state"] in ("success", "failed")]
        hosts = {t["hostname"] for t in ran}
        assert hosts <= WORKERS, (dag_id, hosts)
        spanning += len(hosts) > 1
        for t in ran:
            per_worker[t["hostname"]] += 1
            n = int(str(t["hostname"]).rsplit("-", 1)[1])
            mine = celery_stack.worker_log(n, dag_id, run_id, t["task_id"], t["try_number"])
            other = celery_stack.worker_log(3 - n, dag_id, run_id, t["task_id"], t["try_number"])
            assert mine and not other, (dag_id, run_id, t["task_id"], t["hostname"])
    assert set(per_worker) == WORKERS, per_worker
    assert spanning > 0, "no DAG run had its tasks on both workers"
    last_publish = max(_time(e["timestamp"]) for e in celery_run["asset_events"] if e["source_dag_id"] in celery_run["dags"])
    wall = (last_publish - celery_run["started"]).total_seconds()
    terminal_summary.append(
        f"celery stack: corpus of {len(celery_run['runs'])} DAG runs in {wall:.1f} s on 2 workers; tasks per worker "
        + ", ".join(f"{w} {per_worker[w]}" for w in sorted(WORKERS))
        + f"; {spanning} DAG runs had tasks on both"
    )


def test_celery_lineage_nests_and_names_the_bundle_commit(celery_run: dict[str, Any]) -> None:
    events = celery_run["events"]
    provider: dict[str, dict[str, Any]] = {}
    ours: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        emitter = LOCALRUN_MODULE.emitter_of(e)
        if emitter == "provider DAG run":
            dag_run = e["run"]["facets"]["airflowDagRun"]["dagRun"]
            provider.setdefault(dag_run["run_id"], {"runId": e["run"]["runId"], "types": []})["types"].append(e["eventType"])
        elif emitter == "contract-assets" and "contractAssets_provenance" in e["run"]["facets"]:
            ours.setdefault(e["run"]["runId"], []).append(e)
    commit = celery_run["commit"]
    for run in celery_run["runs"]:
        parent = provider[run["dag_run_id"]]
        assert parent["types"] == ["START", "COMPLETE"], (run["dag_id"], parent)
        (mine,) = [evs for evs in ours.values() if evs[0]["run"]["facets"]["parent"]["run"]["runId"] == parent["runId"]]
        types = [e["eventType"] for e in mine]
        assert types[0] == "START" and types[-1] == "COMPLETE" and types.count("START") == 1, (run["dag_id"], types)
        for e in mine:
            facet = e["run"]["facets"]["contractAssets_provenance"]
            assert (facet["git_commit"], facet["git_commit_source"]) == (commit, "dag_bundle"), facet
            assert facet["dag_bundle"] == {"name": "git", "versioned": True, "version": commit}


def test_celery_a_blocked_publish_starts_nothing(celery_run: dict[str, Any], celery_stack: LiveStack) -> None:
    """The SQL and the dbt error rule each block their publish; neither consumer gets a run or a queued event."""
    for root, consumer in (("gate.blocked", "gate.after_blocked"), ("gate.dbt_blocked", "gate.after_dbt_blocked")):
        (blocked,) = celery_run["gate"][root]
        assert blocked["state"] == "failed", blocked
        tasks = {t["task_id"]: t["state"] for t in celery_run["tasks"][(root, blocked["dag_run_id"])]}
        assert tasks == {"produce": "success", "audit": "failed", "publish": "upstream_failed"}, tasks
        assert celery_stack.asset_events(source_dag_id=root) == []
        assert celery_run["gate"][consumer] == [] and celery_stack.queued_events(consumer) == []


def test_celery_require_passed_skips_with_the_reason(celery_run: dict[str, Any], celery_stack: LiveStack) -> None:
    (warned,) = celery_run["gate"]["gate.warned"]
    (tolerant,) = celery_run["gate"]["gate.tolerant"]
    assert (tolerant["run_type"], tolerant["state"]) == ("asset_triggered", "success"), tolerant
    (run,) = celery_run["gate"]["gate.strict"]
    assert (run["run_type"], run["state"]) == ("asset_triggered", "success"), run
    tasks = {t["task_id"]: t["state"] for t in celery_run["tasks"][("gate.strict", run["dag_run_id"])]}
    assert tasks == {"produce": "skipped", "audit": "skipped", "publish": "skipped"}, tasks
    ours = [e for e in celery_run["events"] if e["job"]["name"] == "gate.strict" and LOCALRUN_MODULE.emitter_of(e) == "contract-assets"]
    assert [e["eventType"] for e in ours] == ["START", "ABORT"], [e["eventType"] for e in ours]
    skip = ours[-1]["run"]["facets"]["contractAssets_skip"]
    assert skip["reason"] == (
        f"gate.strict: skipped, require: passed not met: gate.warned from gate.warned run "
        f"{warned['dag_run_id']} is degraded (failed rules: seeded_warning)"
    ), skip
