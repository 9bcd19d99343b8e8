"""Freshness that is enforced (DESIGN §5.5): the states, the monitor task, the data-time measure.

A freshness policy is ``{max_age, degrade_after}`` (seconds here). The **age** of an asset is
``now - timestamp of its latest Asset event`` (an event exists only when ``publish`` passed the
quality gate, or an external system posted one with ``POST /api/v2/assets/events``).

=============  ==========================================================================
state          when
=============  ==========================================================================
``unknown``    the asset has no Asset event (never published)
``fresh``      age <= ``max_age``
``stale``      age > ``max_age`` (the freshness promise is broken: alert)
``degraded``   age > ``degrade_after`` (the escalation; consumers with ``require: passed``
               skip it)
``recovered``  the first fresh evaluation after ``stale`` or ``degraded``; the next fresh
               evaluation is ``fresh`` again
=============  ==========================================================================

**Partitioned assets** (issue 35; the manifest entry has ``partition_grain``). Each run of a
partitioned DAG publishes one partition key, and Airflow records it on the Asset event
(``AssetEvent.partition_key``: ``TaskInstance.register_asset_changes_in_db`` passes the run's
``dag_run.partition_key`` to ``AssetManager.register_asset_change``, apache-airflow 3.2.2; an event
posted with ``POST /api/v2/assets/events`` carries the body's ``partition_key``). For such an asset
the monitor reads every event and takes

* the **newest partition**: the published key whose partition starts last (key order, not event
  order: re-running an old key does not make it newest);
* its **age**: ``max(0, now - end of the newest partition's [start, end))``, how far the data lags
  behind the clock. Not the event's age: a producer that keeps re-publishing the same key, or
  publishes today's key for last week's data, would look fresh by its events while the data stops
  moving. A partition still open (its end after ``now``) has age 0. The state is this age under the
  same policy and table as above;
* its **missing partitions**: the keys of the grain from the first published key to the newest
  with no event. They are reported (count, and the oldest :data:`MISSING_PARTITIONS_LISTED`) and
  never change the state: a gap is incompleteness, which ``contract-assets backfill`` repairs, not
  lateness; a ``stale`` or ``degraded`` gap would also make ``require: passed`` consumers skip the
  newest partition, which is there. Events without a key, or with a key that is not of the grain,
  are counted as ``ignored_events`` and are not partitions.

Alerts fire only on a **transition into** ``stale``, ``degraded`` or ``recovered`` (a state
different from the stored one); a repeated state, ``unknown`` and ``fresh`` never alert.

States persist between monitor runs in the warehouse table ``_ca_state.freshness`` (one row per
asset). A transition whose alert could not be sent keeps the stored state, so the next run sends it
again, and the task fails naming the asset and the notifier.

Airflow has no asset freshness of its own, and its deadline alerts exist only for DAG runs that
exist: this monitor (one generated DAG per project, ``contract_assets_freshness_monitor``) is what
notices a producer that never ran. It reads events through the Task SDK (its task's inlets,
``context["inlet_events"]``), never the metadata database.
"""

from __future__ import annotations

import datetime
import importlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

if TYPE_CHECKING:
    from airflow.sdk import Context

    from contract_runtime.warehouse import Warehouse

__all__ = [
    "ALERTING_STATES",
    "MISSING_PARTITIONS_LISTED",
    "STATES",
    "FreshnessMonitorOperator",
    "classify",
    "evaluate_assets",
    "get_states",
    "partition_freshness",
    "should_alert",
]

log = logging.getLogger(__name__)

#: Every state, in order of escalation (``recovered`` is a fresh state that follows a broken one).
STATES: tuple[str, ...] = ("unknown", "fresh", "recovered", "stale", "degraded")
#: States whose arrival sends an alert.
ALERTING_STATES: frozenset[str] = frozenset({"stale", "degraded", "recovered"})
#: How many missing partition keys an entry lists, oldest first (``missing_count`` is always whole).
MISSING_PARTITIONS_LISTED: int = 20
#: Where the states are kept, in the warehouse's state schema.
FRESHNESS_TABLE_NAME: str = "freshness"


def classify(
    age_seconds: float | None,
    max_age_seconds: float,
    degrade_after_seconds: float | None,
    previous_state: str | None,
) -> str:
    """The state of an asset from its age and policy (see the module table).

    :param age_seconds: Seconds since the latest Asset event; None when there is none.
    :param max_age_seconds: The policy's ``max_age``.
    :param degrade_after_seconds: The policy's ``degrade_after``; None: never ``degraded``.
    :param previous_state: The stored state of the last evaluation, or None for the first.
    :returns: One of :data:`STATES`.
    """
    if age_seconds is None:
        return "unknown"
    if degrade_after_seconds is not None and age_seconds > degrade_after_seconds:
        return "degraded"
    if age_seconds > max_age_seconds:
        return "stale"
    return "recovered" if previous_state in ("stale", "degraded") else "fresh"


def should_alert(previous_state: str | None, state: str) -> bool:
    """True on a transition into ``stale``, ``degraded`` or ``recovered``."""
    return state in ALERTING_STATES and state != previous_state


def _aware(value: datetime.datetime) -> datetime.datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)


def _iso(value: datetime.datetime | None) -> str | None:
    return None if value is None else _aware(value).astimezone(datetime.UTC).isoformat()


def partition_freshness(
    grain: str, keys: Iterable[str | None], now: datetime.datetime
) -> tuple[float | None, dict[str, Any]]:
    """The partitions of one partitioned asset from the keys of its Asset events (the module's
    "Partitioned assets"; ``freshnessReport.ts`` ``partitionFreshness`` is the same rule, and
    ``test/fixtures/partition-freshness.json`` the vector both are tested with).

    :param grain: The asset's grain (hour, day, week, month, quarter, year).
    :param keys: The ``partition_key`` of every Asset event of the asset, any order, repeats and
        None allowed.
    :param now: The evaluation instant (timezone-aware).
    :returns: ``(age_seconds, partitions)``: the seconds since the end of the newest partition
        (0 while it is open; None when no event has a key of the grain), and ``{grain, first,
        newest, newest_end (ISO 8601 UTC or None), published (distinct keys), missing (at most
        MISSING_PARTITIONS_LISTED keys, oldest first), missing_count, ignored_events}``.
    :raises KeyError: When ``grain`` is not a grain.
    """
    from contract_runtime.partitions import bounds, keys_between

    published: dict[str, tuple[datetime.datetime, datetime.datetime]] = {}
    ignored = 0
    for key in keys:
        found = None if key is None else bounds(grain, key)
        if key is None or found is None:
            ignored += 1
            continue
        published[key] = found
    partitions: dict[str, Any] = {
        "grain": grain, "first": None, "newest": None, "newest_end": None, "published": len(published),
        "missing": [], "missing_count": 0, "ignored_events": ignored,
    }
    if not published:
        return None, partitions
    first = min(published, key=lambda k: published[k][0])
    newest = max(published, key=lambda k: published[k][0])
    end = published[newest][1]
    missing = [k for k in keys_between(grain, first, newest) if k not in published]
    partitions.update(
        first=first, newest=newest, newest_end=_iso(end), missing=missing[:MISSING_PARTITIONS_LISTED], missing_count=len(missing)
    )
    return round(max(0.0, (now - end).total_seconds()), 3), partitions


def evaluate_assets(
    assets: Sequence[Mapping[str, Any]],
    latest_event_at: Callable[[str], datetime.datetime | None],
    previous: Mapping[str, str],
    now: datetime.datetime,
    partition_keys: Callable[[str], Iterable[str | None]] | None = None,
) -> list[dict[str, Any]]:
    """Evaluate every monitored asset once.

    :param assets: The manifest's ``freshness_monitor.assets`` (``name``, ``max_age``,
        ``max_age_seconds``, ``degrade_after``, ``degrade_after_seconds``, and ``partition_grain``
        for a partitioned asset).
    :param latest_event_at: Asset name -> timestamp of its latest Asset event, or None.
    :param previous: Asset name -> stored state.
    :param now: The evaluation instant (timezone-aware).
    :param partition_keys: Asset name -> the ``partition_key`` of each of its Asset events; read
        only for a partitioned asset.
    :returns: One entry per asset, in manifest order: ``{asset, state, previous_state,
        age_seconds (float or None), last_event_at (ISO 8601 UTC or None), max_age,
        degrade_after}`` (durations as ISO 8601 text, as the contract wrote them); a partitioned
        asset's ``age_seconds`` is its newest partition's (:func:`partition_freshness`) and its
        entry adds ``partitions``.
    :raises ValueError: When an asset is partitioned and ``partition_keys`` is None.
    """
    results = []
    for asset in assets:
        name = str(asset["name"])
        last = latest_event_at(name)
        age = None if last is None else max(0.0, (now - _aware(last)).total_seconds())
        grain = asset.get("partition_grain")
        partitions: dict[str, Any] | None = None
        if grain is not None:
            if partition_keys is None:
                raise ValueError(f"freshness monitor: {name!r} is partitioned by {grain} and no partition keys were read")
            age, partitions = partition_freshness(str(grain), partition_keys(name), now)
        prior = previous.get(name)
        state = classify(age, float(asset["max_age_seconds"]), asset.get("degrade_after_seconds"), prior)
        entry: dict[str, Any] = {
            "asset": name,
            "state": state,
            "previous_state": prior,
            "age_seconds": None if age is None else round(age, 3),
            "last_event_at": _iso(last),
            "max_age": asset["max_age"],
            "degrade_after": asset.get("degrade_after"),
        }
        if partitions is not None:
            entry["partitions"] = partitions
        results.append(entry)
    return results


# ---------------------------------------------------------------------- state table


def _table() -> Any:
    from contract_runtime.sqlutil import TableRef
    from contract_runtime.tables import STATE_SCHEMA

    return TableRef(STATE_SCHEMA, FRESHNESS_TABLE_NAME)


def ensure_freshness_table(wh: Warehouse) -> None:
    """Create ``_ca_state.freshness`` when missing: ``asset, state, last_event_at, age_seconds,
    evaluated_at`` (one row per asset)."""
    from contract_runtime.sqlutil import dialect_of
    from contract_runtime.tables import STATE_SCHEMA

    ts = dialect_of(wh.dialect).timestamp_type
    wh.create_schema(STATE_SCHEMA)
    wh.execute(
        f"create table if not exists {_table().sql} ("
        "asset varchar(1500) not null, state varchar(20) not null, last_event_at varchar(64), "
        f"age_seconds double precision, evaluated_at {ts} not null)"
    )


def get_states(wh: Warehouse) -> dict[str, str]:
    """Asset name -> stored freshness state (empty before the monitor's first run).

    Consumers may read it (``require: passed`` skips a ``degraded`` upstream).
    """
    if not wh.table_exists(_table()):
        return {}
    return {str(a): str(s) for a, s in wh.fetch(f"select asset, state from {_table().sql}")}


def _store(wh: Warehouse, entries: Sequence[Mapping[str, Any]], now: datetime.datetime) -> None:
    with wh.transaction():
        for e in entries:
            wh.execute(f"delete from {_table().sql} where asset = ?", [e["asset"]])
            wh.execute(
                f"insert into {_table().sql} (asset, state, last_event_at, age_seconds, evaluated_at) "
                "values (?, ?, ?, ?, ?)",
                [e["asset"], e["state"], e["last_event_at"], e["age_seconds"], now],
            )


# ---------------------------------------------------------------------- notifiers


def build_notifier(spec: Mapping[str, Any]) -> Any:
    """Instantiate the configured notifier: ``{name, class, kwargs}`` from the manifest.

    :raises ImportError: When the class cannot be imported (the message names the notifier).
    """
    path = str(spec["class"])
    module_name, _, attribute = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"notifier {spec.get('name')!r}: cannot import {path!r}: {exc}") from exc
    return cls(**dict(spec.get("kwargs") or {}))


def send_alert(spec: Mapping[str, Any], entry: Mapping[str, Any], context: Mapping[str, Any]) -> None:
    """Send one transition through the notifier, synchronously (``BaseNotifier.__call__``).

    The notifier gets the task context plus ``freshness``: the evaluation entry, so its templates
    can say ``{{ freshness.asset }} is {{ freshness.state }}``.
    """
    notifier = build_notifier(spec)
    notifier({**dict(context), "freshness": dict(entry)})


# ---------------------------------------------------------------------- the operator


class FreshnessMonitorOperator(BaseOperator):
    """The freshness monitor's task: evaluate, persist, alert on transitions, emit lineage.

    :param manifest_path: Path of the compiled manifest; its ``freshness_monitor`` section lists
        the assets, their policies, the notifier and the warehouse connection.
    :param kwargs: Passed to :class:`airflow.sdk.BaseOperator`; ``inlets`` must hold every
        monitored Asset (the generated module does), since events are read as inlet events.
    :returns: (XCom) the list :func:`evaluate_assets` documents.
    :raises RuntimeError: When an alert could not be sent (after every other asset is stored).
    """

    def __init__(self, *, manifest_path: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.manifest_path: str = manifest_path

    def execute(self, context: Context) -> Any:
        from contract_runtime.manifest import load_manifest
        from contract_runtime.warehouse import open_warehouse

        # The monitor reads only the top-level freshness_monitor section: its dag_id has no dags[] entry.
        manifest = load_manifest(self.manifest_path, self.dag_id)
        monitor = manifest.get("freshness_monitor")
        if not monitor:
            raise RuntimeError(f"{self.manifest_path}: the manifest has no freshness_monitor section")
        events = context["inlet_events"]
        by_name = {getattr(a, "name", None): a for a in (self.inlets or [])}

        def latest(name: str) -> datetime.datetime | None:
            asset = by_name.get(name)
            if asset is None:
                raise RuntimeError(f"freshness monitor: {name!r} is not an inlet of task {self.task_id!r}")
            found = list(events[asset].ascending(False).limit(1))
            return found[0].timestamp if found else None

        def keys(name: str) -> list[str | None]:
            # every event: the execution API's GET /asset-events/by-asset has no limit unless asked
            return [getattr(e, "partition_key", None) for e in events[by_name[name]]]

        return run_monitor(
            manifest,
            monitor,
            latest,
            context,
            opener=open_warehouse,
            now=datetime.datetime.now(tz=datetime.UTC),
            partition_keys=keys,
        )


def run_monitor(
    manifest: Mapping[str, Any],
    monitor: Mapping[str, Any],
    latest_event_at: Callable[[str], datetime.datetime | None],
    context: Mapping[str, Any],
    *,
    opener: Callable[[str | None], Warehouse],
    now: datetime.datetime,
    partition_keys: Callable[[str], Iterable[str | None]] | None = None,
) -> list[dict[str, Any]]:
    """One monitor evaluation: states, alerts on transitions, persistence, lineage.

    :param monitor: The manifest's ``freshness_monitor`` section.
    :param latest_event_at: Asset name -> latest Asset event timestamp or None.
    :param partition_keys: Asset name -> its events' partition keys (see :func:`evaluate_assets`).
    :param context: The Airflow task context (given to the notifier; ``ti`` etc. for lineage).
    :param opener: Opens the warehouse of ``monitor["warehouse_conn_id"]``.
    :returns: The evaluation entries (see :func:`evaluate_assets`).
    :raises RuntimeError: When an alert could not be sent; every other state is stored first.
    """
    conn_id = monitor.get("warehouse_conn_id")
    run = _lineage_run(context)
    if run is not None and run.is_first_try:
        _emit_lineage("emit_freshness_start", manifest, monitor, run)
    entries: list[dict[str, Any]] = []
    naming: dict[str, str] = {}
    try:
        wh = opener(conn_id)
        try:
            ensure_freshness_table(wh)
            previous = get_states(wh)
            entries = evaluate_assets(monitor["assets"], latest_event_at, previous, now, partition_keys)
            notifier: Mapping[str, Any] | None = monitor.get("notifier")
            failures: list[str] = []
            stored: list[dict[str, Any]] = []
            for entry in entries:
                log.info(
                    "freshness %-9s %s (previous %s, age %s s, max_age %s, degrade_after %s)%s",
                    entry["state"],
                    entry["asset"],
                    entry["previous_state"],
                    entry["age_seconds"],
                    entry["max_age"],
                    entry["degrade_after"],
                    _describe_partitions(entry.get("partitions")),
                )
                if should_alert(entry["previous_state"], entry["state"]):
                    if notifier is None:
                        log.warning("freshness: %s is %s; no notifier is configured", entry["asset"], entry["state"])
                    else:
                        try:
                            send_alert(notifier, entry, context)
                        except Exception as exc:  # noqa: BLE001 - reported below, state kept for a resend
                            failures.append(f"{entry['asset']} ({entry['state']}): {type(exc).__name__}: {exc}")
                            continue
                stored.append(entry)
            _store(wh, stored, now)
            naming = _lineage_naming(wh)
        finally:
            wh.close()
        if failures and notifier is not None:
            raise RuntimeError(
                f"freshness monitor: notifier {notifier['name']!r} ({notifier['class']}) failed for "
                + "; ".join(failures)
                + f" (warehouse connection {conn_id!r}); those transitions are sent again next run"
            )
    except Exception as exc:
        # FAIL only when no retry follows: the next try ends the same run
        if run is not None and run.is_last_try:
            _emit_lineage("emit_freshness_end", manifest, monitor, run, entries, naming, exc)
        raise
    if run is not None:
        _emit_lineage("emit_freshness_end", manifest, monitor, run, entries, naming)
    return entries


def _describe_partitions(partitions: Mapping[str, Any] | None) -> str:
    """The log line's partition part: `` newest partition K (day, ended T), N missing: K1, K2``."""
    if partitions is None:
        return ""
    if partitions["newest"] is None:
        return f" no {partitions['grain']} partition published ({partitions['ignored_events']} events without one)"
    text = f" newest partition {partitions['newest']} ({partitions['grain']}, ended {partitions['newest_end']})"
    text += f", {partitions['missing_count']} missing"
    if partitions["missing"]:
        more = partitions["missing_count"] - len(partitions["missing"])
        text += ": " + ", ".join(partitions["missing"]) + (f" and {more} more" if more else "")
    return text


def _lineage_naming(wh: Warehouse) -> dict[str, str]:
    from contract_runtime.stages import lineage_warehouse

    return lineage_warehouse(wh)


def _lineage_run(context: Mapping[str, Any]) -> Any:
    """The task try as a ``RunIdentity`` for lineage, or None when the context cannot tell (no
    events are then sent: one without its START or terminal event would be a broken run)."""
    try:
        from contract_runtime.run import RunIdentity

        return RunIdentity.from_context(context)
    except Exception as exc:  # noqa: BLE001 - lineage must never change the task outcome
        log.warning("lineage freshness events skipped: %s: %s", type(exc).__name__, exc)
        return None


def _emit_lineage(hook: str, *args: Any) -> None:
    """Call one emit hook of :mod:`contract_runtime.lineage` (never raises; lineage never fails
    the task). The monitor's run is START, then one terminal event (ADR 0026)."""
    try:
        from contract_runtime import lineage

        getattr(lineage, hook)(*[dict(a) if isinstance(a, Mapping) else a for a in args])
    except Exception as exc:  # noqa: BLE001 - lineage must never change the task outcome
        log.warning("lineage freshness event skipped: %s: %s", type(exc).__name__, exc)
