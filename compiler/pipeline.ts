import path from "node:path";
import { createDiagnostic, CREDENTIAL_CODES, Diagnostics } from "./diagnostics/catalogue.js";
import { hasErrors, sortDiagnostics, type Diagnostic, type StageResult } from "./diagnostics/diagnostic.js";
import { openCacheReader, readCacheEntries } from "./discover/readCache.js";
import type { RecordPlaces } from "./discover/readManifest.js";
import { discoverProject, holdsOtherThan, listProjectFiles, readOutputManifestBytes, stampFiles, startOutputManifestRead, type DiscoveredProject, MAX_FILE_BYTES, MAX_MANIFEST_BYTES, readReferencedFiles, readSourceFile, type ProjectLayout, type SourceFile } from "./discover/discoverProject.js";
import { breakingDiagnostics, diffManifests, type ManifestDiff } from "./diff/diffManifests.js";
import { requiredVersion } from "./diff/changeRules.js";
import { compileStateWriter, decodeCompileState, describeCompile, encodeCompileState, fileInterface, recordsByFile, STATE_FOLDER, STATE_KEY, type CompileState } from "./manifest/compileState.js";
import { buildGraph, type AssetGraph } from "./graph/buildGraph.js";
import { linkProject, type LinkedProject } from "./link/linkProject.js";
import { buildManifest, type Manifest } from "./manifest/buildManifest.js";
import { encodeRecordIndex, MANIFEST_CACHE_FOLDER, openRecordCache, readCompleteIndex, RECORD_INDEX_KEY, RECORD_INDEX_PATH, recordPlace, spliceRecords, type IndexPayload, type RecordKeys, type RecordReplacement } from "./manifest/recordCache.js";
import type { DagPlan, ManifestAsset } from "./model/manifest.js";
import { MANIFEST_VERSION } from "./model/manifest.js";
import { isOdcsDocument } from "./model/odcs.js";
import { referencedPaths } from "./model/references.js";
import { CACHE_FOLDER, cacheContext, NO_CACHE_ENTRY, openParseCache, PARSE_CACHE_FOLDER, parseCacheKeys, parseCacheNotes, parseCacheWriter, type ParseCacheProblems } from "./parse/parseCache.js";
import { parseContracts } from "./parse/parseContracts.js";
import { parseDocument, type ParsedDocument } from "./parse/parseDocument.js";
import { planDags } from "./plan/planDags.js";
import { planFreshnessMonitor } from "./plan/planFreshnessMonitor.js";
import { renderContractYaml } from "./render/renderContractYaml.js";
import { encodeModuleIndex, MODULE_INDEX_KEY, moduleCacheWriter, moduleDigest, moduleKeys, openModuleCache, readModuleIndex, RENDER_CACHE_FOLDER, type IndexEntry as ModuleIndexEntry } from "./render/moduleCache.js";
import { assetRenderInputs, modulePath, renderDagModule, renderEachModule, usedAssets, type FileMap } from "./render/renderModules.js";
import { renderOdcs } from "./render/renderOdcs.js";
import { POOLS_FILE, renderPools } from "./render/renderPools.js";
import { mergeProposal, parseProposal, setContractVersion } from "./report/driftApply.js";
import { packageNameOf, scaffoldFiles } from "./report/initCommand.js";
import { nowNs, trustedStamp } from "./support/fileStamp.js";
import { sha256Hex } from "./support/hash.js";
import { suggest } from "./support/suggest.js";
import type { RenameCandidate } from "./support/renames.js";
import { readOdcsContract } from "./validate/readOdcs.js";
import { SCHEMA_FILES } from "./validate/schemas.js";
import { isStoredVerdict, restoreVerdict, storedVerdictOf, validateDocument, validateDocuments, type DocumentVerdict, type StoredVerdict } from "./validate/validateDocuments.js";
import { openCacheWrite, removeCacheEntry, writeCacheEntries } from "./write/writeCache.js";
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
    /** With `splice`, when the compile was a splice (ADR 0022): contract files that changed, and files compiled. */
    splice?: { changed: number; compiled: number };
  };
  /** How many DAGs and Assets the manifest holds, when the compile was a splice (`manifest` is then not in memory). */
  counts?: { dags: number; assets: number };
  /** With `subset`: the manifest's text, and the record cache's keys and places of each record in it. */
  subset?: { text: string; keys: RecordKeys; placed: ReadonlyArray<readonly number[]>; named: readonly string[] };
  /** With `subset`: the parse cache entries it read and could not use (their CA1950 is the caller's to report). */
  cacheProblems?: ParseCacheProblems;
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
  /**
   * With `cache` and `write: "write"` (the CLI's `compile`): when the compile state of the last
   * compile is there and few contract files changed, each keeping its interface, compile only
   * them and the files around them and splice their records into the last manifest (ADR 0022);
   * otherwise compile the whole project, and write the state for the next compile. The output is
   * the same either way.
   */
  splice?: boolean;
  /**
   * Internal (ADR 0022): compile these files in place of discover's, with the parse cache of
   * `cache`, keeping every entry of `keep`, and stop after the manifest stage (`subset` of the
   * result). The splice's compile of a neighbourhood.
   */
  subset?: { contracts: SourceFile[]; configs: SourceFile[]; keep: ReadonlySet<string> };
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
 * `render: false`). With `splice`, a warm compile of few changed files is first tried as a splice
 * of the last manifest (`spliceCompile`, ADR 0022). The previous manifest is parsed only when a stage needs it, and not when its
 * text is the new manifest's (ADR 0017).
 */
export function compileProject(layout: ProjectLayout, options: CompileOptions = {}): CompileResult {
  // Before any file is read: a file's stamp is kept only when the file is older (ADR 0017q, 0022).
  const startedAt = nowNs();
  const diagnostics: Diagnostic[] = [];
  // A warm compile of few changed files: only they and their neighbours are compiled (ADR 0022).
  const spliceNotes: Diagnostic[] = [];
  // Entries a splice not taken read and could not use: it has parsed their files again and written
  // new entries, so this compile finds them sound and must note them as its own (CA1950).
  const spliceProblems: ParseCacheProblems = new Map();
  if (options.splice && options.cache && options.write === "write" && !options.subset && !options.previousManifest && options.against === undefined && !options.diff && !options.overlay && !options.keepFiles && !options.reorder) {
    const spliced = spliceCompile(layout, startedAt);
    if ("result" in spliced) return spliced.result;
    spliceNotes.push(...spliced.notes);
    for (const [file, problem] of spliced.problems ?? []) spliceProblems.set(file, problem);
  }
  const sources = new Map<string, string>();
  // Entries are of this build of the parse and validate stages.
  let parseWriter: string | undefined;
  const writer = (): string => (parseWriter ??= parseCacheWriter(COMPILER_NAME, COMPILER_VERSION, { modules: ["parse/parseContracts", "validate/validateDocuments"], files: SCHEMA_FILES }));
  const discovered: StageResult<DiscoveredProject> = options.subset
    ? { value: { contractPaths: options.subset.contracts.map((f) => f.path), contracts: options.subset.contracts, configs: options.subset.configs }, diagnostics: [] }
    : discoverProject(layout, {
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
  diagnostics.push(...spliceNotes);

  // Each document is validated as soon as its parse arrives, while worker threads parse the rest;
  // a document from the incremental cache comes with its verdict (ADR 0017j), kept for the next
  // compile when it was just made.
  const verdicts = new Map<ParsedDocument, DocumentVerdict>();
  let reused = 0;
  const parseOptions = (config: boolean) => ({
    ...(options.workers !== undefined ? { workers: options.workers } : {}),
    onDocument: (d: ParsedDocument, stored?: unknown): StoredVerdict | typeof NO_CACHE_ENTRY | null | undefined => {
      const restored = stored !== undefined ? restoreVerdict(d, stored as StoredVerdict, config) : undefined;
      const verdict = restored ?? validateDocument(d, config);
      if (restored) reused++;
      verdicts.set(d, verdict);
      if (restored) return undefined;
      // A document that holds a credential is not copied into the cache (ADR 0027).
      if (verdict.diagnostics.some((x) => CREDENTIAL_CODES.has(x.code))) return NO_CACHE_ENTRY;
      return storedVerdictOf(d, verdict, config);
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
  const cached = parseCache && cacheWrite!.finish(options.subset ? options.subset.keep : new Set(parseCache.keys.values()));
  if (parseCache) {
    for (const [file, problem] of spliceProblems) if (!parseCache.problems.has(file)) parseCache.problems.set(file, problem);
    diagnostics.push(...parseCacheNotes(parseCache), ...cached!.diagnostics);
  }

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
    ? openRecordCache({ name: COMPILER_NAME, version: COMPILER_VERSION }, options.subset ? { found: new Map(), unreadable: new Map() } : readCacheEntries(layout.root, MANIFEST_CACHE_FOLDER, [RECORD_INDEX_KEY]), () => discovered.value.outputManifestBytes?.(), parseCache.keys)
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
  if (options.subset) {
    result.subset = { text: manifestText.text!, keys: records!.keys, placed: records!.placed(), named: named.map((r) => r.path) };
    if (parseCache) result.cacheProblems = parseCache.problems;
    result.diagnostics = sortDiagnostics(diagnostics);
    return result;
  }
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
  let stateWritten = false;
  let pendingState: CompileState | undefined;
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
    const pools = renderPools(linked.value.config);
    if (pools !== undefined) emit(`${layout.outDir}/${POOLS_FILE}`, pools);
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
          const digest = write.digestOf(manifestPath);
          diagnostics.push(...writeCacheEntries(layout.root, CACHE_FOLDER, MANIFEST_CACHE_FOLDER, new Map([[RECORD_INDEX_KEY, records.encode(digest)]]), new Set(), Diagnostics.RecordIndexNotWritten).diagnostics);
          // The compile state for the next compile's splice (ADR 0022): only of a compile that said
          // nothing of the project (a note of the cache is no finding), every record keyed.
          const keyed = records.keys.assets.every((k) => k !== undefined) && records.keys.dags.every((k) => k !== undefined);
          // (Not with the ODCS export, which a splice does not render.)
          if (options.splice && digest !== undefined && keyed && !exportsOdcs && !hasErrors(diagnostics)) {
            // Of the project's files only: not the cache's notes, nor the diff's findings against
            // the manifest before this one, nor the write's (each compile makes its own); a
            // finding of anything else (the previous manifest) leaves no state.
            const reported = sortDiagnostics(diagnostics.filter((d) => !CACHE_NOTES.has(d.code) && !/^CA[79]/.test(d.code)));
            const projectFiles = new Set([...discovered.value.contractPaths, ...discovered.value.configs.map((f) => f.path)]);
            const readers = linked.value.contracts.map((c) => ({ path: c.located.source.file.path, assets: [...c.upstreams.map((u) => u.asset), ...(c.sourceAsset ? [c.sourceAsset] : [])] }));
            if (reported.every((d) => d.location && projectFiles.has(d.location.file))) {
              pendingState = describeCompile(manifest, digest, cacheContext(discovered.value.configs), discovered.value.contractPaths, parseCache!.keys, producerFiles.value, reported, (paths) => stampFiles(layout.root, paths, startedAt).stamps, readers);
            }
          }
        }
      }
    }
    if (modules) {
      const indexed = writeCacheEntries(layout.root, CACHE_FOLDER, RENDER_CACHE_FOLDER, new Map([[MODULE_INDEX_KEY, modules.encode()]]), new Set(), Diagnostics.ModuleIndexNotWritten).diagnostics;
      diagnostics.push(...indexed);
      moduleCounts = modules.counts;
      // The state last, once both indexes it relies on are written (ADR 0022).
      if (pendingState && indexed.length === 0 && !diagnostics.some((d) => d.code === "CA9952")) {
        const written = writeCacheEntries(layout.root, CACHE_FOLDER, STATE_FOLDER, new Map([[STATE_KEY, encodeCompileState(pendingState, compileStateWriter(COMPILER_NAME, COMPILER_VERSION))]]), new Set(), Diagnostics.CompileStateNotWritten).diagnostics;
        diagnostics.push(...written);
        stateWritten = written.length === 0;
      }
    }
  }
  // A compile that left no state of its own leaves none of an earlier one: the next compile is
  // a whole one (ADR 0022).
  if (options.splice && cacheWrite && options.write === "write" && !stateWritten) {
    diagnostics.push(...removeCacheEntry(layout.root, STATE_FOLDER, STATE_KEY, Diagnostics.CompileStateNotWritten));
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
 *
 * The contract's `version` is set here, not by the runtime: the merged compile is diffed against
 * the state the next `compile` compares with (the output folder's manifest; for a project never
 * compiled, the project before the merge), and when a version rule of the diff asks for a bump
 * (a removed or narrowed property: `VERSION_BREAKING_WITHOUT_MAJOR`; one added:
 * `VERSION_ADDITIVE_WITHOUT_MINOR`), the version it asks for (`requiredVersion`, ADR 0015) is
 * written with `setContractVersion` and the project compiled again. So what `drift apply` writes
 * is what `compile` accepts. A version already bumped enough is left alone.
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
  // The merge is judged against the state the next compile compares with: the output folder's
  // manifest, else (a project never compiled) the project as it was before the merge.
  const since = before.previousManifest === undefined && before.manifest ? { previousManifest: before.manifest } : {};
  let text = merged.text;
  let after = compileProject(layout, { overlay: new Map([[relative, text]]), ...since });
  // The version the change needs, from the diff's own version rules (ADR 0015): a removed or
  // narrowed column the next major, a column added the next minor.
  const versionRule = after.diff?.changes.find((c) => c.contract === parsed.proposal!.id && requiredVersion(c) !== undefined);
  if (versionRule) {
    const version = requiredVersion(versionRule)!;
    const set = setContractVersion(text, version);
    if (set.problem) return { ...result, problem: `${relative}: ${set.problem}`, problemKind: "refused" };
    text = set.text;
    result.changes = [...result.changes, `version ${String(versionRule.after)} -> ${version} (${versionRule.rule === "VERSION_BREAKING_WITHOUT_MAJOR" ? "a breaking change needs a major version" : "an additive change wants a minor version"}, ADR 0015)`];
    after = compileProject(layout, { overlay: new Map([[relative, text]]), ...since });
  }
  result.diagnostics = after.diagnostics;
  result.sources = after.sources;
  result.contractCount = after.project?.contracts.length ?? 0;
  result.assetCount = after.project?.assets.size ?? 0;
  if (hasErrors(after.diagnostics)) return result;
  const written = writeOutputs({ ...layout, outDir: layout.contractsDir }, new Map([[relative, text]]), { check: false, owns: [] });
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

/** The notes of the incremental cache: a compile that said nothing else leaves a compile state (ADR 0022). */
const CACHE_NOTES: ReadonlySet<string> = new Set(["CA1950", "CA1951", "CA1952", "CA1953", "CA9950", "CA9951", "CA9952", "CA9953"]);

/**
 * Whether `diagnostic` is a note of the incremental cache (an entry or index ignored, or not
 * written: CA1950–CA1953, CA9950–CA9953). Every command that compiles with the cache reports them,
 * also one that prints nothing else of a clean compile (`graph`, `explain`).
 */
export function isCacheNote(diagnostic: Diagnostic): boolean {
  return CACHE_NOTES.has(diagnostic.code);
}
/** A splice compiles at most this many changed contract files (ADR 0022), */
export const MAX_SPLICE_CHANGED = 32;
/** and at most this many files with their neighbours; beyond, the whole project is compiled. */
export const MAX_SPLICE_COMPILED = 512;

/**
 * The splice of ADR 0022: a warm `compile` whose contract files mostly have the keys of the last
 * compile state compiles only the changed files K, the files K reads Assets from, the files
 * reading K's Assets (C) and the files C reads from, then replaces K's records in the last
 * manifest by the new ones and renders only the DAG modules of K and C; every other module is
 * checked on the disk against the render index, as a whole compile checks it. Taken only when
 * nothing else can differ from a whole compile's output and report: the same contract files and
 * orchestration config, every file the documents name holding the same text, the manifest and the
 * indexes the state describes (`readSpliceBase`); no diagnostic on K or C, K's interface
 * (`fileInterface`) unchanged, C's records and every other record the modules read unchanged (by
 * key), every change of K's records safe and metadata-only to the diff (`compileNeighbourhood`);
 * and every other module on the disk as indexed (`writeSplice`). Otherwise gives the notes to
 * report (CA1953) and the whole project is compiled.
 */
function spliceCompile(layout: ProjectLayout, since: bigint): { result: CompileResult } | NoSplice {
  const read = readSpliceBase(layout, since);
  if (!("base" in read)) return read;
  const problems: ParseCacheProblems = new Map();
  const edit = compileNeighbourhood(layout, read.base, problems);
  const result = edit && writeSplice(layout, read.base, edit, since);
  return result ? { result } : { notes: [], problems };
}

/**
 * A splice not taken: the notes to report (CA1953 of a damaged or foreign state), often none, and
 * the parse cache entries the neighbourhood's compile read and could not use (for CA1950).
 */
type NoSplice = { notes: Diagnostic[]; problems?: ParseCacheProblems };
const noSplice = (): NoSplice => ({ notes: [] });

/** What a splice starts from: the last compile state, and the project's files found as it describes them (ADR 0022). */
interface SpliceBase {
  state: CompileState;
  configFiles: SourceFile[];
  context: string;
  /** Each contract file's parse cache key now, by index into `state.paths`. */
  keys: string[];
  /** The contract files' stamps now (`stampFiles`), and those of the files the documents name. */
  stamps: BigInt64Array;
  namedStamps: BigInt64Array;
  /** The files the documents name (`state.referenced`'s paths). */
  namedPaths: string[];
  /** K: the contract files whose bytes changed, by index into `state.paths`. */
  changed: Set<number>;
  /** The output folder's manifest, whose sha256 is the state's. */
  previous: { bytes: Buffer; sha256: string };
  /** The record index (ADR 0017p) and the render index (ADR 0017n) of that manifest and its modules. */
  index: IndexPayload;
  modules: Map<string, ModuleIndexEntry>;
  /** Reads contract file `i` once (later calls give the same file), or undefined (a problem: no splice). */
  readAt: (i: number) => SourceFile | undefined;
}

/**
 * The compile state and every check of the project's files against it that needs no compile: the
 * same contract files and config (by name, then by the config's cache context), at most
 * {@link MAX_SPLICE_CHANGED} contract files whose bytes changed (only files whose `lstat` stamp
 * changed are read), every named file holding the text the state hashed, and the manifest and the
 * two indexes the state describes.
 */
function readSpliceBase(layout: ProjectLayout, since: bigint): { base: SpliceBase } | NoSplice {
  const compiler = { name: COMPILER_NAME, version: COMPILER_VERSION };
  const stateRead = decodeCompileState(readCacheEntries(layout.root, STATE_FOLDER, [STATE_KEY]), compileStateWriter(COMPILER_NAME, COMPILER_VERSION));
  if (!stateRead) return noSplice();
  if ("note" in stateRead) return { notes: [stateRead.note] };
  const state = stateRead.state;
  const problems: Diagnostic[] = [];
  const listed = listProjectFiles(layout, problems);
  if (problems.length > 0 || listed.configPaths.length === 0 || listed.contractPaths.length === 0 || listed.contractPaths.length !== state.paths.length || listed.contractPaths.some((p, i) => p !== state.paths[i])) return noSplice();
  const configs = listed.configPaths.map((p) => readSourceFile(layout.root, p, problems));
  if (problems.length > 0 || configs.some((f) => f === undefined)) return noSplice();
  const configFiles = configs as SourceFile[];
  const context = cacheContext(configFiles);
  if (context !== state.context) return noSplice();
  // The contract files whose stamp changed are read; those whose bytes changed are K.
  const stamped = stampFiles(layout.root, state.paths, since, state.stamps);
  const files = new Map<number, SourceFile>();
  const readAt = (i: number): SourceFile | undefined => {
    let f = files.get(i);
    if (!f) {
      f = readSourceFile(layout.root, state.paths[i]!, problems);
      if (f) files.set(i, f);
    }
    return f;
  };
  const keys = [...state.keys];
  for (const i of stamped.changed) {
    const f = readAt(i);
    if (!f) return noSplice();
    keys[i] = parseCacheKeys([f], context).get(f.path)!;
  }
  const changed = stamped.changed.filter((i) => keys[i] !== state.keys[i]);
  if (changed.length > MAX_SPLICE_CHANGED) return noSplice();
  // Read and hashed in a thread while the named files are checked (ADR 0017w).
  const manifestAhead = startOutputManifestRead(layout);
  // Every file the documents name holds the text the state was made of.
  const namedPaths = state.referenced.map(([p]) => p);
  const namedStamped = stampFiles(layout.root, namedPaths, since, state.referencedStamps);
  const named = readReferencedFiles(layout.root, namedStamped.changed.map((i) => namedPaths[i]!), MAX_MANIFEST_BYTES);
  const namedChanged = namedStamped.changed.some((i) => {
    const text = named.value.get(namedPaths[i]!);
    return text === undefined || sha256Hex(text) !== state.referenced[i]![1];
  });
  if (named.diagnostics.length > 0 || namedChanged) return noSplice();
  // The manifest and the indexes the state describes.
  const ahead = manifestAhead?.take();
  const previousBytes = ahead && "bytes" in ahead ? ahead.bytes : readOutputManifestBytes(layout);
  const previous = previousBytes && { bytes: previousBytes, sha256: ahead && "sha256" in ahead ? ahead.sha256 : sha256Hex(previousBytes) };
  const index = readCompleteIndex(compiler, readCacheEntries(layout.root, MANIFEST_CACHE_FOLDER, [RECORD_INDEX_KEY]));
  const modules = readModuleIndex(compiler, readCacheEntries(layout.root, RENDER_CACHE_FOLDER, [MODULE_INDEX_KEY]));
  if (!previous || !index || !modules || index.digest !== state.manifest || previous.sha256 !== state.manifest) return noSplice();
  if (index.counts[0] !== state.counts.assets || index.counts[1] !== state.counts.dags) return noSplice();
  return { base: { state, configFiles, context, keys, stamps: stamped.stamps, namedStamps: namedStamped.stamps, namedPaths, changed: new Set(changed), previous, index, modules, readAt } };
}

/** What the neighbourhood's compile gives the splice's write. */
interface SpliceEdit {
  /** The contract files compiled (K, C and what they read from), by index into `state.paths`, in order. */
  compiled: number[];
  /** K's records, in place of the last manifest's. */
  replaced: RecordReplacement[];
  /** The DAG modules of K and C, by project-relative path, with their render index keys. */
  rerendered: Map<string, { text: string; key: Buffer }>;
  /** What a whole compile would report: the state's findings, those of K and C made anew. */
  reported: Diagnostic[];
  /** The cache notes of the neighbourhood's compile (a damaged entry it read: CA1950), reported by the splice but never kept in the state. */
  notes: Diagnostic[];
}

/**
 * Compiles K with its neighbourhood (`compileProject` with `subset`) and takes from it K's
 * records and the modules of K and C, when a whole compile could not give other records, modules
 * or findings; undefined when it could (the whole project is then compiled). With no K, nothing
 * is compiled: the state's findings and no record or module. Every parse cache entry the
 * neighbourhood's compile read and could not use goes into `problems` (taken or not, the compile
 * reports CA1950 for it: the splice from the neighbourhood's notes, a whole compile from these).
 */
function compileNeighbourhood(layout: ProjectLayout, base: SpliceBase, problems: ParseCacheProblems): SpliceEdit | undefined {
  const { state, changed: K, index } = base;
  if (K.size === 0) return { compiled: [], replaced: [], rerendered: new Map(), reported: state.diagnostics, notes: [] };
  const consumers = new Set<number>();
  state.reads.forEach((from, i) => {
    if (!K.has(i) && from.some((f) => K.has(f))) consumers.add(i);
  });
  const watchedFiles = [...K, ...consumers];
  const compiledSet = new Set<number>(watchedFiles);
  for (const i of watchedFiles) for (const f of state.reads[i]!) compiledSet.add(f);
  if (compiledSet.size > MAX_SPLICE_COMPILED) return undefined;
  const compiled = [...compiledSet].sort((a, b) => a - b);
  const subFiles: SourceFile[] = [];
  for (const i of compiled) {
    const f = base.readAt(i);
    if (!f) return undefined;
    subFiles.push(f);
  }
  const keep = new Set([...base.keys, ...parseCacheKeys(base.configFiles, base.context).values()]);
  const sub = compileProject(layout, { cache: true, workers: 0, subset: { contracts: subFiles, configs: base.configFiles, keep } });
  for (const [file, problem] of sub.cacheProblems ?? []) problems.set(file, problem);
  const manifest = sub.manifest;
  const subset = sub.subset;
  if (!manifest || !subset) return undefined;
  // Every file the neighbourhood's documents name is one the state tracks (a file newly named is
  // not: the whole project is compiled, and its state tracks it).
  const tracked = new Set(base.namedPaths);
  if (subset.named.some((p) => !tracked.has(p))) return undefined;
  // What the whole compile reported of K and C is what the neighbourhood's reports (no error,
  // nothing of the whole project); every other file's findings are the state's, none pointing into K.
  const watched = new Set(watchedFiles.map((i) => state.paths[i]!));
  if (sub.diagnostics.some((d) => !d.location || (watched.has(d.location.file) && d.severity === "error"))) return undefined;
  const changedPaths = new Set([...K].map((i) => state.paths[i]!));
  const reported = state.diagnostics.filter((d) => !d.location || !watched.has(d.location.file));
  if (reported.some((d) => d.related.some((r) => changedPaths.has(r.location.file)))) return undefined;
  reported.push(...sub.diagnostics.filter((d) => watched.has(d.location!.file) && !CACHE_NOTES.has(d.code)));
  // An entry the neighbourhood read and could not use is noted as a whole compile notes it, whichever file it is of.
  const notes = sub.diagnostics.filter((d) => CACHE_NOTES.has(d.code));
  const placed = placeNeighbourhoodRecords(base, consumers, compiled, manifest, subset);
  if (!placed) return undefined;
  const { replaced, byFile } = placed;
  // Every change of K's records is safe and metadata-only, as the diff of the whole would say.
  const places = replaced.map((r) => recordPlace(index, r.array, r.index));
  if (places.some((p) => p < 0)) return undefined;
  const before = places.map((p) => JSON.parse(base.previous.bytes.toString("latin1", index.spans[2 * p]!, index.spans[2 * p + 1]!)) as unknown);
  const after = replaced.map((r) => JSON.parse(Buffer.from(r.text).toString("latin1")) as unknown);
  const consumerDags = [...consumers].flatMap((i) => (byFile.get(state.paths[i]!)?.dags ?? []).map((x) => manifest.dags[x]!));
  const side = (values: unknown[]): Manifest => ({
    ...emptyManifest(),
    assets: values.filter((_, j) => replaced[j]!.array === 0) as ManifestAsset[],
    dags: [...(values.filter((_, j) => replaced[j]!.array === 1) as DagPlan[]), ...consumerDags],
  });
  if (diffManifests(side(before), side(after)).changes.some((c) => c.severity !== "safe" || c.category !== "metadata-only")) return undefined;
  // The freshness monitor's module reads its Assets' render inputs: those of K's must not change.
  const monitored = new Set((manifest.freshness_monitor?.assets ?? []).map((a) => a.name));
  for (const [j, r] of replaced.entries()) {
    if (r.array !== 0) continue;
    const a = after[j] as ManifestAsset;
    if (monitored.has(a.name) && JSON.stringify(assetRenderInputs(a)) !== JSON.stringify(assetRenderInputs(before[j] as ManifestAsset))) return undefined;
  }
  // The modules of K and C, rendered from the neighbourhood's manifest, keyed as a whole compile keys them.
  const keyOf = moduleKeys(manifest, layout.outDir, moduleCacheWriter(COMPILER_NAME, COMPILER_VERSION), subset.keys);
  const assets = new Map(manifest.assets.map((a) => [a.name, a]));
  const rerendered = new Map<string, { text: string; key: Buffer }>();
  for (const d of placed.dagsRendered) rerendered.set(modulePath(layout.outDir, manifest.dags[d]!.dag_id), { text: renderDagModule(manifest.dags[d]!, assets), key: keyOf(d) });
  return { compiled, replaced, rerendered, reported, notes };
}

/**
 * Each record of the neighbourhood's manifest at its place in the whole one, by file: K's records
 * as replacements (K's interface unchanged, every record keyed), C's records and every other
 * record the modules of K and C read holding the whole manifest's keys; undefined when a file's
 * records are not the ones the state placed, or a key differs.
 */
function placeNeighbourhoodRecords(
  base: SpliceBase,
  consumers: ReadonlySet<number>,
  compiled: readonly number[],
  manifest: Manifest,
  subset: NonNullable<CompileResult["subset"]>,
): { replaced: RecordReplacement[]; byFile: ReturnType<typeof recordsByFile>; dagsRendered: number[] } | undefined {
  const { state, changed: K, index } = base;
  // Whether `key` is the whole manifest's key of record `i` of `array` (never when either has none).
  const holdsKey = (key: string | undefined, array: number, i: number): boolean => key !== undefined && key === index.keys[recordPlace(index, array, i)];
  const texts = Buffer.from(subset.text, "latin1");
  const byFile = recordsByFile(manifest);
  const empty = { assets: [], dags: [] };
  const replaced: RecordReplacement[] = [];
  const fullAsset = new Map<number, number>();
  for (const i of compiled) {
    const mine = byFile.get(state.paths[i]!) ?? empty;
    const pairs = state.records[i]!;
    const assets = pairs.filter((_, j) => j % 2 === 1 && pairs[j - 1] === 0);
    const dags = pairs.filter((_, j) => j % 2 === 1 && pairs[j - 1] === 1);
    if (mine.assets.length !== assets.length || ((K.has(i) || consumers.has(i)) && mine.dags.length !== dags.length)) return undefined;
    mine.assets.forEach((x, j) => fullAsset.set(x, assets[j]!));
    if (K.has(i)) {
      if (fileInterface(manifest, mine) !== state.interfaces[i]) return undefined;
      for (const [array, mineOf, fullOf] of [[0, mine.assets, assets], [1, mine.dags, dags]] as const) {
        for (const [j, at] of mineOf.entries()) {
          const key = (array === 0 ? subset.keys.assets : subset.keys.dags)[at];
          if (key === undefined) return undefined;
          const span = subset.placed[array]!;
          replaced.push({ array, index: fullOf[j]!, key, text: texts.subarray(span[2 * at]!, span[2 * at + 1]!) });
        }
      }
    } else if (consumers.has(i)) {
      // A file reading K's Assets: its records are the ones the whole manifest holds.
      if (mine.dags.some((x, j) => !holdsKey(subset.keys.dags[x], 1, dags[j]!)) || mine.assets.some((x, j) => !holdsKey(subset.keys.assets[x], 0, assets[j]!))) return undefined;
    }
  }
  // What the modules of K and C read of the other files' Assets is what the whole manifest holds.
  const assetsOfK = new Set([...K].flatMap((i) => (byFile.get(state.paths[i]!) ?? empty).assets));
  const at = new Map(manifest.assets.map((a, i) => [a.name, i]));
  const dagsRendered = [...K, ...consumers].flatMap((i) => (byFile.get(state.paths[i]!) ?? empty).dags);
  for (const d of dagsRendered) {
    for (const name of usedAssets(manifest.dags[d]!)) {
      const x = at.get(name);
      if (x === undefined || assetsOfK.has(x)) continue;
      const full = fullAsset.get(x);
      if (full === undefined || !holdsKey(subset.keys.assets[x], 0, full)) return undefined;
    }
  }
  return { replaced, byFile, dagsRendered };
}

/**
 * The write of a splice, as a whole compile's: the last manifest with K's records replaced
 * (`spliceRecords`, as pieces of bytes), the modules rendered again, every other module found on
 * the disk as the render index says; then both indexes and, last, the next compile state (none
 * when an index could not be written, or the write failed). Undefined, with nothing written,
 * when a module is not as indexed (the whole project is then compiled).
 */
function writeSplice(layout: ProjectLayout, base: SpliceBase, edit: SpliceEdit, since: bigint): CompileResult | undefined {
  const { state, index, modules } = base;
  const { replaced, rerendered, reported } = edit;
  const spliced = spliceRecords(index, base.previous.bytes, replaced);
  if (!spliced || [...rerendered.keys()].some((relative) => !modules.has(relative))) return undefined;
  const write = openWrite(layout, { check: false, ignore: ["odcs/**"] });
  const manifestPath = `${layout.outDir}/manifest.json`;
  const next = new Map<string, ModuleIndexEntry>();
  for (const [relative, entry] of modules) {
    const fresh = rerendered.get(relative);
    if (fresh) {
      next.set(relative, { key: fresh.key, text: moduleDigest(fresh.text), stamp: undefined });
      continue;
    }
    const stamp = write.holdsDigest(relative, entry.text, entry.stamp);
    if (!stamp) {
      write.discard();
      return undefined;
    }
    next.set(relative, { key: entry.key, text: entry.text, stamp: trustedStamp(stamp, since) });
  }
  // Unchanged, the manifest is the file read, whose sha256 is the state's (ADR 0017g).
  if (replaced.length === 0) write.holds(manifestPath);
  else write.addBytes(manifestPath, spliced.pieces);
  for (const [relative, fresh] of rerendered) write.add(relative, fresh.text);
  // The pools depend on the config alone, which a splice has as the last compile had it.
  write.holdsIfPresent(`${layout.outDir}/${POOLS_FILE}`);
  const written = write.finish();
  const diagnostics = [...reported, ...edit.notes, ...written.diagnostics];
  const sources = spliceSources(layout, base, edit);
  const digest = replaced.length === 0 ? state.manifest : write.digestOf(manifestPath);
  if (!hasErrors(written.diagnostics) && digest !== undefined) {
    const compiler = { name: COMPILER_NAME, version: COMPILER_VERSION };
    const entries = (folder: string, key: string, bytes: Uint8Array, note: (typeof Diagnostics)["RecordIndexNotWritten"]): Diagnostic[] => writeCacheEntries(layout.root, CACHE_FOLDER, folder, new Map([[key, bytes]]), new Set(), note).diagnostics;
    const indexes = [
      ...entries(MANIFEST_CACHE_FOLDER, RECORD_INDEX_KEY, encodeRecordIndex(compiler, { ...spliced.index, digest }), Diagnostics.RecordIndexNotWritten),
      ...entries(RENDER_CACHE_FOLDER, MODULE_INDEX_KEY, encodeModuleIndex(moduleCacheWriter(COMPILER_NAME, COMPILER_VERSION), next), Diagnostics.ModuleIndexNotWritten),
    ];
    diagnostics.push(...indexes);
    // The state last, once both indexes it relies on are written; else none (ADR 0022).
    const nextState: CompileState = { ...state, manifest: digest, keys: base.keys, stamps: base.stamps, referencedStamps: base.namedStamps, diagnostics: sortDiagnostics(reported) };
    if (indexes.length === 0) diagnostics.push(...entries(STATE_FOLDER, STATE_KEY, encodeCompileState(nextState, compileStateWriter(COMPILER_NAME, COMPILER_VERSION)), Diagnostics.CompileStateNotWritten));
    else diagnostics.push(...removeCacheEntry(layout.root, STATE_FOLDER, STATE_KEY, Diagnostics.CompileStateNotWritten));
  } else diagnostics.push(...removeCacheEntry(layout.root, STATE_FOLDER, STATE_KEY, Diagnostics.CompileStateNotWritten));
  return {
    diagnostics: sortDiagnostics(diagnostics),
    sources,
    writeScope: { ignore: ["odcs/**"] },
    written: written.value,
    counts: { ...state.counts },
    cache: {
      hits: 0,
      parsed: 0,
      verdicts: 0,
      written: 0,
      removed: 0,
      modules: { unchanged: modules.size - rerendered.size, rendered: rerendered.size },
      records: { reused: state.counts.assets + state.counts.dags - replaced.length, made: replaced.length },
      splice: { changed: base.changed.size, compiled: edit.compiled.length },
    },
  };
}

/** The text of the config files, the files compiled, and each file a finding reported points at (for its excerpt). */
function spliceSources(layout: ProjectLayout, base: SpliceBase, edit: SpliceEdit): Map<string, string> {
  const sources = new Map<string, string>(base.configFiles.map((f) => [f.path, f.text]));
  for (const i of edit.compiled) {
    const f = base.readAt(i)!;
    sources.set(f.path, f.text);
  }
  const pathIndex = new Map(base.state.paths.map((p, i) => [p, i]));
  for (const d of [...edit.reported, ...edit.notes]) {
    for (const file of [d.location?.file, ...d.related.map((r) => r.location.file)]) {
      if (file === undefined || sources.has(file)) continue;
      const at = pathIndex.get(file);
      const f = at !== undefined ? base.readAt(at) : readSourceFile(layout.root, file, []);
      if (f) sources.set(f.path, f.text);
    }
  }
  return sources;
}
