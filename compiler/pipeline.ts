import { createDiagnostic, Diagnostics } from "./diagnostics/catalogue.js";
import { hasErrors, sortDiagnostics, type Diagnostic } from "./diagnostics/diagnostic.js";
import { discoverProject, MAX_MANIFEST_BYTES, readReferencedFiles, type ProjectLayout, type SourceFile } from "./discover/discoverProject.js";
import { breakingDiagnostics, diffManifests, type ManifestDiff } from "./diff/diffManifests.js";
import { buildGraph, type AssetGraph } from "./graph/buildGraph.js";
import { dbtManifestPath } from "./link/dbtProject.js";
import { linkProject, type LinkedProject } from "./link/linkProject.js";
import { buildManifest, type Manifest } from "./manifest/buildManifest.js";
import { parseManifest } from "./manifest/parseManifest.js";
import { parseContracts } from "./parse/parseContracts.js";
import { planDags } from "./plan/planDags.js";
import { renderModules, type FileMap } from "./render/renderModules.js";
import { validateDocuments } from "./validate/validateDocuments.js";

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

  const result: CompileResult = { diagnostics: [], sources, project: linked.value, graph: graph.value };
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
    if (!hasErrors(diagnostics)) result.files = rendered.value;
  }
  result.diagnostics = sortDiagnostics(diagnostics);
  return result;
}

/** An internal error as a diagnostic (exit 2 in the CLI). */
export function internalError(error: unknown): Diagnostic {
  return createDiagnostic(Diagnostics.InternalError, { detail: error instanceof Error ? error.message : String(error) }, undefined);
}
