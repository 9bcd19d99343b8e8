import { createDiagnostic, Diagnostics } from "./diagnostics/catalogue.js";
import { hasErrors, sortDiagnostics, type Diagnostic } from "./diagnostics/diagnostic.js";
import { discoverProject, readReferencedFiles, type ProjectLayout, type SourceFile } from "./discover/discoverProject.js";
import { buildGraph, type AssetGraph } from "./graph/buildGraph.js";
import { linkProject, type LinkedProject } from "./link/linkProject.js";
import { buildManifest, MANIFEST_VERSION, type Manifest } from "./manifest/buildManifest.js";
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
}

/** Reads a previous manifest; undefined when absent, unreadable or of an unknown version. */
export function readManifest(file: SourceFile | undefined): Manifest | undefined {
  if (!file) return undefined;
  try {
    const value = JSON.parse(file.text) as Manifest;
    return value.manifestVersion === MANIFEST_VERSION && Array.isArray(value.assets) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Test hooks; production callers pass nothing. */
export interface CompileOptions {
  /** Reorders discovered files before parsing, to prove the output does not depend on order. */
  reorder?: (files: SourceFile[]) => SourceFile[];
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
  const previousManifest = readManifest(discovered.value.previousManifest);
  const producerFiles = readReferencedFiles(layout.root, referenced);
  diagnostics.push(...producerFiles.diagnostics);
  const linked = linkProject(validated.value, {
    producerFiles: producerFiles.value,
    unresolvedNames: validated.value.unresolvedNames,
    ...(previousManifest ? { previousAssets: new Map(previousManifest.assets.map((a) => [a.name, { uri: a.uri }])) } : {}),
  });
  diagnostics.push(...linked.diagnostics);

  const graph = buildGraph(linked.value);
  diagnostics.push(...graph.diagnostics);

  const result: CompileResult = { diagnostics: [], sources, project: linked.value, graph: graph.value };
  if (previousManifest) result.previousManifest = previousManifest;
  if (!hasErrors(diagnostics)) {
    const plans = planDags(linked.value, graph.value);
    const manifest = buildManifest(linked.value, graph.value, plans.value);
    const rendered = renderModules(manifest.value.manifest, manifest.value.text, layout.outDir);
    diagnostics.push(...plans.diagnostics, ...manifest.diagnostics, ...rendered.diagnostics);
    result.manifest = manifest.value.manifest;
    if (!hasErrors(diagnostics)) result.files = rendered.value;
  }
  result.diagnostics = sortDiagnostics(diagnostics);
  return result;
}

/** An internal error as a diagnostic (exit 2 in the CLI). */
export function internalError(error: unknown): Diagnostic {
  return createDiagnostic(Diagnostics.InternalError, { detail: error instanceof Error ? error.message : String(error) }, undefined);
}
