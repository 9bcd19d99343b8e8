import { createHash } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic } from "../diagnostics/diagnostic.js";
import type { SourceFile } from "../discover/discoverProject.js";
import type { CacheEntriesRead } from "../discover/readCache.js";
import { cacheKey, decodeCacheEntry, encodeCacheEntry } from "../support/cacheEntry.js";
import { compareStrings } from "../support/compare.js";
import { packageFileUrl, packageRoot, readPackageFile } from "../support/package-root.js";
import type { ParsedData } from "./parseContracts.js";

/**
 * The incremental cache of the parse stage (ADR 0017c): per input file, its {@link ParsedData}
 * (what parsing the file yields, as plain data, diagnostics included), in one entry named by the
 * key of the file's path and bytes, the orchestration config and the cache format
 * (`support/cacheEntry.ts`, `cacheKey`); the entry's header names the compiler and V8 that wrote
 * it. Pure: discover reads the entries (`readCacheEntries`), write writes them
 * (`writeCacheEntries`), and the pipeline joins the three.
 */

/** The cache's top folder, project-relative; git-ignored (it holds a `.gitignore` of `*` too). */
export const CACHE_FOLDER = ".contract-assets/cache";
/** The parse stage's entries: `<key>.bin`. */
export const PARSE_CACHE_FOLDER = `${CACHE_FOLDER}/parse`;

let fingerprint: string | undefined;

/**
 * Who wrote an entry, as its header says and a reader must match: the compiler's name and version,
 * and a fingerprint of what decides a parse result between two releases (sha256 of `package.json`,
 * which pins the YAML library's version, of the parse module, of the content hashes' module and of
 * the diagnostic catalogue, whose messages the cached diagnostics carry), so a build with another parser or message is foreign
 * even under the same version number. The modules are the built ones under `dist/` (what the bin
 * runs; the TypeScript sources only when there is no build), so the bin and the sources agree.
 * Read from the compiler's own files, once.
 */
export function parseCacheWriter(name: string, version: string): string {
  if (fingerprint === undefined) {
    const here = fileURLToPath(import.meta.url);
    const moduleFile = (module: string): string => {
      const built = `dist/compiler/${module}.js`;
      if (packageFileUrl(built)) return built;
      return path.relative(packageRoot(), path.join(path.dirname(here), "..", `${module}${path.extname(here)}`)).split(path.sep).join("/");
    };
    const hash = createHash("sha256");
    for (const file of ["package.json", moduleFile("parse/parseContracts"), moduleFile("support/hash"), moduleFile("diagnostics/catalogue")]) hash.update(`${file}\0`).update(readPackageFile(file)).update("\0");
    fingerprint = hash.digest("hex").slice(0, 16);
  }
  return `${name} ${version} (parse ${fingerprint})`;
}

/** Why an entry found was not used. */
type Problem = "damaged" | "foreign" | "unreadable";

/** One compile's use of the parse cache: what was read, what was parsed to be written back ({@link openParseCache}). */
export interface ParseCache {
  /** `<name> <version>` of this compiler: an entry of another is foreign. */
  compiler: string;
  /** The key of each file to parse, by project-relative path. */
  keys: Map<string, string>;
  /** The entries discover read for those keys. */
  read: CacheEntriesRead;
  /** Entries to write: the files parsed because theirs was missing or unusable. */
  fresh: Map<string, Uint8Array>;
  /** Entries found and not used, by file path. */
  problems: Map<string, { problem: Problem; detail: string }>;
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

/** The key of each file's entry, by path, under `context` ({@link cacheContext}). */
export function parseCacheKeys(files: readonly SourceFile[], context: string): Map<string, string> {
  return new Map(files.map((f) => [f.path, cacheKey(context, f.path, f.bytes)]));
}

/**
 * One compile's cache of `files` (every contract and config file): their keys under
 * {@link cacheContext} of `configs`, the entries discover read for them (`read` gets the keys),
 * nothing looked up yet.
 */
export function openParseCache(files: readonly SourceFile[], configs: readonly SourceFile[], compiler: string, read: (keys: string[]) => CacheEntriesRead): ParseCache {
  const keys = parseCacheKeys(files, cacheContext(configs));
  return { compiler, keys, read: read([...keys.values()]), fresh: new Map(), problems: new Map(), hits: 0, parsed: 0 };
}

/**
 * The cached parse result of each file (undefined for a miss), in the order of `files`. An entry
 * that is there but cannot be used (damaged, foreign, unreadable) is a miss too, recorded for
 * {@link parseCacheNotes}; what it holds is never used.
 */
export function lookupParseCache(files: readonly SourceFile[], cache: ParseCache): Array<ParsedData | undefined> {
  return files.map((file) => {
    const key = cache.keys.get(file.path);
    if (key === undefined) return undefined;
    const reason = cache.read.unreadable.get(key);
    if (reason !== undefined) {
      cache.problems.set(file.path, { problem: "unreadable", detail: reason });
      return undefined;
    }
    const bytes = cache.read.found.get(key);
    if (bytes === undefined) return undefined;
    const decoded = decodeCacheEntry(bytes, { key, compiler: cache.compiler });
    if ("problem" in decoded) {
      cache.problems.set(file.path, decoded);
      return undefined;
    }
    const data = decoded.value as ParsedData | null;
    if (typeof data !== "object" || data === null || !Array.isArray(data.diagnostics)) {
      cache.problems.set(file.path, { problem: "damaged", detail: "it holds no parse result" });
      return undefined;
    }
    cache.hits++;
    return data;
  });
}

/** Records the entries of files just parsed (`files[i]` gave `parsed[i]`), to be written. */
export function storeParseCache(files: readonly SourceFile[], parsed: readonly ParsedData[], cache: ParseCache): void {
  cache.parsed += files.length;
  for (let i = 0; i < files.length; i++) {
    const key = cache.keys.get(files[i]!.path);
    if (key !== undefined) cache.fresh.set(key, encodeCacheEntry(key, cache.compiler, parsed[i]));
  }
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
