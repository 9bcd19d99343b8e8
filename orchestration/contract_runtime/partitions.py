"""Partition keys and their bounds (issue 35; docs/contract-format.md "Partitions"; ADR 0028).

A partitioned contract's manifest entry carries ``runtime.partitioning`` = ``{"column", "grain",
"key_format"}``. Each DAG run works on one key, ``dag_run.partition_key`` (Airflow 3.2), formatted as
Airflow 3.2.2 formats it for the grain (``compiler/support/partitions.ts`` is the compiler's side of
the same table; ``test/python/test_runtime_partitions.py`` checks the two agree): ``hour``
``2026-12-07T11``, ``day`` ``2026-12-07``, ``week`` ``2026-W50`` (ISO), ``month`` ``2026-12``,
``quarter`` ``2026-Q4``, ``year`` ``2026``. Keys are UTC; a key's partition is [start, end).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contract_runtime.errors import ProducerError

__all__ = ["Partition", "PartitionKeyError", "bounds", "key_at", "keys_between", "partition_of", "sql_literals"]

UTC = datetime.UTC

_PATTERNS = {
    "hour": re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2})$"),
    "day": re.compile(r"^(\d{4})-(\d{2})-(\d{2})$"),
    "week": re.compile(r"^(\d{4})-W(\d{2})$"),
    "month": re.compile(r"^(\d{4})-(\d{2})$"),
    "quarter": re.compile(r"^(\d{4})-Q([1-4])$"),
    "year": re.compile(r"^(\d{4})$"),
}
_EXAMPLES = {"hour": "2026-12-07T11", "day": "2026-12-07", "week": "2026-W50", "month": "2026-12", "quarter": "2026-Q4", "year": "2026"}


class PartitionKeyError(ProducerError):
    """A partitioned DAG run has no partition key, or one that is not a key of its grain."""


@dataclass(frozen=True)
class Partition:
    """One partition: its key and its UTC bounds [start, end), and the column rows belong by."""

    key: str
    grain: str
    column: str
    start: datetime.datetime
    end: datetime.datetime

    def facet(self) -> dict[str, str]:
        """The partition as lineage and Asset-event extra carry it: key, grain, column, ISO bounds."""
        return {"key": self.key, "grain": self.grain, "column": self.column, "start": self.start.isoformat(), "end": self.end.isoformat()}


def _add_months(d: datetime.datetime, months: int) -> datetime.datetime:
    index = d.year * 12 + d.month - 1 + months
    return d.replace(year=index // 12, month=index % 12 + 1)


def _end_of(grain: str, start: datetime.datetime) -> datetime.datetime:
    """The end of the partition of ``grain`` starting at ``start`` (the next one's start)."""
    if grain == "hour":
        return start + datetime.timedelta(hours=1)
    if grain == "day":
        return start + datetime.timedelta(days=1)
    if grain == "week":
        return start + datetime.timedelta(days=7)
    return _add_months(start, {"month": 1, "quarter": 3, "year": 12}[grain])


def bounds(grain: str, key: str) -> tuple[datetime.datetime, datetime.datetime] | None:
    """The UTC [start, end) of ``key`` for ``grain``, or None when it is not a key of that grain.

    :raises KeyError: When ``grain`` is not one of hour, day, week, month, quarter, year.
    """
    match = _PATTERNS[grain].match(key)
    if match is None:
        return None
    n = [int(x) for x in match.groups()]
    try:
        if grain == "hour":
            start = datetime.datetime(n[0], n[1], n[2], n[3], tzinfo=UTC)
            return start, start + datetime.timedelta(hours=1)
        if grain == "day":
            start = datetime.datetime(n[0], n[1], n[2], tzinfo=UTC)
            return start, start + datetime.timedelta(days=1)
        if grain == "week":
            day = datetime.date.fromisocalendar(n[0], n[1], 1)
            start = datetime.datetime(day.year, day.month, day.day, tzinfo=UTC)
            return start, start + datetime.timedelta(days=7)
        if grain == "month":
            start = datetime.datetime(n[0], n[1], 1, tzinfo=UTC)
            return start, _add_months(start, 1)
        if grain == "quarter":
            start = datetime.datetime(n[0], (n[1] - 1) * 3 + 1, 1, tzinfo=UTC)
            return start, _add_months(start, 3)
        start = datetime.datetime(n[0], 1, 1, tzinfo=UTC)
        return start, _add_months(start, 12)
    except ValueError:
        return None


def key_at(grain: str, start: datetime.datetime) -> str:
    """The key of the partition of ``grain`` that starts at ``start`` (a UTC period start, as
    :func:`bounds` returns it), formatted as Airflow formats it (``partitionKey`` in
    ``compiler/support/partitions.ts``).

    :raises KeyError: When ``grain`` is not one of hour, day, week, month, quarter, year.
    """
    if grain == "week":
        iso = start.isocalendar()
        return f"{iso.year:04d}-W{iso.week:02d}"
    if grain == "quarter":
        return f"{start.year:04d}-Q{(start.month - 1) // 3 + 1}"
    formats = {"hour": "%Y-%m-%dT%H", "day": "%Y-%m-%d", "month": "%Y-%m", "year": "%Y"}
    return start.strftime(formats[grain])


def keys_between(grain: str, first: str, last: str) -> list[str]:
    """Every key of ``grain`` from ``first`` to ``last``, both included, in time order (empty when
    ``last`` starts before ``first``).

    :raises ValueError: When ``first`` or ``last`` is not a key of ``grain``.
    """
    found_first, found_last = bounds(grain, first), bounds(grain, last)
    if found_first is None or found_last is None:
        raise ValueError(f"keys_between: {first!r} and {last!r} must both be {grain} keys")
    keys: list[str] = []
    start = found_first[0]
    while start <= found_last[0]:
        key = key_at(grain, start)
        keys.append(key)
        start = _end_of(grain, start)
    return keys


def partition_of(dag: Mapping[str, Any], key: str | None) -> Partition | None:
    """The partition a run of ``dag`` (a manifest ``dags[]`` entry) works on, or None when the
    contract is not partitioned.

    :raises PartitionKeyError: When the contract is partitioned and ``key`` is None (a manual run
        without a key) or not a key of its grain; the message names the contract and says how to
        pass one.
    """
    spec = (dag.get("runtime") or {}).get("partitioning")
    if not spec:
        return None
    contract = str(dag.get("dag_id"))
    grain = str(spec["grain"])
    if key is None:
        raise PartitionKeyError(
            f"{contract}: this DAG is partitioned by {grain} of {spec['column']!r} and the run has no partition key; "
            f"start it with one: `contract-assets backfill <asset> --from T --to T --run`, or the REST API "
            f"(POST /api/v2/dags/{contract}/dagRuns with {{\"logical_date\": null, \"partition_key\": \"{_EXAMPLES[grain]}\"}})"
        )
    found = bounds(grain, key)
    if found is None:
        raise PartitionKeyError(
            f"{contract}: partition key {key!r} is not a {grain} key (UTC, like {_EXAMPLES[grain]!r}, strftime {spec['key_format']!r})"
        )
    return Partition(key=key, grain=grain, column=str(spec["column"]), start=found[0], end=found[1])


def sql_literals(partition: Partition | None) -> dict[str, str]:
    """The placeholders a SQL producer may use, as SQL literals: ``{partition_key}`` (a string),
    ``{partition_start}`` and ``{partition_end}`` (``TIMESTAMP '…'`` in UTC, valid on DuckDB and
    PostgreSQL, comparable with date and timestamp columns). Empty without a partition."""
    if partition is None:
        return {}

    def ts(d: datetime.datetime) -> str:
        return f"TIMESTAMP '{d.strftime('%Y-%m-%d %H:%M:%S')}'"

    return {"partition_key": "'" + partition.key.replace("'", "''") + "'", "partition_start": ts(partition.start), "partition_end": ts(partition.end)}


def fill_sql(sql: str, partition: Partition | None) -> str:
    """``sql`` with the placeholders of :func:`sql_literals` replaced (what a partitioned SQL
    producer runs); unchanged without a partition."""
    for name, literal in sql_literals(partition).items():
        sql = sql.replace("{" + name + "}", literal)
    return sql


def example_key(grain: str) -> str:
    """A key of ``grain`` for messages and checks that need one (``preflight`` parses a partitioned
    SQL producer with it): ``2026-12-07`` for ``day``, and so on.

    :raises KeyError: When ``grain`` is not one of hour, day, week, month, quarter, year.
    """
    return _EXAMPLES[grain]
