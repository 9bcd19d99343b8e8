"""Provenance from the deployed bundle (the live stack, fixture ``live_stack``).

The stack serves a ``GitDagBundle`` named ``git`` over a local repository. A small compiled
project (one manual root, ``gitbundle.numbers``) is committed to it; the dag-processor registers
the DAG from that commit; a run triggered through the REST API runs from it. Asserted:

* the DAG run's ``bundle_version`` (REST API) is the commit;
* our lineage provenance facet says ``git_commit`` = the commit, ``git_commit_source`` =
  ``dag_bundle``, ``dag_bundle`` = ``{"name": "git", "versioned": true, "version": <commit>}``: read from
  ``ti.bundle_instance``, where the Airflow OpenLineage provider reads it too, and equal to the
  provider's own ``dag_bundle_version`` of the task;
* a run from the unversioned ``dags-folder`` bundle says so explicitly: ``dag_bundle`` =
  ``{"name": "dags-folder", "versioned": false}``, and no commit taken from the bundle.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagcheck
import pytest
from livestack import LiveStack
from test_live_gating import CONFIG

CONTRACT = """apiVersion: contract-assets/v1
kind: TransformContract
id: gitbundle.numbers
version: 1.0.0
status: active
domain: gitbundle
owner: team-platform
producer: {type: sql, path: sql/gitbundle/numbers.sql}
trigger: manual
datasets:
  - name: numbers
    schema: {version: 1, properties: [{name: n, logicalType: integer, required: true}]}
"""

DAG_ID = "gitbundle.numbers"


def lineage(live_stack: LiveStack) -> list[dict[str, Any]]:
    return [json.loads(x) for x in live_stack.lineage_file.read_text(encoding="utf-8").splitlines() if x.strip()]


@pytest.fixture(scope="module")
def git_run(live_stack: LiveStack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    project = tmp_path_factory.mktemp("gitbundle") / "project"
    (project / "orchestration" / "airflow" / "sources").mkdir(parents=True)
    (project / "orchestration" / "airflow" / "sources" / "config.yaml").write_text(CONFIG, encoding="utf-8")
    (project / "contracts" / "gitbundle").mkdir(parents=True)
    (project / "contracts" / "gitbundle" / "numbers.yaml").write_text(CONTRACT, encoding="utf-8")
    (project / "sql" / "gitbundle").mkdir(parents=True)
    (project / "sql" / "gitbundle" / "numbers.sql").write_text("select 1 as n union all select 2 as n\n", encoding="utf-8")
    compiled = dagcheck.run_compile(project)
    assert compiled.returncode == 0, compiled.describe()
    commit = live_stack.commit_project(project, "gitbundle.numbers")
    (dag,) = live_stack.wait_for_dags([DAG_ID]).values()
    live_stack.unpause(DAG_ID)
    run = live_stack.trigger(DAG_ID)
    live_stack.wait_until_quiescent(timeout=300)
    (done,) = [r for r in live_stack.dag_runs(DAG_ID) if r["dag_run_id"] == run["dag_run_id"]]
    return {"commit": commit, "dag": dag, "run": done}


def test_the_run_uses_the_committed_bundle_version(git_run: dict[str, Any]) -> None:
    assert git_run["dag"]["bundle_name"] == "git"
    assert git_run["run"]["state"] == "success", git_run["run"]
    assert git_run["run"]["bundle_version"] == git_run["commit"]


def test_provenance_names_the_bundle_commit(git_run: dict[str, Any], live_stack: LiveStack) -> None:
    events = lineage(live_stack)
    ours = [e for e in events if e["job"]["name"] == DAG_ID and e["producer"].startswith("https://contract-assets.dev/")]
    assert [e["eventType"] for e in ours] == ["START", "OTHER", "COMPLETE"], [e["eventType"] for e in ours]
    for event in ours:
        facet = event["run"]["facets"]["contractAssets_provenance"]
        assert (facet["git_commit"], facet["git_commit_source"]) == (git_run["commit"], "dag_bundle")
        assert facet["dag_bundle"] == {"name": "git", "versioned": True, "version": git_run["commit"]}
    provider_tasks = [e for e in events if e["job"]["name"] == f"{DAG_ID}.produce" and e["eventType"] == "START"]
    assert provider_tasks, "the provider sent no task event for produce"
    airflow_facet = provider_tasks[0]["run"]["facets"]["airflow"]
    assert airflow_facet["taskInstance"].get("dag_bundle_version") == git_run["commit"], airflow_facet["taskInstance"]


#: A bundled DAG of the ``dags-folder`` bundle with no schedule and no asset-triggered consumer.
UNVERSIONED_DAG = "finance.fiscal_calendar"


def _dags_folder_provenance(live_stack: LiveStack) -> list[dict[str, Any]]:
    events = lineage(live_stack)
    provenance = [  # the freshness monitor's events describe no batch: they have none
        e["run"]["facets"]["contractAssets_provenance"]
        for e in events
        if e["producer"].startswith("https://contract-assets.dev/") and "contractAssets_provenance" in e["run"]["facets"]
    ]
    return [f for f in provenance if f.get("dag_bundle", {}).get("name") == "dags-folder"]


def test_unversioned_bundle_says_so(git_run: dict[str, Any], live_stack: LiveStack) -> None:
    folder = _dags_folder_provenance(live_stack)
    if not folder:  # the corpus did not run in this session: run one bundled DAG
        live_stack.unpause(UNVERSIONED_DAG)
        run = live_stack.trigger(UNVERSIONED_DAG)
        live_stack.wait_until_quiescent(timeout=600)
        (done,) = [r for r in live_stack.dag_runs(UNVERSIONED_DAG) if r["dag_run_id"] == run["dag_run_id"]]
        assert done["state"] == "success", done
        folder = _dags_folder_provenance(live_stack)
    assert folder, "no run of the dags-folder bundle in this session"
    assert all(f["dag_bundle"] == {"name": "dags-folder", "versioned": False} for f in folder)
    assert all(f.get("git_commit_source") != "dag_bundle" for f in folder)


def test_the_repository_holds_what_ran(git_run: dict[str, Any], live_stack: LiveStack) -> None:
    assert live_stack.git_bundle is not None
    manifest = json.loads((Path(live_stack.git_bundle) / "generated" / "manifest.json").read_text(encoding="utf-8"))
    assert [d["dag_id"] for d in manifest["dags"]] == [DAG_ID]
