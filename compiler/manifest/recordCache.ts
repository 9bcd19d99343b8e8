import crypto, { createHash } from "node:crypto";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic } from "../diagnostics/diagnostic.js";
import type { CacheEntriesRead } from "../discover/readCache.js";
import type { RecordPlaces } from "../discover/readManifest.js";
import { CACHE_FOLDER, cacheWriter } from "../parse/parseCache.js";
import { decodeEntryRead, encodeCacheEntry } from "../support/cacheEntry.js";
import type { RecordTexts } from "../support/canonical-json.js";
import { SCHEMA_FILES } from "../validate/schemas.js";

/**
 * The incremental cache of the manifest's text (ADR 0017p): one index of the manifest the last
 * compile wrote, the sha256 of its whole text and, per record of `assets[]` and `dags[]`, the key
 * of its value ({@link recordKey}) and where its text lies in the file. A record of this compile
 * whose key is in the index is not written out again: its text is sliced out of the previous
 * manifest's bytes, once those bytes hash to the index's sha256 (a manifest edited by hand, or
 * written by anything else, is then not used at all). Pure: discover reads the index
 * (`readCacheEntries`) and the manifest's bytes, the write stage writes the index
 * (`writeCacheEntries`).
 */

/** The manifest stage's folder of the cache, project-relative. */
export const MANIFEST_CACHE_FOLDER = `${CACHE_FOLDER}/manifest`;
/** The index's name in it (`records.bin`), and the key its header is written under (`support/cacheEntry.ts`). */
export const RECORD_INDEX_KEY = "records";
/** The index file, project-relative: where its notes point. */
export const RECORD_INDEX_PATH = `${MANIFEST_CACHE_FOLDER}/${RECORD_INDEX_KEY}.bin`;

/** The top-level arrays of the manifest whose records are keyed, in code-unit order: the order canonical JSON places them (and the index lists their records). */
export const KEYED_ARRAYS = ["assets", "dags"] as const;

/**
 * What decides a record's text: the canonical JSON and the manifest's layout (with all they
 * import), and, since an Asset record's dataset is keyed by its file's parse-cache key (ADR 0017t),
 * what decides a document from a file's bytes: the parse and validate stages and their schemas
 * (the parse cache's own inputs, `pipeline.ts`).
 */
const RECORD_INPUTS = {
  modules: ["manifest/buildManifest", "manifest/recordCache", "parse/parseContracts", "validate/validateDocuments", "link/linkProject"],
  files: SCHEMA_FILES,
};

/** The record index's writer, `<name> <version> (manifest <fingerprint>)`: an index of another is foreign. */
export function recordCacheWriter(name: string, version: string): string {
  return cacheWriter(name, version, RECORD_INPUTS, "manifest");
}

/** sha256 of a string's UTF-8 bytes, hex (the one-shot hash where Node has it: about a fifth faster per record). */
const sha256 =
  typeof (crypto as { hash?: unknown }).hash === "function"
    ? (text: string): string => (crypto as unknown as { hash(algorithm: string, data: string): string }).hash("sha256", text)
    : (text: string): string => createHash("sha256").update(text).digest("hex");

/**
 * Whether `value` is JSON data on which compact `JSON.stringify` and `canonicalJson` agree: null,
 * a string, a boolean, a finite number, a dense array of such values, or an object of the plain
 * kind (prototype `Object.prototype` or null, no `toJSON` function) whose values are such values.
 * Anything else (undefined, a function, a symbol, a bigint, NaN or ±Infinity, an array hole, a
 * Date, a boxed primitive, a class instance, a `toJSON`) is where the two disagree: compact
 * stringify leaves out, writes `null` for or calls what canonicalJson refuses or ignores.
 * Called only after `JSON.stringify` succeeded on the value, so it holds no cycle (a `toJSON`,
 * which could hide one from stringify, is refused before its object is walked).
 */
function isPlainJson(value: unknown): boolean {
  if (value === null) return true;
  const type = typeof value;
  if (type === "string" || type === "boolean") return true;
  if (type === "number") return Number.isFinite(value);
  if (type !== "object") return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!(i in value) || !isPlainJson(value[i])) return false;
    return true;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  const object = value as Record<string, unknown>;
  if (typeof object.toJSON === "function") return false;
  for (const key in object) if (!isPlainJson(object[key])) return false;
  return true;
}

/**
 * The key of a record's value: the sha256 (hex) of its compact `JSON.stringify` text, or undefined
 * when the record is not {@link isPlainJson} (or stringify throws: a bigint, a cycle), so it is
 * never a hit. Two plain values with the same compact text have the same canonical text: the
 * compact text writes every own key in enumeration order and every primitive exactly (strings
 * well-formed, lone surrogates escaped, so their UTF-8 is injective; numbers as the shortest text
 * that reads back, `-0` as `0`, which canonicalJson writes as `0` too), and canonicalJson's text
 * is a function of those keys and primitives (sorted, `__proto__` left out on both sides). A
 * record with another key order has another key: a miss, never a wrong hit. Undefined too when
 * `Object.prototype` or `Array.prototype` has a `toJSON`, which stringify would call everywhere.
 */
export function recordKey(record: unknown): string | undefined {
  return compactKey("", record);
}

/** The sha256 (hex) of `prefix` and `value`'s compact `JSON.stringify` text, or undefined as {@link recordKey} says. */
function compactKey(prefix: string, value: unknown): string | undefined {
  if (typeof (Object.prototype as { toJSON?: unknown }).toJSON === "function" || typeof (Array.prototype as { toJSON?: unknown }).toJSON === "function") return undefined;
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch {
    return undefined;
  }
  return typeof text === "string" && isPlainJson(value) ? sha256(prefix + text) : undefined;
}

/**
 * What an Asset record's `schema`, `quality` and `renamed_from` are made of (ADR 0017t): the
 * dataset `dataset` (its index in `datasets`) of the contract file at `path`, and the three values
 * `buildManifest` made of it, by identity (a record holding other objects is keyed by value).
 */
export interface DatasetOrigin {
  /** The producer's file, project-relative: the parse cache's key of it stands for its document. */
  path: string;
  /** The dataset's index in the document's `datasets`. */
  dataset: number;
  schema: object;
  quality: object;
  renamedFrom: object;
}

/** The record's fields a {@link DatasetOrigin} stands for. */
const ORIGIN_FIELDS = new Set(["schema", "quality", "renamed_from"]);

/**
 * The key of an Asset record made of a dataset (ADR 0017t): the sha256 (hex) of the line
 * `dataset <file key> <index>` and the compact `JSON.stringify` text of the record without its
 * `schema`, `quality` and `renamed_from`, or undefined (then {@link recordKey} is used) when the
 * record does not hold the origin's three values or the rest is not {@link isPlainJson}.
 * `fileKey`: the parse cache's key of the producer's file (sha256 over its path, its bytes and the
 * orchestration config's files, `parseCacheKeys`), under which the parse and validate stages (in
 * the index's fingerprint) give one document, so one dataset, so one text of the three fields
 * (`manifestQuality` and the sort are functions of it). The rest is keyed as {@link recordKey}
 * keys a record. Its text starts with `d`, a value key's with `{`: the two kinds never share one.
 */
export function originKey(record: Record<string, unknown>, origin: DatasetOrigin, fileKey: string): string | undefined {
  if (record.schema !== origin.schema || record.quality !== origin.quality || record.renamed_from !== origin.renamedFrom) return undefined;
  if (Object.getPrototypeOf(record) !== Object.prototype) return undefined;
  const rest: Record<string, unknown> = {};
  for (const key of Object.keys(record)) if (!ORIGIN_FIELDS.has(key)) rest[key] = record[key];
  return compactKey(`dataset ${fileKey} ${origin.dataset}\n`, rest);
}

/**
 * The index's payload: the sha256 (hex) of the manifest text, the records' keys and `[start, end)`
 * of each in it, in the text's order, how many of them are of each of {@link KEYED_ARRAYS}
 * (`counts`), and how many records each array has in the text (`totals`: more than `counts` when
 * a record had no key and so is not indexed).
 */
export interface IndexPayload {
  digest: string;
  keys: string[];
  spans: Uint32Array;
  counts: number[];
  totals: number[];
}

/** Why the index found cannot be used, or its payload. */
function decodeIndex(read: CacheEntriesRead, writer: string): IndexPayload | { problem: "damaged" | "foreign" | "unreadable"; detail: string } | undefined {
  const decoded = decodeEntryRead(read, { key: RECORD_INDEX_KEY, compiler: writer });
  if (decoded === undefined || "problem" in decoded) return decoded;
  const p = decoded.value as Partial<IndexPayload> | null;
  const shaped =
    typeof p === "object" &&
    p !== null &&
    typeof p.digest === "string" &&
    /^[0-9a-f]{64}$/.test(p.digest) &&
    Array.isArray(p.keys) &&
    p.spans instanceof Uint32Array &&
    p.spans.length === 2 * p.keys.length &&
    p.keys.every((k) => typeof k === "string") &&
    Array.isArray(p.counts) &&
    p.counts.length === KEYED_ARRAYS.length &&
    p.counts.every((n) => Number.isSafeInteger(n) && n >= 0) &&
    p.counts.reduce((a, b) => a + b, 0) === p.keys.length &&
    Array.isArray(p.totals) &&
    p.totals.length === KEYED_ARRAYS.length &&
    p.totals.every((n, k) => Number.isSafeInteger(n) && n >= p.counts![k]!);
  if (!shaped) return { problem: "damaged", detail: "it holds no index of records" };
  for (let i = 0; i < p.spans!.length; i += 2) if (p.spans![i]! >= p.spans![i + 1]!) return { problem: "damaged", detail: "a record of it ends before it starts" };
  return p as IndexPayload;
}

/**
 * The key ({@link recordKey}) of each record of `assets[]` and `dags[]`, by its index in its array,
 * as the manifest stage made them: undefined for a record that is not plain JSON. Arrays of the
 * manifest's lengths once `canonicalJsonAscii` has asked of every record (an empty array asks of none).
 */
export type RecordKeys = { readonly [K in (typeof KEYED_ARRAYS)[number]]: ReadonlyArray<string | undefined> };

/**
 * The manifest stage's {@link RecordTexts}: `madeOf` is told, before `canonicalJsonAscii` asks of
 * it, what an Asset record's dataset fields are made of ({@link DatasetOrigin}), so its key need not
 * stringify them ({@link originKey}).
 */
export interface ManifestRecordTexts extends RecordTexts {
  madeOf(record: object, origin: DatasetOrigin): void;
}

/** One compile's use of the index: what it found and did, and the index to write. */
export interface RecordCache {
  /** The CA1952 note when the index found could not be used. */
  notes: Diagnostic[];
  /** What `canonicalJsonAscii` asks and tells, and what `buildManifest` says Asset records are made of. */
  texts: ManifestRecordTexts;
  /** Records whose text was taken from the previous manifest, and records written out. */
  counts: { reused: number; made: number };
  /**
   * The bytes of the text `texts.finished` was handed (a buffer of their own: the manifest's
   * ASCII text, its UTF-8 bytes), handed on once, to whoever puts them on the disk (the write's
   * staging thread takes them over, ADR 0017w): the cache no longer holds them, and
   * {@link encode} must be told their sha256. Undefined before the text is finished, or once taken.
   */
  take(): Uint8Array | undefined;
  /**
   * The new index's bytes: `sha256` (hex), that of the text `texts.finished` was handed (made
   * here from the bytes unless they were taken: then it must be given, else this throws), and
   * its records' keys and places. Write it once the file holds that text.
   */
  encode(sha256?: string): Uint8Array;
  /**
   * Where the records lie in the previous text (the bytes `previous` gave, checked against the
   * index) and in the text just made, and which previous record each reused one is: for reading
   * the previous manifest against the new one (`parseManifestAgainst`). Undefined when nothing
   * was reused, or the index does not hold every record of each array of the previous text (a
   * record without a key is not indexed: its neighbours' places would be misread).
   */
  places(): RecordPlaces | undefined;
  /**
   * The keys `texts.known` made of this compile's records, not made again (the render's module
   * keys, ADR 0017r). Holds the same strings as the index to write: no copy of them.
   */
  keys: RecordKeys;
  /** Per array of {@link KEYED_ARRAYS}, `[start, end)` of each record in the text made, flat (a splice takes a record's text from them, ADR 0022). */
  placed(): ReadonlyArray<readonly number[]>;
}

/**
 * One compile's record cache: the index discover read (`read`, of {@link RECORD_INDEX_KEY} in
 * {@link MANIFEST_CACHE_FOLDER}) and `previous`, discover's reader of the output folder's manifest
 * bytes (undefined when there is none or it cannot be read), with their sha256 (hex) when discover's
 * read-ahead thread made it (ADR 0017w; else it is made here), called only when the index is usable.
 * A record is taken from those bytes only when they hash to the index's sha256 and its key is the
 * index's; a damaged, foreign or unreadable index is one CA1952 note and gives nothing; a manifest
 * that is not the one indexed (changed, edited by hand, missing) gives nothing, without a note.
 * `fileKeys`: the parse cache's key of each contract file, by project-relative path
 * (`ParseCache.keys`), for the keys of Asset records made of a dataset ({@link originKey}); an
 * Asset record whose producer's file has none is keyed by value ({@link recordKey}).
 */
export function openRecordCache(
  compiler: { name: string; version: string },
  read: CacheEntriesRead,
  previous: () => { bytes: Uint8Array; sha256?: string } | undefined,
  fileKeys: ReadonlyMap<string, string> = new Map(),
): RecordCache {
  const writer = recordCacheWriter(compiler.name, compiler.version);
  const notes: Diagnostic[] = [];
  const found = decodeIndex(read, writer);
  if (found && "problem" in found) notes.push(createDiagnostic(Diagnostics.RecordIndexIgnored, { problem: found.problem, detail: found.detail }, { file: RECORD_INDEX_PATH, line: 1, column: 1 }));
  // The previous text's records by key, only once its bytes are the text the index was written for.
  const stored = new Map<string, number>();
  let bytes: Buffer | undefined;
  if (found && !("problem" in found)) {
    const read = previous();
    const file = read?.bytes;
    if (file && (read.sha256 ?? createHash("sha256").update(file).digest("hex")) === found.digest && found.spans.every((offset) => offset <= file.byteLength)) {
      bytes = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
      found.keys.forEach((key, i) => stored.set(key, i));
    }
  }
  const spans = found && !("problem" in found) ? found.spans : new Uint32Array(0);
  // Where each array's records start among the index's: a record of another array is never shared.
  const firsts: number[] = [];
  if (found && !("problem" in found)) found.counts.reduce((at, n) => (firsts.push(at), at + n), 0);
  const counted = found && !("problem" in found) ? found.counts : [];
  // Every record of the previous text is in the index: its places can stand for the text's records.
  const complete = found !== undefined && !("problem" in found) && found.totals.every((n, k) => n === found.counts[k]);
  // What Asset records are made of (`madeOf`), until the manifest stage is finished.
  const origins = new Map<object, DatasetOrigin>();
  // Per array of this text: each record's place, and the previous record it was taken from (-1: made).
  const current = KEYED_ARRAYS.map(() => ({ places: [] as number[], shared: [] as number[], keyed: 0 }));
  // The next index, in the order the records were placed.
  const keys: string[] = [];
  const places: number[] = [];
  // The key of the record `known` was last asked about, for `placed`.
  let asked: string | undefined;
  // Every record's key, by array and index (`keys` of the cache).
  const keyed = { assets: [] as Array<string | undefined>, dags: [] as Array<string | undefined> };
  const counts = { reused: 0, made: 0 };
  // The new text's bytes (`finished`), until hashed or handed on (`take`).
  let made: Uint8Array | undefined;
  let handed = false;
  return {
    notes,
    counts,
    texts: {
      fields: KEYED_ARRAYS,
      madeOf(record, origin) {
        origins.set(record, origin);
      },
      known(field, index, record) {
        const origin = field === "assets" && record !== null && typeof record === "object" ? origins.get(record) : undefined;
        const fileKey = origin && fileKeys.get(origin.path);
        asked = (fileKey !== undefined && originKey(record as Record<string, unknown>, origin!, fileKey)) || recordKey(record);
        const at = asked === undefined ? undefined : stored.get(asked);
        const array = KEYED_ARRAYS.indexOf(field as (typeof KEYED_ARRAYS)[number]);
        if (array >= 0) keyed[KEYED_ARRAYS[array]!][index] = asked;
        // A record's text starts with `{` and ends with `}`: anything else is not what was indexed.
        if (at === undefined || bytes![spans[2 * at]!] !== 0x7b || bytes![spans[2 * at + 1]! - 1] !== 0x7d) {
          counts.made++;
          current[array]?.shared.push(-1);
          return undefined;
        }
        counts.reused++;
        // The previous record of the same array, by its index there (one of another array: none).
        const first = firsts[array];
        current[array]?.shared.push(first !== undefined && at >= first && at < first + counted[array]! ? at - first : -1);
        return { bytes: bytes!, start: spans[2 * at]!, end: spans[2 * at + 1]! };
      },
      placed(field, _index, start, end) {
        const array = current[KEYED_ARRAYS.indexOf(field as (typeof KEYED_ARRAYS)[number])];
        array?.places.push(start, end);
        if (asked === undefined) return;
        if (array) array.keyed++;
        keys.push(asked);
        places.push(start, end);
        asked = undefined;
      },
      finished(text) {
        // The previous text is not held past the manifest stage.
        bytes = undefined;
        stored.clear();
        origins.clear();
        // The text's bytes are the ones the write puts on the disk (ASCII: UTF-8 is the same),
        // hashed when the index is encoded unless they were handed on (`take`).
        made = text;
      },
    },
    keys: keyed,
    placed: () => current.map((c) => c.places),
    take() {
      const text = made;
      made = undefined;
      handed = text !== undefined;
      return text;
    },
    encode(sha256) {
      if (sha256 === undefined && handed) throw new Error("openRecordCache: the text's bytes were taken, and encode was not told their sha256");
      const digest = sha256 ?? createHash("sha256").update(made ?? new Uint8Array(0)).digest("hex");
      const payload: IndexPayload = { digest, keys, spans: Uint32Array.from(places), counts: current.map((c) => c.keyed), totals: current.map((c) => c.places.length / 2) };
      return encodeCacheEntry(RECORD_INDEX_KEY, writer, payload);
    },
    places() {
      if (counts.reused === 0 || !complete || firsts.length !== KEYED_ARRAYS.length) return undefined;
      const out: Partial<RecordPlaces> = {};
      for (const [k, key] of KEYED_ARRAYS.entries()) {
        out[key] = { previous: spans.subarray(2 * firsts[k]!, 2 * (firsts[k]! + counted[k]!)), current: current[k]!.places, shared: current[k]!.shared };
      }
      return out as RecordPlaces;
    },
  };
}

/**
 * The index read (of {@link RECORD_INDEX_KEY}) when it is usable and lists every record of its
 * manifest (`totals` equal to `counts`: where a record's text lies is then known by its array and
 * index), else undefined.
 */
export function readCompleteIndex(compiler: { name: string; version: string }, read: CacheEntriesRead): IndexPayload | undefined {
  const found = decodeIndex(read, recordCacheWriter(compiler.name, compiler.version));
  return found && !("problem" in found) && found.totals.every((n, k) => n === found.counts[k]) ? found : undefined;
}

/** One record a splice puts in place of the previous one: its array (of {@link KEYED_ARRAYS}) and index, its key, and its text's bytes. */
export interface RecordReplacement {
  array: number;
  index: number;
  key: string;
  text: Uint8Array;
}

/**
 * The place of record `i` of array `array` (of {@link KEYED_ARRAYS}) in an index's `keys` (its
 * span is `spans[2 * place]` to `spans[2 * place + 1]`), or -1 when the index holds no such record.
 */
export function recordPlace(index: Pick<IndexPayload, "counts">, array: number, i: number): number {
  if (array < 0 || array >= KEYED_ARRAYS.length || i < 0 || i >= index.counts[array]!) return -1;
  return KEYED_ARRAYS.slice(0, array).reduce((at, _, k) => at + index.counts[k]!, 0) + i;
}

/**
 * The manifest `bytes` (the text `index` describes, {@link readCompleteIndex}) as the pieces of the
 * new text, in order (the previous bytes' around the replaced records: no copy of them), with the
 * records `replaced` in place of the previous ones at the same array and index (ADR 0022), and the index
 * of the new text: every other record's span moved by what the replacements before it grew or
 * shrank. Undefined when a replacement's record is not in the index or its span is not a record's
 * (`{` … `}`). The new index's `digest` is the caller's to set once the file is written.
 */
export function spliceRecords(index: IndexPayload, bytes: Uint8Array, replaced: readonly RecordReplacement[]): { pieces: Uint8Array[]; index: IndexPayload } | undefined {
  const positions = replaced.map((r) => recordPlace(index, r.array, r.index));
  if (positions.some((p) => p < 0 || bytes[index.spans[2 * p]!] !== 0x7b || bytes[index.spans[2 * p + 1]! - 1] !== 0x7d)) return undefined;
  const order = replaced.map((_, i) => i).sort((a, b) => positions[a]! - positions[b]!);
  const keys = [...index.keys];
  const spans = new Uint32Array(index.spans.length);
  const pieces: Uint8Array[] = [];
  let from = 0;
  let delta = 0;
  let next = 0;
  for (let p = 0; p < keys.length; p++) {
    const start = index.spans[2 * p]!;
    const end = index.spans[2 * p + 1]!;
    const r = next < order.length && positions[order[next]!] === p ? replaced[order[next++]!] : undefined;
    if (!r) {
      spans[2 * p] = start + delta;
      spans[2 * p + 1] = end + delta;
      continue;
    }
    pieces.push(bytes.subarray(from, start), r.text);
    from = end;
    spans[2 * p] = start + delta;
    delta += r.text.byteLength - (end - start);
    spans[2 * p + 1] = start + delta + (end - start);
    keys[p] = r.key;
  }
  if (next !== order.length) return undefined;
  pieces.push(bytes.subarray(from));
  return { pieces, index: { ...index, keys, spans } };
}

/** The bytes of an index entry holding `payload`. */
export function encodeRecordIndex(compiler: { name: string; version: string }, payload: IndexPayload): Uint8Array {
  return encodeCacheEntry(RECORD_INDEX_KEY, recordCacheWriter(compiler.name, compiler.version), payload);
}
