"""The ``sql`` producer: ``CREATE TABLE <staging> AS <the contract's SQL>``.

The SQL text travels in the manifest (``runtime.producer.sql``), compiled from the project file
``producer.path``, so workers need no project files. It reads upstream tables by their Asset
names, ``<domain>.<name>``, which are the published tables. It is the contract author's SQL and
runs as written; the runtime splices only the quoted staging identifier around it.

A contract with several datasets cannot use a single SQL producer (one query makes one table).

A partitioned contract's SQL selects the run's partition with the placeholders ``{partition_key}``,
``{partition_start}`` and ``{partition_end}``, replaced by SQL literals
(:func:`contract_runtime.partitions.sql_literals`); a row it returns outside the bounds blocks the
audit.
"""

from __future__ import annotations

import logging
from typing import Any

from contract_runtime.partitions import fill_sql, partition_of
from contract_runtime.producers import ProduceRequest, ProducerError

__all__ = ["produce"]

log = logging.getLogger(__name__)


def produce(request: ProduceRequest) -> dict[str, Any]:
    """Create the one dataset's staging table from the manifest's SQL.

    :returns: ``{"rows": {dataset: row count}}``.
    :raises ProducerError: When the manifest has no SQL text, or the contract has more than one
        dataset. Database errors from the SQL propagate as the driver's exception.
    """
    producer = request.runtime["producer"]
    sql = producer.get("sql")
    if not isinstance(sql, str) or not sql.strip():
        raise ProducerError(
            f"{request.contract_id}: producer.sql is empty in the manifest (path {producer.get('path')!r})"
        )
    datasets = list(request.datasets)
    if len(datasets) != 1:
        raise ProducerError(f"{request.contract_id}: a sql producer makes exactly one dataset, got {datasets}")
    name = datasets[0]
    staging = request.staging[name]
    log.info("sql producer %s: %s -> %s", request.contract_id, producer.get("path"), staging.dotted)
    partition = partition_of(request.dag, request.run.partition_key)
    if partition is not None:
        # A partitioned contract's SQL selects its partition (docs/contract-format.md, Partitions).
        sql = fill_sql(sql, partition)
        log.info("sql producer %s: partition %s [%s, %s)", request.contract_id, partition.key, partition.start, partition.end)
    request.warehouse.create_table_as(staging, sql)
    return {"rows": {name: request.warehouse.row_count(staging)}}
