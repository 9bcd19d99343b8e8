"""Bring an event under the size cap explicitly, and say what was removed.

Backends cap event size (Amazon DataZone's PostLineageEvent: 300 KB); an event over the cap is
rejected whole. Rather than lose the event, :func:`shrink_event` repeatedly takes the **largest**
droppable facet and applies its next step, until the serialised event fits:

=================================  =========================================================
facet                              steps, in order
=================================  =========================================================
``dataQualityAssertions``          cut long texts (content, expected, actual, description) to
                                   :data:`MAX_TEXT` characters; keep :data:`MAX_ASSERTIONS`
                                   assertions, failed ones first; drop the facet
``schema`` (any dataset)           keep the first :data:`MAX_FIELDS` fields; drop the facet
``errorMessage.stackTrace``        keep its head and tail (:data:`STACK_HEAD` +
                                   :data:`STACK_TAIL` characters); drop the stack trace
``documentation`` (job)            cut to :data:`MAX_TEXT` characters; drop the facet
``contractAssets_provenance``      replace ``step_params`` by ``{}``
  ``.step_params``
=================================  =========================================================

Identity (job, run, dataset names), ``errorMessage.message``, provenance hashes and versions,
``parent``, ``symlinks``, statistics and a partitioned run's partition (``contractAssets_partition``
and the datasets' ``subset``: a few hundred bytes that say which data the event is about) are never
touched. Every step is recorded in a ``contractAssets_shrink`` run facet (schema in the repo), so
the event stays spec-valid and says it is incomplete. The cap applies to the serialised event
minus :data:`HEADROOM` bytes, which leaves room for the facets the client itself adds when
emitting (tags, environment variables).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openlineage.client.event_v2 import RunEvent
from openlineage.client.serde import Serde

from contract_runtime.lineage import facets as F

__all__ = ["HEADROOM", "event_size", "shrink_event"]

#: Bytes kept free under the cap for facets the openlineage client adds in ``emit``.
HEADROOM: int = 2048
MAX_ASSERTIONS: int = 50
MAX_FIELDS: int = 100
MAX_TEXT: int = 512
STACK_HEAD: int = 2048
STACK_TAIL: int = 6144


def event_size(event: Any) -> int:
    """Size in bytes of the event (or facet) as the client serialises it (UTF-8 JSON)."""
    return len(Serde.to_json(event).encode("utf-8"))


@dataclass
class _Step:
    """The next shrinking step of one facet: its current size, where it is, and the action."""

    size: int
    path: str
    apply: Callable[[], tuple[str, str]]  # performs the step, returns (action, detail)


def _cut(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "\u2026"


def _assertion_steps(path: str, holder: dict[str, Any], key: str) -> _Step:
    facet = holder[key]
    assertions = facet.assertions
    size = event_size(facet)
    long_text = any(
        len(getattr(a, name) or "") > MAX_TEXT
        for a in assertions
        for name in ("content", "expected", "actual", "description")
    )
    if long_text:

        def cut_texts() -> tuple[str, str]:
            for a in assertions:
                for name in ("content", "expected", "actual", "description"):
                    setattr(a, name, _cut(getattr(a, name), MAX_TEXT))
            return "truncated", f"texts longer than {MAX_TEXT} characters cut"

        return _Step(size, path, cut_texts)
    if len(assertions) > MAX_ASSERTIONS:

        def keep_first() -> tuple[str, str]:
            total = len(assertions)
            ranked = sorted(range(total), key=lambda i: (assertions[i].success, i))[
                :MAX_ASSERTIONS
            ]
            facet.assertions = [assertions[i] for i in sorted(ranked)]
            return (
                "truncated",
                f"kept {MAX_ASSERTIONS} of {total} assertions, failed ones first",
            )

        return _Step(size, path, keep_first)

    def drop() -> tuple[str, str]:
        del holder[key]
        return "dropped", f"{len(assertions)} assertions"

    return _Step(size, path, drop)


def _schema_step(path: str, holder: dict[str, Any]) -> _Step:
    facet = holder["schema"]
    fields = facet.fields or []
    size = event_size(facet)
    if len(fields) > MAX_FIELDS:

        def keep_first() -> tuple[str, str]:
            facet.fields = fields[:MAX_FIELDS]
            return "truncated", f"kept the first {MAX_FIELDS} of {len(fields)} fields"

        return _Step(size, path, keep_first)

    def drop() -> tuple[str, str]:
        del holder["schema"]
        return "dropped", f"{len(fields)} fields"

    return _Step(size, path, drop)


def _candidates(event: RunEvent) -> list[_Step]:
    steps: list[_Step] = []
    for side in ("inputs", "outputs"):
        for index, dataset in enumerate(getattr(event, side) or []):
            if dataset.facets and "schema" in dataset.facets:
                steps.append(
                    _schema_step(f"{side}[{index}].facets.schema", dataset.facets)
                )
            input_facets = getattr(dataset, "inputFacets", None)
            if input_facets and "dataQualityAssertions" in input_facets:
                steps.append(
                    _assertion_steps(
                        f"{side}[{index}].inputFacets.dataQualityAssertions",
                        input_facets,
                        "dataQualityAssertions",
                    )
                )
    run_facets = event.run.facets or {}
    # The concrete facet classes (ErrorMessageRunFacet, the provenance and documentation facets)
    # behind the base types the event declares.
    error: Any = run_facets.get("errorMessage")
    if error is not None and error.stackTrace:
        trace = error.stackTrace
        if len(trace) > STACK_HEAD + STACK_TAIL + 64:

            def cut_trace() -> tuple[str, str]:
                removed = len(trace) - STACK_HEAD - STACK_TAIL
                error.stackTrace = (
                    trace[:STACK_HEAD]
                    + f"\n... [{removed} characters removed to fit the size cap] ...\n"
                    + trace[-STACK_TAIL:]
                )
                return (
                    "truncated",
                    f"kept the first {STACK_HEAD} and last {STACK_TAIL} of {len(trace)} characters",
                )

            steps.append(
                _Step(len(trace), "run.facets.errorMessage.stackTrace", cut_trace)
            )
        else:

            def drop_trace() -> tuple[str, str]:
                error.stackTrace = None
                return "dropped", f"{len(trace)} characters"

            steps.append(
                _Step(len(trace), "run.facets.errorMessage.stackTrace", drop_trace)
            )
    provenance: Any = run_facets.get("contractAssets_provenance")
    if provenance is not None and provenance.step_params:
        params = provenance.step_params

        def drop_params() -> tuple[str, str]:
            provenance.step_params = {}
            return "dropped", f"{len(params)} parameters"

        steps.append(
            _Step(
                event_size(params),
                "run.facets.contractAssets_provenance.step_params",
                drop_params,
            )
        )
    job_facets = event.job.facets or {}
    documentation: Any = job_facets.get("documentation")
    if documentation is not None:
        text = documentation.description
        if len(text) > MAX_TEXT:

            def cut_doc() -> tuple[str, str]:
                documentation.description = _cut(text, MAX_TEXT)
                return "truncated", f"kept {MAX_TEXT} of {len(text)} characters"

            steps.append(
                _Step(event_size(documentation), "job.facets.documentation", cut_doc)
            )
        else:

            def drop_doc() -> tuple[str, str]:
                del job_facets["documentation"]
                return "dropped", f"{len(text)} characters"

            steps.append(
                _Step(event_size(documentation), "job.facets.documentation", drop_doc)
            )
    return steps


def shrink_event(event: RunEvent, max_bytes: int) -> tuple[RunEvent | None, int]:
    """Shrink ``event`` in place until it fits ``max_bytes`` (minus :data:`HEADROOM`).

    :param event: The event; modified in place when over the cap.
    :param max_bytes: The cap on the serialised event, in bytes.
    :returns: ``(event, original size)``; the event is None when even after every step it is over
        the cap (nothing droppable is left), and must then not be sent.
    """
    original = event_size(event)
    budget = max(max_bytes - HEADROOM, 1)
    if original <= budget:
        return event, original
    record = F.ContractAssetsShrinkRunFacet(
        max_bytes=max_bytes, original_bytes=original, producer=F.PRODUCER
    )
    if event.run.facets is None:
        event.run.facets = {}
    event.run.facets["contractAssets_shrink"] = record
    while event_size(event) > budget:
        steps = _candidates(event)
        if not steps:
            return None, original
        step = max(steps, key=lambda s: s.size)
        action, detail = step.apply()
        record.changes.append({"path": step.path, "action": action, "detail": detail})
    return event, original
