"""Shared helpers for the lineage tests (test_lineage*.py).

* :data:`RunIdentity` — ``contract_runtime.run.RunIdentity``, or a structurally identical stand-in
  when that module is absent (the emit hook only reads attributes).
* :func:`spec_registry` / :func:`validate_event` — validate an emitted event against the official
  OpenLineage schema (``<repo>/../shared/openlineage-spec``, or the folder
  ``CONTRACT_ASSETS_OPENLINEAGE_SPEC`` names: a git worktree's ``<repo>/..`` is not the main
  checkout's) and each facet against its own facet
  schema (official ones from the spec copy, contract-assets ones from
  ``orchestration/contract_runtime/facets``), resolving ``$ref`` through a ``referencing`` registry.
* :func:`check_run_cycle` — the run-cycle rules of one DAG run.
* :func:`synthetic_results` / :func:`synthetic_outputs` — what audit and publish would pass, derived
  from a manifest entry.
* :class:`HttpBackend` / :func:`running_backend` — a real HTTP lineage backend on 127.0.0.1 (a free
  port) that answers 500, hangs, or answers 500 slowly; :func:`use_http_transport` points the client
  at it; :func:`closed_port` is a port nothing listens on; :func:`clear_lineage_budgets` forgets the
  emit hook's per-task budgets (each test is its own task try).
"""

from __future__ import annotations

import copy
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT: Path = Path(__file__).resolve().parents[2]
SPEC_DIR: Path = Path(
    os.environ.get("CONTRACT_ASSETS_OPENLINEAGE_SPEC") or REPO_ROOT.parent / "shared" / "openlineage-spec"
)
CUSTOM_FACETS_DIR: Path = REPO_ROOT / "orchestration" / "contract_runtime" / "facets"
MANIFEST_PATH: Path = REPO_ROOT / "generated" / "manifest.json"
CORE_SCHEMA_ID = "https://openlineage.io/spec/2-0-2/OpenLineage.json"

requires_spec = pytest.mark.skipif(
    not (SPEC_DIR / "OpenLineage.json").is_file(),
    reason=f"the OpenLineage spec copy is not at <repo>/../shared/openlineage-spec ({SPEC_DIR}); "
    "spec validation needs it and it is never copied into the repository (CONTRACT_ASSETS_OPENLINEAGE_SPEC "
    "names another folder)",
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
    partition_key: str | None = None


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
    """The compiled manifest of the bundled corpus as a task reads it (each runtime dataset joined
    to its asset, ``contract_runtime.manifest.load_manifest``), a copy of its own."""
    from contract_runtime.manifest import load_manifest as runtime_load

    return copy.deepcopy(dict(runtime_load(MANIFEST_PATH)))


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


# --- HTTP lineage backends ------------------------------------------------------------------------

#: What a :class:`HttpBackend` does with each POST: answer 500, never answer (until the test ends),
#: or answer 500 after 0.3 s.
BACKEND_BEHAVIOURS = ("500", "hang", "slow500")


class HttpBackend(ThreadingHTTPServer):
    """A real HTTP server on 127.0.0.1 (port chosen by the OS) standing in for a broken backend.

    ``arrivals`` holds the ``time.monotonic()`` of each request as it arrived (so a test can tell
    whether one reached the backend after the task stopped waiting); ``requests`` counts them.
    """

    daemon_threads = True
    block_on_close = False

    def __init__(self, behaviour: str) -> None:
        if behaviour not in BACKEND_BEHAVIOURS:
            raise ValueError(f"unknown backend behaviour {behaviour!r}; one of {BACKEND_BEHAVIOURS}")
        self.behaviour = behaviour
        self.release = threading.Event()
        self.arrivals: list[float] = []
        super().__init__(("127.0.0.1", 0), _BackendHandler)

    @property
    def requests(self) -> int:
        return len(self.arrivals)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


class _BackendHandler(BaseHTTPRequestHandler):
    server: HttpBackend
    # what lineage backends speak (Marquez on Jetty, uvicorn, Tomcat): it answers Expect:
    # 100-continue, which http.server does only for HTTP/1.1
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.server.arrivals.append(time.monotonic())
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.server.behaviour == "hang":
            self.server.release.wait(30)
            return
        if self.server.behaviour == "slow500":
            time.sleep(0.3)
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # silence the test output
        return


@contextmanager
def running_backend(behaviour: str) -> Iterator[HttpBackend]:
    """Starts an :class:`HttpBackend` in a thread; on exit releases hung requests and stops it."""
    server = HttpBackend(behaviour)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A loopback port nothing listens on (bound once by the OS, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def use_http_transport(
    monkeypatch: pytest.MonkeyPatch,
    url: str,
    *,
    timeout: float,
    retries: int | None = None,
    client_timeout: float | None = None,
) -> None:
    """Point the openlineage client at ``url`` through its own env vars (any other ``OPENLINEAGE*``
    setting removed), with the emit hook's budget ``timeout`` (seconds, per task try).

    ``retries``: the emit hook's retries (``CONTRACT_ASSETS_LINEAGE_RETRIES``, which replace the
    client's, ADR 0016); ``None`` keeps its default. ``client_timeout``: the client's own timeout,
    which the hook replaces by the time left in the task's budget.
    """
    for key in list(os.environ):
        if key.startswith("OPENLINEAGE"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "http")
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__URL", url)
    if retries is None:
        monkeypatch.delenv("CONTRACT_ASSETS_LINEAGE_RETRIES", raising=False)
    else:
        monkeypatch.setenv("CONTRACT_ASSETS_LINEAGE_RETRIES", str(retries))
    if client_timeout is not None:
        monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TIMEOUT", str(client_timeout))
    monkeypatch.setenv("CONTRACT_ASSETS_LINEAGE_TIMEOUT", str(timeout))


def clear_lineage_budgets() -> None:
    """Forgets the lineage budgets the emit hook spent per task try (``transport._spent``)."""
    from contract_runtime.lineage import transport

    transport._spent.clear()
