"""The identity of one task try inside one Airflow DAG run.

:class:`RunIdentity` is what every runtime stage, producer and the lineage hook receive instead
of the raw Airflow context: a frozen, Airflow-free value that tests can build by hand.

Imports only the standard library.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunIdentity", "run_hash"]

#: Length, in hexadecimal characters, of the run hash in staging and quarantine table names.
RUN_HASH_LENGTH: int = 10


def run_hash(run_id: str) -> str:
    """A short, stable hash of an Airflow ``run_id``, for table names.

    :param run_id: Airflow's run id, e.g. ``"manual__2026-03-15T00:00:00+00:00"``.
    :returns: :data:`RUN_HASH_LENGTH` lower-case hexadecimal characters (the start of the
        SHA-256 of the UTF-8 run id). Every task and every try of one DAG run gets the same value.
    """
    return hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:RUN_HASH_LENGTH]


def _aware(value: Any, what: str) -> datetime.datetime | None:
    """Return ``value`` as a timezone-aware :class:`datetime.datetime` (naive means UTC).

    :raises TypeError: When ``value`` is neither None nor a datetime.
    """
    if value is None:
        return None
    if not isinstance(value, datetime.datetime):
        raise TypeError(f"{what} must be a datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        return value.replace(tzinfo=datetime.UTC)
    return value


@dataclass(frozen=True)
class RunIdentity:
    """Who is running: one try of one task in one DAG run.

    :ivar dag_id: The DAG id, which is the contract id.
    :ivar run_id: Airflow's DAG run id (the same for every task and try of the run).
    :ivar logical_date: The run's logical date, timezone-aware, or None (Airflow 3 runs
        triggered by assets, or manually without a date, have none).
    :ivar run_after: The earliest time the run could start, timezone-aware; always set.
    :ivar try_number: The try of this task instance, 1 for the first try.
    :ivar max_tries: The number of retries allowed (Airflow's ``max_tries``: retries, not tries;
        the last try is ``try_number == max_tries + 1``).
    :ivar task_id: The task id (``produce``, ``audit`` or ``publish``).
    :ivar map_index: Airflow's map index, -1 for an unmapped task.
    :ivar clear_number: How often the DAG run was cleared (Airflow's ``dag_run.clear_number``,
        0 until the first clear). A cleared run is a new OpenLineage run: the lineage runId, like
        the Airflow OpenLineage provider's, is keyed on it.
    :ivar bundle_version: The version of the DAG bundle the task runs from (a Git bundle's
        version is the commit id), or None for an unversioned bundle such as the local
        ``dags-folder``. Lineage reports it as the deployed commit.
    :ivar first_try_number: The try number of the first try since the task was last cleared (1
        for a task never cleared). Airflow keeps counting tries across clears, so "first try of
        this clear" is ``try_number == first_try_number``, not ``try_number == 1``.
    :ivar bundle_name: The DAG bundle the task runs from (``ti.bundle_instance.name``, e.g.
        ``dags-folder``), or None when Airflow does not say (``DAG.test()``).
    :ivar partition_key: The DAG run's partition key (Airflow 3.2 ``dag_run.partition_key``), or
        None for a run without one.
    :ivar triggering_events: The Asset events that triggered the DAG run (Airflow's
        ``triggering_asset_events``), oldest first, each ``{"asset", "uri", "extra",
        "source_dag_id", "source_task_id", "source_run_id", "timestamp"}`` (``timestamp`` an ISO
        8601 string); empty for a run no Asset event triggered.
    """

    dag_id: str
    run_id: str
    logical_date: datetime.datetime | None
    run_after: datetime.datetime
    try_number: int
    max_tries: int
    task_id: str
    map_index: int = -1
    clear_number: int = 0
    bundle_version: str | None = None
    first_try_number: int = 1
    bundle_name: str | None = None
    triggering_events: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    partition_key: str | None = None

    def __post_init__(self) -> None:
        """Normalise the dates to timezone-aware values (a naive date is taken as UTC).

        :raises TypeError: When a date is not a datetime, or ``run_after`` is None.
        """
        object.__setattr__(self, "logical_date", _aware(self.logical_date, "logical_date"))
        run_after = _aware(self.run_after, "run_after")
        if run_after is None:
            raise TypeError("run_after is required")
        object.__setattr__(self, "run_after", run_after)

    @property
    def run_hash(self) -> str:
        """The short hash of :attr:`run_id` used in staging and quarantine table names."""
        return run_hash(self.run_id)

    @property
    def reference_date(self) -> datetime.datetime:
        """The run's date for business logic: the logical date, else ``run_after``."""
        return self.logical_date or self.run_after

    @property
    def is_first_try(self) -> bool:
        """True on the first try of the task since it was last cleared (``try_number <=
        first_try_number``): the try that starts the (OpenLineage) run."""
        return self.try_number <= self.first_try_number

    @property
    def is_last_try(self) -> bool:
        """True when a failure of this try is final (no retry left)."""
        return self.try_number > self.max_tries

    def as_env(self) -> dict[str, str]:
        """The identity as ``CONTRACT_ASSETS_*`` environment variables (all strings).

        :returns: ``{"CONTRACT_ASSETS_DAG_ID": ..., "CONTRACT_ASSETS_RUN_ID": ...,
            "CONTRACT_ASSETS_LOGICAL_DATE": ISO-8601 or "", "CONTRACT_ASSETS_RUN_AFTER": ISO-8601,
            "CONTRACT_ASSETS_TRY_NUMBER": ..., "CONTRACT_ASSETS_TASK_ID": ...}``.
        """
        return {
            "CONTRACT_ASSETS_DAG_ID": self.dag_id,
            "CONTRACT_ASSETS_RUN_ID": self.run_id,
            "CONTRACT_ASSETS_LOGICAL_DATE": self.logical_date.isoformat() if self.logical_date else "",
            "CONTRACT_ASSETS_RUN_AFTER": self.run_after.isoformat(),
            "CONTRACT_ASSETS_TRY_NUMBER": str(self.try_number),
            "CONTRACT_ASSETS_TASK_ID": self.task_id,
        }

    @classmethod
    def from_context(cls, context: Mapping[str, Any]) -> RunIdentity:
        """Build the identity from an Airflow 3 task context.

        Reads ``context["ti"]`` (``dag_id``, ``run_id``, ``task_id``, ``try_number``,
        ``max_tries``, ``map_index``, ``bundle_instance.version``), ``context["dag_run"]``
        (``run_after``, ``logical_date``, ``clear_number``), ``context.get("logical_date")`` and
        ``context["task"].retries``.

        Airflow 3.2 exposes the DAG bundle version on the running task instance
        (``ti.bundle_instance.version``), not on the task context's DAG run; a
        ``dag_run.bundle_version`` is used when a later Airflow provides one and the task
        instance does not.

        When a task is cleared Airflow sets ``max_tries = try_number + retries`` and the next try
        gets ``try_number + 1``, so the first try since the last clear is
        ``max_tries - retries + 1`` (1 for a task never cleared).

        :param context: The mapping Airflow passes to ``execute`` and to callbacks.
        :raises KeyError: When the context has no ``ti``.
        """
        ti = context["ti"]
        dag_run = context.get("dag_run")
        logical_date = context.get("logical_date")
        if logical_date is None and dag_run is not None:
            logical_date = getattr(dag_run, "logical_date", None)
        run_after = getattr(dag_run, "run_after", None) if dag_run is not None else None
        if run_after is None:
            run_after = logical_date or datetime.datetime.now(tz=datetime.UTC)
        run_id = getattr(ti, "run_id", None) or getattr(dag_run, "run_id", None) or context.get("run_id")
        map_index = getattr(ti, "map_index", -1)
        try_number = _int(getattr(ti, "try_number", 1), 1) or 1
        max_tries = _int(getattr(ti, "max_tries", 0), 0)
        retries = _int(getattr(context.get("task"), "retries", None), max_tries)
        return cls(
            dag_id=str(getattr(ti, "dag_id", None) or getattr(dag_run, "dag_id", "")),
            run_id=str(run_id),
            logical_date=logical_date,
            run_after=run_after,
            try_number=try_number,
            max_tries=max_tries,
            task_id=str(getattr(ti, "task_id", "")),
            map_index=int(map_index if map_index is not None else -1),
            clear_number=_int(getattr(dag_run, "clear_number", 0), 0),
            bundle_version=_bundle_version(ti, dag_run),
            first_try_number=min(try_number, max(1, max_tries - retries + 1)),
            bundle_name=_bundle_name(ti),
            triggering_events=_triggering_events(context),
            partition_key=_partition_key(dag_run),
        )


def _partition_key(dag_run: Any) -> str | None:
    """``dag_run.partition_key`` (Airflow 3.2) as a non-empty string, else None."""
    key = getattr(dag_run, "partition_key", None) if dag_run is not None else None
    return key if isinstance(key, str) and key != "" else None


def _int(value: Any, default: int) -> int:
    """``value`` as an int; ``default`` for None, booleans and anything not integral."""
    if isinstance(value, bool) or value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _bundle_name(ti: Any) -> str | None:
    """The DAG bundle's name (``ti.bundle_instance.name``), where the Airflow OpenLineage provider
    reads it too; None when the task instance does not say."""
    name = getattr(getattr(ti, "bundle_instance", None), "name", None)
    return str(name) if name else None


def _triggering_events(context: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """The DAG run's triggering Asset events as plain dicts, oldest first, one per event.

    Reads ``context["triggering_asset_events"]`` (Airflow 3's ``TriggeringAssetEventsAccessor``:
    Asset or AssetAlias -> events); events listed under an alias too are counted once.
    """
    accessor = context.get("triggering_asset_events")
    if not accessor:
        return ()
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    try:
        for key in accessor:
            for event in accessor[key]:
                asset = getattr(event, "asset", None)
                stamp = getattr(event, "timestamp", None)
                item = {
                    "asset": str(getattr(asset, "name", "") or ""),
                    "uri": str(getattr(asset, "uri", "") or ""),
                    "extra": dict(getattr(event, "extra", None) or {}),
                    "source_dag_id": getattr(event, "source_dag_id", None),
                    "source_task_id": getattr(event, "source_task_id", None),
                    "source_run_id": getattr(event, "source_run_id", None),
                    "timestamp": stamp.isoformat() if isinstance(stamp, datetime.datetime) else str(stamp or ""),
                }
                seen.setdefault((item["asset"], item["source_run_id"], item["timestamp"]), item)
    except Exception:  # noqa: BLE001 - an accessor this runtime does not know: no batches rather than no run
        return ()
    return tuple(sorted(seen.values(), key=lambda e: (e["timestamp"], e["asset"])))


def _bundle_version(ti: Any, dag_run: Any) -> str | None:
    """The DAG bundle version of the running task: ``ti.bundle_instance.version``, else
    ``dag_run.bundle_version``; None when neither is set (an unversioned bundle)."""
    version = getattr(getattr(ti, "bundle_instance", None), "version", None)
    if not version:
        version = getattr(dag_run, "bundle_version", None)
    return str(version) if version else None
