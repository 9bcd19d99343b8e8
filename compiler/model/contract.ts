/**
 * The contract format v1 as TypeScript types (DESIGN §3). The JSON Schemas in compiler/schemas/v1
 * are the authority; these types describe a document that has passed them.
 */

export type Status = "draft" | "active" | "deprecated" | "retired";
export type OnFailure = "block_publish" | "quarantine" | "warn";
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

export interface Property {
  name: string;
  logicalType: string;
  physicalType?: string;
  required?: boolean;
  primaryKey?: boolean;
  unique?: boolean;
  classification?: string;
  description?: string;
  tags?: string[];
}

export interface QualityRule {
  name?: string;
  description?: string;
  type?: "library" | "sql";
  metric?: "nullValues" | "missingValues" | "invalidValues" | "duplicateValues" | "rowCount";
  column?: string;
  validValues?: Array<string | number | boolean>;
  missingValues?: Array<string | number | boolean | null>;
  query?: string;
  unit?: "rows" | "percent";
  severity?: Severity;
  mustBe?: number;
  mustNotBe?: number;
  mustBeGreaterThan?: number;
  mustBeGreaterOrEqualTo?: number;
  mustBeLessThan?: number;
  mustBeLessOrEqualTo?: number;
  mustBeBetween?: [number, number];
  mustNotBeBetween?: [number, number];
}

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
}

export type Producer =
  | { type: "python"; entrypoint: string; params?: Record<string, unknown> }
  | { type: "sql"; path: string; params?: Record<string, unknown> }
  | { type: "dbt"; project: string; select: string; params?: Record<string, unknown> }
  | { type: "command"; family: string; args?: string[]; params?: Record<string, unknown> };

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
  freshness?: { max_age: string; degrade_after?: string };
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
  assets: Array<{ name: string; uri: string; description?: string; extra?: Record<string, unknown> }>;
}

export interface RunSettings {
  retries?: number;
  retry_delay?: string;
  execution_timeout?: string;
  pool?: string;
  warehouse_conn_id?: string;
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
  /** Extra outputs of compile: `odcs: true` writes the ODCS export under the output folder. */
  exports?: { odcs?: boolean };
  proposals?: { uri: string; connection_id?: string };
}

/** Every document kind the compiler reads, by `kind`. */
export type AnyDocument = Contract | ExternalAssetsDocument | OrchestrationConfigDocument;

/** The kinds allowed under contracts/ and under the config folder. */
export const CONTRACT_KINDS = ["IngestionContract", "TransformContract", "ExternalAssets"] as const;
export const CONFIG_KINDS = ["OrchestrationConfig"] as const;
