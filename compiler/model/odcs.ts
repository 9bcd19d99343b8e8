/**
 * The Open Data Contract Standard (ODCS v3, Bitol) as far as this compiler reads and writes it,
 * and the names of the `customProperties` that carry the orchestration fields ODCS has no field
 * for (docs/odcs.md lists them with their shapes). The official JSON Schemas are the authority
 * on ODCS; these types describe the part the bridge uses.
 */

/** The ODCS version `export odcs` writes (valid under the v3.1.0 schema and every later v3 one). */
export const ODCS_EXPORT_API_VERSION = "v3.1.0";

/** An ODCS v3 `apiVersion`: `v3.<minor>.<patch>` (ODCS v3.0.0 and later; v2 documents are refused). */
export const ODCS_API_VERSION_PATTERN = /^v3\.\d+\.\d+$/;

/** Whether a parsed document is an ODCS data contract: `kind: DataContract` with any `apiVersion` of the form `vN.N.N`. */
export function isOdcsDocument(value: unknown): boolean {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return v.kind === "DataContract" && typeof v.apiVersion === "string" && /^v\d+\.\d+\.\d+$/.test(v.apiVersion);
}

/**
 * The `customProperties` names of a contract (top level), in the order `export odcs` writes them.
 * Names are camelCase, as ODCS asks of custom properties; each value has the shape of the contract
 * field it carries (docs/contract-format.md), keys included.
 */
export const CONTRACT_PROPERTIES = {
  producer: "producer",
  upstreams: "upstreams",
  trigger: "trigger",
  onFailure: "onFailure",
  processingPurpose: "processingPurpose",
  legalBasis: "legalBasis",
  freshnessDegradeAfter: "freshnessDegradeAfter",
  freshnessColumn: "freshnessColumn",
  freshnessExpectedRuntime: "freshnessExpectedRuntime",
  freshnessDeadlineReference: "freshnessDeadlineReference",
  source: "source",
  mode: "mode",
  incremental: "incremental",
  onSchemaDrift: "onSchemaDrift",
  landing: "landing",
  partitionGrain: "partitionGrain",
} as const;

/** The `customProperties` names of one schema object (one dataset), with the dataset field each holds. */
export const DATASET_PROPERTIES = {
  schemaVersion: "schemaVersion",
  layer: "layer",
  assetUri: "assetUri",
  renamedFrom: "renamedFrom",
  physical: "physical",
  assetExtra: "assetExtra",
} as const;

/** The `customProperties` name on a server that records the Airflow Connection id it stands for. */
export const SERVER_CONNECTION_PROPERTY = "airflowConnectionId";

/** The one `slaProperties` property the compiler honours: the contract's `freshness.max_age`. */
export const FRESHNESS_SLA_PROPERTY = "freshness";

export interface OdcsCustomProperty {
  property: string;
  value: unknown;
  description?: string;
}

export interface OdcsQualityRule {
  name?: string;
  description?: string;
  type?: string;
  metric?: string;
  rule?: string;
  arguments?: Record<string, unknown>;
  query?: string;
  engine?: string;
  implementation?: unknown;
  unit?: string;
  severity?: string;
  [operator: string]: unknown;
}

export interface OdcsProperty {
  name: string;
  logicalType?: string;
  physicalType?: string;
  physicalName?: string;
  required?: boolean;
  primaryKey?: boolean;
  primaryKeyPosition?: number;
  /** The column partitions the data (ODCS v3); with `partitionKeyPosition` 1, our `partitioning.column`. */
  partitioned?: boolean;
  partitionKeyPosition?: number;
  unique?: boolean;
  classification?: string;
  description?: string;
  tags?: string[];
  quality?: OdcsQualityRule[];
  properties?: OdcsProperty[];
  items?: unknown;
}

export interface OdcsSchemaObject {
  name: string;
  logicalType?: string;
  physicalType?: string;
  physicalName?: string;
  description?: string;
  tags?: string[];
  properties?: OdcsProperty[];
  quality?: OdcsQualityRule[];
  customProperties?: OdcsCustomProperty[];
}

export interface OdcsServer {
  server: string;
  type: string;
  description?: string;
  customProperties?: OdcsCustomProperty[];
  [field: string]: unknown;
}

export interface OdcsSlaProperty {
  property: string;
  value: unknown;
  unit?: string;
  element?: string;
  description?: string;
}

/** An ODCS v3 data contract document (the fields the bridge reads or writes). */
export interface OdcsContract {
  apiVersion: string;
  kind: "DataContract";
  id: string;
  name?: string;
  version: string;
  status: string;
  domain?: string;
  dataProduct?: string;
  tenant?: string;
  description?: { purpose?: string; usage?: string; limitations?: string };
  tags?: string[];
  team?: { name?: string; description?: string; members?: Array<{ username: string; name?: string; role?: string }> } | Array<{ username: string; name?: string; role?: string }>;
  servers?: OdcsServer[];
  schema?: OdcsSchemaObject[];
  slaProperties?: OdcsSlaProperty[];
  customProperties?: OdcsCustomProperty[];
  [field: string]: unknown;
}
