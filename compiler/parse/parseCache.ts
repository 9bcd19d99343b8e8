import { createHash } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic } from "../diagnostics/diagnostic.js";
import type { SourceFile } from "../discover/discoverProject.js";
import type { CacheEntryRead } from "../discover/readCache.js";
import { cacheKey, decodeCacheEntry, encodeCacheEntry, readPayload } from "../support/cacheEntry.js";
import { compareStrings } from "../support/compare.js";
import { packageFileUrl, packageRoot, readPackageFile } from "../support/package-root.js";
import type { ParsedData } from "./parseDocument.js";

/**
 * The incremental cache of the parse stage (ADR 0017c) and of the validate stage's per-document
 * verdicts (ADR 0017j): per input file, its {@link ParsedData} (what parsing the file yields, as
 * plain data, diagnostics included) and the verdict validating its document gave, in one entry
 * named by the key of the file's path and bytes, the orchestration config and the cache format
 * (`support/cacheEntry.ts`, `cacheKey`); the entry's header names the compiler and V8 that wrote
 * it. Pure: discover reads the entries (`readCacheEntries`), write writes them
 * (`writeCacheEntries`), and the pipeline joins the three. The verdict is opaque here (the parse
 * stage comes before validate): the pipeline hands in validate's check of its shape.
 */

/** The cache's top folder, project-relative; git-ignored (it holds a `.gitignore` of `*` too). */
export const CACHE_FOLDER = ".contract-assets/cache";
/** The parse stage's entries: `<key>.bin`. */
export const PARSE_CACHE_FOLDER = `${CACHE_FOLDER}/parse`;

const fingerprints = new Map<string, string>();

/** What decides a cached entry's content between two builds: modules (with every module they import) and data files. */
export interface CacheInputs {
  /** Modules under `compiler/`, without extension (`parse/parseContracts`): each with its static import closure. */
  modules: readonly string[];
  /** Other package files (POSIX, package-relative) the cached stages read: the JSON Schemas. */
  files: readonly string[];
}

/**
 * The project-relative package files of `modules` and of every module they import, directly or
 * not (relative `import`/`export ... from` specifiers), sorted. The built modules under `dist/`
 * when there is a build (what the bin runs), else the TypeScript sources, so the bin and the
 * tests run from the sources agree on it.
 */
export function moduleClosure(modules: readonly string[]): string[] {
  const here = fileURLToPath(import.meta.url);
  const fileOf = (module: string): string => {
    const built = `dist/compiler/${module}.js`;
    if (packageFileUrl(built)) return built;
    return path.relative(packageRoot(), path.join(path.dirname(here), "..", `${module}${path.extname(here)}`)).split(path.sep).join("/");
  };
  const seen = new Map<string, string>();
  const visit = (module: string): void => {
    if (seen.has(module)) return;
    const file = fileOf(module);
    const text = readPackageFile(file);
    seen.set(module, file);
    for (const m of text.matchAll(/(?:import|export)[^'"]*?from\s+["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(module), (m[1] ?? m[2]!).replace(/\.(?:js|ts)$/, "")));
      visit(target);
    }
  };
  for (const m of modules) visit(m);
  // Sort for determinism.
  return [...seen.values()].sort(compareStrings);
}

/**
 * Who wrote an entry, as its header says and a reader must match: the compiler's name and version,
 * and a fingerprint of what decides the cached content between two releases (sha256 of
 * `package.json`, which pins the YAML and JSON Schema libraries' versions, of every module in the
 * import closure of `inputs.modules` (the parse module and the validate stage's, with the content
 * hashes, the diagnostic catalogue whose messages cached diagnostics carry, the rules and what
 * they import) and of `inputs.files` (the JSON Schemas)), so a build with another parser, rule or
 * message is foreign even under the same version number. Read from the compiler's own files, once
 * per set of inputs.
 */
export function parseCacheWriter(name: string, version: string, inputs: CacheInputs): string {
  return cacheWriter(name, version, inputs, "parse and validate");
}

/**
 * {@link parseCacheWriter}'s string for any cached stage: `<name> <version> (<stage> <fingerprint>)`,
 * the fingerprint over `package.json`, the import closure of `inputs.modules` and `inputs.files`
 * (the render stage's index: the render modules and the templates, ADR 0017n).
 */
export function cacheWriter(name: string, version: string, inputs: CacheInputs, stage: string): string {
  const id = JSON.stringify(inputs);
  let fingerprint = fingerprints.get(id);
  if (fingerprint === undefined) {
    const hash = createHash("sha256");
    for (const file of ["package.json", ...moduleClosure(inputs.modules), ...inputs.files]) hash.update(`${file}\0`).update(readPackageFile(file)).update("\0");
    fingerprint = hash.digest("hex").slice(0, 16);
    fingerprints.set(id, fingerprint);
  }
  return `${name} ${version} (${stage} ${fingerprint})`;
}

/** Why an entry found was not used. */
type Problem = "damaged" | "foreign" | "unreadable";

/** Why each file's entry could not be used, by project-relative path (`ParseCache.problems`). */
export type ParseCacheProblems = Map<string, { problem: Problem; detail: string }>;

/** One compile's use of the parse cache: what was read, what was parsed to be written back ({@link openParseCache}). */
export interface ParseCache {
  /** `<name> <version>` of this compiler: an entry of another is foreign. */
  compiler: string;
  /** The key of each file to parse, by project-relative path. */
  keys: Map<string, string>;
  /** Discover's reader of one entry by key, called once per key as it is looked up (ADR 0017m). */
  read: (key: string) => CacheEntryRead;
  /** Whether a stored verdict has the shape the validate stage writes (an entry with another is damaged). */
  isVerdict: (verdict: unknown) => boolean;
  /**
   * Takes each new entry (key, bytes) as soon as it is made: the files parsed because theirs was
   * missing or unusable. The pipeline hands in the write stage's `CacheWrite.add`, which writes it
   * at once, so no compile holds every new entry (ADR 0017m).
   */
  store: (key: string, bytes: Uint8Array) => void;
  /** Entries found and not used, by file path. */
  problems: ParseCacheProblems;
  /** How many files came from the cache, and how many were parsed. */
  hits: number;
  parsed: number;
}

/**
 * The context every entry of a compile depends on beside its own file: sha256 over each
 * orchestration config file's path and bytes (in discover's order, which is sorted), so an edit
 * of the config parses every file again. Hex.
 */
export function cacheContext(configs: readonly SourceFile[]): string {
  const hash = createHash("sha256");
  for (const f of configs) hash.update(`${Buffer.byteLength(f.path)}:${f.path}\0${f.bytes.byteLength}:`).update(f.bytes);
  return hash.digest("hex");
}

/**
 * The key of each file's entry, by path, under `context` ({@link cacheContext}); `known`: keys
 * already made of those very bytes under a context (discover's reader thread, ADR 0017x), taken
 * when that context is this one.
 */
export function parseCacheKeys(files: readonly SourceFile[], context: string, known?: { context: string; keys: ReadonlyMap<string, string> }): Map<string, string> {
  const made = known?.context === context ? known.keys : undefined;
  return new Map(files.map((f) => [f.path, made?.get(f.path) ?? cacheKey(context, f.path, f.bytes)]));
}

/**
 * One compile's cache of `files` (every contract and config file): their keys under
 * {@link cacheContext} of `configs`, the entries discover read for them (`read` gets the keys),
 * nothing read or looked up yet (`read` reads one entry, when it is looked up); each new entry goes
 * to `store` as it is made. `known`: keys discover's reader thread made ({@link parseCacheKeys}).
 */
export function openParseCache(
  files: readonly SourceFile[],
  configs: readonly SourceFile[],
  compiler: string,
  read: (key: string) => CacheEntryRead,
  isVerdict: (verdict: unknown) => boolean,
  store: (key: string, bytes: Uint8Array) => void,
  known?: { context: string; keys: ReadonlyMap<string, string> },
): ParseCache {
  const keys = parseCacheKeys(files, cacheContext(configs), known);
  return { compiler, keys, read, isVerdict, store, problems: new Map(), hits: 0, parsed: 0 };
}

/**
 * What one entry holds (cache format 2, as {@link toPayload} lays it out): the file's parse result, and the verdict of the validate
 * stage on its document (null when the file has no document, or its verdict is not cached: an
 * ODCS document's verdict holds the translated document).
 */
export interface CachedFile {
  data: ParsedData;
  verdict: unknown;
}

/**
 * The cached parse result of each file (undefined for a miss), in the order of `files`. An entry
 * that is there but cannot be used (damaged, foreign, unreadable) is a miss too, recorded for
 * {@link parseCacheNotes}; what it holds is never used.
 */
export function lookupParseCache(files: readonly SourceFile[], cache: ParseCache): Array<CachedFile | undefined> {
  return files.map((file) => {
    const key = cache.keys.get(file.path);
    if (key === undefined) return undefined;
    // Read here, one at a time: the entry's bytes are garbage once decoded.
    const read = cache.read(key);
    if (read === undefined) return undefined;
    if ("unreadable" in read) {
      cache.problems.set(file.path, { problem: "unreadable", detail: read.unreadable });
      return undefined;
    }
    // Checked already by discover's reader thread (ADR 0017x), or here.
    const decoded = "checked" in read ? ("payload" in read.checked ? readPayload(read.checked.payload) : read.checked) : decodeCacheEntry(read.bytes, { key, compiler: cache.compiler });
    if ("problem" in decoded) {
      cache.problems.set(file.path, decoded);
      return undefined;
    }
    const entry = fromPayload(decoded.value);
    if (entry === undefined) {
      cache.problems.set(file.path, { problem: "damaged", detail: "it holds no parse result" });
      return undefined;
    }
    if (entry.verdict !== null && !cache.isVerdict(entry.verdict)) {
      cache.problems.set(file.path, { problem: "damaged", detail: "it holds no validation verdict" });
      return undefined;
    }
    cache.hits++;
    return entry;
  });
}

/**
 * A {@link CachedFile} as an entry's payload holds it: flat, so reading 10,000 of them costs
 * little. `v8.deserialize` of the document's value as a tree of objects was most of the read; the
 * value is kept as its JSON text instead (`JSON.parse` is native and about twice as fast), except
 * when JSON cannot give it back exactly (a `-0`), and the four integer tables of the locator and
 * the line starts are one `Int32Array` (one typed array to deserialise, not four arrays).
 */
export interface Payload {
  diagnostics: ParsedData["diagnostics"];
  verdict: unknown;
  document: null | {
    /** The value's JSON text, or null when `value` holds it. */
    json: string | null;
    value?: unknown;
    /** `nodes`, `items`, `ranges` and `lineStarts`, one after the other; `lengths` says where each ends. */
    ints: Int32Array;
    lengths: [number, number, number, number];
    keyText: string;
    rootRange: [number, number] | undefined;
    written: Array<[string, string]>;
    hashes: NonNullable<ParsedData["document"]>["hashes"];
  };
}

/** Whether a JSON value holds a `-0`, which its JSON text would give back as `0`. */
function holdsNegativeZero(value: unknown): boolean {
  if (typeof value === "number") return value === 0 && Object.is(value, -0);
  if (Array.isArray(value)) return value.some(holdsNegativeZero);
  if (value !== null && typeof value === "object") return Object.values(value).some(holdsNegativeZero);
  return false;
}

/** The payload of an entry holding `entry` (see {@link Payload}). */
export function toPayload(entry: CachedFile): Payload {
  const d = entry.data.document;
  if (!d) return { diagnostics: entry.data.diagnostics, verdict: entry.verdict, document: null };
  const { nodes, items, ranges, keyText } = d.index;
  const ints = new Int32Array(nodes.length + items.length + ranges.length + d.lineStarts.length);
  ints.set(nodes, 0);
  ints.set(items, nodes.length);
  ints.set(ranges, nodes.length + items.length);
  ints.set(d.lineStarts, nodes.length + items.length + ranges.length);
  const exact = !holdsNegativeZero(d.value);
  return {
    diagnostics: entry.data.diagnostics,
    verdict: entry.verdict,
    document: {
      json: exact ? JSON.stringify(d.value) : null,
      ...(exact ? {} : { value: d.value }),
      ints,
      lengths: [nodes.length, items.length, ranges.length, d.lineStarts.length],
      keyText,
      rootRange: d.rootRange,
      written: d.written,
      hashes: d.hashes,
    },
  };
}

/** `length` numbers of `ints` from `from`, as a plain array (`Array.from` would go through an iterator). */
function toNumbers(ints: Int32Array, from: number, length: number): number[] {
  const out = new Array<number>(length);
  for (let k = 0; k < length; k++) out[k] = ints[from + k]!;
  return out;
}

/** The {@link CachedFile} of a payload ({@link toPayload}); undefined when it is not one (the entry is then damaged). */
export function fromPayload(payload: unknown): CachedFile | undefined {
  const p = payload as Partial<Payload> | null;
  if (typeof p !== "object" || p === null || !Array.isArray(p.diagnostics) || !("verdict" in p)) return undefined;
  const data: ParsedData = { diagnostics: p.diagnostics };
  const d = p.document;
  if (d !== null) {
    if (typeof d !== "object" || d === undefined || !(d.ints instanceof Int32Array) || !Array.isArray(d.lengths) || d.lengths.length !== 4) return undefined;
    const [n, i, r, l] = d.lengths;
    if (![n, i, r, l].every((x) => Number.isInteger(x) && x >= 0) || n + i + r + l !== d.ints.length) return undefined;
    if (typeof d.keyText !== "string" || !Array.isArray(d.written) || typeof d.hashes !== "object" || d.hashes === null) return undefined;
    let value: unknown;
    if (typeof d.json === "string") {
      try {
        value = JSON.parse(d.json);
      } catch {
        return undefined;
      }
    } else if (d.json === null && "value" in d) value = d.value;
    else return undefined;
    // Views of one copy of the three tables: a view of `d.ints` itself would keep the whole
    // entry's bytes alive for the compile (`v8.deserialize` makes an aligned typed array a view of
    // its input), unless it already owns its buffer alone. One copy, not three: a backing store
    // per table was a fifth of this function's time.
    const tables = d.ints.byteOffset === 0 && d.ints.buffer.byteLength === d.ints.byteLength ? d.ints : d.ints.slice(0, n + i + r);
    const at = (from: number, length: number): Int32Array => tables.subarray(from, from + length);
    data.document = {
      value,
      index: { nodes: at(0, n), items: at(n, i), ranges: at(n + i, r), keyText: d.keyText },
      rootRange: d.rootRange,
      lineStarts: toNumbers(d.ints, n + i + r, l),
      written: d.written,
      hashes: d.hashes,
    };
  }
  return { data, verdict: p.verdict };
}

/**
 * The verdict that keeps a file out of the cache: its document holds a credential (CA3015,
 * CA3045, CA3049), and an entry is a copy of the document's text under `.contract-assets/`, which
 * would keep the secret after the contract is fixed (ADR 0027).
 */
export const NO_CACHE_ENTRY: unique symbol = Symbol("no parse cache entry");

/**
 * Hands the entry of a file just parsed to the cache's `store`: `file` gave `data`, and
 * validating its document `verdict` (null for none; `NO_CACHE_ENTRY`: store nothing). Called as
 * each parse arrives, so the encoded entry is garbage once stored.
 */
export function storeParsedFile(file: SourceFile, data: ParsedData, verdict: unknown, cache: ParseCache): void {
  cache.parsed++;
  if (verdict === NO_CACHE_ENTRY) return;
  const key = cache.keys.get(file.path);
  if (key !== undefined) cache.store(key, encodeCacheEntry(key, cache.compiler, toPayload({ data, verdict: verdict ?? null })));
}

/**
 * One CA1950 note per kind of problem (damaged, foreign, unreadable), at the first file in path
 * order whose entry had it, with the count of the others: after an upgrade every entry is
 * foreign, and ten thousand notes would say one thing.
 */
export function parseCacheNotes(cache: ParseCache): Diagnostic[] {
  const byProblem = new Map<Problem, string[]>();
  for (const [file, p] of cache.problems) byProblem.set(p.problem, [...(byProblem.get(p.problem) ?? []), file]);
  const notes: Diagnostic[] = [];
  for (const [problem, files] of byProblem) {
    // Sort for determinism.
    const first = [...files].sort(compareStrings)[0]!;
    const detail = cache.problems.get(first)!.detail;
    notes.push(createDiagnostic(Diagnostics.CacheEntryIgnored, { problem, detail, others: files.length - 1 }, { file: first, line: 1, column: 1 }));
  }
  return notes;
}
