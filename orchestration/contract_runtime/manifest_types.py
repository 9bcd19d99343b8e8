"""The manifest (``generated/manifest.json``) as ``TypedDict``\\ s: what the runtime reads.

The JSON Schema ``compiler/schemas/manifest/v2.schema.json`` (shipped beside this module as
``manifest-v2.schema.json``) is the authority, and :func:`contract_runtime.manifest.load_manifest`
checks every manifest against it before any stage reads it, so code may index required keys
directly. Each class has the name of a schema ``$defs`` entry; ``test/python/test_manifest_schema.py``
checks that its keys, and which are required, are the schema's. To add a field: the schema, the
TypeScript type in ``compiler/model/manifest.ts``, then here (ARCHITECTURE.md, "Add a manifest field").

Imports only the standard library.
"""

# No ``from __future__ import annotations``: TypedDict reads NotRequired from evaluated annotations.
from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "CommandProducer",
    "CommandRuntime",
    "DagPlan",
    "DagRuntime",
    "DatasetSchema",
    "DbtModel",
    "DbtProducer",
    "DbtRuntime",
    "DbtTable",
    "DeadlinePlan",
    "DefaultArgsPlan",
    "Edge",
    "ExtractProducer",
    "ExtractRuntime",
    "Freshness",
    "FreshnessMonitorPlan",
    "IngestionSource",
    "Landing",
    "LoadProducer",
    "LoadRuntime",
    "Manifest",
    "ManifestAsset",
    "ManifestSource",
    "MonitoredAsset",
    "NotifierPlan",
    "Processing",
    "Property",
    "Proposals",
    "PythonProducer",
    "PythonRuntime",
    "QualityRule",
    "ResolvedDataset",
    "RuntimeCommon",
    "RuntimeDataset",
    "RuntimeUpstream",
    "SchedulePlan",
    "SqlProducer",
    "SqlRuntime",
    "TaskPlan",
]

OnFailure = Literal["block_publish", "quarantine", "warn"]
Severity = Literal["error", "warning", "info"]


class Property(TypedDict):
    """One column of a dataset's schema (ODCS property)."""

    name: str
    logicalType: Literal["string", "date", "timestamp", "time", "number", "integer", "object", "array", "boolean"]
    #: A plain SQL type name (the schema's pattern is :data:`contract_runtime.sqlutil.PHYSICAL_TYPE_PATTERN`).
    physicalType: NotRequired[str]
    required: NotRequired[bool]
    primaryKey: NotRequired[bool]
    unique: NotRequired[bool]
    classification: NotRequired[str]
    description: NotRequired[str]
    tags: NotRequired[list[str]]


class QualityRule(TypedDict):
    """An ODCS quality rule; ``name`` and ``severity`` are decided by the compiler, never here."""

    name: str
    severity: Severity
    description: NotRequired[str]
    type: NotRequired[Literal["library", "sql"]]
    metric: NotRequired[
        Literal["nullValues", "missingValues", "invalidValues", "duplicateValues", "rowCount", "freshness"]
    ]
    column: NotRequired[str]
    validValues: NotRequired[list[str | float | bool]]
    missingValues: NotRequired[list[str | float | bool | None]]
    query: NotRequired[str]
    unit: NotRequired[Literal["rows", "percent", "seconds"]]
    mustBe: NotRequired[float]
    mustNotBe: NotRequired[float]
    mustBeGreaterThan: NotRequired[float]
    mustBeGreaterOrEqualTo: NotRequired[float]
    mustBeLessThan: NotRequired[float]
    mustBeLessOrEqualTo: NotRequired[float]
    mustBeBetween: NotRequired[list[float]]
    mustNotBeBetween: NotRequired[list[float]]
    #: ODCS schema-level arguments (``{"properties": [...]}``, a composite key's columns).
    arguments: NotRequired[dict[str, list[str]]]
    #: The property flag an implicit rule is derived from (``required``, ``unique``, ``primaryKey``).
    implied_by: NotRequired[Literal["required", "unique", "primaryKey"]]


class DatasetSchema(TypedDict):
    version: int
    properties: list[Property]


class PartitioningPlan(TypedDict):
    """A partitioned contract's partitioning (issue 35; ``compiler/support/partitions.ts``)."""

    column: str
    grain: Literal["hour", "day", "week", "month", "quarter", "year"]
    #: The grain's key as Airflow 3.2 formats it (strftime; a quarter's ``{quarter}`` filled in).
    key_format: str


class AssetWatcherPlan(TypedDict):
    """An AssetWatcher on an event-driven ingestion's source Asset (issue 36, ADR 0034):
    ``MessageQueueTrigger(scheme="sqs", sqs_queue=queue, aws_conn_id=conn_id,
    waiter_delay=poll_interval_seconds)``."""

    #: ``<contract id>.queue``.
    name: str
    scheme: Literal["sqs"]
    #: The SQS queue URL.
    queue: str
    #: The AWS Connection id the triggerer polls the queue with.
    conn_id: str
    #: Seconds the watcher sleeps after an empty poll.
    poll_interval_seconds: int


class ManifestAsset(TypedDict):
    name: str
    uri: str
    #: The URI Airflow stores, present only when it differs from ``uri``.
    airflow_uri: NotRequired[str]
    partitioning: NotRequired[PartitioningPlan]
    #: The dataset's description, as its contract gives it; absent when it gives none.
    description: NotRequired[str]
    group: str
    extra: dict[str, Any]
    external: bool
    status: Literal["draft", "active", "deprecated", "retired"]
    producer: str | None
    contract: str
    contract_sha256: str | None
    schema: DatasetSchema | None
    quality: list[QualityRule]
    renamed_from: list[str]
    sample_data: NotRequired[str]
    #: The AssetWatchers of an event-driven ingestion's source (issue 36, ADR 0034).
    watchers: NotRequired[list[AssetWatcherPlan]]


Edge = TypedDict("Edge", {"from": str, "to": str, "via": str})


class _Cron(TypedDict):
    expression: str
    timezone: str


class SchedulePlan(TypedDict):
    #: An asset condition tree: ``{"asset": name}``, ``{"all": [...]}`` or ``{"any": [...]}``.
    assets: dict[str, Any] | None
    cron: _Cron | None
    #: A partitioned contract's timetable: ``{"timetable": "CronPartitionTimetable", "run_offset": -1,
    #: "key_format"}`` or ``{"timetable": "PartitionedAssetTimetable", "mappers": [...]}``.
    partition: NotRequired[dict[str, Any]]


class TaskPlan(TypedDict):
    task_id: Literal["produce", "audit", "publish"]
    inlets: list[str]
    outlets: list[str]
    upstream_task_ids: list[str]


class DefaultArgsPlan(TypedDict):
    """Airflow default_args; durations in seconds."""

    owner: str
    retries: NotRequired[int]
    retry_delay_seconds: NotRequired[int]
    execution_timeout_seconds: NotRequired[int]
    pool: NotRequired[str]


class _Physical(TypedDict):
    namespace: str
    name: str


class RuntimeDataset(TypedDict):
    """A dataset a DAG produces, as stored: its URI, schema and quality rules are its asset's."""

    name: str
    #: The ``assets[]`` entry (by name) holding the URI, schema and authored quality rules.
    asset: str
    layer: str
    physical: NotRequired[_Physical]


class ResolvedDataset(RuntimeDataset):
    """A :class:`RuntimeDataset` as :func:`contract_runtime.manifest.load_manifest` returns it,
    joined to its asset (:func:`contract_runtime.quality_rules.resolve_datasets`; not a schema
    ``$defs`` entry: version 1 stored these keys, version 2 derives them)."""

    uri: str | None
    schema: DatasetSchema
    #: The rules the audit runs: the asset's, the implied ones, the data-time ones.
    quality: list[QualityRule]


class RuntimeUpstream(TypedDict):
    asset: str
    trigger: bool
    schema_version: NotRequired[int]
    require: NotRequired[Literal["passed"]]


class Processing(TypedDict):
    purpose: str
    legal_basis: str


class Freshness(TypedDict):
    """ISO-8601 durations, the data-time column and the deadline (docs/contract-format.md)."""

    max_age: str
    degrade_after: NotRequired[str]
    column: NotRequired[str]
    expected_runtime: NotRequired[str]
    deadline_reference: NotRequired[Literal["queued_at", "logical_date"]]


#: A notifier of the orchestration config: its name, ``BaseNotifier`` class path and kwargs
#: (the functional form, since ``class`` is a keyword).
NotifierPlan = TypedDict("NotifierPlan", {"name": str, "class": str, "kwargs": dict[str, Any]})


class DeadlinePlan(TypedDict):
    """The DeadlineAlert of ``freshness.expected_runtime``."""

    reference: Literal["queued_at", "logical_date"]
    interval_seconds: float
    notifier: NotifierPlan


class MonitoredAsset(TypedDict):
    """One asset the freshness monitor watches; durations as written and in seconds."""

    name: str
    uri: str
    producer: str | None
    published_by: str | None
    max_age: str
    max_age_seconds: float
    degrade_after: str | None
    degrade_after_seconds: float | None
    #: A partitioned asset's grain (its producer's ``partitioning.grain``); absent otherwise.
    partition_grain: NotRequired[str]


class _MonitorCron(TypedDict):
    expression: str
    timezone: str


class _MonitorSchedule(TypedDict):
    cron: _MonitorCron


class FreshnessMonitorPlan(TypedDict):
    """The generated freshness monitor DAG (``contract_runtime.freshness``)."""

    dag_id: str
    schedule: _MonitorSchedule
    notifier: NotifierPlan | None
    warehouse_conn_id: str | None
    #: ``contract_assets_duckdb`` when the warehouse is a DuckDB file (ADR 0030).
    pool: NotRequired[str]
    assets: list[MonitoredAsset]


class RuntimeCommon(TypedDict):
    """Fields every runtime variant has."""

    kind: Literal["TransformContract", "IngestionContract"]
    domain: str
    #: Decided by the compiler (the contract's, else ``"block_publish"``).
    on_failure: OnFailure
    datasets: list[RuntimeDataset]
    upstreams: list[RuntimeUpstream]
    processing: NotRequired[Processing]
    freshness: NotRequired[Freshness]
    #: Airflow Connection id of the warehouse; absent: the local DuckDB file.
    warehouse_conn_id: NotRequired[str]
    #: A partitioned contract's partitioning: each run writes the partition of ``dag_run.partition_key``.
    partitioning: NotRequired[PartitioningPlan]


class SqlProducer(TypedDict):
    type: Literal["sql"]
    path: str
    #: The SQL file's text, LF line ends.
    sql: str
    params: NotRequired[dict[str, Any]]


class PythonProducer(TypedDict):
    type: Literal["python"]
    entrypoint: str
    params: NotRequired[dict[str, Any]]


class CommandProducer(TypedDict):
    type: Literal["command"]
    family: str
    args: NotRequired[list[str]]
    params: NotRequired[dict[str, Any]]
    #: The family's argument list, then ``args``.
    command: list[str]
    env: dict[str, str]


class DbtModel(TypedDict):
    name: str
    unique_id: str
    #: The model's file, relative to the dbt project.
    path: str


class DbtTable(TypedDict):
    schema: str
    name: str


class DbtProducer(TypedDict):
    """A dbt producer resolved against its project's committed ``manifest.json`` (ADR 0012)."""

    type: Literal["dbt"]
    #: The dbt project folder, project-relative.
    project: str
    select: str
    params: NotRequired[dict[str, Any]]
    #: The project's committed ``manifest.json``, project-relative.
    manifest: str
    #: The contract's models, one per dataset, in dataset order.
    models: list[DbtModel]
    #: Seeds the models read, built into staging with them.
    seeds: list[str]
    #: Models of other contracts the models ref -> their published table.
    upstream_models: dict[str, DbtTable]


class LoadProducer(TypedDict):
    type: Literal["load"]


class ManifestSource(TypedDict):
    """A load of an extract's dataset: the extract and its landing location (``run-*/_manifest.json``)."""

    contract: str
    uri: str
    connection_id: NotRequired[str]
    #: The extract's source has ``sample_data``: a local folder beside the warehouse stands in.
    local_demo: NotRequired[Literal[True]]


class IngestionSource(TypedDict):
    name: str
    uri: str
    system: str
    format: Literal["csv", "parquet", "jsonl"]
    connection_id: NotRequired[str]
    schema_version: NotRequired[int]
    description: NotRequired[str]
    #: ``mode: extract``: the source table or query.
    table: NotRequired[str]
    query: NotRequired[str]
    manifest: NotRequired[ManifestSource]


class ExtractProducer(TypedDict):
    type: Literal["extract"]


class Landing(TypedDict):
    """``mode: extract``: where the Parquet files and the manifest go."""

    uri: str
    connection_id: NotRequired[str]
    rows_per_file: NotRequired[int]


class Proposals(TypedDict):
    """The orchestration config's ``proposals``: where schema-drift proposals are written."""

    uri: str
    connection_id: NotRequired[str]


class _Incremental(TypedDict):
    watermark: str


class SqlRuntime(RuntimeCommon):
    producer: SqlProducer


class PythonRuntime(RuntimeCommon):
    producer: PythonProducer


class CommandRuntime(RuntimeCommon):
    producer: CommandProducer


class DbtRuntime(RuntimeCommon):
    producer: DbtProducer


class LoadRuntime(RuntimeCommon):
    producer: LoadProducer
    source: IngestionSource
    mode: Literal["extract", "load"]
    incremental: NotRequired[_Incremental]
    on_schema_drift: NotRequired[Literal["abort", "allow_additive"]]
    #: Local runs only (``scripts/localrun.py``).
    sample_data: NotRequired[str]
    proposals: NotRequired[Proposals]
    #: Event-driven ingestion: the run loads the objects its triggering events' messages name.
    queue: NotRequired[AssetWatcherPlan]


class ExtractRuntime(RuntimeCommon):
    producer: ExtractProducer
    source: IngestionSource
    mode: Literal["extract"]
    landing: Landing
    on_schema_drift: NotRequired[Literal["abort", "allow_additive"]]
    #: Local runs only: the file that stands in for the source table.
    sample_data: NotRequired[str]
    proposals: NotRequired[Proposals]


#: What the stages read at task time: one shape per ``producer.type``.
DagRuntime = SqlRuntime | PythonRuntime | CommandRuntime | DbtRuntime | LoadRuntime | ExtractRuntime


class DagPlan(TypedDict):
    dag_id: str
    contract: str
    contract_sha256: str
    contract_git_blob: str
    contract_version: str
    status: Literal["active", "deprecated"]
    owner: str
    description: str
    tags: list[str]
    schedule: SchedulePlan
    inlets: list[str]
    outlets: list[str]
    tasks: list[TaskPlan]
    default_args: DefaultArgsPlan
    deadline: NotRequired[DeadlinePlan]
    runtime: DagRuntime


class _Compiler(TypedDict):
    name: str
    version: str


class _Lineage(TypedDict):
    namespace: str


class Manifest(TypedDict):
    manifestVersion: int
    compiler: _Compiler
    lineage: _Lineage
    assets: list[ManifestAsset]
    edges: list[Edge]
    dags: list[DagPlan]
    freshness_monitor: NotRequired[FreshnessMonitorPlan]
