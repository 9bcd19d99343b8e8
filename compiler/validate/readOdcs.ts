import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, StageResult } from "../diagnostics/diagnostic.js";
import { QUALITY_OPERATORS } from "../model/contract.js";
import {
  CONTRACT_PROPERTIES,
  DATASET_PROPERTIES,
  FRESHNESS_SLA_PROPERTY,
  ODCS_API_VERSION_PATTERN,
  type OdcsContract,
  type OdcsProperty,
  type OdcsQualityRule,
  type OdcsSchemaObject,
} from "../model/odcs.js";
import type { NodePath, ParsedDocument } from "../parse/parseDocument.js";
import { describePath, mapSchemaErrors } from "./mapSchemaErrors.js";
import { validatorFor } from "./schemas.js";

/**
 * Reading an ODCS v3 document as a contract of ours (docs/odcs.md): the document is checked
 * against the compiler's ODCS schema (compiler/schemas/v1/odcs-contract.schema.json), then
 * translated field by field into a `contract-assets/v1` contract whose every node remembers the
 * ODCS node it came from. The result is a `ParsedDocument` like any other: the contract schema and
 * every document rule run on it unchanged, and each of their diagnostics is located in the ODCS
 * file, at the node the author wrote.
 */

/** A custom property found by name: its value and where that value is. */
interface Found {
  value: unknown;
  path: NodePath;
}

/** Builds the translated value and the map from its paths to the ODCS paths they came from. */
class Translation {
  private readonly origins = new Map<string, NodePath>();
  /** Records that the node at `ours` (and everything below it) comes from `theirs`. */
  from(ours: NodePath, theirs: NodePath): void {
    this.origins.set(ours.join("\u0000"), theirs);
  }
  /** The ODCS path of a translated path: the nearest recorded ancestor, with the rest appended. */
  origin(path: NodePath): NodePath {
    for (let i = path.length; i >= 0; i--) {
      const theirs = this.origins.get(path.slice(0, i).join("\u0000"));
      if (theirs !== undefined) return [...theirs, ...path.slice(i)];
    }
    return path;
  }
}

/** Options of {@link readOdcsContract}. */
export interface ReadOdcsOptions {
  /**
   * `import odcs` mode: a missing orchestration field (no producer) is not an error here, since the
   * importer writes a comment in its place and the written contract is validated afterwards.
   */
  lenient?: boolean;
}

/** What reading one ODCS document gave. */
export interface OdcsReading {
  /** The translated contract with locations in the ODCS file; absent when an error stops the reading. */
  document?: ParsedDocument;
  /** The contract-level orchestration fields the ODCS document did not carry (for the importer's comments). */
  missing: string[];
  /** Asset names the document declares, read best-effort (for the no-cascade rule of validate). */
  names: string[];
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** The custom properties of one list by name, the first of each name; a repeated name is CA3602. */
function customProperties(list: unknown, at: NodePath, parsed: ParsedDocument, diagnostics: Diagnostic[]): Map<string, Found> {
  const out = new Map<string, Found>();
  if (!Array.isArray(list)) return out;
  list.forEach((item, i) => {
    if (!isObject(item) || typeof item.property !== "string") return;
    if (out.has(item.property)) {
      diagnostics.push(createDiagnostic(Diagnostics.OdcsCustomPropertyTwice, { property: item.property }, parsed.locate([...at, i, "property"])));
      return;
    }
    out.set(item.property, { value: item.value, path: [...at, i, "value"] });
  });
  return out;
}

/** ODCS `unit` words of a freshness number, as ISO-8601 duration parts (datacontract-cli reads d, h, m). */
const SLA_UNITS: Record<string, (n: number) => string> = {
  d: (n) => `P${n}D`,
  day: (n) => `P${n}D`,
  days: (n) => `P${n}D`,
  h: (n) => `PT${n}H`,
  hour: (n) => `PT${n}H`,
  hours: (n) => `PT${n}H`,
  m: (n) => `PT${n}M`,
  minute: (n) => `PT${n}M`,
  minutes: (n) => `PT${n}M`,
};

function bestEffortNames(raw: Record<string, unknown>): string[] {
  const names: string[] = [];
  if (typeof raw.domain === "string" && Array.isArray(raw.schema)) {
    for (const s of raw.schema) if (isObject(s) && typeof s.name === "string") names.push(`${raw.domain}.${s.name}`);
  }
  if (Array.isArray(raw.customProperties)) {
    for (const p of raw.customProperties) {
      if (isObject(p) && p.property === CONTRACT_PROPERTIES.source && isObject(p.value) && typeof p.value.name === "string") names.push(p.value.name);
    }
  }
  return names;
}

/**
 * Reads one ODCS v3 document (recognised by `isOdcsDocument`) as a contract.
 *
 * Input: the parsed ODCS file. Output: the translated document, located in the ODCS file.
 * Diagnostics: CA2601 (not ODCS v3), CA3001–CA3006 (the compiler's ODCS schema), CA3601 (no
 * producer and no source), CA3602 (a custom property twice), CA3603 (a quality rule the audit task
 * cannot run: `text`, `custom`), CA3604 (a field ODCS allows that Airflow cannot honour: nested
 * properties, a physicalName that differs, a quality rule's own schedule, SLA properties other than
 * freshness).
 */
export function readOdcsContract(parsed: ParsedDocument, options: ReadOdcsOptions = {}): StageResult<OdcsReading> {
  const diagnostics: Diagnostic[] = [];
  const raw = parsed.value as Record<string, unknown>;
  const names = bestEffortNames(raw);
  if (typeof raw.apiVersion !== "string" || !ODCS_API_VERSION_PATTERN.test(raw.apiVersion)) {
    diagnostics.push(createDiagnostic(Diagnostics.OdcsVersionUnsupported, { apiVersion: String(raw.apiVersion) }, parsed.locate(["apiVersion"])));
    return { value: { missing: [], names }, diagnostics };
  }
  const validate = validatorFor("DataContract");
  if (!validate(raw)) {
    diagnostics.push(...mapSchemaErrors(parsed, validate.errors ?? []));
    return { value: { missing: [], names }, diagnostics };
  }
  const odcs = raw as OdcsContract;
  const t = new Translation();
  const missing: string[] = [];
  const top = customProperties(odcs.customProperties, ["customProperties"], parsed, diagnostics);
  const take = (name: string, ours: NodePath): unknown => {
    const found = top.get(name);
    if (found === undefined) return undefined;
    t.from(ours, found.path);
    return found.value;
  };
  const notHonoured = (path: NodePath, reason: string): void => {
    diagnostics.push(createDiagnostic(Diagnostics.OdcsFieldNotHonoured, { field: `"${describePath(path)}"`, reason }, parsed.locate(path, "key")));
  };

  const out: Record<string, unknown> = {};
  const source = take(CONTRACT_PROPERTIES.source, ["source"]);
  out.apiVersion = "contract-assets/v1";
  t.from(["apiVersion"], ["apiVersion"]);
  out.kind = source !== undefined ? "IngestionContract" : "TransformContract";
  t.from(["kind"], ["kind"]);
  /** A field our format needs that ODCS leaves optional: an error, or in lenient mode a comment to fill in. */
  const lacking = (field: string, reason: string, at: NodePath): void => {
    missing.push(field);
    if (!options.lenient) diagnostics.push(createDiagnostic(Diagnostics.OdcsOrchestrationMissing, { field, reason }, parsed.locate(at)));
  };
  for (const field of ["id", "version", "status", "domain"] as const) {
    if (odcs[field] === undefined) continue;
    out[field] = odcs[field];
    t.from([field], [field]);
  }
  // ODCS's id is any string, a UUID in the official examples; ours is <domain>.<name> and becomes
  // the dag_id. One that is not ours is derived from the domain and the contract's name (else its
  // data product, else its first schema object), so an imported or compiled document gets a
  // stable, valid id; with no domain or no name there is nothing to derive it from.
  if (!CONTRACT_ID_PATTERN.test(odcs.id)) {
    const derived = derivedContractId(odcs);
    if (derived !== undefined) out.id = derived;
    else lacking("id", "the ODCS id is not <domain>.<name> and there is no domain and name to derive one from; write the contract id, <domain>.<name> in lower snake case", ["id"]);
  }
  if (odcs.domain === undefined) lacking("domain", "the domain is the first part of the contract id and of every Asset name (<domain>.<name>)", ["id"]);
  if ((odcs.schema ?? []).length === 0) lacking("schema", "each schema object becomes one dataset, one Airflow Asset; a contract produces at least one", odcs.schema !== undefined ? ["schema"] : ["id"]);

  // The owner: the team's name, else its member with the role "owner", else its first member.
  const team = odcs.team;
  const members = Array.isArray(team) ? team : (team?.members ?? []);
  const membersAt: NodePath = Array.isArray(team) ? ["team"] : ["team", "members"];
  const ownerIndex = Math.max(0, members.findIndex((m) => m.role?.toLowerCase() === "owner"));
  if (!Array.isArray(team) && team?.name !== undefined) {
    out.owner = team.name;
    t.from(["owner"], ["team", "name"]);
  } else if (members.length > 0) {
    out.owner = members[ownerIndex]!.username;
    t.from(["owner"], [...membersAt, ownerIndex, "username"]);
  } else {
    lacking("team", "the owner of the DAG and of its Assets is the team's name (or its member with the role \"owner\")", team !== undefined ? ["team"] : ["id"]);
  }

  // ODCS describes a contract in three parts; ours is one text.
  if (odcs.description !== undefined) {
    const parts = (["purpose", "usage", "limitations"] as const).filter((k) => typeof odcs.description?.[k] === "string");
    if (parts.length > 0) {
      out.description = parts.map((k) => odcs.description![k]).join("\n\n");
      t.from(["description"], ["description", parts[0]!]);
    }
  }
  if (odcs.tags !== undefined) {
    out.tags = odcs.tags;
    t.from(["tags"], ["tags"]);
  }
  const purpose = take(CONTRACT_PROPERTIES.processingPurpose, ["processing", "purpose"]);
  const legalBasis = take(CONTRACT_PROPERTIES.legalBasis, ["processing", "legal_basis"]);
  if (purpose !== undefined || legalBasis !== undefined) {
    const processing: Record<string, unknown> = {};
    if (purpose !== undefined) processing.purpose = purpose;
    if (legalBasis !== undefined) processing.legal_basis = legalBasis;
    out.processing = processing;
    t.from(["processing"], top.get(CONTRACT_PROPERTIES.processingPurpose)?.path ?? top.get(CONTRACT_PROPERTIES.legalBasis)!.path);
    t.from(["processing", "purpose"], top.get(CONTRACT_PROPERTIES.processingPurpose)?.path ?? ["customProperties"]);
    t.from(["processing", "legal_basis"], top.get(CONTRACT_PROPERTIES.legalBasis)?.path ?? ["customProperties"]);
  }

  if (source !== undefined) {
    out.source = source;
    for (const [name, field] of [
      [CONTRACT_PROPERTIES.mode, "mode"],
      [CONTRACT_PROPERTIES.incremental, "incremental"],
      [CONTRACT_PROPERTIES.onSchemaDrift, "on_schema_drift"],
      [CONTRACT_PROPERTIES.landing, "landing"],
    ] as const) {
      const value = take(name, [field]);
      if (value !== undefined) out[field] = value;
      else if (field === "mode") missing.push(CONTRACT_PROPERTIES.mode);
    }
  } else {
    const producer = take(CONTRACT_PROPERTIES.producer, ["producer"]);
    if (producer !== undefined) out.producer = producer;
    else {
      missing.push(CONTRACT_PROPERTIES.producer);
      if (!options.lenient) {
        diagnostics.push(
          createDiagnostic(
            Diagnostics.OdcsOrchestrationMissing,
            { field: `custom property "${CONTRACT_PROPERTIES.producer}"`, reason: `a contract without a "${CONTRACT_PROPERTIES.source}" (an ingestion) needs a producer that builds its datasets` },
            parsed.locate(odcs.customProperties !== undefined ? ["customProperties"] : ["kind"], "key"),
            { hint: `add {property: producer, value: {type: sql, path: sql/<domain>/<name>.sql}} (or type python, dbt, command) to customProperties` },
          ),
        );
      }
    }
  }
  for (const [name, field] of [
    [CONTRACT_PROPERTIES.upstreams, "upstreams"],
    [CONTRACT_PROPERTIES.trigger, "trigger"],
    [CONTRACT_PROPERTIES.onFailure, "on_failure"],
  ] as const) {
    const value = take(name, [field]);
    if (value !== undefined) out[field] = value;
    else if (field !== "on_failure") missing.push(name);
  }

  const partitioning = readPartitioning(odcs, top, t, notHonoured);
  if (partitioning !== undefined) out.partitioning = partitioning;

  const freshness = readFreshness(odcs, t, top, notHonoured);
  if (freshness !== undefined) out.freshness = freshness;
  out.datasets = (odcs.schema ?? []).map((object, i) => readSchemaObject(object, i, parsed, t, diagnostics, notHonoured));
  t.from(["datasets"], ["schema"]);

  // A repeated custom property (CA3602) keeps the first value, so the rest of the document is still
  // checked; a missing field stops here, since the contract schema would report it again.
  if (diagnostics.some((d) => d.severity === "error" && d.code !== Diagnostics.OdcsCustomPropertyTwice.code)) return { value: { missing, names }, diagnostics };
  const document: ParsedDocument = {
    file: parsed.file,
    hashes: parsed.hashes,
    value: out,
    locate: (path, part = "value") => parsed.locate(t.origin(path), part),
    describe: (path) => describePath(t.origin(path)),
    ...(parsed.numberAsWritten ? { numberAsWritten: (path: NodePath) => parsed.numberAsWritten!(t.origin(path)) } : {}),
  };
  return { value: { document, missing, names }, diagnostics };
}

/**
 * `partitioning` from the custom property `partitionGrain` and the property of the first schema
 * object marked `partitioned` (the lowest `partitionKeyPosition`, ODCS v3): `{column, grain}`.
 * A `partitioned` property without `partitionGrain` is not honoured (ODCS has no grain); a grain
 * without a partitioned property leaves `column` out, which the contract schema then reports.
 */
function readPartitioning(
  odcs: OdcsContract,
  top: Map<string, Found>,
  t: Translation,
  notHonoured: (path: NodePath, reason: string) => void,
): Record<string, unknown> | undefined {
  const grain = top.get(CONTRACT_PROPERTIES.partitionGrain);
  const marked = (odcs.schema ?? []).flatMap((object, i) =>
    (object.properties ?? []).flatMap((p, j) => (p.partitioned === true ? [{ name: p.name, position: p.partitionKeyPosition ?? 1, path: ["schema", i, "properties", j, "partitioned"] as NodePath, object: i }] : [])),
  );
  if (grain === undefined) {
    if (marked.length > 0) notHonoured(marked[0]!.path, `a partitioned contract needs its grain: add {property: ${CONTRACT_PROPERTIES.partitionGrain}, value: day} (hour, day, week, month, quarter or year) to customProperties`);
    return undefined;
  }
  t.from(["partitioning"], grain.path);
  t.from(["partitioning", "grain"], grain.path);
  const first = marked.filter((m) => m.object === 0).sort((a, b) => a.position - b.position)[0];
  if (first === undefined) return { grain: grain.value };
  t.from(["partitioning", "column"], first.path);
  return { column: first.name, grain: grain.value };
}

/**
 * `freshness` from the `freshness` SLA property (`max_age`) and the custom properties
 * `freshnessDegradeAfter`, `freshnessColumn`, `freshnessExpectedRuntime`, `freshnessDeadlineReference`.
 */
function readFreshness(
  odcs: OdcsContract,
  t: Translation,
  top: Map<string, Found>,
  notHonoured: (path: NodePath, reason: string) => void,
): Record<string, unknown> | undefined {
  let maxAge: unknown;
  (odcs.slaProperties ?? []).forEach((sla, i) => {
    const at: NodePath = ["slaProperties", i];
    if (sla.property !== FRESHNESS_SLA_PROPERTY) {
      notHonoured([...at, "property"], `the runtime checks only the "${FRESHNESS_SLA_PROPERTY}" service level (as the contract's freshness.max_age)`);
      return;
    }
    if (maxAge !== undefined) {
      notHonoured(at, "a contract has one freshness; the first freshness service level is used");
      return;
    }
    const convert = typeof sla.value === "number" && sla.unit !== undefined ? SLA_UNITS[sla.unit.toLowerCase()] : undefined;
    maxAge = convert ? convert(sla.value as number) : typeof sla.value === "number" ? `P${sla.value}D` : sla.value;
    t.from(["freshness", "max_age"], [...at, "value"]);
    t.from(["freshness"], at);
  });
  const more = [
    ["degrade_after", top.get(CONTRACT_PROPERTIES.freshnessDegradeAfter)],
    ["column", top.get(CONTRACT_PROPERTIES.freshnessColumn)],
    ["expected_runtime", top.get(CONTRACT_PROPERTIES.freshnessExpectedRuntime)],
    ["deadline_reference", top.get(CONTRACT_PROPERTIES.freshnessDeadlineReference)],
  ] as const;
  if (maxAge === undefined && more.every(([, found]) => found === undefined)) return undefined;
  const out: Record<string, unknown> = {};
  if (maxAge !== undefined) out.max_age = maxAge;
  for (const [field, found] of more) {
    if (found === undefined) continue;
    out[field] = found.value;
    t.from(["freshness", field], found.path);
    if (maxAge === undefined) t.from(["freshness"], found.path);
  }
  return out;
}

/** One schema object as one dataset: its properties as columns, the quality rules of both levels. */
function readSchemaObject(
  object: OdcsSchemaObject,
  i: number,
  parsed: ParsedDocument,
  t: Translation,
  diagnostics: Diagnostic[],
  notHonoured: (path: NodePath, reason: string) => void,
): Record<string, unknown> {
  const at: NodePath = ["schema", i];
  const ours: NodePath = ["datasets", i];
  t.from(ours, at);
  const props = customProperties(object.customProperties, [...at, "customProperties"], parsed, diagnostics);
  const dataset: Record<string, unknown> = { name: object.name };
  t.from([...ours, "name"], [...at, "name"]);
  if (object.description !== undefined) {
    dataset.description = object.description;
    t.from([...ours, "description"], [...at, "description"]);
  }
  for (const [name, field] of [
    [DATASET_PROPERTIES.assetUri, "uri"],
    [DATASET_PROPERTIES.layer, "layer"],
    [DATASET_PROPERTIES.renamedFrom, "renamed_from"],
    [DATASET_PROPERTIES.physical, "physical"],
    [DATASET_PROPERTIES.assetExtra, "extra"],
  ] as const) {
    const found = props.get(name);
    if (found === undefined) continue;
    dataset[field] = found.value;
    t.from([...ours, field], found.path);
  }
  const version = props.get(DATASET_PROPERTIES.schemaVersion);
  const properties = object.properties ?? [];
  dataset.schema = { version: version?.value ?? 1, properties: properties.map((p, j) => readProperty(p, [...at, "properties", j], [...ours, "schema", "properties", j], t, notHonoured)) };
  t.from([...ours, "schema"], [...at, "properties"]);
  t.from([...ours, "schema", "version"], version?.path ?? [...at, "name"]);
  t.from([...ours, "schema", "properties"], object.properties !== undefined ? [...at, "properties"] : [...at, "name"]);

  // Column rules first, in property order, then the object's own rules (docs/odcs.md: rule order).
  const rules: Array<Record<string, unknown>> = [];
  const add = (rule: OdcsQualityRule, ruleAt: NodePath, column: { name: string; at: NodePath } | undefined): void => {
    const shown = rule.name !== undefined ? `"${rule.name}"` : `at ${describePath(ruleAt)}`;
    const type = rule.type ?? (rule.metric !== undefined || rule.rule !== undefined ? "library" : "text");
    if (type === "text" || type === "custom") {
      const reason = type === "text" ? "a text rule has no check to run" : `the "${rule.engine ?? "unnamed"}" engine is not one the runtime runs (library metrics and SQL only)`;
      diagnostics.push(createDiagnostic(Diagnostics.OdcsQualityNotRun, { rule: shown, reason }, parsed.locate([...ruleAt, "type"])));
      return;
    }
    for (const field of ["schedule", "scheduler"] as const) {
      if (rule[field] !== undefined) notHonoured([...ruleAt, field], "every quality rule runs in the audit task of each DAG run, not on a schedule of its own");
    }
    const k = rules.length;
    const ruleOurs: NodePath = [...ours, "quality", k];
    t.from(ruleOurs, ruleAt);
    const lowered: Record<string, unknown> = {};
    for (const field of ["name", "description", "type", "metric", "query", "unit", "severity"] as const) {
      if (rule[field] !== undefined) {
        lowered[field] = rule[field];
        t.from([...ruleOurs, field], [...ruleAt, field]);
      }
    }
    if (lowered.metric === undefined && rule.rule !== undefined) {
      lowered.metric = rule.rule;
      t.from([...ruleOurs, "metric"], [...ruleAt, "rule"]);
    }
    if (column !== undefined) {
      lowered.column = column.name;
      t.from([...ruleOurs, "column"], column.at);
    }
    for (const field of ["validValues", "missingValues"] as const) {
      if (rule.arguments?.[field] !== undefined) {
        lowered[field] = rule.arguments[field];
        t.from([...ruleOurs, field], [...ruleAt, "arguments", field]);
      }
    }
    for (const operator of QUALITY_OPERATORS) {
      if (rule[operator] !== undefined) lowered[operator] = rule[operator];
    }
    rules.push(lowered);
  };
  properties.forEach((p, j) => (p.quality ?? []).forEach((rule, r) => add(rule, [...at, "properties", j, "quality", r], { name: p.name, at: [...at, "properties", j, "name"] })));
  (object.quality ?? []).forEach((rule, r) => add(rule, [...at, "quality", r], undefined));
  if (rules.length > 0) dataset.quality = rules;
  t.from([...ours, "quality"], object.quality !== undefined ? [...at, "quality"] : at);
  return dataset;
}

/** One property as one column. Nested properties (a struct or an array of structs) stay one column. */
function readProperty(property: OdcsProperty, at: NodePath, ours: NodePath, t: Translation, notHonoured: (path: NodePath, reason: string) => void): Record<string, unknown> {
  t.from(ours, at);
  const out: Record<string, unknown> = {};
  for (const field of ["name", "logicalType", "physicalType", "required", "primaryKey", "unique", "classification", "description", "tags"] as const) {
    if (property[field] !== undefined) out[field] = property[field];
  }
  if (property.physicalName !== undefined && property.physicalName !== property.name) {
    notHonoured([...at, "physicalName"], `the column is named by the property's name "${property.name}"; rename the property to "${property.physicalName}"`);
  }
  for (const field of ["properties", "items"] as const) {
    if (property[field] !== undefined) notHonoured([...at, field], "nested properties are one column to the runtime; their types and quality rules are not checked");
  }
  for (const [j, nested] of (property.properties ?? []).entries()) {
    if ((nested.quality ?? []).length > 0) notHonoured([...at, "properties", j, "quality"], "quality rules on nested properties are not run");
  }
  return out;
}

/** Our contract id's shape (`common.schema.json` `ContractId`): two lower snake segments. */
const CONTRACT_ID_PATTERN = /^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/;

/** A text as a lower snake segment (`my quantum` → `my_quantum`), or undefined when none is left. */
function snakeSegment(text: string | undefined): string | undefined {
  const segment = (text ?? "").toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_+|_+$/g, "");
  if (segment === "") return undefined;
  return /^[a-z]/.test(segment) ? segment : `n_${segment}`;
}

/**
 * The contract id of an ODCS document whose `id` is not ours: `<domain>.<name>`, each part in lower
 * snake case, the name being the contract's `name`, else its `dataProduct`, else its first schema
 * object's `name`. Undefined without a domain or any of those names.
 */
export function derivedContractId(odcs: Pick<OdcsContract, "domain" | "name" | "dataProduct" | "schema">): string | undefined {
  const domain = snakeSegment(odcs.domain);
  const name = snakeSegment(odcs.name) ?? snakeSegment(odcs.dataProduct) ?? snakeSegment(odcs.schema?.[0]?.name);
  return domain !== undefined && name !== undefined ? `${domain}.${name}` : undefined;
}
