"""The manifest JSON Schema against the runtime: its TypedDicts, what it implements, what it refuses.

The compiler side (TypeScript types, golden manifests, what the compiler accepts) is
``test/unit/manifestSchema.test.ts``; together they pin compiler == schema == runtime.
"""

from __future__ import annotations

import copy
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from contract_runtime import manifest_types
from contract_runtime.manifest import (
    MANIFEST_SCHEMA,
    ManifestError,
    load_manifest,
    schema_problem,
    task_view,
)
from contract_runtime.lineage.identity import upstream_identity
from contract_runtime.producers import _PRODUCERS
from contract_runtime.sqlutil import DIALECTS, PHYSICAL_TYPE_PATTERN

REPO = Path(__file__).resolve().parents[2]
SCHEMA: dict[str, Any] = json.loads((REPO / "compiler" / "schemas" / "manifest" / "v2.schema.json").read_text("utf-8"))
DEFS: dict[str, dict[str, Any]] = SCHEMA["$defs"]


def _shape(name: str) -> tuple[set[str], set[str]]:
    """Properties and required names of a ``$defs`` entry, following ``allOf`` references."""
    d = DEFS[name]
    props, required = set(d.get("properties", {})), set(d.get("required", []))
    for part in d.get("allOf", []):
        if "$ref" in part:
            p, r = _shape(part["$ref"].removeprefix("#/$defs/"))
            props |= p
            required |= r
    return props, required


def test_the_runtime_reads_the_compilers_schema() -> None:
    assert MANIFEST_SCHEMA.resolve() == (REPO / "compiler" / "schemas" / "manifest" / "v2.schema.json").resolve()


OBJECT_DEFS = sorted(n for n, d in DEFS.items() if d.get("type") == "object" and "properties" in d and n != "DagRuntime")


@pytest.mark.parametrize("name", OBJECT_DEFS)
def test_typeddict_follows_the_schema(name: str) -> None:
    cls = getattr(manifest_types, name)
    props, required = _shape(name)
    hints = typing.get_type_hints(cls)
    assert set(hints) == props
    assert set(cls.__required_keys__) == required
    assert set(cls.__optional_keys__) == props - required


def test_runtime_union_has_one_member_per_producer_type() -> None:
    producer_types = DEFS["DagRuntime"]["properties"]["producer"]["properties"]["type"]["enum"]
    members = typing.get_args(manifest_types.DagRuntime)
    literals = sorted(typing.get_args(typing.get_type_hints(typing.get_type_hints(m)["producer"])["type"])[0] for m in members)
    assert literals == sorted(producer_types)


def test_the_schema_accepts_exactly_what_the_runtime_implements() -> None:
    """Producer types, logical types and physical (warehouse) types: schema == runtime."""
    producer_types = DEFS["DagRuntime"]["properties"]["producer"]["properties"]["type"]["enum"]
    assert sorted(producer_types) == sorted(_PRODUCERS)
    logical = DEFS["LogicalType"]["enum"]
    for name, dialect in DIALECTS.items():
        assert sorted(dialect.logical_types) == sorted(logical), name
    assert DEFS["Property"]["properties"]["physicalType"]["pattern"] == PHYSICAL_TYPE_PATTERN.pattern


def test_every_default_is_in_the_manifest() -> None:
    """Rule names, severities and on_failure are required: the compiler decides them, never the runtime."""
    assert {"name", "severity"} <= set(DEFS["QualityRule"]["required"])
    assert "on_failure" in DEFS["RuntimeCommon"]["required"]


def _bundled() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REPO / "generated" / "manifest.json").read_text("utf-8"))
    return data


def test_bundled_manifest_is_valid() -> None:
    assert schema_problem(_bundled()) is None


def test_a_damaged_manifest_fails_the_read_with_the_path_of_the_field(tmp_path: Path) -> None:
    data = _bundled()
    i, dag = next((i, d) for i, d in enumerate(data["dags"]) if d["runtime"]["producer"]["type"] == "sql")
    # The dataset's schema and authored rules are its asset's (manifestVersion 2).
    k = next(k for k, a in enumerate(data["assets"]) if a["quality"] and a["producer"] is not None)
    bad = copy.deepcopy(data)
    del bad["assets"][k]["quality"][0]["severity"]
    path = tmp_path / "generated" / "manifest.json"
    path.parent.mkdir()
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ManifestError) as raised:
        load_manifest(path)
    assert f"/assets/{k}/quality/0: 'severity' is a required property" in str(raised.value)
    bad = copy.deepcopy(data)
    a = next(k for k, a in enumerate(data["assets"]) if a["name"] == dag["runtime"]["datasets"][0]["asset"])
    bad["assets"][a]["schema"]["properties"][0]["physicalType"] = "text; drop table x"
    problem = schema_problem(bad)
    assert problem is not None and problem.startswith(f"/assets/{a}/schema/properties/0/physicalType: ")
    # Version 1 repeated them in the runtime dataset: the version-2 schema refuses them there.
    bad = copy.deepcopy(data)
    bad["dags"][i]["runtime"]["datasets"][0]["quality"] = []
    problem = schema_problem(bad)
    assert problem is not None and problem.startswith(f"/dags/{i}/runtime/datasets/0 (dag_id {dag['dag_id']!r}): Additional properties are not allowed ('quality'")
    bad = copy.deepcopy(data)
    bad["dags"][i]["runtime"]["producer"]["type"] = "spark"
    problem = schema_problem(bad)
    assert problem is not None and problem.startswith(f"/dags/{i}/runtime/producer/type ") and "'spark' is not one of" in problem


def _write(tmp_path: Path, data: dict[str, Any], name: str) -> Path:
    path = tmp_path / name / "generated" / "manifest.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_task_checks_what_it_reads_and_names_the_field_in_the_file(tmp_path: Path) -> None:
    data = _bundled()
    index = {d["dag_id"]: i for i, d in enumerate(data["dags"])}
    producer_of = {o: d["dag_id"] for d in data["dags"] for o in d["outlets"]}
    # A DAG with an upstream another DAG produces, and a DAG that reads neither of them.
    reader = next(d for d in data["dags"] if any(n in producer_of for n in d["inlets"]))
    upstream = next(n for n in reader["inlets"] if n in producer_of)
    producer = producer_of[upstream]
    named = set(reader["inlets"]) | set(reader["outlets"])
    other = next(
        d["dag_id"] for d in data["dags"]
        if d["dag_id"] not in (reader["dag_id"], producer) and not set(d["outlets"]) & named
    )
    view, positions = task_view(data, reader["dag_id"])
    assert [d["dag_id"] for d in view["dags"]] == [d["dag_id"] for d in data["dags"] if d["dag_id"] in {reader["dag_id"], *(producer_of[n] for n in reader["inlets"] if n in producer_of)}]
    # ... and the assets of every dataset those DAGs produce (joined at load, ADR 0017f).
    joined = named | {x["asset"] for d in view["dags"] for x in d["runtime"]["datasets"]}
    assert sorted(a["name"] for a in view["assets"]) == sorted(a["name"] for a in data["assets"] if a["name"] in joined)
    assert view["edges"] == [] and positions["dags"] == [index[d["dag_id"]] for d in view["dags"]]

    # Another DAG's damaged entry: the reader's tasks run, the whole check refuses it.
    bad = copy.deepcopy(data)
    del bad["dags"][index[other]]["owner"]
    path = _write(tmp_path, bad, "other")
    got = load_manifest(path, reader["dag_id"])  # what a task gets back is its view, not the file
    got_ids = [d["dag_id"] for d in got["dags"]]
    assert got_ids == [d["dag_id"] for d in task_view(bad, reader["dag_id"])[0]["dags"]] and other not in got_ids
    with pytest.raises(ManifestError, match=rf"/dags/{index[other]} \(dag_id '{other}'\)"):
        load_manifest(path)
    # The reader's own entry, its upstream's producer and an Asset it names: refused, at the file's index.
    for name, damage, where in (
        ("own", lambda m: m["dags"][index[reader["dag_id"]]].pop("owner"), f"/dags/{index[reader['dag_id']]} (dag_id '{reader['dag_id']}')"),
        ("producer", lambda m: m["dags"][index[producer]].pop("owner"), f"/dags/{index[producer]} (dag_id '{producer}')"),
        ("asset", lambda m: next(a for a in m["assets"] if a["name"] == upstream).pop("uri"), "/assets/"),
    ):
        bad = copy.deepcopy(data)
        damage(bad)
        with pytest.raises(ManifestError) as raised:
            load_manifest(_write(tmp_path, bad, name), reader["dag_id"])
        assert f"does not match the manifest schema at {where}" in str(raised.value), (name, str(raised.value))
    asset_index = next(i for i, a in enumerate(data["assets"]) if a["name"] == upstream)
    assert f"/assets/{asset_index}: 'uri' is a required property" in str(raised.value)


def test_the_freshness_monitors_task_reads_every_dataset_joined_to_its_asset() -> None:
    """The monitor has no dags[] entry: it reads the whole file, and its lineage names each watched
    asset as the producing DAG's datasets do, through their URIs (ADR 0017f joins every DAG then)."""
    path = REPO / "generated" / "manifest.json"
    data = _bundled()
    monitor = data["freshness_monitor"]["dag_id"]
    whole = load_manifest(path)
    got = load_manifest(path, monitor)
    assert [d["dag_id"] for d in got["dags"]] == [d["dag_id"] for d in data["dags"]]
    datasets = [x for d in got["dags"] for x in d["runtime"]["datasets"]]
    assert datasets and all("uri" in x and "schema" in x and "quality" in x for x in datasets)
    warehouse = {"warehouse_namespace": "duckdb://lineage", "warehouse_database": "warehouse"}
    watched = [a["name"] for a in data["freshness_monitor"]["assets"]]
    # Among them an asset whose URI names its own location (not the warehouse's table).
    assert any(not upstream_identity(whole, n, warehouse)[0].startswith("duckdb") for n in watched)
    assert [upstream_identity(got, n, warehouse) for n in watched] == [upstream_identity(whole, n, warehouse) for n in watched]
