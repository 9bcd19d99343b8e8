"""Event-driven ingestion in real Airflow 3.2.2 (issue 36, ADR 0034).

The golden case ``queue-triggered-load`` (a load on ``trigger: {queue: ...}``) is compiled; its
module must import with no I/O, load in Airflow's DagBag, and serialize (``DagSerialization``, as
the dag-processor stores it) with the source Asset's watcher intact: the ``MessageQueueTrigger``
resolves to the Amazon provider's ``SqsSensorTrigger`` with the manifest's queue, Connection and
poll interval, which is what the dag-processor writes as the Asset's trigger
(``airflow/dag_processing/collection.py`` ``add_asset_trigger_references`` → ``encode_trigger``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagcheck
import pytest

CASE = dagcheck.PROJECT_CASES / "queue-triggered-load"
SQS_TRIGGER = "airflow.providers.amazon.aws.triggers.sqs.SqsSensorTrigger"


@pytest.fixture(scope="module")
def queue_case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("queue-triggered-load")
    dagcheck.copy_project(
        CASE / "input", root, orchestration_sources=dagcheck.PROJECT_CASES / "_base" / "orchestration" / "airflow" / "sources"
    )
    result = dagcheck.run_compile(root)
    assert result.returncode == 0, result.stderr
    manifest = json.loads((root / "generated" / "manifest.json").read_text(encoding="utf-8"))
    return root, manifest


def test_queue_module_imports_without_io(queue_case: tuple[Path, dict[str, Any]]) -> None:
    root, manifest = queue_case
    modules = sorted((root / "generated" / "dags").rglob("*.py"))
    assert len(modules) == len(manifest["dags"]) == 1
    results, _ = dagcheck.import_without_io(modules, cwd=root)
    for path, result in results.items():
        assert result.get("io", []) == [] and result.get("error") is None, f"{path}: {result}"


def test_the_watcher_survives_serialization_as_the_manifest_says(queue_case: tuple[Path, dict[str, Any]]) -> None:
    from airflow.serialization.encoders import encode_trigger

    root, manifest = queue_case
    dagbag = dagcheck.load_dagbag(root / "generated" / "dags")
    assert not dagbag.import_errors, dagcheck.format_import_errors(dagbag.import_errors)
    mdag = manifest["dags"][0]
    assets = {a["name"]: a for a in manifest["assets"]}
    dag = dagbag.dags[mdag["dag_id"]]
    dagcheck.check_schedule(dag, mdag, assets)
    source = "shop_platform.orders_export"
    assert mdag["schedule"] == {"assets": {"asset": source}, "cron": None}
    planned = assets[source]["watchers"]
    assert planned == [mdag["runtime"]["queue"]]

    # The SDK side: the trigger the dag-processor encodes for the Asset.
    (leaf,) = dagcheck.condition_leaves(dag.timetable.asset_condition)
    (watcher,) = leaf.watchers
    encoded = encode_trigger(watcher.trigger)
    assert watcher.name == planned[0]["name"] == "shop.orders_raw.queue"
    assert encoded["classpath"] == SQS_TRIGGER
    kwargs = encoded["kwargs"]
    assert (kwargs["sqs_queue"], kwargs["aws_conn_id"], kwargs["waiter_delay"]) == (
        planned[0]["queue"],
        planned[0]["conn_id"],
        planned[0]["poll_interval_seconds"],
    )
    assert kwargs["delete_message_on_reception"] is True

    # The scheduler side: the serialized DAG's schedule Asset and the produce inlet keep it.
    core = dagcheck.serialized(dag)
    (core_leaf,) = [a for _, a in core.timetable.asset_condition.iter_assets()]
    assert [(w.name, w.trigger["classpath"]) for w in core_leaf.watchers] == [("shop.orders_raw.queue", SQS_TRIGGER)]
    assert core_leaf.watchers[0].trigger["kwargs"]["sqs_queue"] == planned[0]["queue"]
    inlet = next(i for i in core.get_task("produce").inlets if i.name == source)
    assert [w.name for w in inlet.watchers] == ["shop.orders_raw.queue"]
