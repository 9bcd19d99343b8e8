"""``upstreams[].require: passed``: a consumer skips — never fails — a run whose triggering Asset
event for that upstream is degraded or stale (DESIGN §3.4, ADR 0010).

The name and shape follow Airflow's ``common.dataquality`` gate (``require_quality``): the
consumer states what quality it requires of the events that trigger it, and a run that does not
get it is skipped with the reason, not failed. What counts, per upstream with ``require:
passed`` and ``trigger`` true:

* the latest of the run's triggering events for that upstream (the batch the consumer will read:
  a publish replaces the table, so the newest event describes it);
* **degraded**: its ``extra.quality_status`` is not ``passed`` (a ``warning`` rule failed, or
  ``on_failure: warn`` let an ``error`` through; the failed rules are in ``extra.failed_rules``);
  an event without ``quality_status`` (an external producer) is taken as not degraded;
* **stale**: it is older, at the run's ``run_after``, than the upstream's
  ``freshness.degrade_after`` (from the upstream Asset's ``extra.freshness`` in the manifest);
  no ``degrade_after``, no staleness.

An upstream with no triggering event in this run (the other branch of an ``any`` triggered it) is
not checked. Imports only the standard library.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["describe", "parse_duration", "unmet_requirements"]

_DURATION = re.compile(
    r"^P(?:(?P<w>\d+)W)?(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)


def parse_duration(text: str) -> datetime.timedelta:
    """A fixed-length ISO 8601 duration ``P[nW][nD][T[nH][nM][nS]]`` (the contract format's; the
    compiler rejects the rest, CA3022).

    :raises ValueError: For any other text.
    """
    match = _DURATION.match(text or "")
    if not match or text in ("P", "PT") or text.endswith("T"):
        raise ValueError(f"not a fixed-length ISO 8601 duration: {text!r}")
    part = {k: float(v) if v else 0.0 for k, v in match.groupdict().items()}
    return datetime.timedelta(weeks=part["w"], days=part["d"], hours=part["h"], minutes=part["m"], seconds=part["s"])


def _timestamp(value: Any) -> datetime.datetime | None:
    try:
        stamp = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=datetime.UTC)


def _degrade_after(manifest: Mapping[str, Any], asset: str) -> datetime.timedelta | None:
    for entry in manifest.get("assets", []):
        if entry.get("name") == asset:
            text = ((entry.get("extra") or {}).get("freshness") or {}).get("degrade_after")
            return parse_duration(str(text)) if text else None
    return None


def unmet_requirements(manifest: Mapping[str, Any], dag: Mapping[str, Any], run: Any) -> list[dict[str, Any]]:
    """The ``require: passed`` upstreams whose triggering event this run does not accept.

    :param manifest: The compiled manifest (the upstream Assets' ``extra.freshness``).
    :param dag: The contract's ``dags[]`` entry (``runtime.upstreams[].require``).
    :param run: The run identity (``run_after``, ``triggering_events``).
    :returns: ``[{"asset", "reason" ("degraded" | "stale"), "quality_status", "failed_rules",
        "source_dag_id", "source_run_id", "timestamp", "age_seconds", "degrade_after"}]`` in
        upstream order; empty when the run may go on.
    """
    events = list(getattr(run, "triggering_events", ()) or ())
    unmet: list[dict[str, Any]] = []
    for upstream in dag.get("runtime", {}).get("upstreams", []):
        if upstream.get("require") != "passed" or upstream.get("trigger") is False:
            continue
        asset = str(upstream["asset"])
        mine = [e for e in events if e.get("asset") == asset]
        if not mine:
            continue
        latest = max(mine, key=lambda e: str(e.get("timestamp", "")))
        extra = latest.get("extra") or {}
        status = extra.get("quality_status")
        stamp = _timestamp(latest.get("timestamp"))
        age = (run.run_after - stamp).total_seconds() if stamp is not None else None
        limit = _degrade_after(manifest, asset)
        reason = None
        if status is not None and status != "passed":
            reason = "degraded"
        elif limit is not None and age is not None and age > limit.total_seconds():
            reason = "stale"
        if reason is None:
            continue
        unmet.append(
            {
                "asset": asset,
                "reason": reason,
                "quality_status": status if isinstance(status, str) else None,
                "failed_rules": [str(r) for r in extra.get("failed_rules", []) or []],
                "source_dag_id": latest.get("source_dag_id"),
                "source_run_id": latest.get("source_run_id"),
                "timestamp": str(latest.get("timestamp", "")),
                "age_seconds": round(age, 3) if age is not None else None,
                "degrade_after": f"{limit.total_seconds():g}s" if limit is not None else None,
            }
        )
    return unmet


def describe(contract_id: str, unmet: list[dict[str, Any]]) -> str:
    """One line for the task log and the skip: which upstream, why, from which run."""
    parts = []
    for u in unmet:
        why = (
            f"degraded (failed rules: {', '.join(u['failed_rules']) or 'none listed'})"
            if u["reason"] == "degraded"
            else f"stale ({u['age_seconds']:g} s old, degrade_after {u['degrade_after']})"
        )
        parts.append(f"{u['asset']} from {u['source_dag_id']} run {u['source_run_id']} is {why}")
    return f"{contract_id}: skipped, require: passed not met: " + "; ".join(parts)
