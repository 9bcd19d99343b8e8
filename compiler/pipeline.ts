import { createDiagnostic, Diagnostics } from "./diagnostics/catalogue.js";
import { hasErrors, sortDiagnostics, type Diagnostic } from "./diagnostics/diagnostic.js";
import { discoverProject, MAX_MANIFEST_BYTES, readReferencedFiles, readSourceFile, type ProjectLayout, type SourceFile } from "./discover/discoverProject.js";
import { breakingDiagnostics, diffManifests, type ManifestDiff } from "./diff/diffManifests.js";
import { buildGraph, type AssetGraph } from "./graph/buildGraph.js";
import { dbtManifestPath } from "./link/dbtProject.js";
import { linkProject, type LinkedProject } from "./link/linkProject.js";
import { buildManifest, type Manifest } from "./manifest/buildManifest.js";
import { parseManifest } from "./manifest/parseManifest.js";
import { isOdcsDocument } from "./model/odcs.js";
import { parseContracts, parseDocument } from "./parse/parseContracts.js";
import { planDags } from "./plan/planDags.js";
import { renderContractYaml } from "./render/renderContractYaml.js";
import { renderModules, type FileMap } from "./render/renderModules.js";
import { renderOdcs } from "./render/renderOdcs.js";
import { readOdcsContract } from "./validate/readOdcs.js";
import { validateDocuments } from "./validate/validateDocuments.js";
import type { WriteScope } from "./write/writeOutputs.js";

/** Everything one compile produced, in memory; nothing is written here. */
export interface CompileResult {
  /** Sorted and deduplicated across every stage. */
  diagnostics: Diagnostic[];
  /** Text of every file read, for excerpts under diagnostics. */
  sources: Map<string, string>;
  project?: LinkedProject;
  graph?: AssetGraph;
  manifest?: Manifest;
  /** The rendered output; absent when there are errors (so nothing can be written). */
  files?: FileMap;
  /** The manifest found in the output folder before this compile, when readable. */
  previousManifest?: Manifest;
  /** The changes against the previous manifest (or the one given in the options). */
  diff?: ManifestDiff;
  /** What of the output folder `write` manages for these files (the ODCS export folder only when compile writes it). */
  writeScope: WriteScope;
}

/**
 * The previous manifest of the output folder, or a warning (CA7002 as a warning) when it exists
 * but cannot be used: the compile goes on without a diff and rewrites it.
 */
function previousManifestOf(file: SourceFile | undefined, diagnostics: Diagnostic[]): Manifest | undefined {
  if (!file) return undefined;
  const { manifest, problem } = parseManifest(file.text);
  if (!manifest) {
    diagnostics.push(
      createDiagnostic(Diagnostics.PreviousManifestUnreadable, { path: file.path, detail: `${problem}; it is ignored and rewritten` }, { file: file.path, line: 1, column: 1 }, { severity: "warning" }),
    );
  }
  return manifest;
}

/** Test hooks; production callers pass nothing. */
export interface CompileOptions {
  /** Reorders discovered files before parsing, to prove the output does not depend on order. */
  reorder?: (files: SourceFile[]) => SourceFile[];
  /** The state to diff against instead of the manifest in the output folder (`diff --against`). */
  previousManifest?: Manifest;
}

/**
 * The one place that knows the stage order: discover → parse → validate → link → graph → plan →
 * manifest → render. Every stage runs as far as its input allows, so one run reports every
 * independent problem; rendering happens only when no stage found an error.
 */
export function compileProject(layout: ProjectLayout, options: CompileOptions = {}): CompileResult {
  const diagnostics: Diagnostic[] = [];
  const sources = new Map<string, string>();
  const discovered = discoverProject(layout);
  if (options.reorder) {
    discovered.value.contracts = options.reorder(discovered.value.contracts);
    discovered.value.configs = options.reorder(discovered.value.configs);
  }
  diagnostics.push(...discovered.diagnostics);
  for (const f of [...discovered.value.contracts, ...discovered.value.configs]) sources.set(f.path, f.text);

  const contracts = parseContracts(discovered.value.contracts);
  const configs = parseContracts(discovered.value.configs);
  diagnostics.push(...contracts.diagnostics, ...configs.diagnostics);

  const validated = validateDocuments(contracts.value, configs.value);
  diagnostics.push(...validated.diagnostics);

  const referenced = validated.value.contracts
    .map((c) => c.document)
    .flatMap((c) => (c.kind === "TransformContract" && c.producer.type === "sql" ? [c.producer.path] : []));
  const previousManifest = options.previousManifest ? undefined : previousManifestOf(discovered.value.previousManifest, diagnostics);
  const previousState = options.previousManifest ?? previousManifest;
  const producerFiles = readReferencedFiles(layout.root, referenced);
  diagnostics.push(...producerFiles.diagnostics);
  // dbt producers: the project's committed manifest.json (as large as dbt writes it)
  const dbtManifests = readReferencedFiles(
    layout.root,
    validated.value.contracts.map((c) => c.document).flatMap((c) => (c.kind === "TransformContract" && c.producer.type === "dbt" ? [dbtManifestPath(c.producer.project)] : [])),
    MAX_MANIFEST_BYTES,
  );
  diagnostics.push(...dbtManifests.diagnostics);
  for (const [p, text] of dbtManifests.value) producerFiles.value.set(p, text);
  const linked = linkProject(validated.value, {
    producerFiles: producerFiles.value,
    unresolvedNames: validated.value.unresolvedNames,
    unresolvedIds: validated.value.unresolvedIds,
    configBroken: validated.value.configBroken,
    // Rename hints read the state the diff compares against (the output folder's or --against's).
    ...(previousState ? { previousAssets: new Map(previousState.assets.map((a) => [a.name, { uri: a.uri, contractId: typeof a.extra.contract_id === "string" ? a.extra.contract_id : null, properties: (a.schema?.properties ?? []) as Array<{ name: string; logicalType?: string }> }])) } : {}),
  });
  diagnostics.push(...linked.diagnostics);

  const graph = buildGraph(linked.value);
  diagnostics.push(...graph.diagnostics);

  const odcsDir = `${layout.outDir}/odcs`;
  const exportsOdcs = linked.value.config.exportOdcs;
  const result: CompileResult = {
    diagnostics: [],
    sources,
    project: linked.value,
    graph: graph.value,
    writeScope: exportsOdcs ? {} : { ignore: ["odcs/**"] },
  };
  if (previousManifest) result.previousManifest = previousManifest;
  // The manifest is built even when there are errors, so the diff can say what the change does;
  // nothing is rendered (so nothing can be written) unless every stage is clean.
  const plans = planDags(linked.value);
  const manifest = buildManifest(linked.value, graph.value, plans.value);
  diagnostics.push(...plans.diagnostics, ...manifest.diagnostics);
  result.manifest = manifest.value.manifest;
  const previous = previousState;
  if (previous) {
    // Files that exist but could not be read, parsed or validated are in an unknown state, not gone.
    const accepted = new Set([...validated.value.contracts, ...validated.value.externals].map((l) => l.source.file.path));
    const broken = new Set(discovered.value.contractPaths.filter((p) => !accepted.has(p)));
    const unresolved = new Set([...validated.value.unresolvedNames, ...linked.value.refused, ...previous.assets.filter((a) => broken.has(a.contract)).map((a) => a.name)]);
    result.diff = diffManifests(previous, manifest.value.manifest, unresolved);
    const breaking = breakingDiagnostics(result.diff, linked.value, previous);
    // A consumer whose upstream broke is usually reported by link already (CA4005, CA4006, CA4008):
    // say it once, on that line.
    const lineOf = (d: Diagnostic): string => `${d.location?.file}:${d.location?.line}`;
    const taken = new Set(diagnostics.filter((d) => d.severity === "error" && d.location).map(lineOf));
    diagnostics.push(...breaking.diagnostics.filter((d) => !taken.has(lineOf(d))));
  }
  if (!hasErrors(diagnostics)) {
    const rendered = renderModules(manifest.value.manifest, manifest.value.text, layout.outDir);
    diagnostics.push(...rendered.diagnostics);
    if (exportsOdcs) {
      const odcs = renderOdcs(linked.value, odcsDir);
      diagnostics.push(...odcs.diagnostics);
      for (const [file, text] of odcs.value) rendered.value.set(file, text);
    }
    if (!hasErrors(diagnostics)) result.files = rendered.value;
  }
  result.diagnostics = sortDiagnostics(diagnostics);
  return result;
}

/** What `export odcs` produced: the compile's diagnostics and, when it was clean, the documents. */
export interface ExportResult {
  diagnostics: Diagnostic[];
  sources: Map<string, string>;
  /** `<dir>/<contract id>.odcs.yaml` → text; absent when the project has errors. */
  files?: FileMap;
  /** For `write`: only the `*.odcs.yaml` files of the folder are the export's. */
  writeScope: WriteScope;
}

/**
 * `export odcs`: compiles the project (every check of `compile`), then renders one ODCS v3 document
 * per contract into `dir` (project-relative). Nothing is rendered when the project has errors.
 */
export function exportOdcs(layout: ProjectLayout, dir: string): ExportResult {
  const compiled = compileProject(layout);
  const result: ExportResult = { diagnostics: compiled.diagnostics, sources: compiled.sources, writeScope: { owns: ["*.odcs.yaml"] } };
  if (hasErrors(compiled.diagnostics) || !compiled.project) return result;
  const rendered = renderOdcs(compiled.project, dir);
  result.diagnostics = sortDiagnostics([...compiled.diagnostics, ...rendered.diagnostics]);
  if (!hasErrors(result.diagnostics)) result.files = rendered.value;
  return result;
}

/** What `import odcs` produced. */
export interface ImportResult {
  diagnostics: Diagnostic[];
  sources: Map<string, string>;
  /** The contracts written from the ODCS documents, by project-relative path (also when they do not validate yet). */
  files: FileMap;
  /** `write` manages only these files: nothing else in the target folder is touched. */
  writeScope: WriteScope;
}

/**
 * `import odcs`: discover reads each ODCS file, parse and validate read it as a contract (leniently:
 * a missing producer becomes a comment to fill in), render writes our YAML to
 * `<dir>/<domain>/<name>.yaml` (the id's two segments), and the written text is parsed and validated
 * again as our format, so its diagnostics are located in the file the user will edit. A file that
 * is not an ODCS v3 document, or cannot be read as one, gives no output.
 */
export function importOdcs(layout: ProjectLayout, paths: readonly string[], dir: string): ImportResult {
  const diagnostics: Diagnostic[] = [];
  const sources = new Map<string, string>();
  const files: FileMap = new Map();
  const importedFrom = new Map<string, string>();
  for (const relative of paths) {
    const file = readSourceFile(layout.root, relative, diagnostics);
    if (!file) continue;
    sources.set(file.path, file.text);
    const parsed = parseDocument(file);
    diagnostics.push(...parsed.diagnostics);
    if (!parsed.value) continue;
    const raw = parsed.value.value as Record<string, unknown>;
    if (!isOdcsDocument(raw)) {
      diagnostics.push(createDiagnostic(Diagnostics.NotOdcs, {}, parsed.value.locate(raw.kind !== undefined ? ["kind"] : [])));
      continue;
    }
    const reading = readOdcsContract(parsed.value, { lenient: true });
    diagnostics.push(...reading.diagnostics);
    const document = reading.value.document;
    if (!document) continue;
    const contract = document.value as Record<string, unknown>;
    const [first, second] = String(contract.id).split(".");
    const target = `${dir}/${first}/${second ?? first}.yaml`;
    const taken = importedFrom.get(target);
    if (taken !== undefined) {
      diagnostics.push(createDiagnostic(Diagnostics.OdcsImportTargetTaken, { path: String(contract.id), first: taken }, parsed.value.locate(["id"])));
      continue;
    }
    importedFrom.set(target, file.path);
    // A file outside the project is named by its base name only: no machine path in the output.
    const shown = file.path.startsWith("../") ? file.path.slice(file.path.lastIndexOf("/") + 1) : file.path;
    files.set(target, renderContractYaml(contract, { path: shown, apiVersion: String(raw.apiVersion) }, reading.value.missing));
  }
  // The result is then validated as our format, located in the written files.
  const written = [...files].map(([path, text]) => ({ path, text, bytes: new TextEncoder().encode(text) }));
  for (const f of written) sources.set(f.path, f.text);
  const reparsed = parseContracts(written);
  diagnostics.push(...reparsed.diagnostics, ...validateDocuments(reparsed.value, []).diagnostics);
  return { diagnostics: sortDiagnostics(diagnostics), sources, files, writeScope: { owns: [] } };
}

/** An internal error as a diagnostic (exit 2 in the CLI). */
export function internalError(error: unknown): Diagnostic {
  return createDiagnostic(Diagnostics.InternalError, { detail: error instanceof Error ? error.message : String(error) }, undefined);
}
