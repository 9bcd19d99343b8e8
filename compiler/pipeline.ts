import path from "node:path";
import { createDiagnostic, Diagnostics } from "./diagnostics/catalogue.js";
import { hasErrors, sortDiagnostics, type Diagnostic, type StageResult } from "./diagnostics/diagnostic.js";
import { openCacheReader, readCacheEntries } from "./discover/readCache.js";
import type { RecordPlaces } from "./discover/readManifest.js";
import { discoverProject, holdsOtherThan, MAX_FILE_BYTES, MAX_MANIFEST_BYTES, readReferencedFiles, readSourceFile, type ProjectLayout, type SourceFile } from "./discover/discoverProject.js";
import { breakingDiagnostics, diffManifests, type ManifestDiff } from "./diff/diffManifests.js";
import { buildGraph, type AssetGraph } from "./graph/buildGraph.js";
import { linkProject, type LinkedProject } from "./link/linkProject.js";
import { buildManifest, type Manifest } from "./manifest/buildManifest.js";
import { MANIFEST_CACHE_FOLDER, openRecordCache, RECORD_INDEX_KEY, RECORD_INDEX_PATH } from "./manifest/recordCache.js";
import { MANIFEST_VERSION } from "./model/manifest.js";
import { isOdcsDocument } from "./model/odcs.js";
import { referencedPaths } from "./model/references.js";
import { CACHE_FOLDER, cacheContext, openParseCache, PARSE_CACHE_FOLDER, parseCacheNotes, parseCacheWriter } from "./parse/parseCache.js";
import { parseContracts, parseDocument, type ParsedDocument } from "./parse/parseContracts.js";
import { planDags } from "./plan/planDags.js";
import { planFreshnessMonitor } from "./plan/planFreshnessMonitor.js";
import { renderContractYaml } from "./render/renderContractYaml.js";
import { MODULE_INDEX_KEY, openModuleCache, RENDER_CACHE_FOLDER } from "./render/moduleCache.js";
import { renderEachModule, type FileMap } from "./render/renderModules.js";
import { renderOdcs } from "./render/renderOdcs.js";
import { mergeProposal, parseProposal } from "./report/driftApply.js";
import { packageNameOf, scaffoldFiles } from "./report/initCommand.js";
import { suggest } from "./support/suggest.js";
import type { RenameCandidate } from "./support/renames.js";
import { readOdcsContract } from "./validate/readOdcs.js";
import { SCHEMA_FILES } from "./validate/schemas.js";
import { isStoredVerdict, restoreVerdict, storedVerdictOf, validateDocument, validateDocuments, type DocumentVerdict, type StoredVerdict } from "./validate/validateDocuments.js";
import { openCacheWrite, writeCacheEntries } from "./write/writeCache.js";
import { writeNewFiles } from "./write/writeNewFiles.js";
import { openWrite, writeOutputs, type WriteReport, type WriteScope } from "./write/writeOutputs.js";
import { COMPILER_NAME, COMPILER_VERSION } from "./version.js";

/** Everything one compile produced, in memory; nothing is written here. */
export interface CompileResult {
  /** Sorted and deduplicated across every stage. */
  diagnostics: Diagnostic[];
  /** Text of every file read, for excerpts under diagnostics. */
  sources: Map<string, string>;
  project?: LinkedProject;
  graph?: AssetGraph;
  manifest?: Manifest;
  /**
   * The rendered output, by project-relative path; absent when there are errors (so nothing can be
   * written), and with `write` unless `keepFiles` (the write takes each file as it is rendered).
   */
  files?: FileMap;
  /** The manifest found in the output folder (or at the `against` ref) before this compile, when valid. */
  previousManifest?: Manifest;
  /** The changes against the previous manifest (or the one given in the options). */
  diff?: ManifestDiff;
  /** What of the output folder `write` manages for these files (the ODCS export folder only when compile writes it). */
  writeScope: WriteScope;
  /** What `write` did (or, with `write: "check"`, found different); absent when nothing was written. */
  written?: WriteReport;
  /**
   * With `cache`: files read from the incremental cache and files parsed, documents whose
   * validation verdict came from the cache (not validated again), entries written and removed;
   * DAG modules found unchanged and rendered (ADR 0017n); records of the manifest whose text was
   * taken from the last manifest and records written out (ADR 0017p); contract files and entries
   * discover's reader thread read and checked (ADR 0017x).
   */
  cache?: {
    hits: number;
    parsed: number;
    verdicts: number;
    written: number;
    removed: number;
    modules?: { unchanged: number; rendered: number };
    records?: { reused: number; made: number };
    readAhead?: { files: number; entries: number };
  };
}

/** Options of a compile; the CLI's flags, and hooks for tests. */
export interface CompileOptions {
  /** Reorders discovered files before parsing, to prove the output does not depend on order. */
  reorder?: (files: SourceFile[]) => SourceFile[];
  /** The state to diff against, in memory, instead of the manifest in the output folder (tests, tools). */
  previousManifest?: Manifest;
  /** `--against REF`: the previous state is the manifest committed at this Git ref. */
  against?: string;
  /** `--diff` and `diff`: without a previous manifest, diff against an empty one (every asset added). */
  diff?: boolean;
  /** `compile --force`: a damaged previous manifest is a warning; the compile goes on without it and rewrites it. */
  force?: boolean;
  /** What `write` does with a clean compile's files: write them, or compare them (`--check`); default neither. */
  write?: "write" | "check";
  /**
   * With `write`: also return every rendered file as `files` (tests, tools). Without it a write
   * holds no rendered text longer than it takes to compare or stage it (ADR 0017i).
   */
  keepFiles?: boolean;
  /** Texts that stand in for project files (`drift apply` compiles a merge before writing it). */
  overlay?: ReadonlyMap<string, string>;
  /**
   * `false` (`validate`, `diff`): stop after the diff, leaving `files` absent. Render reports
   * nothing, so the diagnostics are those of a compile; only `write` needs the rendered files.
   */
  render?: boolean;
  /** Worker threads that parse the YAML files beside the calling one (`--workers`); default `defaultWorkerCount`. The output is the same for any number. */
  workers?: number;
  /**
   * Use the incremental cache in `.contract-assets/cache/` (ADR 0017c): each file's parse result is
   * read from it when its entry matches the file's bytes, the orchestration config and the
   * compiler, and what was parsed is written back. The output is the same with or without it.
   * Default off: the CLI turns it on (`--no-cache`, and off under CI: `usesCache`).
   */
  cache?: boolean;
  /**
   * With `cache`: whether discover's reader thread reads the contracts and their entries ahead
   * (ADR 0017x); default when there are at least `MIN_READ_AHEAD_FILES` contracts. The output is
   * the same either way. `"thread"` (tests): whatever the size, and the calling thread reads only
   * what the thread gives up.
   */
  readAhead?: boolean | "thread";
  /** The reader thread's script (tests: one that fails); default the compiled `readAheadWorker.js`. */
  readAheadScript?: URL;
}

/** A manifest with nothing in it: the previous state of a first compile asked for a diff. */
function emptyManifest(): Manifest {
  return { manifestVersion: MANIFEST_VERSION, compiler: { name: COMPILER_NAME, version: COMPILER_VERSION }, lineage: { namespace: "" }, assets: [], edges: [], dags: [] };
}

/**
 * The manifest stage's result (`build` runs it) with its text in a box of its own: a local
 * variable or a temporary of the caller holding the stage's result would keep the text, as large
 * as the manifest file, to the end of the compile; emptying the box lets it go (ADR 0017i).
 */
function boxedManifest(build: () => StageResult<{ manifest: Manifest; text: string }>): { manifest: Manifest; manifestText: { text?: string }; manifestDiagnostics: Diagnostic[] } {
  const built = build();
  return { manifest: built.value.manifest, manifestText: { text: built.value.text }, manifestDiagnostics: built.diagnostics };
}

/** `{path → the box's text}`, built here so that no temporary of the caller holds the text. */
function knownText(path: string, box: { text?: string }): Map<string, string> {
  return new Map([[path, box.text!]]);
}

/**
 * The one place that knows the stage order: discover (the project's files and the previous state)
 * → parse → discover's second read (the files the documents name, `readReferencedFiles`) →
 * validate → link → graph → plan → manifest → diff → render → write (only with `options.write`).
 * Every stage runs as far as its input allows, so one run reports every independent problem;
 * rendering, and so writing, happens only when no stage found an error (and not at all with
 * `render: false`). The previous manifest is parsed only when a stage needs it, and not when its
 * text is the new manifest's (ADR 0017).
 */
export function compileProject(layout: ProjectLayout, options: CompileOptions = {}): CompileResult {
  const diagnostics: Diagnostic[] = [];
  const sources = new Map<string, string>();
  // Entries are of this build of the parse and validate stages.
  let parseWriter: string | undefined;
  const writer = (): string => (parseWriter ??= parseCacheWriter(COMPILER_NAME, COMPILER_VERSION, { modules: ["parse/parseContracts", "validate/validateDocuments"], files: SCHEMA_FILES }));
  const discovered = discoverProject(layout, {
    previous: options.previousManifest ? "none" : options.against !== undefined ? { ref: options.against } : "output",
    ...(options.force ? { force: true } : {}),
    ...(options.write === "write" ? { writes: true } : {}),
    ...(options.overlay ? { overlay: options.overlay } : {}),
    // With the cache, the output folder's manifest is read and hashed in a thread from the start
    // when the record index is there to use it (ADR 0017w).
    ...(options.cache ? { readAheadWith: RECORD_INDEX_PATH } : {}),
    // With the cache, a reader thread reads the contracts and their entries ahead (ADR 0017x).
    ...(options.cache && options.readAhead !== false
      ? { cache: { folder: PARSE_CACHE_FOLDER, compiler: writer, context: cacheContext, ...(options.readAhead ? { readAhead: options.readAhead } : {}), ...(options.readAheadScript ? { script: options.readAheadScript } : {}) } }
      : {}),
  });
  if (options.reorder) {
    discovered.value.contracts = options.reorder(discovered.value.contracts);
    discovered.value.configs = options.reorder(discovered.value.configs);
  }
  diagnostics.push(...discovered.diagnostics);
  for (const f of [...discovered.value.contracts, ...discovered.value.configs]) sources.set(f.path, f.text);

  // Each document is validated as soon as its parse arrives, while worker threads parse the rest;
  // a document from the incremental cache comes with its verdict (ADR 0017j), kept for the next
  // compile when it was just made.
  const verdicts = new Map<ParsedDocument, DocumentVerdict>();
  let reused = 0;
  const parseOptions = (config: boolean) => ({
    ...(options.workers !== undefined ? { workers: options.workers } : {}),
    onDocument: (d: ParsedDocument, stored?: unknown): StoredVerdict | null | undefined => {
      const restored = stored !== undefined ? restoreVerdict(d, stored as StoredVerdict, config) : undefined;
      const verdict = restored ?? validateDocument(d, config);
      if (restored) reused++;
      verdicts.set(d, verdict);
      return restored ? undefined : storedVerdictOf(d, verdict, config);
    },
  });
  // The incremental cache (ADR 0017c, 0017j): each file's entry is read before parse; each new one
  // is written as soon as its file is parsed and validated, and the unused ones are removed once
  // parse is done (ADR 0017m). Entries are of this build of the parse and validate stages.
  // The reader thread's entries are taken as the contracts are looked up; the configs' are read here.
  const cacheWrite = options.cache ? openCacheWrite(layout.root, CACHE_FOLDER, PARSE_CACHE_FOLDER) : undefined;
  const ahead = discovered.value.readAhead;
  const parseCache = cacheWrite
    ? openParseCache(
        [...discovered.value.contracts, ...discovered.value.configs],
        discovered.value.configs,
        writer(),
        ahead ? ahead.entry : openCacheReader(layout.root, PARSE_CACHE_FOLDER),
        isStoredVerdict,
        (key, bytes) => cacheWrite.add(key, bytes),
        ahead,
      )
    : undefined;
  let contracts: ReturnType<typeof parseContracts>;
  try {
    contracts = parseContracts(discovered.value.contracts, { ...parseOptions(false), ...(parseCache ? { cache: parseCache } : {}) });
  } finally {
    ahead?.close();
  }
  const configs = parseContracts(discovered.value.configs, { ...parseOptions(true), ...(parseCache ? { cache: parseCache } : {}) });
  diagnostics.push(...contracts.diagnostics, ...configs.diagnostics);
  const cached = parseCache && cacheWrite!.finish(new Set(parseCache.keys.values()));
  if (parseCache) diagnostics.push(...parseCacheNotes(parseCache), ...cached!.diagnostics);

  // The files the documents name (SQL producers, dbt manifests) are read now, before any stage
  // interprets a document: from here on every stage works in memory.
  const named = [...contracts.value, ...configs.value].flatMap((d) => referencedPaths(d.value));
  const pathsOf = (kind: string): string[] => named.filter((r) => r.kind === kind).map((r) => r.path);
  const producerFiles = readReferencedFiles(layout.root, pathsOf("sql"), MAX_FILE_BYTES);
  // dbt producers: the project's committed manifest.json (as large as dbt writes it)
  const dbtManifests = readReferencedFiles(layout.root, pathsOf("dbtManifest"), MAX_MANIFEST_BYTES);
  diagnostics.push(...producerFiles.diagnostics, ...dbtManifests.diagnostics);
  for (const [p, text] of dbtManifests.value) producerFiles.value.set(p, text);
  const validated = validateDocuments(contracts.value, configs.value, verdicts);
  diagnostics.push(...validated.diagnostics);

  // The previous state is parsed and checked only when a stage first needs it (`checkPrevious`,
  // memoised): a manifest file with the very text of the new manifest is that manifest (ADR 0017).
  let previousChecked = false;
  let previousManifest: Manifest | undefined;
  let previousFile: { path: string; text: string } | undefined;
  // The output folder's manifest, when it was found holding the new manifest's bytes.
  let previousHolding: string | undefined;
  const checkPrevious = (current?: { manifest: Manifest; text: string; places?: RecordPlaces }): Manifest | undefined => {
    if (!previousChecked && discovered.value.checkPrevious) {
      const checked = discovered.value.checkPrevious(current);
      previousFile = checked.file;
      previousHolding = checked.holding;
      diagnostics.push(...checked.diagnostics);
      previousManifest = checked.value;
    }
    previousChecked = true;
    return previousManifest;
  };
  // Only a first compile (no previous manifest at all) diffs against an empty one: a damaged one
  // is CA1101, never read as empty (every asset would read as added).
  const firstCompile = options.diff && discovered.value.firstCompile === true;
  const empty = firstCompile ? emptyManifest() : undefined;
  const previousStateOf = (): Manifest | undefined => options.previousManifest ?? checkPrevious() ?? empty;
  let previousAssets: ReadonlyMap<string, Omit<RenameCandidate, "name">> | undefined;
  const linked = linkProject(validated.value, {
    producerFiles: producerFiles.value,
    unresolvedNames: validated.value.unresolvedNames,
    unresolvedIds: validated.value.unresolvedIds,
    configBroken: validated.value.configBroken,
    contractsUnparsed: contracts.diagnostics.some((d) => d.severity === "error"),
    // Rename hints read the state the diff compares against (the output folder's or --against's),
    // only when a consumer names an unknown Asset.
    previousAssets: () => {
      const state = previousStateOf();
      if (state && !previousAssets) previousAssets = new Map(state.assets.map((a) => [a.name, { uri: a.uri, contractId: typeof a.extra.contract_id === "string" ? a.extra.contract_id : null, properties: a.schema?.properties ?? [] }]));
      return previousAssets;
    },
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
  // The manifest is built even when there are errors, so the diff can say what the change does;
  // nothing is rendered (so nothing can be written) unless every stage is clean.
  const plans = planDags(linked.value);
  // The manifest's text (as large as its file) is held in one box, emptied once the text is
  // written or compared (ADR 0017i).
  // With the cache, the records whose value the last compile's manifest holds are sliced out of
  // its file rather than written out again (ADR 0017p); an Asset record's dataset is keyed by its
  // file's parse-cache key (ADR 0017t).
  const records = parseCache
    ? openRecordCache({ name: COMPILER_NAME, version: COMPILER_VERSION }, readCacheEntries(layout.root, MANIFEST_CACHE_FOLDER, [RECORD_INDEX_KEY]), () => discovered.value.outputManifestBytes?.(), parseCache.keys)
    : undefined;
  const { manifest, manifestText, manifestDiagnostics } = boxedManifest(() => buildManifest(linked.value, graph.value, plans.value, planFreshnessMonitor(linked.value), records?.texts));
  // The text's bytes go to the write, which hashes them for the index (only a write needs it) and,
  // in a warm compile (records were reused: the record index and the last manifest were there),
  // stages and hashes them in a thread (ADR 0017w); they are not held otherwise.
  // In a box, as the text is: no local of this function holds them past the write.
  const manifestBytes: { bytes?: Uint8Array } = { bytes: records?.take() };
  if (options.write !== "write") delete manifestBytes.bytes;
  const stagesInThread = records !== undefined && records.counts.reused > 0;
  diagnostics.push(...plans.diagnostics, ...manifestDiagnostics, ...(records?.notes ?? []));
  result.manifest = manifest;
  // Read against the new manifest: the same text is the same state (this compiler wrote it, so it
  // needs no parse or schema check: the no-op compile, `--check` and `validate` of an up-to-date
  // project), and otherwise only the records whose text changed are parsed (ADR 0017d).
  // The record cache knows where the records it reused lie in both texts (ADR 0017p).
  if (!options.previousManifest) checkPrevious({ manifest, text: manifestText.text!, ...(records?.places() ? { places: records.places()! } : {}) });
  const previous = previousStateOf();
  if (previousManifest) result.previousManifest = previousManifest;
  if (previousFile && diagnostics.some((d) => d.location?.file === previousFile!.path)) sources.set(previousFile.path, previousFile.text);
  // Checked: the previous text (as large as the manifest) is not kept to the end of the compile.
  previousFile = undefined;
  if (previous) {
    // Files that exist but could not be read, parsed or validated are in an unknown state, not gone.
    const accepted = new Set([...validated.value.contracts, ...validated.value.externals].map((l) => l.source.file.path));
    const broken = new Set(discovered.value.contractPaths.filter((p) => !accepted.has(p)));
    const unresolved = new Set([...validated.value.unresolvedNames, ...linked.value.refused, ...previous.assets.filter((a) => broken.has(a.contract)).map((a) => a.name)]);
    result.diff = diffManifests(previous, manifest, unresolved);
    const breaking = breakingDiagnostics(result.diff, linked.value, previous);
    // A consumer whose upstream broke is usually reported by link already (CA4005, CA4006, CA4008):
    // say it once, on that line.
    const lineOf = (d: Diagnostic): string => `${d.location?.file}:${d.location?.line}`;
    const taken = new Set(diagnostics.filter((d) => d.severity === "error" && d.location).map(lineOf));
    diagnostics.push(...breaking.diagnostics.filter((d) => !taken.has(lineOf(d))));
  }
  let moduleCounts: { unchanged: number; rendered: number } | undefined;
  if (options.render !== false && !hasErrors(diagnostics)) {
    // Rendered file by file into the write (ADR 0017i): a file found holding its text is dropped at
    // once, a changed one staged (or kept for --check's report); the map of every file is built only
    // without a write, or when asked for (`keepFiles`).
    // The manifest found holding the new text is not compared again (ADR 0017g).
    const write = options.write
      ? openWrite(layout, { check: options.write === "check", ...result.writeScope, ...(previousHolding !== undefined ? { known: knownText(previousHolding, manifestText) } : {}), ...(stagesInThread ? {} : { thread: { script: null } }) })
      : undefined;
    const files: FileMap | undefined = !write || options.keepFiles ? new Map() : undefined;
    const manifestPath = `${layout.outDir}/manifest.json`;
    const emit = (relative: string, text: string): void => {
      files?.set(relative, text);
      // The manifest's bytes go to the write (it takes them over) with its text.
      const bytes = relative === manifestPath ? manifestBytes.bytes : undefined;
      delete manifestBytes.bytes;
      write?.add(relative, text, bytes);
    };
    // With the cache, a DAG module whose inputs are the index's and whose file holds the index's
    // hash is neither rendered nor compared (ADR 0017n), keyed by the manifest's record keys (ADR 0017r).
    const modules = parseCache && write && !files
      ? openModuleCache(manifest, layout.outDir, { name: COMPILER_NAME, version: COMPILER_VERSION }, readCacheEntries(layout.root, RENDER_CACHE_FOLDER, [MODULE_INDEX_KEY]), (relative, digest, stamp) => write.holdsDigest(relative, digest, stamp), records?.keys)
      : undefined;
    if (modules) diagnostics.push(...modules.notes);
    renderEachModule(manifest, manifestText.text!, layout.outDir, (relative, text) => {
      emit(relative, text);
      // Written or compared: the manifest's text is not held while the modules are rendered.
      delete manifestText.text;
    }, modules);
    if (exportsOdcs) {
      const odcs = renderOdcs(linked.value, odcsDir);
      diagnostics.push(...odcs.diagnostics);
      for (const [file, text] of odcs.value) emit(file, text);
    }
    if (hasErrors(diagnostics)) write?.discard();
    else {
      if (files) result.files = files;
      if (write) {
        const written = write.finish();
        diagnostics.push(...written.diagnostics);
        result.written = written.value;
        // The index describes the manifest file only once the file holds the new text (not after --check).
        if (records && options.write === "write" && !hasErrors(written.diagnostics)) {
          diagnostics.push(...writeCacheEntries(layout.root, CACHE_FOLDER, MANIFEST_CACHE_FOLDER, new Map([[RECORD_INDEX_KEY, records.encode(write.digestOf(manifestPath))]]), new Set(), Diagnostics.RecordIndexNotWritten).diagnostics);
        }
      }
    }
    if (modules) {
      diagnostics.push(...writeCacheEntries(layout.root, CACHE_FOLDER, RENDER_CACHE_FOLDER, new Map([[MODULE_INDEX_KEY, modules.encode()]]), new Set(), Diagnostics.ModuleIndexNotWritten).diagnostics);
      moduleCounts = modules.counts;
    }
  }
  if (parseCache) result.cache = { hits: parseCache.hits, parsed: parseCache.parsed, verdicts: reused, written: cached!.value.written, removed: cached!.value.removed, ...(moduleCounts ? { modules: moduleCounts } : {}), ...(records ? { records: records.counts } : {}), ...(ahead ? { readAhead: { ...ahead.taken } } : {}) };
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
  /** What `write` did, with `options.write`. */
  written?: WriteReport;
}

/**
 * `export odcs`: compiles the project (every check of `compile`), then renders one ODCS v3 document
 * per contract into `dir` (project-relative). Nothing is rendered when the project has errors.
 */
export function exportOdcs(layout: ProjectLayout, dir: string, options: { write?: boolean } = {}): ExportResult {
  const compiled = compileProject(layout);
  const result: ExportResult = { diagnostics: compiled.diagnostics, sources: compiled.sources, writeScope: { owns: ["*.odcs.yaml"] } };
  if (hasErrors(compiled.diagnostics) || !compiled.project) return result;
  const rendered = renderOdcs(compiled.project, dir);
  result.diagnostics = sortDiagnostics([...compiled.diagnostics, ...rendered.diagnostics]);
  if (hasErrors(result.diagnostics)) return result;
  result.files = rendered.value;
  if (options.write) {
    const written = writeOutputs({ ...layout, outDir: dir }, result.files, { check: false, ...result.writeScope });
    result.written = written.value;
    result.diagnostics = sortDiagnostics([...result.diagnostics, ...written.diagnostics]);
  }
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
  /** What `write` did, with `options.write`. */
  written?: WriteReport;
}

/**
 * `import odcs`: discover reads each ODCS file, parse and validate read it as a contract (leniently:
 * a missing producer becomes a comment to fill in), render writes our YAML to
 * `<dir>/<domain>/<name>.yaml` (the id's two segments), and the written text is parsed and validated
 * again as our format, so its diagnostics are located in the file the user will edit. A file that
 * is not an ODCS v3 document, or cannot be read as one, gives no output.
 */
export function importOdcs(layout: ProjectLayout, paths: readonly string[], dir: string, options: { write?: boolean; force?: boolean } = {}): ImportResult {
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
    const text = renderContractYaml(contract, { path: shown, apiVersion: String(raw.apiVersion) }, reading.value.missing);
    // A file already there with other text may be the hand-written contract this document was
    // exported from: it is replaced only when asked (`force`), never silently.
    if (!options.force && holdsOtherThan(path.join(layout.root, target), text)) {
      diagnostics.push(createDiagnostic(Diagnostics.OdcsImportWouldOverwrite, { target }, parsed.value.locate(["id"])));
      continue;
    }
    files.set(target, text);
  }
  // The result is then validated as our format, located in the written files.
  const written = [...files].map(([path, text]) => ({ path, text, bytes: new TextEncoder().encode(text) }));
  for (const f of written) sources.set(f.path, f.text);
  const reparsed = parseContracts(written);
  diagnostics.push(...reparsed.diagnostics, ...validateDocuments(reparsed.value, []).diagnostics);
  const result: ImportResult = { diagnostics: [], sources, files, writeScope: { owns: [] } };
  if (options.write) {
    const written = writeOutputs({ ...layout, outDir: dir }, files, { check: false, ...result.writeScope });
    result.written = written.value;
    diagnostics.push(...written.diagnostics);
  }
  result.diagnostics = sortDiagnostics(diagnostics);
  return result;
}

/** What `drift apply` did: the merge, the project's diagnostics after it, and what was written. */
export interface ApplyProposalResult {
  /** Why nothing could be merged (unreadable or invalid proposal, no contract of that id, a merge conflict). */
  problem?: string;
  /** Exit class of `problem`: the proposal file cannot be read (a usage error) or its content is refused. */
  problemKind?: "unreadable" | "refused";
  /** The contract file the proposal belongs to (project-relative). */
  contract?: string;
  /** What the merge changed, one line each (empty when the contract already matches). */
  changes: string[];
  /** The merged project's diagnostics (excerpts from `sources`); the file is written only when it has no error. */
  diagnostics: Diagnostic[];
  sources: Map<string, string>;
  /** Whether the merged contract was written. */
  written: boolean;
  /** The merged project's size, for the summary line. */
  contractCount: number;
  assetCount: number;
}

/**
 * `drift apply`: reads a proposal (discover's `readSourceFile`), merges it into the contract with
 * the same id (`mergeProposal`, comments and layout kept), compiles the project with the merged
 * text standing in for the file (nothing is written yet), and writes the file only when that
 * compile is clean, so an invalid merge never touches the disk.
 */
export function applyProposal(layout: ProjectLayout, proposalPath: string): ApplyProposalResult {
  const result: ApplyProposalResult = { changes: [], diagnostics: [], sources: new Map(), written: false, contractCount: 0, assetCount: 0 };
  const read: Diagnostic[] = [];
  const file = readSourceFile(layout.root, proposalPath, read, MAX_FILE_BYTES);
  if (!file) return { ...result, problem: `cannot read the proposal ${JSON.stringify(proposalPath)}: ${(read[0]?.message ?? "unknown").replace(/^cannot read the file: /, "")}`, problemKind: "unreadable" };
  const parsed = parseProposal(file.text);
  if (!parsed.proposal) return { ...result, problem: parsed.problem ?? "not a proposal", problemKind: "refused" };
  const before = compileProject(layout);
  const contract = before.project?.contracts.find((c) => c.contract.id === parsed.proposal!.id);
  if (!contract) {
    const guess = suggest(parsed.proposal.id, (before.project?.contracts ?? []).map((c) => c.contract.id));
    return { ...result, problem: `no contract has the id ${JSON.stringify(parsed.proposal.id)}${guess ? `; did you mean ${JSON.stringify(guess)}?` : ""}`, problemKind: "refused" };
  }
  const relative = contract.located.source.file.path;
  result.contract = relative;
  const original = contract.located.source.file.text;
  const merged = mergeProposal(original, parsed.proposal);
  if (merged.problem) return { ...result, problem: `${relative}: ${merged.problem}`, problemKind: "refused" };
  if (merged.text === original) return result;
  result.changes = merged.changes;
  const after = compileProject(layout, { overlay: new Map([[relative, merged.text]]) });
  result.diagnostics = after.diagnostics;
  result.sources = after.sources;
  result.contractCount = after.project?.contracts.length ?? 0;
  result.assetCount = after.project?.assets.size ?? 0;
  if (hasErrors(after.diagnostics)) return result;
  const written = writeOutputs({ ...layout, outDir: layout.contractsDir }, new Map([[relative, merged.text]]), { check: false, owns: [] });
  result.diagnostics = sortDiagnostics([...after.diagnostics, ...written.diagnostics]);
  result.written = !hasErrors(written.diagnostics);
  return result;
}

/**
 * `init`: the files of a new contracts repository (`scaffoldFiles`, from the package templates),
 * written into `target` only when none of them exists (`writeNewFiles`; CA9901 otherwise).
 *
 * @param target Absolute path of the folder.
 * @param shown The folder as the user named it, for reported paths.
 */
export function initRepository(target: string, shown: string): StageResult<string[]> {
  const name = packageNameOf(path.basename(target));
  return writeNewFiles(target, scaffoldFiles(name), shown);
}

/** An internal error as a diagnostic (exit 2 in the CLI). */
export function internalError(error: unknown): Diagnostic {
  return createDiagnostic(Diagnostics.InternalError, { detail: error instanceof Error ? error.message : String(error) }, undefined);
}
