/**
 * The contract format v1 as TypeScript types (DESIGN §3). The JSON Schemas in compiler/schemas/v1
 * are the authority; these types describe a document that has passed them.
 */

import type { Grain } from "../support/partitions.js";

import type { OnFailure, Property as ManifestProperty, QualityRule as ManifestQualityRule, Status } from "./manifest.js";

// One definition each: the contract's values are the manifest's (the schemas' enums are equal).
export type { OnFailure, Status };
export type Severity = "error" | "warning" | "info";
export type LegalBasis =
  | "consent"
  | "contract"
  | "legal-obligation"
  | "vital-interests"
  | "public-task"
  | "legitimate-interest";

/** The ODCS `mustBe…` operators (ODCS v3 quality section). */
export const QUALITY_OPERATORS = [
  "mustBe",
  "mustNotBe",
  "mustBeGreaterThan",
  "mustBeGreaterOrEqualTo",
  "mustBeLessThan",
  "mustBeLessOrEqualTo",
  "mustBeBetween",
  "mustNotBeBetween",
] as const;
export type QualityOperator = (typeof QUALITY_OPERATORS)[number];

/** A schema property: the manifest carries it as written (the contract schema's `logicalType` enum is the manifest's, a test pins it). */
export type Property = ManifestProperty;

/**
 * A quality rule as the author writes it (ODCS v3 quality): the manifest's rule (one definition of
 * every metric, operator and argument field) less what only the compiler decides: `name` and
 * `severity` are optional here (the compiler names a rule and defaults its severity), and the
 * `freshness` metric, its `seconds` unit, `arguments` and `implied_by` belong to the rules the
 * compiler derives (`plan/implicitQualityRules.ts`, `dataTimeRules`).
 */
export type QualityRule = Omit<ManifestQualityRule, "name" | "severity" | "metric" | "unit" | "arguments" | "implied_by"> & {
  name?: string;
  severity?: Severity;
  metric?: Exclude<ManifestQualityRule["metric"], "freshness">;
  unit?: Exclude<ManifestQualityRule["unit"], "seconds">;
};

export interface Dataset {
  name: string;
  description?: string;
  uri?: string;
  layer?: string;
  renamed_from?: string[];
  schema: { version: number; properties: Property[] };
  quality?: QualityRule[];
  physical?: { namespace: string; name: string };
  extra?: Record<string, unknown>;
}

export interface Upstream {
  asset: string;
  schema_version?: number;
  trigger?: boolean;
  /** `passed`: skip (not fail) a run whose triggering event for this upstream is degraded or stale. */
  require?: "passed";
}

/** An asset condition: a leaf asset name or an `{all: [...]}` / `{any: [...]}` node. */
export type AssetCondition = string | { all: AssetCondition[] } | { any: AssetCondition[] };

export interface TriggerObject {
  assets?: "all" | "any" | { all: AssetCondition[] } | { any: AssetCondition[] };
  cron?: string;
  timezone?: string;
  schedule_ref?: string;
  /**
   * Event-driven ingestion (issue 36, ADR 0034): the URL of the SQS queue that receives the source
   * bucket's S3 event notifications. The source Asset gets an `AssetWatcher` over
   * `MessageQueueTrigger(scheme="sqs")`; alone in the trigger (CA4621), load only (CA4620, CA4624).
   */
  queue?: string;
  /** The AWS Connection the triggerer polls `queue` with; default `source.connection_id`, else `aws_default`. */
  conn_id?: string;
  /** How long the watcher sleeps after an empty poll (ISO-8601 duration, whole seconds); default `PT60S`, the provider's. */
  poll_interval?: string;
}

export type Producer =
  | { type: "python"; entrypoint: string; params?: Record<string, unknown> }
  | { type: "sql"; path: string; params?: Record<string, unknown> }
  | { type: "dbt"; project: string; select: string; params?: Record<string, unknown> }
  | { type: "command"; family: string; args?: string[]; params?: Record<string, unknown> };

/**
 * A contract's freshness policy (docs/contract-format.md, "Freshness"): `max_age` the promise
 * (older: stale), `degrade_after` the escalation (older: degraded), `column` a timestamp property
 * the audit measures, `expected_runtime` a DeadlineAlert on the producing DAG. The manifest carries
 * it as written.
 */
export type { Freshness } from "./manifest.js";
import type { Freshness } from "./manifest.js";

interface ContractBase {
  apiVersion: "contract-assets/v1";
  id: string;
  version: string;
  status?: Status;
  domain: string;
  owner: string;
  description?: string;
  tags?: string[];
  processing?: { purpose: string; legal_basis: LegalBasis };
  datasets: Dataset[];
  upstreams?: Upstream[];
  trigger?: "manual" | TriggerObject;
  /** Partitioned datasets (issue 35): one partition per `grain` period of `column`, keys in UTC. */
  partitioning?: { column: string; grain: Grain };
  freshness?: Freshness;
  on_failure?: OnFailure;
}

export interface TransformContract extends ContractBase {
  kind: "TransformContract";
  producer: Producer;
}

export interface IngestionSource {
  name: string;
  uri: string;
  system: string;
  format: "csv" | "parquet" | "jsonl";
  connection_id?: string;
  schema_version?: number;
  description?: string;
  /** `mode: extract`: the source table (`schema.table`), read with `select *`. */
  table?: string;
  /** `mode: extract`: the SQL query whose result is extracted. */
  query?: string;
}

/** `mode: extract`: where landing files and the manifest go (one `run-<hash>/` prefix per run). */
export interface Landing {
  uri: string;
  connection_id?: string;
  rows_per_file?: number;
}

export interface IngestionContract extends ContractBase {
  kind: "IngestionContract";
  source: IngestionSource;
  mode: "extract" | "load";
  incremental?: { watermark: string };
  on_schema_drift?: "abort" | "allow_additive";
  landing?: Landing;
}

export type Contract = TransformContract | IngestionContract;

export interface ExternalAssetsDocument {
  apiVersion: "contract-assets/v1";
  kind: "ExternalAssets";
  domain: string;
  owner: string;
  description?: string;
  assets: Array<{
    name: string;
    uri: string;
    description?: string;
    extra?: Record<string, unknown>;
    freshness?: { max_age: string; degrade_after?: string };
    published_by?: string;
  }>;
}

export interface RunSettings {
  retries?: number;
  retry_delay?: string;
  execution_timeout?: string;
  pool?: string;
  warehouse_conn_id?: string;
  deadline_notifier?: string;
}

export interface OrchestrationConfigDocument {
  apiVersion: "contract-assets/v1";
  kind: "OrchestrationConfig";
  uri_template?: string;
  lineage?: { namespace: string };
  schedules?: Record<string, { cron: string; timezone?: string }>;
  defaults?: RunSettings;
  producers?: Record<string, { command: string[]; env?: Record<string, string> }>;
  overrides?: Array<RunSettings & { match: { domain?: string; contract?: string } }>;
  sample_data?: Record<string, string>;
  notifiers?: Record<string, { class: string; kwargs?: Record<string, unknown> }>;
  freshness_monitor?: { dag_id?: string; cron?: string; timezone?: string; notifier?: string };
  /** Extra outputs of compile: `odcs: true` writes the ODCS export under the output folder. */
  exports?: { odcs?: boolean };
  proposals?: { uri: string; connection_id?: string };
  /** The kind of database the warehouse Connections are; its identifier limit is checked at compile time. */
  warehouse?: { dialect: WarehouseDialect };
}

/** The warehouse kinds the config can name (`warehouse.dialect`), the runtime's dialect names. */
export type WarehouseDialect = "duckdb" | "postgres";

/** Every document kind the compiler reads, by `kind`. */
export type AnyDocument = Contract | ExternalAssetsDocument | OrchestrationConfigDocument;

/** The kinds allowed under contracts/ and under the config folder. */
export const CONTRACT_KINDS = ["IngestionContract", "TransformContract", "ExternalAssets"] as const;
export const CONFIG_KINDS = ["OrchestrationConfig"] as const;
