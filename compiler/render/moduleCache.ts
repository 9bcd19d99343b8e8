import * as crypto from "node:crypto";
import { createHash } from "node:crypto";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic } from "../diagnostics/diagnostic.js";
import type { CacheEntriesRead } from "../discover/readCache.js";
import type { Manifest } from "../manifest/buildManifest.js";
import type { RecordKeys } from "../manifest/recordCache.js";
import { CACHE_FOLDER, cacheWriter } from "../parse/parseCache.js";
import { decodeEntryRead, encodeCacheEntry } from "../support/cacheEntry.js";
import { nowNs, readStamp, STAMP_FIELDS, trustedStamp, writeStamps, type FileStamp } from "../support/fileStamp.js";
import { assetRenderInputs, dagRenderInputs, modulePath, monitorPath, usedAssets, type ModuleSkip } from "./renderModules.js";

/**
 * The incremental cache of the render stage (ADR 0017n): one index of every DAG module the last
 * compile rendered or found unchanged, `path → (key of its inputs, sha256 of its text)`. A module
 * whose key is the index's and whose file on the disk hashes to the index's sha256 holds what its
 * render would give, so it is neither rendered nor compared again; any other is rendered as
 * without the cache. A file found so is stamped in the index (ADR 0017q: its `lstat` identity,
 * when git's racily clean rule allows), and next time a file whose `lstat` is still exactly that
 * stamp is taken to hold the sha256 without being read. Pure: discover reads the index (`readCacheEntries`), the write stage checks
 * a file's hash (`OutputWrite.holdsDigest`) and writes the index (`writeCacheEntries`).
 *
 * The key of a module is sha256 over the render's writer ({@link moduleCacheWriter}: compiler
 * version, a fingerprint of the render modules' import closure, the templates and `package.json`),
 * the module's path, the fields of its DAG's record the render reads (`dagRenderInputs`) and those
 * of each Asset it declares (`assetRenderInputs`, {@link usedAssets}): every value `renderDagModule`
 * reads, as JSON texts of the in-memory manifest the render itself reads (ADR 0017n: hashing the
 * records' whole texts cost about as much as the render it saves).
 *
 * With the manifest stage's record keys (ADR 0017r: `RecordCache.keys`, the sha256 of each record's
 * compact JSON text, made anyway to reuse the record's text), a DAG module's key is sha256 over the
 * writer, the path, its DAG record's key and the key of each Asset record it declares: the whole
 * records, not just the fields read, so a change to a field the render does not read (an Asset's
 * schema, its contract's sha256) renders the module again. A module any of whose records has no
 * key is keyed as above.
 */

/** The render stage's folder of the cache, project-relative. */
export const RENDER_CACHE_FOLDER = `${CACHE_FOLDER}/render`;
/** The index's name in it (`modules.bin`), and the key its header is written under (`support/cacheEntry.ts`). */
export const MODULE_INDEX_KEY = "modules";
/** The index file, project-relative: where its notes point. */
export const MODULE_INDEX_PATH = `${RENDER_CACHE_FOLDER}/${MODULE_INDEX_KEY}.bin`;

/** What decides a module's text beside its inputs: the render modules (with all they import) and the templates. */
const RENDER_INPUTS = { modules: ["render/renderModules", "render/moduleCache", "manifest/recordCache"], files: ["templates/dag_module.py.hbs", "templates/freshness_monitor.py.hbs"] };

/** The render index's writer, `<name> <version> (render <fingerprint>)`: an index of another is foreign. */
export function moduleCacheWriter(name: string, version: string): string {
  return cacheWriter(name, version, RENDER_INPUTS, "render");
}

/** Bytes of a digest: sha256. */
const DIGEST = 32;

/** One compile's use of the index: what it found, what it did, the index to write. */
export interface ModuleCache extends ModuleSkip {
  /** The CA1951 note when the index found could not be used. */
  notes: Diagnostic[];
  /** DAG modules found unchanged (not rendered), and rendered. */
  counts: { unchanged: number; rendered: number };
  /** The new index's bytes: every DAG module of this compile, its key and the sha256 of its text. */
  encode(): Uint8Array;
}

/** sha256 of a text's UTF-8 bytes (the bytes `write` puts on the disk). */
function digestOf(text: string): Buffer {
  return oneShot ? oneShot("sha256", text, "buffer") : createHash("sha256").update(text).digest();
}

// Node's one-shot hash (20.12 and later) makes no Hash object: one per module's key adds up.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, outputEncoding: "buffer") => Buffer }).hash;

/**
 * The key of the module at an index: `manifest.dags[index]`'s, or at `dags.length` the freshness
 * monitor's (see the module comment), made when asked for, so that the render, which asks once per
 * module in order, holds no array of keys made before it starts (when the manifest's text is still
 * held).
 *
 * Of fields (ADR 0017n, the monitor's always, a DAG's without `records`): each part is a JSON
 * text (no raw line break), joined by line breaks, so no two parts run together; an Asset's text
 * is made once, however many modules declare it. Equal texts are equal values for what the render
 * reads: the manifest was written as canonical JSON, so it holds no value JSON cannot write (a
 * non-finite number, a function), and a `-0`, which JSON writes as `0`, renders as `0`. Another
 * key order of an object gives another text: a miss, never a wrong hit.
 *
 * Of records (ADR 0017r, a DAG's when `records` holds the key of its record and of each Asset
 * record it declares): the line `records`, then the writer and path as above, the DAG record's
 * key, and per declared name ({@link usedAssets} order, the render's lookup: the last record of
 * a name) its record's key or `null` for a name with no record. A key (`recordKey`, `manifest/recordCache.ts`) is a
 * record's compact JSON text hashed, and is made only of plain JSON, so equal keys are equal
 * records, which hold every value the render reads. The first line (`records`, not a JSON string
 * like the writer's) keeps the two kinds' texts apart. `records` of other lengths than the
 * manifest's arrays (not of this manifest) is not used.
 */
export function moduleKeys(manifest: Manifest, outDir: string, writer: string, records?: RecordKeys): (index: number) => Buffer {
  // The render's lookup: by name, the last record of a name wins (a Map built in array order).
  const assetAt = new Map(manifest.assets.map((a, i) => [a.name, i]));
  const assetTexts = new Array<string | undefined>(manifest.assets.length);
  const assetText = (i: number): string => (assetTexts[i] ??= JSON.stringify(assetRenderInputs(manifest.assets[i]!)));
  const head = JSON.stringify(writer);
  const keyOf = (relative: string, inputs: unknown, assets: readonly string[]): Buffer => {
    const parts = [head, JSON.stringify(relative), JSON.stringify(inputs)];
    for (const name of assets) {
      const at = assetAt.get(name);
      parts.push(at === undefined ? "null" : assetText(at));
    }
    return digestOf(parts.join("\n"));
  };
  const keys = records && records.dags.length === manifest.dags.length && records.assets.length === manifest.assets.length ? records : undefined;
  // The key of records, or undefined where one of them has none.
  const recordsKeyOf = (relative: string, dag: string | undefined, assets: readonly string[]): Buffer | undefined => {
    if (dag === undefined) return undefined;
    let text = `records\n${head}\n${JSON.stringify(relative)}\n${dag}`;
    for (const name of assets) {
      const at = assetAt.get(name);
      const key = at === undefined ? "null" : keys!.assets[at];
      if (key === undefined) return undefined;
      text += `\n${key}`;
    }
    return digestOf(text);
  };
  return (index) => {
    const dag = manifest.dags[index];
    if (dag) {
      const relative = modulePath(outDir, dag.dag_id);
      const used = usedAssets(dag);
      return (keys && recordsKeyOf(relative, keys.dags[index], used)) ?? keyOf(relative, dagRenderInputs(dag), used);
    }
    // The freshness monitor's module (index `dags.length`): its whole plan, and each Asset it watches.
    const monitor = manifest.freshness_monitor;
    if (index !== manifest.dags.length || !monitor) throw new RangeError(`moduleKeys: no module at ${index}`);
    return keyOf(monitorPath(outDir, monitor.dag_id), monitor, monitor.assets.map((a) => a.name));
  };
}

/**
 * The index's payload: the module paths, per path its key then its text's sha256, and per path
 * the stamp of its file when it was last found holding that sha256 (`support/fileStamp.ts`: a
 * size of -1 for none, ADR 0017q).
 */
interface IndexPayload {
  paths: string[];
  digests: Uint8Array;
  stamps: BigInt64Array;
}

/** One module of the index: its key, its text's sha256, and its file's trusted stamp if any. */
export interface IndexEntry {
  key: Buffer;
  text: Buffer;
  stamp: FileStamp | undefined;
}

/** The index's entries by path, or why it cannot be used. */
function decodeIndex(read: CacheEntriesRead, writer: string): { entries: Map<string, IndexEntry> } | { problem: "damaged" | "foreign" | "unreadable"; detail: string } | undefined {
  const decoded = decodeEntryRead(read, { key: MODULE_INDEX_KEY, compiler: writer });
  if (decoded === undefined || "problem" in decoded) return decoded;
  const p = decoded.value as Partial<IndexPayload> | null;
  if (typeof p !== "object" || p === null || !Array.isArray(p.paths) || !(p.digests instanceof Uint8Array) || p.digests.length !== p.paths.length * 2 * DIGEST || !(p.stamps instanceof BigInt64Array) || p.stamps.length !== p.paths.length * STAMP_FIELDS || !p.paths.every((x) => typeof x === "string")) {
    return { problem: "damaged", detail: "it holds no index of modules" };
  }
  const digests = Buffer.from(p.digests.buffer, p.digests.byteOffset, p.digests.byteLength);
  const stamps = p.stamps;
  const entries = new Map<string, IndexEntry>();
  p.paths.forEach((path, i) => entries.set(path, { key: digests.subarray(2 * DIGEST * i, 2 * DIGEST * i + DIGEST), text: digests.subarray(2 * DIGEST * i + DIGEST, 2 * DIGEST * (i + 1)), stamp: readStamp(stamps, i) }));
  return { entries };
}

/**
 * One compile's module cache: the keys of `manifest`'s DAG modules ({@link moduleKeys}, of
 * `records`, the manifest stage's record keys, where they hold every record a module needs), the index discover read (`read`, of {@link MODULE_INDEX_KEY}
 * in {@link RENDER_CACHE_FOLDER}), and `holds(relative, sha256, stamp)`, the write stage's check that a
 * file on the disk has that sha256 (`OutputWrite.holdsDigest`: the file's stamp, or false). A module is
 * unchanged when its key is the index's and `holds` says yes; a damaged, foreign or unreadable index
 * is one CA1951 note and skips nothing.
 *
 * Stamps (ADR 0017q): the index stores, per module, the stamp `holds` gave, when
 * `trustedStamp(stamp, since)` keeps it (git's racily clean rule), and hands it to `holds` next
 * time, which then trusts a file whose `lstat` is still exactly it without reading it. `since`
 * (ns since the epoch, real-time clock) must be a moment before `holds` is first called: by
 * default the present when the cache is opened. A module rendered has no stamp (its file is
 * new, so racy): it is hashed once more by the next compile, which stamps it.
 */
export function openModuleCache(
  manifest: Manifest,
  outDir: string,
  compiler: { name: string; version: string },
  read: CacheEntriesRead,
  holds: (relative: string, digest: Uint8Array, stamp?: FileStamp) => FileStamp | false,
  records?: RecordKeys,
  since: bigint = nowNs(),
): ModuleCache {
  const writer = moduleCacheWriter(compiler.name, compiler.version);
  const keyAt = moduleKeys(manifest, outDir, writer, records);
  // The key `unchanged` made for a module it then found changed is the one `rendered` stores.
  let last: { index: number; key: Buffer } | undefined;
  const keyOf = (index: number): Buffer => {
    if (last?.index !== index) last = { index, key: keyAt(index) };
    return last.key;
  };
  const found = decodeIndex(read, writer);
  const notes: Diagnostic[] = [];
  if (found && "problem" in found) notes.push(createDiagnostic(Diagnostics.ModuleIndexIgnored, { problem: found.problem, detail: found.detail }, { file: MODULE_INDEX_PATH, line: 1, column: 1 }));
  const stored = found && "entries" in found ? found.entries : new Map<string, IndexEntry>();
  // The next index: every module of this compile, by path (one index rather than a file each).
  const next = new Map<string, IndexEntry>();
  const counts = { unchanged: 0, rendered: 0 };
  return {
    notes,
    counts,
    unchanged(relative, index) {
      const entry = stored.get(relative);
      if (!entry) return false;
      const key = keyOf(index);
      if (!entry.key.equals(key)) return false;
      const stamp = holds(relative, entry.text, entry.stamp);
      if (!stamp) return false;
      next.set(relative, { key, text: entry.text, stamp: trustedStamp(stamp, since) });
      counts.unchanged++;
      return true;
    },
    rendered(relative, index, text) {
      counts.rendered++;
      next.set(relative, { key: keyOf(index), text: digestOf(text), stamp: undefined });
    },
    encode: () => encodeModuleIndex(writer, next),
  };
}

/** The bytes of an index of `entries` (by path, in the order to list them), written by `writer` ({@link moduleCacheWriter}). */
export function encodeModuleIndex(writer: string, entries: ReadonlyMap<string, IndexEntry>): Uint8Array {
  const paths = [...entries.keys()];
  const digests = new Uint8Array(paths.length * 2 * DIGEST);
  const stamps = new BigInt64Array(paths.length * STAMP_FIELDS);
  paths.forEach((path, i) => {
    const entry = entries.get(path)!;
    digests.set(entry.key, 2 * DIGEST * i);
    digests.set(entry.text, 2 * DIGEST * i + DIGEST);
    writeStamps(stamps, i, entry.stamp);
  });
  const payload: IndexPayload = { paths, digests, stamps };
  return encodeCacheEntry(MODULE_INDEX_KEY, writer, payload);
}

/** The entries of the index read (of {@link MODULE_INDEX_KEY}) by path, in its order, when it is usable; else undefined. */
export function readModuleIndex(compiler: { name: string; version: string }, read: CacheEntriesRead): Map<string, IndexEntry> | undefined {
  const found = decodeIndex(read, moduleCacheWriter(compiler.name, compiler.version));
  return found && "entries" in found ? found.entries : undefined;
}

/** The sha256 of a module's text, as the index holds it. */
export { digestOf as moduleDigest };
