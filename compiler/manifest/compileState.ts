import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic } from "../diagnostics/diagnostic.js";
import type { CacheEntriesRead } from "../discover/readCache.js";
import type { DagPlan, Manifest, ManifestAsset } from "../model/manifest.js";
import { CACHE_FOLDER, cacheWriter } from "../parse/parseCache.js";
import { decodeEntryRead, encodeCacheEntry } from "../support/cacheEntry.js";
import { STAMP_FIELDS } from "../support/fileStamp.js";
import { sha256Hex } from "../support/hash.js";
import { SCHEMA_FILES } from "../validate/schemas.js";
import { KEYED_ARRAYS } from "./recordCache.js";

/**
 * The compile state (ADR 0022): what a warm compile needs to recompile only the contract files
 * that changed and splice their records into the last manifest. Written by a compile that wrote
 * the output folder with the cache and reported nothing but cache notes; read by the next one.
 * Per contract file (discover's order): the parse cache's key of its bytes, the digest of its
 * interface ({@link fileInterfaces}), the files it reads Assets from, and where its records lie
 * in the manifest (array and index). Beside them: the cache context (the orchestration config),
 * the sha256 of the manifest the state describes, and the sha256 of every file the documents
 * name (SQL producers, dbt manifests). Pure: discover reads the entry, write writes it.
 */

/** The compile state's folder of the cache, project-relative. */
export const STATE_FOLDER = `${CACHE_FOLDER}/compile`;
/** The entry's name in it (`state.bin`), and the key its header is written under. */
export const STATE_KEY = "state";
/** The entry, project-relative: where its note points. */
export const STATE_PATH = `${STATE_FOLDER}/${STATE_KEY}.bin`;

/**
 * The state's writer, `<name> <version> (compile <fingerprint>)`, the fingerprint over the whole
 * pipeline's import closure, the schemas and the templates: every input of a compile's output
 * beside the project's files, so a state of another build is foreign.
 */
export function compileStateWriter(name: string, version: string): string {
  return cacheWriter(name, version, { modules: ["pipeline"], files: [...SCHEMA_FILES, "templates/dag_module.py.hbs", "templates/freshness_monitor.py.hbs"] }, "compile");
}

/** The state's payload. Arrays by file are parallel to `paths`. */
export interface CompileState {
  /** The parse cache's context (`cacheContext` of the orchestration config files). */
  context: string;
  /** sha256 (hex) of the manifest file's bytes the state describes. */
  manifest: string;
  /** How many DAGs and Assets that manifest holds (the compile's summary line). */
  counts: { dags: number; assets: number };
  /** Every contract file, project-relative, in discover's order. */
  paths: string[];
  /** The parse cache's key of each file's bytes (`parseCacheKeys`). */
  keys: string[];
  /** Each file's `lstat` stamp when its bytes were read (`support/fileStamp.ts`, `STAMP_FIELDS` per file; none when racily new, ADR 0017q). */
  stamps: BigInt64Array;
  /** {@link fileInterfaces} of each file. */
  interfaces: string[];
  /** Per file, the files (indexes into `paths`) that produce or declare an Asset it reads (its upstreams and source, whatever its status), sorted. */
  reads: number[][];
  /** Per file, its records: pairs (array of {@link KEYED_ARRAYS}, index in it), in the manifest's order. */
  records: number[][];
  /** Every file the documents name, project-relative, sorted, with the sha256 (hex) of the text read. */
  referenced: Array<[string, string]>;
  /** The `lstat` stamp of each of `referenced`, as `stamps`. */
  referencedStamps: BigInt64Array;
  /** What that compile reported of the project (warnings and infos: a compile with an error leaves no state), sorted; no note of the cache. */
  diagnostics: Diagnostic[];
}

/** The decoded state, or the CA1953 note saying why the entry found cannot be used; undefined when there is none. */
export function decodeCompileState(read: CacheEntriesRead, writer: string): { state: CompileState } | { note: Diagnostic } | undefined {
  const decoded = decodeEntryRead(read, { key: STATE_KEY, compiler: writer });
  if (decoded === undefined) return undefined;
  const ignored = (problem: string, detail: string): { note: Diagnostic } => ({ note: createDiagnostic(Diagnostics.CompileStateIgnored, { problem, detail }, { file: STATE_PATH, line: 1, column: 1 }) });
  if ("problem" in decoded) return ignored(decoded.problem, decoded.detail);
  const s = decoded.value as Partial<CompileState> | null;
  const n = Array.isArray(s?.paths) ? s!.paths.length : -1;
  const strings = (x: unknown, length = n): boolean => Array.isArray(x) && x.length === length && x.every((v) => typeof v === "string");
  const indexes = (x: unknown, bound: number): boolean => Array.isArray(x) && x.length === n && x.every((xs) => Array.isArray(xs) && xs.every((v) => Number.isSafeInteger(v) && v >= 0 && v < bound));
  const shaped =
    typeof s === "object" &&
    s !== null &&
    typeof s.context === "string" &&
    typeof s.manifest === "string" &&
    typeof s.counts?.dags === "number" &&
    typeof s.counts.assets === "number" &&
    strings(s.paths) &&
    strings(s.keys) &&
    s.stamps instanceof BigInt64Array &&
    s.stamps.length === n * STAMP_FIELDS &&
    s.referencedStamps instanceof BigInt64Array &&
    strings(s.interfaces) &&
    indexes(s.reads, n) &&
    indexes(s.records, Math.max(s.counts.dags, s.counts.assets, KEYED_ARRAYS.length)) &&
    s.records!.every((xs) => xs.length % 2 === 0) &&
    Array.isArray(s.referenced) &&
    s.referencedStamps.length === s.referenced.length * STAMP_FIELDS &&
    s.referenced.every((r) => Array.isArray(r) && r.length === 2 && typeof r[0] === "string" && typeof r[1] === "string") &&
    Array.isArray(s.diagnostics) &&
    s.diagnostics.every((d) => typeof d?.code === "string" && typeof d.message === "string" && (d.severity === "warning" || d.severity === "info") && Array.isArray(d.related) && (d.location === undefined || typeof d.location.file === "string"));
  return shaped ? { state: s as CompileState } : ignored("damaged", "it holds no compile state");
}

/** The state's entry bytes. */
export function encodeCompileState(state: CompileState, writer: string): Uint8Array {
  return encodeCacheEntry(STATE_KEY, writer, state);
}

/** A file's records of a manifest, by array: indexes of `assets` and of `dags`. */
export interface FileRecords {
  assets: number[];
  dags: number[];
}

/**
 * The records of each contract file of `manifest`, by project-relative path: an Asset record is
 * its declaring file's (`contract`: the producer's, or for an external Asset the file declaring
 * it), a DAG record its contract's. In the manifest's order.
 */
export function recordsByFile(manifest: Pick<Manifest, "assets" | "dags">): Map<string, FileRecords> {
  const out = new Map<string, FileRecords>();
  const of = (file: string): FileRecords => {
    let r = out.get(file);
    if (!r) out.set(file, (r = { assets: [], dags: [] }));
    return r;
  };
  manifest.assets.forEach((a, i) => of(a.contract).assets.push(i));
  manifest.dags.forEach((d, i) => of(d.contract).dags.push(i));
  return out;
}

/**
 * What of a file's records anything beyond the file and the DAGs reading its Assets sees
 * (ADR 0022): of each Asset record its identity (name, URIs, group, whether external, status,
 * producer, declaring file, renames, sample data); of each DAG record its id, file, status,
 * inlets, outlets, schedule, deadline and its datasets' lineage identities (`physical`, landing); the freshness monitor's entries of its Assets; and the
 * graph edges its DAGs make. The rest (descriptions, owner, versions, schema, quality, tasks,
 * runtime) is read only by the file's own DAG, and by the DAGs reading its Assets, which a
 * splice compiles again. sha256 (hex) of that view's JSON text.
 */
export function fileInterface(manifest: Pick<Manifest, "assets" | "dags" | "edges" | "freshness_monitor">, records: FileRecords, edgesVia?: ReadonlyMap<string, unknown[]>): string {
  const assets = records.assets.map((i) => assetInterface(manifest.assets[i]!));
  const dags = records.dags.map((i) => dagInterface(manifest.dags[i]!));
  const names = new Set(records.assets.map((i) => manifest.assets[i]!.name));
  const watched = (manifest.freshness_monitor?.assets ?? []).filter((a) => names.has(a.name));
  const via = edgesVia ?? edgesByVia(manifest.edges);
  const edges = records.dags.flatMap((i) => via.get(manifest.dags[i]!.dag_id) ?? []);
  return sha256Hex(JSON.stringify([assets, dags, watched, edges]));
}

/** The graph's edges by the DAG that makes them (`via`), in the manifest's order. */
export function edgesByVia(edges: Manifest["edges"]): Map<string, unknown[]> {
  const out = new Map<string, unknown[]>();
  for (const e of edges) {
    const list = out.get(e.via);
    if (list) list.push(e);
    else out.set(e.via, [e]);
  }
  return out;
}

function assetInterface(a: ManifestAsset): unknown {
  return [a.name, a.uri, a.airflow_uri ?? null, a.group, a.external, a.status, a.producer, a.contract, a.renamed_from, a.sample_data ?? null, a.extra.freshness ?? null];
}

function dagInterface(d: DagPlan): unknown {
  // The lineage identities the datasets declare (`physical`, an extract's landing): UniqueLineageIdentityRule compares them across files.
  const identities = [d.runtime.datasets.map((x) => x.physical ?? null), "landing" in d.runtime ? d.runtime.landing.uri : null];
  return [d.dag_id, d.contract, d.status, d.inlets, d.outlets, d.schedule, d.deadline ?? null, identities];
}

/**
 * The state of a compile that wrote `manifest` (its file's sha256 `digest`): `paths` and `keys`
 * are discover's contract files and their parse cache keys, `referenced` the files the documents
 * named with their texts, `diagnostics` what it reported (no error, no note of the cache), `stamp`
 * discover's `stampFiles` of paths (taken now: after the files were read), `readers` each contract
 * file's upstream and source Assets.
 * Undefined when a file has no key.
 */
export function describeCompile(
  manifest: Manifest,
  digest: string,
  context: string,
  paths: readonly string[],
  keys: ReadonlyMap<string, string>,
  referenced: ReadonlyMap<string, string>,
  diagnostics: readonly Diagnostic[],
  stamp: (paths: readonly string[]) => BigInt64Array,
  readers: ReadonlyArray<{ path: string; assets: readonly string[] }>,
): CompileState | undefined {
  const at = new Map(paths.map((p, i) => [p, i]));
  const byFile = recordsByFile(manifest);
  const via = edgesByVia(manifest.edges);
  const assetFile = new Map(manifest.assets.map((a) => [a.name, at.get(a.contract)]));
  const reads: number[][] = paths.map(() => []);
  const records: number[][] = paths.map(() => []);
  const interfaces: string[] = paths.map(() => "");
  for (const [file, r] of byFile) {
    const i = at.get(file);
    if (i === undefined) continue;
    records[i] = [...r.assets.flatMap((x) => [0, x]), ...r.dags.flatMap((x) => [1, x])];
    interfaces[i] = fileInterface(manifest, r, via);
  }
  // What each contract reads, whatever its status: a draft has no DAG, yet the link rules read its upstreams.
  for (const { path, assets } of readers) {
    const i = at.get(path);
    if (i === undefined) continue;
    const from = new Set(reads[i]);
    for (const name of assets) {
      const producer = assetFile.get(name);
      if (producer !== undefined && producer !== i) from.add(producer);
    }
    reads[i] = [...from].sort((a, b) => a - b);
  }
  const keyList: string[] = [];
  for (const p of paths) {
    const key = keys.get(p);
    if (key === undefined) return undefined;
    keyList.push(key);
  }
  const named = [...referenced].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return {
    context,
    manifest: digest,
    stamps: stamp(paths),
    referencedStamps: stamp(named.map(([p]) => p)),
    counts: { dags: manifest.dags.length, assets: manifest.assets.length },
    paths: [...paths],
    keys: keyList,
    interfaces,
    reads,
    records,
    diagnostics: [...diagnostics],
    referenced: named.map(([p, text]) => [p, sha256Hex(text)] as [string, string]),
  };
}
