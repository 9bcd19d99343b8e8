"""Shared helpers for the lineage tests (test_lineage*.py).

* :data:`RunIdentity` — ``contract_runtime.run.RunIdentity``, or a structurally identical stand-in
  when that module is absent (the emit hook only reads attributes).
* :func:`spec_registry` / :func:`validate_event` — validate an emitted event against the official
  OpenLineage schema (``<repo>/../shared/openlineage-spec``) and each facet against its own facet
  schema (official ones from the spec copy, contract-assets ones from
  ``orchestration/contract_runtime/facets``), resolving ``$ref`` through a ``referencing`` registry.
* :func:`check_run_cycle` — the run-cycle rules of one DAG run.
* :func:`synthetic_results` / :func:`synthetic_outputs` — what audit and publish would pass, derived
  from a manifest entry.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT: Path = Path(__file__).resolve().parents[2]
SPEC_DIR: Path = REPO_ROOT.parent / "shared" / "openlineage-spec"
CUSTOM_FACETS_DIR: Path = REPO_ROOT / "orchestration" / "contract_runtime" / "facets"
MANIFEST_PATH: Path = REPO_ROOT / "generated" / "manifest.json"
CORE_SCHEMA_ID = "https://openlineage.io/spec/2-0-2/OpenLineage.json"

requires_spec = pytest.mark.skipif(
    not (SPEC_DIR / "OpenLineage.json").is_file(),
    reason=f"the OpenLineage spec copy is not at <repo>/../shared/openlineage-spec ({SPEC_DIR}); "
    "spec validation needs it and it is never copied into the repository",
)

# Maps of facets in an event: (path to the owner, key of the facet map).
_FACET_MAPS = (("run", "facets"), ("job", "facets"))
_DATASET_FACET_MAPS = {
    "inputs": ("facets", "inputFacets"),
    "outputs": ("facets", "outputFacets"),
}


@dataclass(frozen=True)
class StandInRunIdentity:
    """Stand-in for ``contract_runtime.run.RunIdentity`` (same fields), used if that is absent."""

    dag_id: str
    run_id: str
    logical_date: datetime | None
    run_after: datetime
    try_number: int
    max_tries: int
    task_id: str
    map_index: int = -1
    clear_number: int = 0
    bundle_version: str | None = None
    first_try_number: int = 1
    bundle_name: str | None = None
    triggering_events: tuple[Any, ...] = field(default=(), hash=False)


try:
    from contract_runtime.run import RunIdentity
except (
    ImportError
):  # the runtime's run module is not there yet: the hook only reads attributes
    RunIdentity = StandInRunIdentity  # type: ignore[assignment,misc]


def make_run(
    dag_id: str,
    task_id: str = "produce",
    *,
    logical_date: datetime | None = None,
    try_number: int = 1,
) -> RunIdentity:
    """A run identity for ``dag_id``; asset-triggered style (no logical date) unless one is given."""
    return RunIdentity(
        dag_id=dag_id,
        run_id="asset_triggered__2026-11-02T03:04:05.678901+00:00",
        logical_date=logical_date,
        run_after=datetime(2026, 11, 2, 3, 4, 5, 678901, tzinfo=UTC),
        try_number=try_number,
        max_tries=2,
        task_id=task_id,
        map_index=-1,
    )


def load_manifest() -> dict[str, Any]:
    """The compiled manifest of the bundled corpus."""
    return json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))


def dag_entry(manifest: Mapping[str, Any], dag_id: str) -> dict[str, Any]:
    """The ``dags[]`` entry for ``dag_id``."""
    return next(d for d in manifest["dags"] if d["dag_id"] == dag_id)


def read_events(path: Path) -> list[dict[str, Any]]:
    """Events written by the file transport in append mode (one JSON document per line)."""
    if not path.exists():
        return []
    return [
        json.loads(line)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def use_file_transport(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Configure the openlineage client (through its own env vars) to append events to ``path``."""
    for key in list(__import__("os").environ):
        if key.startswith("OPENLINEAGE"):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "file")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__LOG_FILE_PATH", str(path))
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__APPEND", "true")


@cache
def spec_registry() -> Any:
    """A ``referencing`` registry of the core schema, every official facet schema and ours."""
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    paths = [
        SPEC_DIR / "OpenLineage.json",
        *sorted((SPEC_DIR / "facets").glob("*.json")),
    ]
    paths += sorted(CUSTOM_FACETS_DIR.glob("*.json"))
    resources = []
    for path in paths:
        contents = json.loads(path.read_text(encoding="utf-8"))
        resources.append(
            (
                contents["$id"],
                Resource.from_contents(contents, default_specification=DRAFT202012),
            )
        )
    return Registry().with_resources(resources)


def _validator(ref: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(
        {"$ref": ref},
        registry=spec_registry(),
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )


def iter_facets(event: Mapping[str, Any]) -> Iterable[tuple[str, str, dict[str, Any]]]:
    """Every facet of an event as ``(where, key, facet)``."""
    for owner, field in _FACET_MAPS:
        for key, facet in (event.get(owner, {}).get(field) or {}).items():
            yield f"{owner}.{field}", key, facet
    for side, fields in _DATASET_FACET_MAPS.items():
        for index, dataset in enumerate(event.get(side) or []):
            for field in fields:
                for key, facet in (dataset.get(field) or {}).items():
                    yield f"{side}[{index}].{field}", key, facet


#: Core definitions a facet may name as its ``_schemaURL`` when it has no schema of its own.
GENERIC_FACET_SCHEMAS = frozenset(
    f"{CORE_SCHEMA_ID}#/$defs/{name}"
    for name in (
        "RunFacet",
        "JobFacet",
        "DatasetFacet",
        "InputDatasetFacet",
        "OutputDatasetFacet",
    )
)


def validate_event(
    event: Mapping[str, Any], *, allow_generic_facets: bool = False
) -> list[str]:
    """Validate an event against the core RunEvent schema, then each facet against its own schema.

    Each facet must carry ``_producer`` and ``_schemaURL``; the schema document is the one whose
    ``$id`` is the ``_schemaURL`` without its fragment, the facet must be valid against the
    fragment's definition, and ``{key: facet}`` against the document's top level (so the facet key
    is the one the schema names).

    :param allow_generic_facets: Accept facets whose ``_schemaURL`` is a core base definition
        (:data:`GENERIC_FACET_SCHEMAS`, e.g. the Airflow provider's ``airflow`` and
        ``airflowDagRun`` run facets declare ``OpenLineage.json#/$defs/RunFacet``): such a facet is
        validated against that definition, the only schema it names. Off for our own events,
        whose facets all have schemas of their own.
    :returns: ``where.key`` of each facet validated against a generic definition only.
    """
    _validator(f"{CORE_SCHEMA_ID}#/$defs/RunEvent").validate(event)
    registry = spec_registry()
    generic: list[str] = []
    for where, key, facet in iter_facets(event):
        assert "_producer" in facet and "_schemaURL" in facet, (
            f"{where}.{key} lacks _producer/_schemaURL"
        )
        if facet["_schemaURL"] in GENERIC_FACET_SCHEMAS:
            assert allow_generic_facets, (
                f"{where}.{key}: {facet['_schemaURL']} is a base definition, not a facet schema"
            )
            _validator(facet["_schemaURL"]).validate(facet)
            generic.append(f"{where}.{key}")
            continue
        document_id, _, fragment = facet["_schemaURL"].partition("#")
        assert fragment.startswith("/$defs/"), facet["_schemaURL"]
        document = registry.contents(document_id)
        assert key in document["properties"], (
            f"{where}.{key}: schema {document_id} names {list(document['properties'])}"
        )
        _validator(facet["_schemaURL"]).validate(facet)
        _validator(document_id).validate({key: facet})
    return generic


def is_tz_aware(text: str) -> bool:
    """True when ``text`` is an ISO 8601 date-time with a UTC offset."""
    parsed = datetime.fromisoformat(text)
    return parsed.tzinfo is not None and parsed.utcoffset() is not None


def check_run_cycle(events: list[Mapping[str, Any]], terminal: str) -> None:
    """The run-cycle rules for the events of one DAG run, in emission order.

    One START (the first event), exactly one terminal event (``terminal``, the last event), OTHER
    events only between them, one runId that is a UUID, timezone-aware event times.
    """
    types = [e["eventType"] for e in events]
    assert types.count("START") == 1 and types[0] == "START", types
    terminals = [t for t in types if t in ("COMPLETE", "FAIL", "ABORT")]
    assert terminals == [terminal] and types[-1] == terminal, types
    assert set(types[1:-1]) <= {"OTHER"}, types
    run_ids = {e["run"]["runId"] for e in events}
    assert len(run_ids) == 1, run_ids
    uuid.UUID(next(iter(run_ids)))
    for event in events:
        assert is_tz_aware(event["eventTime"]), event["eventTime"]


def synthetic_results(
    dataset: Mapping[str, Any], fail: str | None = None
) -> list[dict[str, Any]]:
    """Audit results for every rule of ``dataset``; the rule named ``fail`` fails, the rest pass."""
    results = []
    for rule in dataset.get("quality", []):
        operator = next((k for k in rule if k.startswith("mustBe")), "mustBe")
        expected = rule.get(operator)
        failed = rule.get("name") == fail
        results.append(
            {
                "name": rule.get("name"),
                "metric": rule.get("metric"),
                "column": rule.get("column"),
                "severity": rule["severity"],
                "operator": operator,
                "expected": expected,
                "actual": 7
                if failed
                else (expected if not isinstance(expected, list) else expected[0]),
                "success": not failed,
                "type": "sql" if rule.get("type") == "sql" else "library",
            }
        )
    return results


def synthetic_outputs(
    dag: Mapping[str, Any], row_count: int = 42
) -> list[dict[str, Any]]:
    """What publish would pass for every dataset of ``dag``: observed columns from the schema."""
    outputs = []
    for dataset in dag["runtime"]["datasets"]:
        outputs.append(
            {
                "dataset": dataset["name"],
                "asset": dataset["asset"],
                "table": dataset["asset"],
                "row_count": row_count,
                "columns": [
                    {
                        "name": p["name"],
                        "type": str(p.get("physicalType") or p["logicalType"]).upper(),
                    }
                    for p in dataset["schema"]["properties"]
                ],
                "quality_status": "passed",
                "quarantined": False,
            }
        )
    return outputs
