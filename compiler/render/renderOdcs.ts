import YAML from "yaml";
import type { StageResult } from "../diagnostics/diagnostic.js";
import type { LinkedContract, LinkedProject } from "../link/model.js";
import type { Contract, Dataset, Property, QualityRule } from "../model/contract.js";
import { QUALITY_OPERATORS } from "../model/contract.js";
import {
  CONTRACT_PROPERTIES,
  DATASET_PROPERTIES,
  FRESHNESS_SLA_PROPERTY,
  ODCS_EXPORT_API_VERSION,
  SERVER_CONNECTION_PROPERTY,
  type OdcsContract,
  type OdcsCustomProperty,
  type OdcsProperty,
  type OdcsQualityRule,
  type OdcsSchemaObject,
  type OdcsServer,
} from "../model/odcs.js";
import { compareStrings } from "../support/compare.js";
import { COMPILER_VERSION } from "../version.js";
import { GENERATED_HEADER_PREFIX, type FileMap } from "./renderModules.js";

/** The default folder of `export odcs` (and of `compile` when the orchestration config asks for it). */
export const DEFAULT_ODCS_DIR = "generated/odcs";

/** The file name of one exported contract: `<contract id>.odcs.yaml`. */
export function odcsFileName(contractId: string): string {
  return `${contractId}.odcs.yaml`;
}

const custom = (property: string, value: unknown): OdcsCustomProperty => ({ property, value });

/**
 * One quality rule in ODCS terms: the same metric, operator, unit and severity, `validValues` and
 * `missingValues` under `arguments` (ODCS v3.1 library metrics), the name only when the contract
 * names the rule (a computed name such as `nullValues_id` is computed again on import). A one-point range (`mustBeBetween: [a, a]`) is written as `mustBe: a`,
 * since ODCS asks for two distinct numbers.
 */
function qualityRuleOf(rule: QualityRule): OdcsQualityRule {
  const out: OdcsQualityRule = {};
  if (rule.name !== undefined) out.name = rule.name;
  if (rule.description !== undefined) out.description = rule.description;
  // ODCS's default type is library, as ours is.
  if (rule.type !== undefined) out.type = rule.type;
  if (rule.metric !== undefined) out.metric = rule.metric;
  if (rule.query !== undefined) out.query = rule.query;
  const args: Record<string, unknown> = {};
  if (rule.validValues !== undefined) args.validValues = rule.validValues;
  if (rule.missingValues !== undefined) args.missingValues = rule.missingValues;
  if (Object.keys(args).length > 0) out.arguments = args;
  if (rule.unit !== undefined) out.unit = rule.unit;
  out.severity = rule.severity ?? "error";
  for (const operator of QUALITY_OPERATORS) {
    const value = rule[operator];
    if (value === undefined) continue;
    if (Array.isArray(value) && value[0] === value[1]) out[operator === "mustBeBetween" ? "mustBe" : "mustNotBe"] = value[0];
    else out[operator] = value;
  }
  return out;
}

function propertyOf(property: Property, primaryKeyPosition: number | undefined, rules: OdcsQualityRule[], partitionColumn?: string): OdcsProperty {
  const out: OdcsProperty = { name: property.name, logicalType: property.logicalType };
  if (property.physicalType !== undefined) out.physicalType = property.physicalType;
  if (property.description !== undefined) out.description = property.description;
  if (property.required !== undefined) out.required = property.required;
  if (property.primaryKey !== undefined) out.primaryKey = property.primaryKey;
  if (primaryKeyPosition !== undefined) out.primaryKeyPosition = primaryKeyPosition;
  if (property.name === partitionColumn) {
    out.partitioned = true;
    out.partitionKeyPosition = 1;
  }
  if (property.unique !== undefined) out.unique = property.unique;
  if (property.classification !== undefined) out.classification = property.classification;
  if (property.tags !== undefined) out.tags = property.tags;
  if (rules.length > 0) out.quality = rules;
  return out;
}

/**
 * One dataset as one ODCS schema object (`logicalType: object`, `physicalType: table`). Quality
 * rules on one column go under that property (as ODCS places them); `rowCount` and SQL rules stay
 * on the object. The dataset fields ODCS has no place for are custom properties.
 */
function schemaObjectOf(dataset: Dataset, partitionColumn?: string): OdcsSchemaObject {
  const rules = dataset.quality ?? [];
  const byColumn = new Map<string, OdcsQualityRule[]>();
  const objectRules: OdcsQualityRule[] = [];
  rules.forEach((rule) => {
    const exported = qualityRuleOf(rule);
    if (rule.column !== undefined && dataset.schema.properties.some((p) => p.name === rule.column)) {
      if (!byColumn.has(rule.column)) byColumn.set(rule.column, []);
      byColumn.get(rule.column)!.push(exported);
    } else objectRules.push(exported);
  });
  let position = 0;
  const properties = dataset.schema.properties.map((p) => propertyOf(p, p.primaryKey ? ++position : undefined, byColumn.get(p.name) ?? [], partitionColumn));
  const out: OdcsSchemaObject = { name: dataset.name, logicalType: "object", physicalType: "table" };
  if (dataset.physical) out.physicalName = dataset.physical.name;
  if (dataset.description !== undefined) out.description = dataset.description;
  out.properties = properties;
  if (objectRules.length > 0) out.quality = objectRules;
  const props: OdcsCustomProperty[] = [custom(DATASET_PROPERTIES.schemaVersion, dataset.schema.version)];
  if (dataset.layer !== undefined) props.push(custom(DATASET_PROPERTIES.layer, dataset.layer));
  if (dataset.uri !== undefined) props.push(custom(DATASET_PROPERTIES.assetUri, dataset.uri));
  if (dataset.renamed_from !== undefined) props.push(custom(DATASET_PROPERTIES.renamedFrom, dataset.renamed_from));
  if (dataset.physical !== undefined) props.push(custom(DATASET_PROPERTIES.physical, dataset.physical));
  if (dataset.extra !== undefined) props.push(custom(DATASET_PROPERTIES.assetExtra, dataset.extra));
  out.customProperties = props;
  return out;
}

/**
 * The server the contract's datasets live on: the Airflow Connection named by the run settings'
 * `warehouse_conn_id` (type `custom`: the Connection's type is only known at run time), else the
 * runtime's embedded DuckDB file.
 */
function serverOf(contract: LinkedContract): OdcsServer {
  const connection = contract.runSettings.warehouse_conn_id;
  if (connection !== undefined) {
    return {
      server: connection,
      type: "custom",
      description: `The warehouse behind the Airflow Connection "${connection}" (warehouse_conn_id of the orchestration config).`,
      customProperties: [custom(SERVER_CONNECTION_PROPERTY, connection)],
    };
  }
  return {
    server: "embedded",
    type: "duckdb",
    database: "warehouse.duckdb",
    description: "The runtime's embedded DuckDB file (CONTRACT_ASSETS_WAREHOUSE); no warehouse_conn_id is configured.",
  };
}

/** The contract-level custom properties: the orchestration fields ODCS has no field for. */
function contractPropertiesOf(contract: Contract): OdcsCustomProperty[] {
  const out: OdcsCustomProperty[] = [];
  if (contract.kind === "TransformContract") out.push(custom(CONTRACT_PROPERTIES.producer, contract.producer));
  else {
    out.push(custom(CONTRACT_PROPERTIES.source, contract.source));
    out.push(custom(CONTRACT_PROPERTIES.mode, contract.mode));
    if (contract.incremental) out.push(custom(CONTRACT_PROPERTIES.incremental, contract.incremental));
    if (contract.on_schema_drift) out.push(custom(CONTRACT_PROPERTIES.onSchemaDrift, contract.on_schema_drift));
    if (contract.landing) out.push(custom(CONTRACT_PROPERTIES.landing, contract.landing));
  }
  if (contract.upstreams !== undefined) out.push(custom(CONTRACT_PROPERTIES.upstreams, contract.upstreams));
  if (contract.trigger !== undefined) out.push(custom(CONTRACT_PROPERTIES.trigger, contract.trigger));
  if (contract.partitioning !== undefined) out.push(custom(CONTRACT_PROPERTIES.partitionGrain, contract.partitioning.grain));
  if (contract.on_failure !== undefined) out.push(custom(CONTRACT_PROPERTIES.onFailure, contract.on_failure));
  if (contract.processing) {
    out.push(custom(CONTRACT_PROPERTIES.processingPurpose, contract.processing.purpose));
    out.push(custom(CONTRACT_PROPERTIES.legalBasis, contract.processing.legal_basis));
  }
  if (contract.freshness?.degrade_after !== undefined) out.push(custom(CONTRACT_PROPERTIES.freshnessDegradeAfter, contract.freshness.degrade_after));
  if (contract.freshness?.column !== undefined) out.push(custom(CONTRACT_PROPERTIES.freshnessColumn, contract.freshness.column));
  if (contract.freshness?.expected_runtime !== undefined) out.push(custom(CONTRACT_PROPERTIES.freshnessExpectedRuntime, contract.freshness.expected_runtime));
  if (contract.freshness?.deadline_reference !== undefined) {
    out.push(custom(CONTRACT_PROPERTIES.freshnessDeadlineReference, contract.freshness.deadline_reference));
  }
  return out;
}

/**
 * One contract as an ODCS v3.1.0 document (docs/odcs.md has the field table). Keys come in a fixed
 * order, so the same contract always gives the same document.
 */
export function odcsDocumentOf(linked: LinkedContract): OdcsContract {
  const c = linked.contract;
  const doc: OdcsContract = {
    apiVersion: ODCS_EXPORT_API_VERSION,
    kind: "DataContract",
    id: c.id,
    name: c.id,
    version: c.version,
    status: c.status ?? "active",
    domain: c.domain,
  };
  if (c.description !== undefined) doc.description = { purpose: c.description };
  if (c.tags !== undefined) doc.tags = c.tags;
  doc.team = { name: c.owner };
  doc.servers = [serverOf(linked)];
  doc.schema = c.datasets.map((d) => schemaObjectOf(d, c.partitioning?.column));
  if (c.freshness) doc.slaProperties = [{ property: FRESHNESS_SLA_PROPERTY, value: c.freshness.max_age }];
  doc.customProperties = contractPropertiesOf(c);
  return doc;
}

/** The exported text of one document: a header naming the source, then the YAML. */
export function odcsText(linked: LinkedContract): string {
  const header =
    `${GENERATED_HEADER_PREFIX}${COMPILER_VERSION} from ${linked.located.source.file.path}.\n` +
    `# An Open Data Contract Standard (ODCS ${ODCS_EXPORT_API_VERSION}) export; orchestration fields are customProperties (docs/odcs.md).\n`;
  return header + YAML.stringify(odcsDocumentOf(linked), { lineWidth: 0, version: "1.2" });
}

/**
 * Renders every contract of a linked project as one ODCS document, `<dir>/<contract id>.odcs.yaml`
 * (ExternalAssets documents are not contracts and are not exported). Pure; the caller writes.
 */
export function renderOdcs(project: LinkedProject, dir: string): StageResult<FileMap> {
  const files: FileMap = new Map();
  // Sort for determinism.
  const contracts = [...project.contracts].sort((a, b) => compareStrings(a.contract.id, b.contract.id));
  for (const linked of contracts) files.set(`${dir}/${odcsFileName(linked.contract.id)}`, odcsText(linked));
  return { value: files, diagnostics: [] };
}
