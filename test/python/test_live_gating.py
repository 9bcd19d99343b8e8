"""Gating under the scheduler (the live stack, fixture ``live_stack``): a blocked publish means the
consumer never starts; a degraded publish starts its consumers, and ``require: passed`` makes one
skip — not fail — with the reason in its log and its lineage.

A small project of its own (domain ``gate``, compiled here with the real CLI, served by the
stack's ``projects`` bundle) so the bundled corpus stays as it is for the other live tests:

* ``gate.blocked`` (manual root): an ``error`` rule fails (``rowCount`` must be < 1), publish
  blocked; ``gate.after_blocked`` is scheduled on it;
* ``gate.dbt_blocked`` (manual root, ``producer: dbt``, its own dbt project): an ``error`` dbt
  test fails in ``audit``, publish blocked; ``gate.after_dbt_blocked`` is scheduled on it;
* ``gate.warned`` (manual root): a ``warning`` rule fails, published ``degraded``;
  ``gate.tolerant`` is scheduled on it (no requirement), ``gate.strict`` too, with
  ``require: passed``.

Asserted once the scheduler is quiescent (bounded wait), from the REST API, the task logs and
the lineage file: ``gate.after_blocked`` has no run at all and nothing queued that could start
one, nor has ``gate.after_dbt_blocked``; ``gate.tolerant`` ran (``asset_triggered``, success) and its triggering event's ``extra``
says ``degraded`` with the failed rule; ``gate.strict`` ran and its tasks were skipped (DAG run
``success``, ``produce``/``audit``/``publish`` ``skipped``), nothing published; its ``produce``
log and its lineage (START, then ABORT with ``contractAssets_skip``) name the upstream, the
reason and the producing run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import dagcheck
import dbt_support
import pytest
from livestack import LiveStack

CONFIG = """apiVersion: contract-assets/v1
kind: OrchestrationConfig
uri_template: "x-datalake://{layer}/{domain}/{name}"
lineage: {namespace: acme}
defaults: {retries: 0, retry_delay: PT1S, execution_timeout: PT10M, pool: default_pool, warehouse_conn_id: warehouse}
"""

ROOT = """apiVersion: contract-assets/v1
kind: TransformContract
id: gate.{name}
version: 1.0.0
status: active
domain: gate
owner: team-gate
producer: {{type: sql, path: sql/gate/{name}.sql}}
trigger: manual
datasets:
  - name: {name}
    schema: {{version: 1, properties: [{{name: id, logicalType: integer, required: true}}]}}
    quality:
      - {{name: seeded_{severity}, metric: rowCount, mustBeLessThan: 1, severity: {severity}}}
"""

CONSUMER = """apiVersion: contract-assets/v1
kind: TransformContract
id: gate.{name}
version: 1.0.0
status: active
domain: gate
owner: team-gate
producer: {{type: sql, path: sql/gate/{name}.sql}}
upstreams:
  - {{asset: gate.{upstream}{require}}}
datasets:
  - name: {name}
    schema: {{version: 1, properties: [{{name: id, logicalType: integer, required: true}}]}}
"""

DBT_ROOT = """apiVersion: contract-assets/v1
kind: TransformContract
id: gate.dbt_blocked
version: 1.0.0
status: active
domain: gate
owner: team-gate
producer: {type: dbt, project: dbt/gate, select: dbt_blocked}
trigger: manual
datasets:
  - name: dbt_blocked
    schema: {version: 1, properties: [{name: id, logicalType: integer, required: true}]}
"""

#: The dbt project of ``gate.dbt_blocked``: one model, two rows, and an ``error`` dbt test that
#: the second row fails (``accepted_values`` [1]).
DBT_FILES = {
    "dbt_project.yml": "name: gate_models\nversion: '1.0.0'\nconfig-version: 2\nprofile: contract_assets\nmodel-paths: [models]\n",
    "models/dbt_blocked.sql": "select 1 as id union all select 2 as id\n",
    "models/schema.yml": (
        "version: 2\nmodels:\n  - name: dbt_blocked\n    columns:\n      - name: id\n        data_tests:\n"
        "          - accepted_values:\n              arguments: {values: [1]}\n              config: {severity: error}\n"
    ),
}

ROOTS = {"blocked": "error", "warned": "warning"}
CONSUMERS = {
    "after_blocked": ("blocked", ""),
    "tolerant": ("warned", ""),
    "strict": ("warned", ", require: passed"),
    "after_dbt_blocked": ("dbt_blocked", ""),
}


def write_project(dest: Path, base: Path | None = None) -> Path:
    """The ``gate`` project's inputs, compiled with the CLI into ``dest/generated``. With ``base``,
    the gate contracts join a copy of that project (its contracts, config, SQL, dbt projects and
    sample data): one project, one bundle (``test_live_celery.py``)."""
    if base is None:
        (dest / "orchestration" / "airflow" / "sources").mkdir(parents=True)
        (dest / "orchestration" / "airflow" / "sources" / "config.yaml").write_text(CONFIG, encoding="utf-8")
    else:
        dagcheck.copy_project(base, dest)
        shutil.copytree(base / "orchestration" / "sample_data", dest / "orchestration" / "sample_data")
    (dest / "contracts" / "gate").mkdir(parents=True)
    (dest / "sql" / "gate").mkdir(parents=True)
    for name, severity in ROOTS.items():
        (dest / "contracts" / "gate" / f"{name}.yaml").write_text(
            ROOT.format(name=name, severity=severity), encoding="utf-8"
        )
        (dest / "sql" / "gate" / f"{name}.sql").write_text("select 1 as id union all select 2 as id\n", encoding="utf-8")
    for name, (upstream, require) in CONSUMERS.items():
        (dest / "contracts" / "gate" / f"{name}.yaml").write_text(
            CONSUMER.format(name=name, upstream=upstream, require=require), encoding="utf-8"
        )
        (dest / "sql" / "gate" / f"{name}.sql").write_text(f"select id from gate.{upstream}\n", encoding="utf-8")
    (dest / "contracts" / "gate" / "dbt_blocked.yaml").write_text(DBT_ROOT, encoding="utf-8")
    for name, text in DBT_FILES.items():
        (dest / "dbt" / "gate" / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / "dbt" / "gate" / name).write_text(text, encoding="utf-8")
    dbt_support.parse_project(dest / "dbt" / "gate")  # the committed manifest.json the compiler reads
    compiled = dagcheck.run_compile(dest)
    assert compiled.returncode == 0, compiled.describe()
    return dest


@pytest.fixture(scope="module")
def gating(live_stack: LiveStack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    project = write_project(tmp_path_factory.mktemp("gate") / "project")
    manifest = json.loads((project / "generated" / "manifest.json").read_text(encoding="utf-8"))
    strict = next(d for d in manifest["dags"] if d["dag_id"] == "gate.strict")
    assert strict["runtime"]["upstreams"] == [{"asset": "gate.warned", "require": "passed", "trigger": True}]
    live_stack.add_project("gate", project)
    dag_ids = sorted(d["dag_id"] for d in manifest["dags"])
    live_stack.wait_for_dags(dag_ids)
    for dag_id in dag_ids:
        live_stack.unpause(dag_id)
    triggered = {root: live_stack.trigger(f"gate.{root}")["dag_run_id"] for root in [*ROOTS, "dbt_blocked"]}
    live_stack.wait_until_quiescent(timeout=600)
    runs = {d: live_stack.dag_runs(d) for d in dag_ids}
    return {"project": project, "runs": runs, "triggered": triggered}


def test_blocked_publish_means_no_consumer_run(gating: dict[str, Any], live_stack: LiveStack) -> None:
    (blocked,) = gating["runs"]["gate.blocked"]
    assert blocked["state"] == "failed", blocked
    tasks = {t["task_id"]: t["state"] for t in live_stack.task_instances("gate.blocked", blocked["dag_run_id"])}
    assert tasks == {"produce": "success", "audit": "failed", "publish": "upstream_failed"}, tasks
    assert live_stack.asset_events(source_dag_id="gate.blocked") == []
    assert gating["runs"]["gate.after_blocked"] == []
    assert live_stack.queued_events("gate.after_blocked") == []


def test_failing_dbt_error_test_blocks_and_the_consumer_never_runs(gating: dict[str, Any], live_stack: LiveStack) -> None:
    """A dbt producer under the scheduler: the model builds in staging, its ``error`` dbt test
    fails in ``audit``, nothing is published, and its consumer gets no run and nothing queued."""
    (blocked,) = gating["runs"]["gate.dbt_blocked"]
    assert blocked["state"] == "failed", blocked
    tasks = {t["task_id"]: t["state"] for t in live_stack.task_instances("gate.dbt_blocked", blocked["dag_run_id"])}
    assert tasks == {"produce": "success", "audit": "failed", "publish": "upstream_failed"}, tasks
    log = live_stack.task_log("gate.dbt_blocked", blocked["dag_run_id"], "audit")
    assert "accepted_values_dbt_blocked_id__1" in log, log[-3000:]
    assert live_stack.asset_events(source_dag_id="gate.dbt_blocked") == []
    assert live_stack.postgres is not None
    assert live_stack.postgres.psql("warehouse", "select to_regclass('gate.dbt_blocked') is null").strip() == "t"
    assert gating["runs"]["gate.after_dbt_blocked"] == []
    assert live_stack.queued_events("gate.after_dbt_blocked") == []


def test_degraded_publish_starts_the_consumer_and_says_so(gating: dict[str, Any], live_stack: LiveStack) -> None:
    (warned,) = gating["runs"]["gate.warned"]
    assert warned["state"] == "success"
    (event,) = live_stack.asset_events(source_dag_id="gate.warned")
    assert event["extra"]["quality_status"] == "degraded" and event["extra"]["failed_rules"] == ["seeded_warning"]
    (run,) = gating["runs"]["gate.tolerant"]
    assert (run["run_type"], run["state"]) == ("asset_triggered", "success"), run
    (trigger,) = live_stack.triggering_events("gate.tolerant", run["dag_run_id"])
    assert trigger["id"] == event["id"] and trigger["extra"]["quality_status"] == "degraded"


def test_require_passed_skips_with_the_reason(gating: dict[str, Any], live_stack: LiveStack) -> None:
    (run,) = gating["runs"]["gate.strict"]
    assert (run["run_type"], run["state"]) == ("asset_triggered", "success"), run
    tasks = {t["task_id"]: t["state"] for t in live_stack.task_instances("gate.strict", run["dag_run_id"])}
    assert tasks == {"produce": "skipped", "audit": "skipped", "publish": "skipped"}, tasks
    assert live_stack.asset_events(source_dag_id="gate.strict") == []
    (warned,) = gating["runs"]["gate.warned"]
    log = live_stack.task_log("gate.strict", run["dag_run_id"], "produce")
    reason = (
        f"gate.strict: skipped, require: passed not met: gate.warned from gate.warned run "
        f"{warned['dag_run_id']} is degraded (failed rules: seeded_warning)"
    )
    assert reason in log, log[-3000:]
    events = [json.loads(x) for x in live_stack.lineage_file.read_text(encoding="utf-8").splitlines() if x.strip()]
    ours = [e for e in events if e["job"]["name"] == "gate.strict" and e["producer"].startswith("https://contract-assets.dev/")]
    assert [e["eventType"] for e in ours] == ["START", "ABORT"], [e["eventType"] for e in ours]
    skip = ours[-1]["run"]["facets"]["contractAssets_skip"]
    assert skip["reason"] == reason
    (unmet,) = skip["unmet"]
    assert (unmet["asset"], unmet["reason"], unmet["quality_status"], unmet["source_run_id"]) == (
        "gate.warned",
        "degraded",
        "degraded",
        warned["dag_run_id"],
    )
    # the consumed batch is named in provenance too, with the producing run's runId
    (batch,) = ours[0]["run"]["facets"]["contractAssets_provenance"]["consumed_batches"]
    (event,) = live_stack.asset_events(source_dag_id="gate.warned")
    assert batch["runId"] == event["extra"]["openlineage"]["parentRunId"]
    assert batch["quality_status"] == "degraded" and batch["source_run_id"] == warned["dag_run_id"]

