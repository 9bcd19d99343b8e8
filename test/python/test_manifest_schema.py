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
)
from contract_runtime.producers import _PRODUCERS
from contract_runtime.sqlutil import DIALECTS, PHYSICAL_TYPE_PATTERN

REPO = Path(__file__).resolve().parents[2]
SCHEMA: dict[str, Any] = json.loads((REPO / "compiler" / "schemas" / "manifest" / "v1.schema.json").read_text("utf-8"))
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
    assert MANIFEST_SCHEMA.resolve() == (REPO / "compiler" / "schemas" / "manifest" / "v1.schema.json").resolve()


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
    bad = copy.deepcopy(data)
    del bad["dags"][i]["runtime"]["datasets"][0]["quality"][0]["severity"]
    path = tmp_path / "generated" / "manifest.json"
    path.parent.mkdir()
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ManifestError) as raised:
        load_manifest(path)
    assert f"/dags/{i}/runtime/datasets/0/quality/0 (dag_id {dag['dag_id']!r}): 'severity' is a required property" in str(raised.value)
    bad = copy.deepcopy(data)
    bad["dags"][i]["runtime"]["datasets"][0]["schema"]["properties"][0]["physicalType"] = "text; drop table x"
    problem = schema_problem(bad)
    assert problem is not None and problem.startswith(f"/dags/{i}/runtime/datasets/0/schema/properties/0/physicalType ")
    bad = copy.deepcopy(data)
    bad["dags"][i]["runtime"]["producer"]["type"] = "spark"
    problem = schema_problem(bad)
    assert problem is not None and problem.startswith(f"/dags/{i}/runtime/producer/type ") and "'spark' is not one of" in problem
