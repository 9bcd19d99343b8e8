import { Diagnostics } from "../diagnostics/catalogue.js";
import type { TransformContract } from "../model/contract.js";
import { dbtManifestPath } from "../model/references.js";
import { compareStrings } from "../support/compare.js";
import type { DbtFinding, DbtResolution, LinkedContract } from "./model.js";

export { dbtManifestPath } from "../model/references.js";
export type { DbtFinding, DbtResolution } from "./model.js";

/** One dbt node the checks read (a model, seed, snapshot, test ...). */
export interface DbtNode {
  uniqueId: string;
  name: string;
  resourceType: string;
  /** File relative to the dbt project (`models/x.sql`). */
  path: string;
  /** The YAML file that documents the node's columns (`models/schema.yml`), if any. */
  patchPath?: string;
  /** Column names in the order the project declares them (model contract or `columns:`). */
  columns: string[];
  contractEnforced: boolean;
  materialized: string;
  tags: string[];
  /** `schema` or `alias` set in the node's config: the node decides where it builds. */
  relocation?: string;
  dependsOn: string[];
}

/** A dbt source table: read as the Asset `<schema>.<identifier>`. */
export interface DbtSource {
  uniqueId: string;
  sourceName: string;
  name: string;
  schema: string;
  identifier: string;
}

/** What the compiler reads of a dbt project's `manifest.json`. */
export interface DbtProject {
  projectName: string;
  nodes: Map<string, DbtNode>;
  sources: Map<string, DbtSource>;
  /** Models by name (the root project's). */
  models: Map<string, DbtNode>;
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/**
 * Reads a dbt `manifest.json` (schema v12; the fields used exist since v5).
 * Returns the project, or a one-line problem when the text is not a dbt manifest.
 */
export function readDbtProject(text: string): { project?: DbtProject; problem?: string } {
  // Link reads each manifest once for the publishers and once per contract of the project: keep
  // the ones parsed (a project has hundreds), by text, so no project is parsed twice.
  const known = parsedManifests.get(text);
  if (known) return known;
  const result = parseDbtProject(text);
  if (parsedManifests.size >= MAX_READ) parsedManifests.clear();
  parsedManifests.set(text, result);
  return result;
}

/** At most this many manifests are kept parsed (the texts are the compile's own). */
const MAX_READ = 4096;
const parsedManifests = new Map<string, { project?: DbtProject; problem?: string }>();

function parseDbtProject(text: string): { project?: DbtProject; problem?: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { problem: `not JSON (${error instanceof Error ? error.message : String(error)})` };
  }
  const root = obj(raw);
  const metadata = obj(root.metadata);
  if (!str(metadata.dbt_schema_version).includes("/manifest/") || typeof root.nodes !== "object") {
    return { problem: "not a dbt manifest (no metadata.dbt_schema_version or nodes)" };
  }
  const projectName = str(metadata.project_name);
  const nodes = new Map<string, DbtNode>();
  const models = new Map<string, DbtNode>();
  for (const [uniqueId, value] of Object.entries(obj(root.nodes))) {
    const n = obj(value);
    const config = obj(n.config);
    const columns = Object.values(obj(n.columns)).map((c) => str(obj(c).name)).filter(Boolean);
    const relocation = ["schema", "alias"].filter((k) => typeof config[k] === "string" && config[k] !== "").map((k) => `${k} ${JSON.stringify(config[k])}`);
    const node: DbtNode = {
      uniqueId,
      name: str(n.name),
      resourceType: str(n.resource_type),
      path: str(n.original_file_path) || str(n.path),
      columns,
      contractEnforced: obj(config.contract).enforced === true,
      materialized: str(config.materialized),
      tags: Array.isArray(config.tags) ? config.tags.map(str) : [],
      dependsOn: Array.isArray(obj(n.depends_on).nodes) ? (obj(n.depends_on).nodes as unknown[]).map(str) : [],
    };
    const patch = str(n.patch_path).replace(/^[^:]*:\/\//, "");
    if (patch) node.patchPath = patch;
    if (relocation.length) node.relocation = relocation.join(", ");
    nodes.set(uniqueId, node);
    if (node.resourceType === "model" && str(n.package_name) === projectName) models.set(node.name, node);
  }
  const sources = new Map<string, DbtSource>();
  for (const [uniqueId, value] of Object.entries(obj(root.sources))) {
    const s = obj(value);
    sources.set(uniqueId, { uniqueId, sourceName: str(s.source_name), name: str(s.name), schema: str(s.schema), identifier: str(s.identifier) || str(s.name) });
  }
  return { project: { projectName, nodes, sources, models } };
}

/** The model's file as a diagnostic names it: project-relative (`dbt/finance/models/x.sql`). */
function fileOf(project: string, file: string | undefined): string {
  return file ? `${project.replace(/\/+$/, "")}/${file}` : project;
}

/**
 * Resolves a `dbt` producer against its project's manifest and checks that they agree
 * (DESIGN §3.2): every dataset is a selected model and every selected model a dataset; a model's
 * declared columns equal the dataset's properties; a model reads only its contract's upstreams
 * (sources, and models other contracts publish), seeds, ephemeral models and the contract's own
 * models; a model does not set its own schema or alias (the runtime builds it in staging).
 *
 * @param c The contract (a TransformContract with a `dbt` producer).
 * @param projects dbt manifests by project folder (undefined text: not found).
 * @param publishers Model unique id -> the Asset that publishes it, for every dbt contract.
 */
export function resolveDbtProducer(
  c: LinkedContract,
  projectText: string | undefined,
  publishers: ReadonlyMap<string, { asset: string; domain: string; dataset: string }>,
): DbtResolution {
  const contract = c.contract as TransformContract;
  const producer = contract.producer as Extract<TransformContract["producer"], { type: "dbt" }>;
  const manifest = dbtManifestPath(producer.project);
  const out: DbtResolution = { manifest, models: [], seeds: [], upstreamModels: {}, findings: [] };
  const found = (entry: DbtFinding["entry"], args: Record<string, string>, path: Array<string | number>, hint?: string): void => {
    out.findings.push(hint === undefined ? { entry, args, path } : { entry, args, path, hint });
  };
  if (projectText === undefined) {
    found(Diagnostics.DbtManifestMissing, { project: producer.project, manifest }, ["producer", "project"], `generate it with dbt parse: bash scripts/dbt-parse.sh ${producer.project}`);
    return out;
  }
  const read = readDbtProject(projectText);
  if (!read.project) {
    found(Diagnostics.DbtManifestUnreadable, { manifest, detail: read.problem ?? "" }, ["producer", "project"]);
    return out;
  }
  const project = read.project;

  // select: model names and tag:<tag>, separated by spaces (dbt's union)
  const selected = new Map<string, DbtNode>();
  for (const token of producer.select.split(/\s+/).filter(Boolean)) {
    if (token.startsWith("tag:")) {
      const tag = token.slice(4);
      // Sort for determinism.
      for (const m of [...project.models.values()].sort((a, b) => compareStrings(a.name, b.name))) if (m.tags.includes(tag)) selected.set(m.name, m);
    } else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(token)) {
      const m = project.models.get(token);
      if (m) selected.set(m.name, m);
      else found(Diagnostics.DbtModelUnknown, { model: token, project: producer.project }, ["producer", "select"]);
    } else {
      found(Diagnostics.DbtSelectorUnsupported, { selector: token }, ["producer", "select"]);
    }
  }
  const datasets = new Set(contract.datasets.map((d) => d.name));
  for (const m of selected.values()) {
    if (!datasets.has(m.name)) {
      found(Diagnostics.DbtModelWithoutDataset, { model: m.name, file: fileOf(producer.project, m.path) }, ["producer", "select"]);
    }
    if (m.relocation) {
      found(Diagnostics.DbtModelRelocated, { model: m.name, file: fileOf(producer.project, m.path), config: m.relocation }, ["producer", "select"]);
    }
  }
  const upstreams = new Set(c.upstreams.map((u) => u.asset));
  const upstreamAt = contract.upstreams?.length ? (["upstreams"]) : (["producer", "select"]);
  const seeds = new Set<string>();
  contract.datasets.forEach((d, i) => {
    const m = selected.get(d.name);
    if (!m) {
      found(Diagnostics.DbtDatasetWithoutModel, { dataset: d.name, project: producer.project, select: producer.select }, ["datasets", i, "name"]);
      return;
    }
    out.models.push({ name: m.name, unique_id: m.uniqueId, path: m.path });
    if (m.columns.length) {
      const columns = new Set(m.columns);
      const columnFile = fileOf(producer.project, m.patchPath ?? m.path);
      d.schema.properties.forEach((p, j) => {
        if (!columns.has(p.name)) {
          found(Diagnostics.DbtColumnMissing, { property: p.name, model: m.name, file: columnFile }, ["datasets", i, "schema", "properties", j, "name"]);
        }
      });
      const properties = new Set(d.schema.properties.map((p) => p.name));
      for (const column of m.columns) {
        if (!properties.has(column)) {
          found(Diagnostics.DbtColumnExtra, { column, model: m.name, file: columnFile }, ["datasets", i, "schema", "properties"]);
        }
      }
    }
    // What the model reads, through ephemeral models (inlined into it).
    const seen = new Set<string>();
    const visit = (ids: string[]): void => {
      for (const id of ids) {
        if (seen.has(id)) continue;
        seen.add(id);
        const source = project.sources.get(id);
        if (source) {
          const asset = `${source.schema}.${source.identifier}`;
          if (!upstreams.has(asset)) {
            const via = `source('${source.sourceName}', '${source.name}')`;
            found(Diagnostics.DbtUndeclaredUpstream, { model: m.name, file: fileOf(producer.project, m.path), asset, via }, upstreamAt);
          }
          continue;
        }
        const node = project.nodes.get(id);
        if (!node || id.startsWith("macro.")) continue;
        if (node.resourceType === "seed") {
          seeds.add(node.name);
          continue;
        }
        if (node.resourceType === "model" && node.materialized === "ephemeral") {
          visit(node.dependsOn);
          continue;
        }
        if (node.resourceType === "model" && selected.has(node.name) && datasets.has(node.name)) continue;
        const publisher = publishers.get(id);
        if (!publisher) {
          found(Diagnostics.DbtRefUnpublished, { model: m.name, file: fileOf(producer.project, m.path), ref: node.name }, ["producer", "select"]);
          continue;
        }
        if (!upstreams.has(publisher.asset)) {
          found(Diagnostics.DbtUndeclaredUpstream, { model: m.name, file: fileOf(producer.project, m.path), asset: publisher.asset, via: `ref('${node.name}')` }, upstreamAt);
          continue;
        }
        out.upstreamModels[id] = { schema: publisher.domain, name: publisher.dataset };
      }
    };
    visit(m.dependsOn);
  });
  // Sort for determinism.
  out.seeds = [...seeds].sort(compareStrings);
  return out;
}

/** Model unique id -> the Asset publishing it, over every `dbt` contract of one project folder. */
export function dbtPublishers(contracts: readonly LinkedContract[], projectTexts: ReadonlyMap<string, string>): Map<string, Map<string, { asset: string; domain: string; dataset: string }>> {
  const byProject = new Map<string, Map<string, { asset: string; domain: string; dataset: string }>>();
  const parsed = new Map<string, DbtProject | undefined>();
  for (const { contract } of contracts) {
    if (contract.kind !== "TransformContract" || contract.producer.type !== "dbt") continue;
    const folder = contract.producer.project;
    if (!parsed.has(folder)) {
      const text = projectTexts.get(dbtManifestPath(folder));
      parsed.set(folder, text === undefined ? undefined : readDbtProject(text).project);
    }
    const project = parsed.get(folder);
    if (!project) continue;
    const map = byProject.get(folder) ?? new Map();
    byProject.set(folder, map);
    for (const d of contract.datasets) {
      const m = project.models.get(d.name);
      if (m) map.set(m.uniqueId, { asset: `${contract.domain}.${d.name}`, domain: contract.domain, dataset: d.name });
    }
  }
  return byProject;
}

/**
 * Resolves every `dbt` producer of `contracts` against its project ({@link resolveDbtProducer},
 * with {@link dbtPublishers} over all of them) and keeps the result as the contract's `dbt`: done
 * once in link, where ConsistentDbtProjectRule reports the findings and plan reads the rest.
 */
export function resolveDbtProducers(contracts: readonly LinkedContract[], projectTexts: ReadonlyMap<string, string>): void {
  let publishers: ReturnType<typeof dbtPublishers> | undefined;
  for (const c of contracts) {
    const contract = c.contract;
    if (contract.kind !== "TransformContract" || contract.producer.type !== "dbt") continue;
    publishers ??= dbtPublishers(contracts, projectTexts);
    const project = contract.producer.project;
    c.dbt = resolveDbtProducer(c, projectTexts.get(dbtManifestPath(project)), publishers.get(project) ?? new Map());
  }
}
