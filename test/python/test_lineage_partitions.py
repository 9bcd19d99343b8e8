"""Lineage of a partitioned contract's run (issue 35 item 3; ADR 0028; docs/contract-format.md
"Partitions").

Every event of a run of a partitioned contract carries the run facet ``contractAssets_partition``
(key, grain, column, UTC bounds; schema ``ContractAssetsPartitionRunFacet.json``), and the dataset
it tested (OTHER) and each dataset it published (COMPLETE) the official ``subset`` facet with a
partition condition naming the key. Asserted here, with events going through the real
openlineage-python client into a file (``lineage_testkit``):

* the facets' values, literally, for the DAGs of a compiled manifest (the golden case
  ``partition-chain``: a day and an hour grain) and for hand-made entries of the other grains; every
  event validates against the official schemas and ours;
* a write-audit-publish run on DuckDB through ``stages`` (the run's ``partition_key`` as Airflow
  gives it): START, OTHER, COMPLETE, and a blocked run's FAIL, all naming the partition;
* a run whose key is missing or of another grain still sends its FAIL, without a partition;
* an unpartitioned contract's events carry neither facet, and are byte for byte the same with a
  stray key on the run;
* the size cap (``lineage/shrink.py``) never drops or changes them.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import stages
from contract_runtime.lineage import (
    emit_assertions,
    emit_complete,
    emit_fail,
    emit_skip,
    emit_start,
)
from contract_runtime.lineage import events as E
from contract_runtime.lineage.facets import PRODUCER, SCHEMA_BASE_URL
from contract_runtime.manifest import load_manifest as runtime_load_manifest
from contract_runtime.warehouse import DuckDBWarehouse, Warehouse
from lineage_testkit import (
    REPO_ROOT,
    check_run_cycle,
    dag_entry,
    iter_facets,
    load_manifest,
    make_run,
    read_events,
    requires_spec,
    spec_registry,
    synthetic_outputs,
    synthetic_results,
    use_file_transport,
    validate_event,
)
from openlineage.client.serde import Serde
from runtime_support import dag_entry as runtime_dag_entry
from runtime_support import run_identity, write_manifest

CASE_MANIFEST: Path = REPO_ROOT / "test" / "cases" / "partition-chain" / "expected" / "generated" / "manifest.json"
#: A compiled manifest whose three DAGs are partitioned (day of event_date, hour of event_time).
PARTITIONED = copy.deepcopy(dict(runtime_load_manifest(CASE_MANIFEST)))
#: The bundled corpus: no contract of it is partitioned.
CORPUS = load_manifest()
RUN_FACET_SCHEMA = f"{SCHEMA_BASE_URL}ContractAssetsPartitionRunFacet.json#/$defs/ContractAssetsPartitionRunFacet"
SUBSET_SCHEMA = "https://openlineage.io/spec/facets/1-0-0/BaseSubsetDatasetFacet.json#/$defs/"


@pytest.fixture
def events_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "events.jsonl"
    use_file_transport(monkeypatch, path)
    monkeypatch.delenv("CONTRACT_ASSETS_GIT_COMMIT", raising=False)
    monkeypatch.delenv("GIT_COMMIT", raising=False)
    return path


def keyed_run(dag_id: str, task_id: str, key: str | None, **changes: Any) -> Any:
    """``make_run`` with the DAG run's ``partition_key`` (Airflow 3.2 ``dag_run.partition_key``)."""
    return dataclasses.replace(make_run(dag_id, task_id, **changes), partition_key=key)


def run_facet(key: str, grain: str, column: str, start: str, end: str) -> dict[str, str]:
    """The ``contractAssets_partition`` facet as the client serialises it."""
    return {
        "_producer": PRODUCER,
        "_schemaURL": RUN_FACET_SCHEMA,
        "key": key,
        "grain": grain,
        "column": column,
        "start": start,
        "end": end,
    }


def subset_facet(side: str, key: str, column: str) -> dict[str, Any]:
    """The official ``subset`` facet naming one partition; ``side`` is ``input`` or ``output``."""
    definition = "InputSubsetInputDatasetFacet" if side == "input" else "OutputSubsetOutputDatasetFacet"
    return {
        "_producer": PRODUCER,
        "_schemaURL": SUBSET_SCHEMA + definition,
        f"{side}Condition": {"type": "partition", "partitions": [{"identifier": key, "dimensions": {column: key}}]},
    }


def simulate_run(manifest: dict[str, Any], dag: dict[str, Any], key: str | None) -> None:
    """START, one OTHER per dataset, COMPLETE; then a FAIL and an ABORT of the same run."""
    dag_id = dag["dag_id"]
    emit_start(manifest, dag, keyed_run(dag_id, "produce", key))
    for dataset in dag["runtime"]["datasets"]:
        emit_assertions(manifest, dag, keyed_run(dag_id, "audit", key), dataset, synthetic_results(dataset))
    emit_complete(manifest, dag, keyed_run(dag_id, "publish", key), synthetic_outputs(dag))
    emit_fail(manifest, dag, keyed_run(dag_id, "publish", key), RuntimeError("swap failed"), "publish")
    emit_skip(manifest, dag, keyed_run(dag_id, "produce", key), "web.events_raw is degraded", [])


# (dag_id, key, the expected run facet) for the golden manifest's DAGs; values written out, not
# computed by contract_runtime.partitions, so a wrong bound fails here.
GOLDEN_RUNS = [
    ("web.events_hourly", "2026-12-07T11", run_facet("2026-12-07T11", "hour", "event_time", "2026-12-07T11:00:00+00:00", "2026-12-07T12:00:00+00:00")),
    ("web.events_daily", "2026-12-07", run_facet("2026-12-07", "day", "event_date", "2026-12-07T00:00:00+00:00", "2026-12-08T00:00:00+00:00")),
    ("web.events_by_country", "2026-02-28", run_facet("2026-02-28", "day", "event_date", "2026-02-28T00:00:00+00:00", "2026-03-01T00:00:00+00:00")),
]


@requires_spec
@pytest.mark.parametrize(("dag_id", "key", "expected"), GOLDEN_RUNS, ids=[r[0] for r in GOLDEN_RUNS])
def test_every_event_of_a_partitioned_run_names_its_partition_and_is_spec_valid(
    events_file: Path, dag_id: str, key: str, expected: dict[str, str]
) -> None:
    dag = dag_entry(PARTITIONED, dag_id)
    simulate_run(PARTITIONED, dag, key)
    events = read_events(events_file)
    types = [e["eventType"] for e in events]
    assert types == ["START"] + ["OTHER"] * len(dag["runtime"]["datasets"]) + ["COMPLETE", "FAIL", "ABORT"]
    check_run_cycle(events[: types.index("COMPLETE") + 1], "COMPLETE")
    for event in events:
        validate_event(event)
        assert event["run"]["facets"]["contractAssets_partition"] == expected, event["eventType"]
    column = expected["column"]
    for event in events:
        if event["eventType"] == "OTHER":
            (tested,) = event["inputs"]
            assert tested["inputFacets"]["subset"] == subset_facet("input", key, column)
            assert "dataQualityAssertions" in tested["inputFacets"]
        elif event["eventType"] == "COMPLETE":
            assert [o["name"] for o in event["outputs"]] == [d["asset"] for d in dag["runtime"]["datasets"]]
            for output in event["outputs"]:
                assert output["outputFacets"]["subset"] == subset_facet("output", key, column)
                assert output["outputFacets"]["outputStatistics"]["rowCount"] == 42
            # what the run read is not claimed to be one partition: the contract's SQL decides
            assert all("subset" not in (i.get("inputFacets") or {}) for i in event["inputs"])
        else:
            assert event["inputs"] == [] and event["outputs"] == []
    fail = next(e for e in events if e["eventType"] == "FAIL")
    assert fail["run"]["facets"]["errorMessage"]["message"] == "task publish failed: RuntimeError: swap failed"
    abort = next(e for e in events if e["eventType"] == "ABORT")
    assert abort["run"]["facets"]["contractAssets_skip"]["reason"] == "web.events_raw is degraded"


GRAINS = [
    ("week", "%G-W%V", "2026-W53", "2026-12-28T00:00:00+00:00", "2027-01-04T00:00:00+00:00"),
    ("month", "%Y-%m", "2026-12", "2026-12-01T00:00:00+00:00", "2027-01-01T00:00:00+00:00"),
    ("quarter", "%Y-Q{quarter}", "2026-Q4", "2026-10-01T00:00:00+00:00", "2027-01-01T00:00:00+00:00"),
    ("year", "%Y", "2026", "2026-01-01T00:00:00+00:00", "2027-01-01T00:00:00+00:00"),
]


@requires_spec
@pytest.mark.parametrize(("grain", "key_format", "key", "start", "end"), GRAINS, ids=[g[0] for g in GRAINS])
def test_every_grain_gives_its_key_and_utc_bounds(
    events_file: Path, grain: str, key_format: str, key: str, start: str, end: str
) -> None:
    """The golden case has day and hour; the other grains on its daily DAG's entry."""
    manifest = copy.deepcopy(PARTITIONED)
    dag = dag_entry(manifest, "web.events_daily")
    dag["runtime"]["partitioning"] = {"column": "event_date", "grain": grain, "key_format": key_format}
    emit_start(manifest, dag, keyed_run(dag["dag_id"], "produce", key))
    emit_complete(manifest, dag, keyed_run(dag["dag_id"], "publish", key), synthetic_outputs(dag))
    start_event, complete_event = read_events(events_file)
    for event in (start_event, complete_event):
        validate_event(event)
        assert event["run"]["facets"]["contractAssets_partition"] == run_facet(key, grain, "event_date", start, end)
    assert complete_event["outputs"][0]["outputFacets"]["subset"] == subset_facet("output", key, "event_date")


@requires_spec
@pytest.mark.parametrize("key", [None, "2026-12-07"], ids=["no key", "a day key on an hour grain"])
def test_a_run_without_a_valid_key_still_sends_its_fail_without_a_partition(events_file: Path, key: str | None) -> None:
    """``produce`` fails such a run (PartitionKeyError); its FAIL must not be lost to the facet."""
    dag = dag_entry(PARTITIONED, "web.events_hourly")
    emit_fail(PARTITIONED, dag, keyed_run(dag["dag_id"], "produce", key), RuntimeError("no key"), "produce")
    (event,) = read_events(events_file)
    validate_event(event)
    assert event["eventType"] == "FAIL"
    assert "contractAssets_partition" not in event["run"]["facets"]
    assert event["run"]["facets"]["errorMessage"]["message"] == "task produce failed: RuntimeError: no key"


@requires_spec
def test_a_quarantined_output_is_not_called_a_partition_of_the_dataset(events_file: Path) -> None:
    """A quarantine table is the run's own: the run facet names the key, the output no subset."""
    dag = dag_entry(PARTITIONED, "web.events_daily")
    (output,) = synthetic_outputs(dag)
    output.update(table="_ca_quarantine.web__events_daily__1a2b3c4d", quarantined=True)
    emit_complete(PARTITIONED, dag, keyed_run(dag["dag_id"], "publish", "2026-12-07"), [output])
    (event,) = read_events(events_file)
    validate_event(event)
    assert event["run"]["facets"]["contractAssets_partition"]["key"] == "2026-12-07"
    (emitted,) = event["outputs"]
    assert emitted["name"] == "_ca_quarantine.web__events_daily__1a2b3c4d"
    assert "subset" not in emitted["outputFacets"] and "outputStatistics" in emitted["outputFacets"]


@pytest.mark.parametrize("dag_id", [d["dag_id"] for d in CORPUS["dags"] if not d["runtime"].get("partitioning")])
def test_an_unpartitioned_contract_gets_no_partition_facet_even_with_a_stray_key(dag_id: str) -> None:
    """Every event builder, every DAG of the corpus: neither facet, and a key on the run of a
    contract that is not partitioned changes no byte of any event."""
    dag = dag_entry(CORPUS, dag_id)
    assert "partitioning" not in dag["runtime"]
    at = "2026-11-02T03:04:05+00:00"

    def serialised(key: str | None) -> list[str]:
        run = keyed_run(dag_id, "audit", key)
        built = [E.start_event(CORPUS, dag, run, event_time=at)]
        built += [
            E.assertions_event(CORPUS, dag, run, d, synthetic_results(d), event_time=at) for d in dag["runtime"]["datasets"]
        ]
        built.append(E.complete_event(CORPUS, dag, run, synthetic_outputs(dag), event_time=at))
        built.append(E.fail_event(CORPUS, dag, run, ValueError("x"), "audit", event_time=at))
        built.append(E.skip_event(CORPUS, dag, run, "skipped", [], event_time=at))
        return [Serde.to_json(e) for e in built]

    without = serialised(None)
    assert serialised("2026-04-14") == without
    for text in without:
        event = json.loads(text)
        keys = {key for _, key, _ in iter_facets(event)}
        assert not keys & {"contractAssets_partition", "subset"}, keys


# --- through the stages, on DuckDB ---------------------------------------------------------------

CONTRACT = "web.events"
PARTITIONED_SQL = (
    "select event_id, event_time from src.events where event_time >= {partition_start} and event_time < {partition_end}"
)
EVERY_ROW_SQL = "select event_id, event_time from src.events"


def _contract(sql: str) -> dict[str, Any]:
    dataset = {
        "name": "events",
        "asset": CONTRACT,
        "layer": "curated",
        "uri": "x-datalake://curated/web/events",
        "schema": {
            "version": 1,
            "properties": [
                {"name": "event_id", "logicalType": "string", "required": True},
                {"name": "event_time", "logicalType": "timestamp", "required": True},
            ],
        },
        "quality": [{"name": "event_id_not_null", "metric": "nullValues", "column": "event_id", "mustBe": 0, "severity": "error"}],
    }
    return runtime_dag_entry(
        CONTRACT,
        domain="web",
        producer={"type": "sql", "path": "sql/events.sql", "sql": sql},
        datasets=[dataset],
        partitioning={"column": "event_time", "grain": "day", "key_format": "%Y-%m-%d"},
    )


@pytest.fixture
def duck(tmp_path: Path) -> Iterator[Callable[[str | None], Warehouse]]:
    path = tmp_path / "w.duckdb"
    with DuckDBWarehouse(path) as wh:
        wh.execute("create schema src")
        wh.execute("create table src.events (event_id varchar, event_time timestamp)")
        for row in (("e1", "2026-04-14 08:00:00"), ("e2", "2026-04-14 23:59:59"), ("e3", "2026-04-15 00:00:00")):
            wh.execute("insert into src.events values (?, cast(? as timestamp))", list(row))
    yield lambda conn_id: DuckDBWarehouse(path)


def _wap(root: Path, opener: Callable[[str | None], Warehouse], sql: str, key: str, run_id: str) -> None:
    """produce, audit, publish of one key as Airflow runs them; a blocked audit's FAIL as the
    operators' failure callback sends it (``stages.lineage_fail``)."""
    manifest = write_manifest(root / run_id, [_contract(sql)])
    produce, audit, publish = (run_identity(CONTRACT, run_id=run_id, partition_key=key, task_id=t) for t in ("produce", "audit", "publish"))
    stages.produce(manifest, CONTRACT, produce, opener=opener)
    try:
        summary = stages.audit(manifest, CONTRACT, audit, opener=opener)
    except stages.QualityGateFailed as error:
        stages.lineage_fail(manifest, CONTRACT, audit, error, "audit")
        return
    stages.publish(manifest, CONTRACT, publish, summary, opener=opener)


DAY_14 = run_facet("2026-04-14", "day", "event_time", "2026-04-14T00:00:00+00:00", "2026-04-15T00:00:00+00:00")


@requires_spec
def test_write_audit_publish_of_a_partition_names_it_on_every_event(
    events_file: Path, tmp_path: Path, duck: Callable[[str | None], Warehouse]
) -> None:
    """The stages read ``run.partition_key`` as they do for the SQL and the publish; so does lineage."""
    _wap(tmp_path, duck, PARTITIONED_SQL, "2026-04-14", "manual__a")
    events = read_events(events_file)
    assert [e["eventType"] for e in events] == ["START", "OTHER", "COMPLETE"]
    check_run_cycle(events, "COMPLETE")
    for event in events:
        validate_event(event)
        assert event["run"]["facets"]["contractAssets_partition"] == DAY_14
    (tested,) = events[1]["inputs"]
    (published,) = events[2]["outputs"]
    assert tested["name"] == published["name"] == "w.web.events"  # the DuckDB file w.duckdb, schema web
    assert tested["inputFacets"]["subset"] == subset_facet("input", "2026-04-14", "event_time")
    assertions = {a["name"]: a["success"] for a in tested["inputFacets"]["dataQualityAssertions"]["assertions"]}
    assert assertions["partition_bounds"] is True
    assert published["outputFacets"]["subset"] == subset_facet("output", "2026-04-14", "event_time")
    assert published["outputFacets"]["outputStatistics"]["rowCount"] == 2  # e1, e2: the partition's rows


@requires_spec
def test_a_blocked_partition_run_fails_naming_the_partition_it_tested(
    events_file: Path, tmp_path: Path, duck: Callable[[str | None], Warehouse]
) -> None:
    """Every row selected for the key 2026-04-16: ``partition_bounds`` blocks; OTHER and FAIL name the key."""
    _wap(tmp_path, duck, EVERY_ROW_SQL, "2026-04-16", "manual__bad")
    events = read_events(events_file)
    assert [e["eventType"] for e in events] == ["START", "OTHER", "FAIL"]
    check_run_cycle(events, "FAIL")
    day_16 = run_facet("2026-04-16", "day", "event_time", "2026-04-16T00:00:00+00:00", "2026-04-17T00:00:00+00:00")
    for event in events:
        validate_event(event)
        assert event["run"]["facets"]["contractAssets_partition"] == day_16
    (tested,) = events[1]["inputs"]
    assert tested["inputFacets"]["subset"] == subset_facet("input", "2026-04-16", "event_time")
    failed = [a for a in tested["inputFacets"]["dataQualityAssertions"]["assertions"] if not a["success"]]
    assert [(a["name"], a["actual"]) for a in failed] == [("partition_bounds", "3")]


# --- the size cap ----------------------------------------------------------------------------------


@requires_spec
def test_the_size_cap_keeps_the_partition_facets(events_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Thousands of assertions and columns under a 40 kB cap: shrunk, valid, partition intact."""
    monkeypatch.setenv("CONTRACT_ASSETS_LINEAGE_MAX_BYTES", "40000")
    dag = dag_entry(PARTITIONED, "web.events_hourly")
    dataset = dag["runtime"]["datasets"][0]
    key = "2026-12-07T11"
    results = [
        {"name": f"rule_{i:05d}", "metric": "invalidValues", "column": "country", "severity": "warning",
         "operator": "mustBe", "expected": 0, "actual": "x" * 300, "success": True, "type": "library"}
        for i in range(5000)
    ]
    emit_assertions(PARTITIONED, dag, keyed_run(dag["dag_id"], "audit", key), dataset, results)
    (output,) = synthetic_outputs(dag)
    output["columns"] = [{"name": f"column_{i:05d}", "type": "DECIMAL(18, 2)"} for i in range(6000)]
    emit_complete(PARTITIONED, dag, keyed_run(dag["dag_id"], "publish", key), [output])
    other, complete = read_events(events_file)
    expected = GOLDEN_RUNS[0][2]
    for event in (other, complete):
        validate_event(event)
        assert len(json.dumps(event).encode("utf-8")) <= 40000
        changes = event["run"]["facets"]["contractAssets_shrink"]["changes"]
        assert changes and not [c for c in changes if "subset" in c["path"] or "partition" in c["path"]], changes
        assert event["run"]["facets"]["contractAssets_partition"] == expected
    assert other["inputs"][0]["inputFacets"]["subset"] == subset_facet("input", key, "event_time")
    assert complete["outputs"][0]["outputFacets"]["subset"] == subset_facet("output", key, "event_time")


# --- the facet's schema ---------------------------------------------------------------------------


@requires_spec
@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"grain": "minute"}, "not one of"),
        ({"key": "2026-12-07 11"}, "does not match"),
        ({"end": None}, "'end' is a required property"),
    ],
    ids=["grain", "key", "end"],
)
def test_the_partition_facet_schema_refuses_what_a_run_never_sends(change: dict[str, Any], why: str) -> None:
    from jsonschema import Draft202012Validator

    facet: dict[str, Any] = {**DAY_14, **change}
    facet = {k: v for k, v in facet.items() if v is not None}
    validator = Draft202012Validator({"$ref": RUN_FACET_SCHEMA}, registry=spec_registry())
    validator.validate(DAY_14)
    messages = [e.message for e in validator.iter_errors(facet)] + [
        e.message for error in validator.iter_errors(facet) for e in (error.context or [])
    ]
    assert any(why in m for m in messages), messages
