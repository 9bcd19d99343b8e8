"""The three write-audit-publish stages, free of Airflow: what the operators call.

Each stage takes the manifest path, the contract id and a :class:`RunIdentity`, opens the
contract's warehouse, does its work, closes the warehouse and returns a small JSON-able result.

Errors that a retry cannot fix are :class:`NonRetryableError` subclasses (the operators raise
``AirflowFailException`` for them): :class:`QualityGateFailed`, producer configuration and data
errors, a manifest that does not fit. Anything else (a database or network error) propagates
unchanged so that Airflow's retries apply.

Lineage: every stage calls the emit hook through :func:`_lineage`, which imports
``contract_runtime.lineage`` lazily and swallows every error, so lineage never changes a task's
outcome. Datasets are named after their physical location (DESIGN §6.3): audit and publish pass
the warehouse's OpenLineage namespace and database (:func:`lineage_warehouse`) with the target
table, so the dataset ``audit`` tested (OTHER) and the one ``publish`` wrote (COMPLETE) are one
identity.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, cast

from contract_runtime.manifest import ManifestError, find_dag, load_manifest
from contract_runtime.partitions import Partition, PartitionKeyError, partition_of
from contract_runtime.run import RunIdentity
from contract_runtime.sqlutil import TableRef, quote_ident
from contract_runtime.tables import STAGING_SCHEMA, staging_for, target_table
from contract_runtime.warehouse import Warehouse, open_warehouse

__all__ = [
    "NonRetryableError",
    "QualityGateFailed",
    "UpstreamNeverPublished",
    "audit",
    "await_first_publishes",
    "lineage_fail",
    "lineage_warehouse",
    "non_retryable_errors",
    "produce",
    "publish",
    "unpublished_upstreams",
]

log = logging.getLogger(__name__)

#: Opens a warehouse from a connection id; tests substitute their own.
WarehouseOpener = Callable[[str | None], Warehouse]


def non_retryable_errors() -> tuple[type[BaseException], ...]:
    """The exception types a retry cannot fix: configuration, contract and type errors.

    :class:`NonRetryableError` (quality gate, producer configuration and data errors, a manifest
    that does not fit), :class:`~contract_runtime.manifest.ManifestError`,
    :class:`~contract_runtime.sqlutil.SqlTypeError` (a type the warehouse cannot take),
    :class:`~contract_runtime.quality.QualityRuleError` (a malformed rule),
    :class:`~contract_runtime.warehouse.WarehouseConfigError` (a missing or unusable Connection) and
    :class:`~contract_runtime.producers.ProducerError`. The operators fail the task at once for
    these (``AirflowFailException``); anything else keeps Airflow's retries.
    """
    from contract_runtime.producers import ProducerError
    from contract_runtime.quality import QualityRuleError
    from contract_runtime.sqlutil import SqlTypeError
    from contract_runtime.warehouse import WarehouseConfigError

    return (NonRetryableError, ManifestError, SqlTypeError, QualityRuleError, WarehouseConfigError, ProducerError)


class NonRetryableError(Exception):
    """A failure that retrying will not fix."""


class QualityGateFailed(NonRetryableError):
    """An ``error`` rule failed under ``block_publish`` or ``quarantine``: nothing is published.

    :ivar summary: The audit summary (what is pushed to XCom).
    """

    def __init__(self, message: str, summary: dict[str, Any]) -> None:
        super().__init__(message)
        self.summary = summary


def _lineage(hook: str, *args: Any) -> None:
    """Call ``contract_runtime.lineage.<hook>(*args)``; never raise, log one line on failure."""
    try:
        module = importlib.import_module("contract_runtime.lineage")
    except ModuleNotFoundError as exc:
        if exc.name == "contract_runtime.lineage":
            log.debug("lineage: contract_runtime.lineage is not installed; %s skipped", hook)
        else:
            log.warning("lineage %s skipped: %s: %s", hook, type(exc).__name__, exc)
        return
    except Exception as exc:  # noqa: BLE001 - lineage must never change the task outcome
        log.warning("lineage %s skipped: %s: %s", hook, type(exc).__name__, exc)
        return
    try:
        fn = getattr(module, hook, None)
        if fn is None:
            log.warning("lineage %s skipped: contract_runtime.lineage has no %s()", hook, hook)
            return
        fn(*args)
    except Exception as exc:  # noqa: BLE001 - lineage must never change the task outcome
        log.warning("lineage %s failed: %s: %s", hook, type(exc).__name__, exc)


def lineage_warehouse(wh: Warehouse) -> dict[str, str]:
    """How lineage names the warehouse ``wh``: ``{"warehouse_namespace", "warehouse_database"}``.

    A DuckDB file gives ``duckdb_warehouse_namespace(path)`` and its catalog; a server database
    gives ``sql_warehouse_namespace(connection URI)`` (scheme, host, port; no credentials) and
    its database (both helpers from ``contract_runtime.lineage``). Call it while ``wh`` is open.

    :returns: The two keys to merge into a dataset or output given to the emit hook (the
        database is left out when unknown); ``{}`` when the lineage package is absent or the
        location cannot be told, so datasets fall back to the lineage namespace. Never raises.
    """
    try:
        module = importlib.import_module("contract_runtime.lineage")
    except Exception:  # noqa: BLE001 - absent or broken: _lineage reports it on the emit
        return {}
    try:
        location = wh.location()
        if location.duckdb_file:
            namespace = module.duckdb_warehouse_namespace(location.duckdb_file)
        elif location.connection_uri:
            namespace = module.sql_warehouse_namespace(location.connection_uri)
        else:
            return {}
    except Exception as exc:  # noqa: BLE001 - lineage must never change the task outcome
        # The type only: a message could quote the connection URI and its password.
        log.warning(
            "lineage: the warehouse's location is unknown (%s); datasets are named in the lineage namespace",
            type(exc).__name__,
        )
        return {}
    naming = {"warehouse_namespace": str(namespace)}
    if location.database:
        naming["warehouse_database"] = str(location.database)
    return naming


def _load(manifest_path: str, contract_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        manifest = load_manifest(manifest_path, contract_id)
        # What the stages read is checked against the manifest schema by load_manifest; they read
        # it as plain JSON.
        return cast("dict[str, Any]", manifest), cast("dict[str, Any]", find_dag(manifest, contract_id))
    except ManifestError as exc:
        raise _NonRetryableManifest(str(exc)) from exc


class _NonRetryableManifest(NonRetryableError):
    """The manifest cannot be read or lacks the contract."""


def staging_tables(dag: dict[str, Any], run: RunIdentity) -> dict[str, TableRef]:
    """Dataset name -> staging table of this run, in contract order."""
    runtime = dag["runtime"]
    contract_id = str(dag["dag_id"])
    return {str(d["name"]): staging_for(contract_id, runtime, str(d["name"]), run.run_hash) for d in runtime["datasets"]}


# ---------------------------------------------------------------------- run cycle


def start_if_run_is_new(
    manifest: dict[str, Any], dag: dict[str, Any], run: RunIdentity, upstream: Mapping[str, Any] | None
) -> None:
    """Send START when this task is the first to run in a cleared DAG run.

    Airflow adds one to ``dag_run.clear_number`` whenever any task of the run is cleared, and the
    OpenLineage runId (ours and the provider's) is keyed on it: a new run. ``produce`` sends START
    on its first try since the clear; ``audit`` or ``publish`` cleared without ``produce`` must
    send it themselves. They can tell from the XCom of the task before them, which records the
    clear number it ran under: another number means it did not run in this clear.

    :param upstream: The XCom of the task before this one (``produce``'s return value for
        ``audit``, the audit summary for ``publish``), or None when unknown (no START then).
    """
    if not run.is_first_try or run.clear_number == 0 or upstream is None:
        return
    if upstream.get("clear_number", 0) == run.clear_number:
        return
    _lineage("emit_start", manifest, dag, run)


# ---------------------------------------------------------------------- produce


def produce(
    manifest_path: str, contract_id: str, run: RunIdentity, *, opener: WarehouseOpener = open_warehouse
) -> dict[str, Any]:
    """Run the contract's producer into fresh staging tables.

    Emits lineage START on the first try. Drops this run's staging tables first (a retry starts
    clean), runs the producer, then checks that every dataset's staging table exists and has
    every contract column.

    :returns: ``{"staging": {dataset: "schema.table"}, "producer": <producer summary>,
        "clear_number": <the DAG run's clear number>}``.
    :raises NonRetryableError: Producer configuration or data errors, missing staging tables
        or columns.
    """
    from contract_runtime.gate import describe, unmet_requirements
    from contract_runtime.producers import ProduceRequest, ProducerError, run_producer

    manifest, dag = _load(manifest_path, contract_id)
    if run.is_first_try:
        _lineage("emit_start", manifest, dag, run)
    unmet = unmet_requirements(manifest, dag, run)
    if unmet:
        reason = describe(contract_id, unmet)
        log.warning("%s", reason)
        _lineage("emit_skip", manifest, dag, run, reason, unmet)
        raise RunSkipped(reason, unmet)
    runtime = dag["runtime"]
    try:
        partition = partition_of(dag, run.partition_key)
    except PartitionKeyError as exc:
        raise _NonRetryableProducer(str(exc)) from exc
    if partition is not None:
        log.info("%s: partition %s of %s, [%s, %s)", contract_id, partition.key, partition.column, partition.start, partition.end)
    staging = staging_tables(dag, run)
    wh = _open(opener, dag)
    try:
        await_first_publishes(manifest, dag, wh)
        wh.create_schema(STAGING_SCHEMA)
        for table in staging.values():
            wh.drop_table(table)
        request = ProduceRequest(
            manifest_path=manifest_path, manifest=manifest, dag=dag, run=run, warehouse=wh, staging=staging
        )
        try:
            summary = run_producer(request)
        except ProducerError as exc:
            raise _NonRetryableProducer(str(exc)) from exc
        problems: list[str] = []
        for ds in runtime["datasets"]:
            table = staging[str(ds["name"])]
            if not wh.table_exists(table):
                problems.append(f"{ds['name']}: the producer wrote no staging table {table.dotted}")
                continue
            have = {c.name for c in wh.columns(table)}
            missing = [str(p["name"]) for p in ds["schema"]["properties"] if p["name"] not in have]
            if missing:
                problems.append(f"{ds['name']}: staging {table.dotted} lacks contract columns {missing}")
        if problems:
            raise _NonRetryableProducer(f"{contract_id}: " + "; ".join(problems))
        return {
            "staging": {k: v.dotted for k, v in staging.items()},
            "producer": summary,
            "clear_number": run.clear_number,
        }
    finally:
        wh.close()


def _open(opener: WarehouseOpener, dag: Mapping[str, Any]) -> Warehouse:
    """The contract's warehouse; a server that refuses the connection is a retryable
    :class:`~contract_runtime.warehouse.WarehouseUnavailableError` naming the contract."""
    from contract_runtime.warehouse import WarehouseUnavailableError

    try:
        return opener((dag.get("runtime") or {}).get("warehouse_conn_id"))
    except WarehouseUnavailableError as exc:
        raise WarehouseUnavailableError(f"{dag['dag_id']}: {exc}") from exc


class UpstreamNeverPublished(Exception):
    """An upstream the contract reads, produced by another contract of the manifest, has never
    been published (its table does not exist). Retryable: the upstream's first publish is
    usually under way (a first deployment, where every root runs at once)."""


#: Seconds a producer waits for the first publish of an upstream it reads
#: (env ``CONTRACT_ASSETS_FIRST_PUBLISH_WAIT``; 0 checks once).
FIRST_PUBLISH_WAIT_S: float = 900.0


def unpublished_upstreams(manifest: Mapping[str, Any], dag: Mapping[str, Any], wh: Warehouse) -> list[tuple[str, TableRef]]:
    """The upstreams of ``dag`` (``inlets``, triggering or not) that another contract of the
    manifest produces and whose published table does not exist yet, as ``(asset, table)``.

    An external upstream (no producer in the manifest) is not checked: its data is published
    outside the project; nor is an ``extract`` contract's dataset, which is landing files and
    their manifest, not a table (its load reads the manifests). A partitioned upstream counts
    as published once any partition is.
    """
    inlets = {str(name) for name in dag.get("inlets") or []}
    missing: list[tuple[str, TableRef]] = []
    for other in manifest.get("dags") or []:
        if other is dag or other.get("dag_id") == dag.get("dag_id"):
            continue
        runtime = other.get("runtime") or {}
        if (runtime.get("producer") or {}).get("type") == "extract":
            continue
        for ds in runtime.get("datasets") or []:
            asset = str(ds.get("asset") or "")
            if asset in inlets:
                table = target_table(str(runtime["domain"]), str(ds["name"]))
                if not wh.table_exists(table):
                    missing.append((asset, table))
    return sorted(missing, key=lambda m: m[0])


def await_first_publishes(
    manifest: Mapping[str, Any], dag: Mapping[str, Any], wh: Warehouse, *,
    timeout: float | None = None, interval: float = 5.0, clock: Callable[[], float] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> None:
    """Wait until every upstream the contract reads that the manifest produces has been
    published once (:func:`unpublished_upstreams` is empty).

    Airflow starts an asset-triggered run as soon as its condition holds, and a condition with
    ``any`` (or an upstream with ``trigger: false``) holds while another upstream the producer
    reads may never have been published: on a first deployment, where every root runs at once,
    the consumer would otherwise fail on a missing table, in whichever order the upstreams
    happen to finish. On the embedded DuckDB file (one writer, and a pool of one slot) the
    producer cannot wait for another task's publish, so it checks once.

    :param timeout: Seconds to wait (default :data:`FIRST_PUBLISH_WAIT_S`, env
        ``CONTRACT_ASSETS_FIRST_PUBLISH_WAIT``).
    :raises UpstreamNeverPublished: (retryable) when an upstream is still unpublished at the
        deadline; the message names the contract, each upstream, its table and the Connection.
    """
    import os
    import time

    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    if timeout is None:
        timeout = float(os.environ.get("CONTRACT_ASSETS_FIRST_PUBLISH_WAIT", FIRST_PUBLISH_WAIT_S))
    if wh.dialect == "duckdb":
        timeout = 0.0
    deadline = clock() + timeout
    missing = unpublished_upstreams(manifest, dag, wh)
    waited = False
    while missing and clock() < deadline:
        if not waited:
            log.info(
                "%s: waiting up to %.0f s for the first publish of %s",
                dag["dag_id"], timeout, ", ".join(f"{a} ({t.dotted})" for a, t in missing),
            )
            waited = True
        sleep(interval)
        missing = unpublished_upstreams(manifest, dag, wh)
    if missing:
        conn_id = (dag.get("runtime") or {}).get("warehouse_conn_id")
        where = f"the warehouse of Connection {conn_id!r}" if conn_id else f"the warehouse {wh.description}"
        raise UpstreamNeverPublished(
            f"{dag['dag_id']}: upstream {', '.join(f'{a} (table {t.dotted})' for a, t in missing)} has never been "
            f"published in {where}"
            + (f" (waited {timeout:.0f} s)" if timeout else "")
            + "; run its DAG first: this task retries, and its next try reads it once it is published"
        )
    if waited:
        log.info("%s: every upstream it reads is published", dag["dag_id"])


class RunSkipped(Exception):
    """``require: passed`` was not met: the run is skipped, not failed (the operator raises
    Airflow's ``AirflowSkipException``; ``audit`` and ``publish`` are skipped with it).

    :ivar unmet: :func:`contract_runtime.gate.unmet_requirements`.
    """

    def __init__(self, message: str, unmet: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.unmet = unmet


class _NonRetryableProducer(NonRetryableError):
    """The producer failed for a reason a retry will not fix."""


# ---------------------------------------------------------------------- audit


def audit(
    manifest_path: str,
    contract_id: str,
    run: RunIdentity,
    *,
    opener: WarehouseOpener = open_warehouse,
    produced: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Evaluate every quality rule of every dataset on its staging table, then gate.

    Emits one lineage OTHER event (assertions) per dataset. Then, when an ``error`` rule failed:
    ``block_publish`` drops the staging tables and raises; ``quarantine`` moves them to
    ``_ca_quarantine`` and raises; ``warn`` lets publish go on with status ``degraded``.

    :returns: The summary ``{"contract_id", "on_failure", "status" ("passed"|"degraded"),
        "datasets": [DatasetVerdict.summary(), ...], "quarantine": []}``.
    :raises QualityGateFailed: On a blocking failure (its ``summary`` has ``status``
        ``blocked`` or ``quarantined``).
    :param produced: What ``produce`` returned (its XCom), to tell whether this task starts a
        cleared DAG run (see :func:`start_if_run_is_new`).
    :raises NonRetryableError: When a staging table is missing or a rule is malformed.
    """
    from contract_runtime.publish import quarantine_datasets
    from contract_runtime.quality import (
        DatasetVerdict,
        QualityRuleError,
        evaluate_dataset,
        log_result,
    )

    manifest, dag = _load(manifest_path, contract_id)
    start_if_run_is_new(manifest, dag, run, produced)
    runtime = dag["runtime"]
    on_failure = runtime["on_failure"]
    try:
        partition = partition_of(dag, run.partition_key)
    except PartitionKeyError as exc:
        raise _NonRetryableProducer(str(exc)) from exc
    staging = staging_tables(dag, run)
    is_dbt = (runtime.get("producer") or {}).get("type") == "dbt"
    wh = _open(opener, dag)
    try:
        naming = lineage_warehouse(wh)
        verdicts: list[DatasetVerdict] = []
        for ds in runtime["datasets"]:
            table = staging[str(ds["name"])]
            if not wh.table_exists(table):
                raise _NonRetryableProducer(
                    f"{contract_id}: staging table {table.dotted} of {ds['name']!r} is missing (did produce run "
                    f"for run {run.run_id!r}?)"
                )
        dbt_results: dict[str, list[dict[str, Any]]] = {}
        dbt_summary: dict[str, dict[str, int]] = {}
        if is_dbt:
            dbt_results, dbt_summary = _dbt_tests(manifest_path, manifest, dag, run, wh)
        for ds in runtime["datasets"]:
            table = staging[str(ds["name"])]
            try:
                verdict = evaluate_dataset(wh, table, ds)
            except QualityRuleError as exc:
                raise _NonRetryableProducer(f"{contract_id}: {exc}") from exc
            # the dbt tests first, then the contract's own rules: one verdict, one facet
            verdict.results[:0] = dbt_results.get(str(ds["name"]), [])
            if partition is not None:
                published = target_table(str(runtime["domain"]), str(ds["name"]))
                own = [partition_bounds_result(wh, table, partition), *published_key_results(wh, table, published, ds, partition)]
                for result in own:
                    log_result(result)
                verdict.results.extend(own)
            verdicts.append(verdict)
            # the tested dataset is named like publish's output: the target table, not staging
            tested = {**ds, "table": target_table(str(runtime["domain"]), str(ds["name"])).dotted, **naming}
            if runtime.get("producer", {}).get("type") == "extract":
                tested["physical"] = _landing_identity(dag)
            _lineage("emit_assertions", manifest, dag, run, tested, verdict.results)
        statuses = [v.status(on_failure) for v in verdicts]
        summary: dict[str, Any] = {
            "contract_id": contract_id,
            "on_failure": on_failure,
            "status": "degraded" if "degraded" in statuses else "passed",
            "datasets": [v.summary(on_failure) for v in verdicts],
            "quarantine": [],
            "clear_number": run.clear_number,
        }
        if is_dbt:
            for entry in summary["datasets"]:
                entry["dbt_tests"] = dbt_summary.get(str(entry["dataset"]), {})
        blocking = [v for v in verdicts if v.blocking]
        if blocking and on_failure != "warn":
            failed = "; ".join(
                f"{v.asset}: "
                + ", ".join(
                    (
                        f"{r['name']} (not evaluated: {r['error']})"
                        if r.get("error")
                        else f"{r['name']} (actual {r['actual']}, {r['operator']} {r['expected']})"
                    )
                    for r in v.results
                    if not r["success"] and r["severity"] == "error"
                )
                for v in blocking
            )
            if on_failure == "quarantine":
                summary["quarantine"] = quarantine_datasets(wh, dag, run)
                if is_dbt:
                    _drop_dbt_staging(wh, dag, run)
                summary["status"] = "quarantined"
                where = ", ".join(q["table"] for q in summary["quarantine"])
                raise QualityGateFailed(
                    f"{contract_id}: error rules failed, staging quarantined to {where}, nothing published: {failed}",
                    summary,
                )
            for table in staging.values():
                wh.drop_table(table)
            if is_dbt:
                _drop_dbt_staging(wh, dag, run)
            summary["status"] = "blocked"
            raise QualityGateFailed(f"{contract_id}: error rules failed, publish blocked: {failed}", summary)
        return summary
    finally:
        wh.close()


def partition_bounds_result(wh: Warehouse, table: TableRef, partition: Partition) -> dict[str, Any]:
    """The audit's rule ``partition_bounds`` (severity ``error``): every row of a partitioned
    run's staging table has its partition column in [start, end) (a NULL is outside).

    :returns: A result shaped like :func:`contract_runtime.quality.evaluate_rule`'s: ``actual``
        is the number of rows outside, expected ``== 0``.
    """
    col = quote_ident(partition.column)
    outside = wh.scalar(
        f"select count(*) from {table.sql} where {col} is null or not ({col} >= ? and {col} < ?)",
        [partition.start, partition.end],
    )
    return _zero_rows_result("partition_bounds", None, partition.column, "error", outside)


def _zero_rows_result(name: str, metric: str | None, column: Any, severity: str, rows: Any) -> dict[str, Any]:
    """A partition rule's result, shaped like :func:`contract_runtime.quality.evaluate_rule`'s:
    ``rows`` counted, expected ``== 0``, ``type`` ``partition``."""
    actual = int(rows or 0)
    return {
        "name": name,
        "metric": metric,
        "column": column,
        "severity": severity,
        "operator": "==",
        "expected": 0,
        "actual": actual,
        "success": actual == 0,
        "type": "partition",
        "unit": "rows",
    }


def published_key_results(
    wh: Warehouse, table: TableRef, published: TableRef, dataset: Mapping[str, Any], partition: Partition
) -> list[dict[str, Any]]:
    """The table-wide half of a partitioned dataset's key rules (issue 35; docs/contract-format.md
    "Partitions"): a ``unique`` or ``primaryKey`` rule holds over the whole published table, not
    only over the run's partition, so each such rule (the compiler's implicit ``duplicateValues``
    rules, ``implied_by`` ``unique`` or ``primaryKey``) gets a twin, ``<rule>_published``, with the
    rule's severity: the staging rows whose key (a column, or the composite key's tuple, rows
    with a NULL member left out as the rule itself does) is already in a published row of
    ANOTHER partition, the rows publish would keep beside it. Rows of the run's own partition
    are replaced by publish, so they are not counted. Without a published table yet, nothing to
    compare with: no twin.

    :returns: One result per key rule, shaped like
        :func:`contract_runtime.quality.evaluate_rule`'s (``type`` ``partition``, ``actual`` the
        colliding staging rows, expected ``== 0``).
    """
    if not wh.table_exists(published):
        return []
    col = quote_ident(partition.column)
    results: list[dict[str, Any]] = []
    for rule in dataset.get("quality", []) or []:
        if rule.get("metric") != "duplicateValues" or rule.get("implied_by") not in ("unique", "primaryKey"):
            continue
        arguments = rule.get("arguments")
        key = list((arguments or {}).get("properties") or []) if isinstance(arguments, Mapping) else []
        columns = [str(c) for c in key] or [str(rule["column"])]
        complete = " and ".join(f"s.{quote_ident(c)} is not null" for c in columns)
        same = " and ".join(f"p.{quote_ident(c)} = s.{quote_ident(c)}" for c in columns)
        colliding = wh.scalar(
            f"select count(*) from {table.sql} s where {complete} and exists (select 1 from {published.sql} p "
            f"where {same} and (p.{col} is null or not (p.{col} >= ? and p.{col} < ?)))",
            [partition.start, partition.end],
        )
        results.append(_zero_rows_result(f"{rule['name']}_published", "duplicateValues", rule.get("column"), str(rule["severity"]), colliding))
    return results


# ---------------------------------------------------------------------- publish


def publish(
    manifest_path: str,
    contract_id: str,
    run: RunIdentity,
    audit_summary: dict[str, Any] | None,
    *,
    opener: WarehouseOpener = open_warehouse,
) -> list[dict[str, Any]]:
    """Swap the audited staging tables into their targets (one transaction), emit COMPLETE.

    :param audit_summary: What :func:`audit` returned for this run (from XCom).
    :returns: The outputs of :func:`contract_runtime.publish.publish_datasets`.
    :raises NonRetryableError: When the audit summary is missing or does not allow publishing.
    """
    from contract_runtime.publish import PublishError, publish_datasets

    manifest, dag = _load(manifest_path, contract_id)
    start_if_run_is_new(manifest, dag, run, audit_summary)
    if not audit_summary or not isinstance(audit_summary.get("datasets"), list):
        raise _NonRetryableProducer(f"{contract_id}: no audit result for run {run.run_id!r}; nothing published")
    verdicts = {str(d["dataset"]): d for d in audit_summary["datasets"]}
    wh = _open(opener, dag)
    try:
        if dag["runtime"].get("producer", {}).get("type") == "extract":
            outputs = _publish_extract(manifest_path, manifest, dag, run, wh, verdicts)
            naming: dict[str, str] = {}
        else:
            try:
                outputs = publish_datasets(wh, dag, run, verdicts)
            except PublishError as exc:
                raise _NonRetryableProducer(str(exc)) from exc
            if dag["runtime"].get("producer", {}).get("type") == "dbt":
                _drop_dbt_staging(wh, dag, run)
            naming = lineage_warehouse(wh)
            if dag["runtime"].get("producer", {}).get("type") == "load":
                outputs = [{**o, "source": _load_source(dag, run, wh, o)} for o in outputs]
    finally:
        wh.close()
    _lineage("emit_complete", manifest, dag, run, [_lineage_output(o, naming) for o in outputs])
    return outputs


def _dbt_tests(
    manifest_path: str, manifest: dict[str, Any], dag: dict[str, Any], run: RunIdentity, wh: Warehouse
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, int]]]:
    """The dbt tests of a ``dbt`` contract's models on staging (:func:`producers.dbt.audit_tests`)."""
    from contract_runtime.producers import ProducerError
    from contract_runtime.producers.dbt import DbtTestError, audit_tests

    try:
        return audit_tests(manifest_path, manifest, dag, run, wh)
    except (DbtTestError, ProducerError) as exc:
        raise _NonRetryableProducer(str(exc)) from exc


def _drop_dbt_staging(wh: Warehouse, dag: dict[str, Any], run: RunIdentity) -> None:
    """Drop the run's dbt staging schema (what is left: seeds, unpublished relations)."""
    from contract_runtime.producers.dbt import drop_staging_schema
    from contract_runtime.tables import dbt_staging_schema

    drop_staging_schema(wh, dbt_staging_schema(str(dag["dag_id"]), run.run_hash))


def _landing_identity(dag: dict[str, Any]) -> dict[str, str] | None:
    """An extract's dataset in lineage: its declared landing location (as publish names its output)."""
    try:
        from contract_runtime.lineage.identity import uri_identity

        located = uri_identity(str(dag["runtime"]["landing"]["uri"]).rstrip("/"))
    except Exception:  # noqa: BLE001 - lineage must never change the task outcome
        return None
    return {"namespace": located[0], "name": located[1]} if located else None


def _load_source(dag: dict[str, Any], run: RunIdentity, wh: Warehouse, output: dict[str, Any]) -> dict[str, Any]:
    """What a load read, for lineage: ``{"asset", "location", "files", "rows"}`` (``_ca_state.objects``).

    ``location`` names the input dataset: ``source.uri`` (the object, prefix or glob read), or the
    extract's declared landing location; None for the demo's ``sample_data`` (the source Asset's
    own identity stays).
    """
    from contract_runtime.state import run_objects

    runtime = dag["runtime"]
    source = runtime.get("source") or {}
    files = run_objects(wh, str(dag["dag_id"]), str(output["dataset"]), run.run_id, "loaded")
    location: str | None = str(source.get("uri") or "")
    if source.get("manifest"):
        location = str(source["manifest"]["uri"])
    elif runtime.get("sample_data"):
        location = None
    return {
        "asset": str(source.get("name")),
        "location": location.rstrip("/") if location else None,
        "files": files,
        "rows": sum(int(f["rows"] or 0) for f in files),
    }


def _publish_extract(
    manifest_path: str,
    manifest: dict[str, Any],
    dag: dict[str, Any],
    run: RunIdentity,
    wh: Warehouse,
    verdicts: dict[str, Any],
) -> list[dict[str, Any]]:
    """Publish an extract: verify its landing files, write the manifest (producers.extract)."""
    from contract_runtime.producers import ProduceRequest, ProducerError
    from contract_runtime.producers.extract import publish_manifest

    request = ProduceRequest(
        manifest_path=manifest_path, manifest=manifest, dag=dag, run=run, warehouse=wh, staging=staging_tables(dag, run)
    )
    try:
        return publish_manifest(request, verdicts)
    except ProducerError as exc:
        raise _NonRetryableProducer(str(exc)) from exc


def _lineage_output(output: dict[str, Any], naming: dict[str, str]) -> dict[str, Any]:
    keys = ("dataset", "asset", "table", "row_count", "columns", "quality_status", "quarantined")
    optional = ("manifest_uri", "location", "files", "size_bytes", "source")
    return {**{k: output[k] for k in keys}, **{k: output[k] for k in optional if k in output}, **naming}


def asset_event_extra(
    output: dict[str, Any], dag: dict[str, Any], run: RunIdentity | None = None, manifest: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The Asset event ``extra`` of one published dataset.

    With the run and the manifest, ``openlineage`` names the run of our contract job that
    published the batch, in the Airflow OpenLineage provider's convention for Asset events
    (``parentJobNamespace``, ``parentJobName``, ``parentRunId``: what the provider's
    ``_extract_ol_info_from_asset_event`` reads into a consumer's ``jobDependencies``), so the
    consumer's lineage names the producing run (ADR 0010).

    :returns: ``{"row_count", "quality_status", "failed_rules", "contract_id", "contract_version"}``
        and, with ``run`` and ``manifest``, ``"openlineage": {"parentJobNamespace",
        "parentJobName", "parentRunId"}``;
        a ``dbt`` producer's dataset adds ``"dbt_tests": {"total", "passed", "failed", "warned"}``
        (the dbt test summary of its audit);
        an extract's adds ``"manifest_uri"``, ``"file_count"`` and ``"size_bytes"`` (the load
        contract reading it lists the manifests itself; these are for people and sensors).
    """
    extra: dict[str, Any] = {
        "row_count": int(output["row_count"]),
        "quality_status": str(output["quality_status"]),
        "failed_rules": list(output.get("failed_rules", [])),
        "contract_id": str(dag["dag_id"]),
        "contract_version": str(dag.get("contract_version", "")),
    }
    if run is not None and manifest is not None:
        from contract_runtime.lineage.runid import contract_run_id

        extra["openlineage"] = {
            "parentJobNamespace": f"{manifest['lineage']['namespace']}.{dag['runtime']['domain']}",
            "parentJobName": str(dag["dag_id"]),
            "parentRunId": contract_run_id(run, str(dag["dag_id"])),
        }
    if output.get("dbt_tests"):
        extra["dbt_tests"] = {k: int(v) for k, v in output["dbt_tests"].items()}
    if output.get("manifest_uri"):
        extra["manifest_uri"] = str(output["manifest_uri"])
        extra["file_count"] = len(output.get("files") or [])
        extra["size_bytes"] = int(output.get("size_bytes") or 0)
    return extra


# ---------------------------------------------------------------------- failure


def lineage_fail(manifest_path: str, contract_id: str, run: RunIdentity, error: BaseException, task_id: str) -> None:
    """Emit lineage FAIL for the final failure of a task. Never raises."""
    try:
        manifest, dag = _load(manifest_path, contract_id)
    except Exception as exc:  # noqa: BLE001 - lineage must never change the task outcome
        log.warning("lineage emit_fail skipped: %s", exc)
        return
    _lineage("emit_fail", manifest, dag, run, error, task_id)
