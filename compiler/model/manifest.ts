import type { Grain, MapperPlan } from "../support/partitions.js";
/**
 * The manifest (`generated/manifest.json`) as TypeScript types: the one interface between the
 * compiler and `contract_runtime`. The JSON Schema `compiler/schemas/manifest/v2.schema.json` is the
 * authority; each type here has the name of a `$defs` entry, and `test/unit/manifestSchema.test.ts`
 * checks that its fields and which of them are optional are the schema's (the Python TypedDicts of
 * `contract_runtime/manifest_types.py` are checked the same way). To add a field: schema, then
 * here, then the TypedDict (ARCHITECTURE.md, "Add a manifest field").
 */

export type Status = "draft" | "active" | "deprecated" | "retired";
export type OnFailure = "block_publish" | "quarantine" | "warn";
export type LogicalType = "string" | "date" | "timestamp" | "time" | "number" | "integer" | "object" | "array" | "boolean";

/** The logical types of the manifest schema's `LogicalType` (the runtime maps each to SQL). */
export const LOGICAL_TYPES: readonly LogicalType[] = ["string", "date", "timestamp", "time", "number", "integer", "object", "array", "boolean"];

export interface Property {
  name: string;
  logicalType: LogicalType;
  /** A plain SQL type name (the schema's pattern, equal to the runtime's PHYSICAL_TYPE_PATTERN). */
  physicalType?: string;
  required?: boolean;
  primaryKey?: boolean;
  unique?: boolean;
  classification?: string;
  description?: string;
  tags?: string[];
}

/** A quality rule as the runtime runs it: `name` and `severity` are always decided by the compiler. */
export interface QualityRule {
  name: string;
  severity: "error" | "warning" | "info";
  description?: string;
  type?: "library" | "sql";
  /** `freshness`: the data-time rules the compiler derives from `freshness.column` (`plan/planDags.ts` `dataTimeRules`). */
  metric?: "nullValues" | "missingValues" | "invalidValues" | "duplicateValues" | "rowCount" | "freshness";
  column?: string;
  validValues?: Array<string | number | boolean>;
  missingValues?: Array<string | number | boolean | null>;
  query?: string;
  /** `seconds`: the age a `freshness` rule measures. */
  unit?: "rows" | "percent" | "seconds";
  mustBe?: number;
  mustNotBe?: number;
  mustBeGreaterThan?: number;
  mustBeGreaterOrEqualTo?: number;
  mustBeLessThan?: number;
  mustBeLessOrEqualTo?: number;
  mustBeBetween?: [number, number];
  mustNotBeBetween?: [number, number];
  /** ODCS schema-level arguments: the key's properties, in declaration order (composite keys). */
  arguments?: { properties: string[] };
  /** An implicit rule derived from this property flag (`plan/implicitQualityRules.ts`); never stored since manifestVersion 2. */
  implied_by?: "required" | "unique" | "primaryKey";
}

export interface DatasetSchema {
  version: number;
  properties: Property[];
}

export interface ManifestAsset {
  name: string;
  uri: string;
  /**
   * The URI Airflow stores for this Asset (its `_sanitize_uri` and the scheme's provider
   * normaliser, as `normaliseUri` mirrors them), present only when it differs from `uri`.
   */
  airflow_uri?: string;
  /** The partitioning of a partitioned contract's dataset (issue 35); absent otherwise. */
  partitioning?: PartitioningPlan;
  /** The dataset's description, as its contract gives it; absent when it gives none. */
  description?: string;
  group: string;
  extra: Record<string, unknown>;
  external: boolean;
  status: Status;
  /** dag_id of the producing DAG; null for externals and for draft or retired producers. */
  producer: string | null;
  /** Project-relative path of the declaring document. */
  contract: string;
  contract_sha256: string | null;
  /** Schema of a produced dataset (for the diff's schema rules); null for externals. */
  schema: DatasetSchema | null;
  quality: QualityRule[];
  /** Old names this asset declares it replaces (`renamed_from`), sorted. */
  renamed_from: string[];
  /** External assets only: the project-relative file that stands in for it in local runs. */
  sample_data?: string;
  /** The AssetWatchers of an event-driven ingestion's source (issue 36, ADR 0034); absent otherwise. */
  watchers?: AssetWatcherPlan[];
}

/**
 * An `AssetWatcher` on an event-driven ingestion's source Asset (issue 36, ADR 0034): rendered as
 * `AssetWatcher(name=..., trigger=MessageQueueTrigger(scheme="sqs", sqs_queue=..., aws_conn_id=...,
 * waiter_delay=...))`, polled by the triggerer.
 */
export interface AssetWatcherPlan {
  /** `<contract id>.queue`. */
  name: string;
  scheme: "sqs";
  /** The SQS queue URL (`support/sqsQueue.ts`). */
  queue: string;
  /** The AWS Connection the triggerer polls with: `trigger.conn_id`, else `source.connection_id`, else `aws_default`. */
  conn_id: string;
  /** Seconds the watcher sleeps after an empty poll (`trigger.poll_interval`, default 60, the provider's). */
  poll_interval_seconds: number;
}

/** upstream asset → produced asset, through the producing DAG. */
export interface Edge {
  from: string;
  to: string;
  via: string;
}

/** An asset condition as the manifest and the templates carry it. */
export type ConditionNode = { asset: string } | { all: ConditionNode[] } | { any: ConditionNode[] };

/** When a DAG runs: on asset events, on a cron in a time zone, both (either fires), or manually. */
export interface SchedulePlan {
  assets: ConditionNode | null;
  cron: { expression: string; timezone: string } | null;
  /** A partitioned contract's timetable (issue 35, ADR 0028); absent when unpartitioned or manual. */
  partition?: PartitionSchedulePlan;
}

/** A partitioned contract's partitioning: the column, the grain and its key's strftime pattern (`support/partitions.ts`). */
export interface PartitioningPlan {
  column: string;
  grain: Grain;
  key_format: string;
}

/**
 * The partitioned timetable: `CronPartitionTimetable` on the cron (keys of the period holding the
 * previous fire: `run_offset` -1), or `PartitionedAssetTimetable` with one mapper per triggering
 * upstream, sorted by asset.
 */
export type PartitionSchedulePlan =
  | { timetable: "CronPartitionTimetable"; run_offset: -1; key_format: string }
  | { timetable: "PartitionedAssetTimetable"; mappers: Array<{ asset: string } & MapperPlan> };

export interface TaskPlan {
  task_id: "produce" | "audit" | "publish";
  inlets: string[];
  outlets: string[];
  upstream_task_ids: string[];
}

/** The run settings as Airflow default_args, durations in seconds. */
export interface DefaultArgsPlan {
  owner: string;
  retries?: number;
  retry_delay_seconds?: number;
  execution_timeout_seconds?: number;
  pool?: string;
}

/**
 * A dataset a DAG produces. Its uri, schema and authored quality rules are those of the asset it
 * names (`assets[]`); the rules the audit runs are derived from them (`runtimeQuality`,
 * `plan/planDags.ts`). Version 1 repeated all three here (ADR 0017f).
 */
export interface RuntimeDataset {
  name: string;
  /** The `assets[]` entry of this dataset (by name). */
  asset: string;
  layer: string;
  physical?: { namespace: string; name: string };
}

export interface RuntimeUpstream {
  asset: string;
  trigger: boolean;
  schema_version?: number;
  /** `passed`: skip (not fail) a run whose triggering event for this upstream is degraded or stale. */
  require?: "passed";
}

export interface Processing {
  purpose: string;
  legal_basis: "consent" | "contract" | "legal-obligation" | "vital-interests" | "public-task" | "legitimate-interest";
}

export interface Freshness {
  max_age: string;
  degrade_after?: string;
  column?: string;
  expected_runtime?: string;
  deadline_reference?: "queued_at" | "logical_date";
}

/** A notifier of the orchestration config: its name, `BaseNotifier` class path and constructor arguments. */
export interface NotifierPlan {
  name: string;
  class: string;
  kwargs: Record<string, unknown>;
}

/**
 * The DeadlineAlert of `freshness.expected_runtime`: the Airflow `DeadlineReference`
 * (`queued_at` = `DAGRUN_QUEUED_AT`, `logical_date` = `DAGRUN_LOGICAL_DATE`), the interval in
 * seconds, and the notifier the callback runs.
 */
export interface DeadlinePlan {
  reference: "queued_at" | "logical_date";
  interval_seconds: number;
  notifier: NotifierPlan;
}

/** One asset the freshness monitor watches: its identity and policy, durations also in seconds. */
export interface MonitoredAsset {
  name: string;
  uri: string;
  /** The producing dag_id; null for an external asset (its events come from `published_by`). */
  producer: string | null;
  published_by: string | null;
  max_age: string;
  max_age_seconds: number;
  degrade_after: string | null;
  degrade_after_seconds: number | null;
  /**
   * A partitioned asset's grain (its producer's `partitioning.grain`, issue 35): the monitor and
   * `freshness` then measure the newest partition and the missing ones. Absent otherwise.
   */
  partition_grain?: Grain;
}

/** The generated freshness monitor DAG (DESIGN §5.5). */
export interface FreshnessMonitorPlan {
  dag_id: string;
  schedule: { cron: { expression: string; timezone: string } };
  /** The notifier alerts go through; null when the config names none (states are still kept). */
  notifier: NotifierPlan | null;
  /** Where the states are kept: the config's default warehouse connection (null: the default). */
  warehouse_conn_id: string | null;
  /** The pool of its task: `contract_assets_duckdb` when that warehouse is a DuckDB file (ADR 0030); absent: Airflow's `default_pool`. */
  pool?: string;
  /** Sorted by name. */
  assets: MonitoredAsset[];
}

/** Fields every runtime variant has. */
export interface RuntimeCommon {
  kind: "TransformContract" | "IngestionContract";
  domain: string;
  /** Decided by the compiler: the contract's, else "block_publish". */
  on_failure: OnFailure;
  datasets: RuntimeDataset[];
  upstreams: RuntimeUpstream[];
  processing?: Processing;
  freshness?: Freshness;
  /** Airflow Connection id of the warehouse; absent: the local DuckDB file. */
  warehouse_conn_id?: string;
  /** A partitioned contract's partitioning (issue 35): each run writes the partition of `dag_run.partition_key`. */
  partitioning?: PartitioningPlan;
}

export interface SqlProducer {
  type: "sql";
  path: string;
  /** The SQL file's text, LF line ends (workers share no project files). */
  sql: string;
  params?: Record<string, unknown>;
}

export interface PythonProducer {
  type: "python";
  entrypoint: string;
  params?: Record<string, unknown>;
}

export interface CommandProducer {
  type: "command";
  family: string;
  args?: string[];
  params?: Record<string, unknown>;
  /** The family's argument list, then args. */
  command: string[];
  env: Record<string, string>;
}

/** A dbt producer resolved against its project's committed manifest.json (ADR 0012). */
export interface DbtProducer {
  type: "dbt";
  /** The dbt project folder, project-relative. */
  project: string;
  select: string;
  params?: Record<string, unknown>;
  /** The project's committed manifest.json, project-relative. */
  manifest: string;
  /** The contract's models, one per dataset, in dataset order. */
  models: Array<{ name: string; unique_id: string; path: string }>;
  /** Seeds the models read, built into staging with them. */
  seeds: string[];
  /** Models of other contracts the models ref -> their published table. */
  upstream_models: Record<string, { schema: string; name: string }>;
}

export interface LoadProducer {
  type: "load";
}

export interface ExtractProducer {
  type: "extract";
}

/** A load of an extract's dataset: the extract and its landing location (`run-*\/_manifest.json`). */
export interface ManifestSource {
  contract: string;
  uri: string;
  connection_id?: string;
  /** The extract's source has sample_data: a local folder beside the warehouse stands in. */
  local_demo?: true;
}

export interface IngestionSource {
  name: string;
  uri: string;
  system: string;
  format: "csv" | "parquet" | "jsonl";
  connection_id?: string;
  schema_version?: number;
  description?: string;
  /** mode extract: the source table or query. */
  table?: string;
  query?: string;
  manifest?: ManifestSource;
}

/** mode extract: where the Parquet files and the manifest go. */
export interface Landing {
  uri: string;
  connection_id?: string;
  rows_per_file?: number;
}

/** The orchestration config's proposals: where schema-drift proposals are written. */
export interface Proposals {
  uri: string;
  connection_id?: string;
}

export interface SqlRuntime extends RuntimeCommon {
  kind: "TransformContract";
  producer: SqlProducer;
}

export interface PythonRuntime extends RuntimeCommon {
  kind: "TransformContract";
  producer: PythonProducer;
}

export interface CommandRuntime extends RuntimeCommon {
  kind: "TransformContract";
  producer: CommandProducer;
}

export interface DbtRuntime extends RuntimeCommon {
  kind: "TransformContract";
  producer: DbtProducer;
}

export interface LoadRuntime extends RuntimeCommon {
  kind: "IngestionContract";
  producer: LoadProducer;
  source: IngestionSource;
  mode: "extract" | "load";
  incremental?: { watermark: string };
  on_schema_drift?: "abort" | "allow_additive";
  /** Local runs only (scripts/localrun.py): the file seeded as the source. */
  sample_data?: string;
  proposals?: Proposals;
  /** Event-driven ingestion: the run loads the objects its triggering Asset events' messages name. */
  queue?: AssetWatcherPlan;
}

export interface ExtractRuntime extends RuntimeCommon {
  kind: "IngestionContract";
  producer: ExtractProducer;
  source: IngestionSource;
  mode: "extract";
  landing: Landing;
  on_schema_drift?: "abort" | "allow_additive";
  /** Local runs only: the file that stands in for the source table. */
  sample_data?: string;
  proposals?: Proposals;
}

/** What `contract_runtime` reads at task time: one shape per `producer.type`. */
export type DagRuntime = SqlRuntime | PythonRuntime | CommandRuntime | DbtRuntime | LoadRuntime | ExtractRuntime;

/** One DAG to render: a pure description, no Python in it. */
export interface DagPlan {
  dag_id: string;
  contract: string;
  contract_sha256: string;
  contract_git_blob: string;
  contract_version: string;
  status: "active" | "deprecated";
  owner: string;
  description: string;
  tags: string[];
  schedule: SchedulePlan;
  inlets: string[];
  outlets: string[];
  tasks: TaskPlan[];
  default_args: DefaultArgsPlan;
  /** Present when the contract has `freshness.expected_runtime`. */
  deadline?: DeadlinePlan;
  runtime: DagRuntime;
}

/**
 * The manifest format version. Bump it on any change a reader must know about; readers refuse a
 * version they do not know (see ARCHITECTURE.md, "The manifest").
 */
export const MANIFEST_VERSION = 2;

export interface Manifest {
  manifestVersion: number;
  compiler: { name: string; version: string };
  lineage: { namespace: string };
  assets: ManifestAsset[];
  edges: Edge[];
  dags: DagPlan[];
  /** Present when any asset has a freshness policy to watch. */
  freshness_monitor?: FreshnessMonitorPlan;
}

/** A `dags[].runtime.datasets[]` entry as manifestVersion 1 wrote it: the asset's uri and schema, and the rules the audit runs, repeated. */
export interface RuntimeDatasetV1 extends RuntimeDataset {
  uri: string | null;
  schema: DatasetSchema;
  quality: QualityRule[];
}

/** A manifest of manifestVersion 1 (`compiler/schemas/manifest/v1.schema.json`): version 2's shape but for the runtime datasets. */
export type ManifestV1 = Omit<Manifest, "manifestVersion" | "dags"> & {
  manifestVersion: 1;
  dags: Array<Omit<DagPlan, "runtime"> & { runtime: Omit<DagPlan["runtime"], "datasets"> & { datasets: RuntimeDatasetV1[] } }>;
};
