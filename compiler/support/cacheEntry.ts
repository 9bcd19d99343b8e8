import { createHash } from "node:crypto";
import v8 from "node:v8";

/**
 * One entry of the incremental cache (ADR 0017c) as bytes, and back. Pure: the file system is
 * discover's (reading) and write's (writing).
 *
 * Layout: the ASCII line {@link CACHE_MAGIC}, a 4-byte little-endian length, that many bytes of
 * header JSON ({@link CacheHeader}), then the payload, `v8.serialize` of a structured-clone-safe
 * value. The header names what made the entry (cache format, compiler, V8 version: V8's
 * serialisation format is V8's own), the key the entry was written under, and the payload's size
 * and sha256. {@link decodeCacheEntry} trusts nothing it has not checked: a payload whose hash
 * differs is never deserialised.
 */

/** The first bytes of every entry: a file that does not start with them is not one. */
export const CACHE_MAGIC = "contract-assets cache\n";

/** Bumped whenever the layout or the meaning of a payload changes. */
export const CACHE_FORMAT = 2;

/** What an entry says about itself. */
export interface CacheHeader {
  format: number;
  /** `<name> <version>` of the compiler that wrote it. */
  compiler: string;
  /** `process.versions.v8` of the process that wrote it. */
  v8: string;
  /** The key the entry was written under (the file is named after it). */
  key: string;
  payloadBytes: number;
  payloadSha256: string;
}

/** What a reader expects: the entry's key and the compiler reading it. */
export interface CacheExpectation {
  key: string;
  compiler: string;
}

/** A decoded entry, or why it cannot be used: `damaged` (not an entry, cut short, altered) or `foreign` (another compiler, format or V8). */
export type DecodedEntry = { value: unknown } | { problem: "damaged" | "foreign"; detail: string };

const MAGIC = Buffer.from(CACHE_MAGIC, "latin1");

/**
 * The key of one input file's entry: sha256 over the cache format, the context (a hash of what
 * else the entry depends on, such as the orchestration config), the file's project-relative path
 * and its bytes, each part length-prefixed so no two inputs run together. Hex, 64 characters.
 */
export function cacheKey(context: string, path: string, bytes: Uint8Array): string {
  const hash = createHash("sha256");
  for (const part of [String(CACHE_FORMAT), context, path]) hash.update(`${Buffer.byteLength(part)}:${part}\0`);
  hash.update(`${bytes.byteLength}:`);
  hash.update(bytes);
  return hash.digest("hex");
}

/** The bytes of an entry holding `value` under `key`, written by `compiler` (`<name> <version>`). */
export function encodeCacheEntry(key: string, compiler: string, value: unknown): Uint8Array {
  const payload = v8.serialize(value);
  const header: CacheHeader = {
    format: CACHE_FORMAT,
    compiler,
    v8: process.versions.v8,
    key,
    payloadBytes: payload.byteLength,
    payloadSha256: createHash("sha256").update(payload).digest("hex"),
  };
  const json = Buffer.from(JSON.stringify(header), "utf8");
  const length = Buffer.alloc(4);
  length.writeUInt32LE(json.byteLength, 0);
  return Buffer.concat([MAGIC, length, json, payload]);
}

/** An entry whose header and payload hash were checked ({@link checkCacheEntry}): its payload, not yet deserialised, or why it cannot be used. */
export type CheckedEntry = { payload: Uint8Array } | { problem: "damaged" | "foreign"; detail: string };

/**
 * Reads an entry's bytes. Never throws: what is not an entry, is cut short or altered (its
 * payload's sha256 or size differs, or it names another key) is `damaged`; an entry of another
 * cache format, compiler version or V8 version is `foreign`. Only a payload whose hash matches is
 * deserialised. {@link checkCacheEntry} then {@link readPayload}.
 */
export function decodeCacheEntry(bytes: Uint8Array, expected: CacheExpectation): DecodedEntry {
  const checked = checkCacheEntry(bytes, expected);
  return "payload" in checked ? readPayload(checked.payload) : checked;
}

/**
 * {@link decodeCacheEntry}'s checks, everything short of `v8.deserialize`: the magic line, the
 * header (format, compiler, V8, key, payload size) and the payload's sha256. Pure and
 * thread-agnostic, so discover's reader thread runs it on an entry before the calling thread
 * deserialises it (ADR 0017x). The payload is a view of `bytes`.
 */
export function checkCacheEntry(bytes: Uint8Array, expected: CacheExpectation): CheckedEntry {
  const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const prefix = Math.min(data.byteLength, MAGIC.byteLength);
  if (!data.subarray(0, prefix).equals(MAGIC.subarray(0, prefix))) return { problem: "damaged", detail: "not a cache entry" };
  if (data.byteLength < MAGIC.byteLength + 4) return { problem: "damaged", detail: "cut short" };
  const headerLength = data.readUInt32LE(MAGIC.byteLength);
  const headerStart = MAGIC.byteLength + 4;
  if (headerStart + headerLength > data.byteLength) return { problem: "damaged", detail: "cut short" };
  let header: Partial<CacheHeader>;
  try {
    header = JSON.parse(data.subarray(headerStart, headerStart + headerLength).toString("utf8")) as Partial<CacheHeader>;
  } catch {
    return { problem: "damaged", detail: "its header is not JSON" };
  }
  if (typeof header !== "object" || header === null) return { problem: "damaged", detail: "its header is not an object" };
  if (header.format !== CACHE_FORMAT) return { problem: "foreign", detail: `cache format ${JSON.stringify(header.format)}, not ${CACHE_FORMAT}` };
  if (header.compiler !== expected.compiler) return { problem: "foreign", detail: `written by ${JSON.stringify(header.compiler)}, not ${JSON.stringify(expected.compiler)}` };
  if (header.v8 !== process.versions.v8) return { problem: "foreign", detail: `written by V8 ${JSON.stringify(header.v8)}, not ${process.versions.v8}` };
  if (header.key !== expected.key) return { problem: "damaged", detail: "it was written under another key" };
  const payload = data.subarray(headerStart + headerLength);
  if (payload.byteLength !== header.payloadBytes) return { problem: "damaged", detail: payload.byteLength < Number(header.payloadBytes) ? "cut short" : "longer than its header says" };
  if (createHash("sha256").update(payload).digest("hex") !== header.payloadSha256) return { problem: "damaged", detail: "its content does not match its sha256" };
  return { payload };
}

/**
 * `v8.deserialize` of a payload {@link checkCacheEntry} passed; `damaged` when it cannot be read
 * back. Typed arrays in the value are views of `payload`'s buffer (Node's deserialiser), so a
 * caller copies what it keeps.
 */
export function readPayload(payload: Uint8Array): DecodedEntry {
  try {
    return { value: v8.deserialize(payload) };
  } catch (error) {
    return { problem: "damaged", detail: `cannot be read back (${error instanceof Error ? error.message : String(error)})` };
  }
}

/**
 * The entry of `expected.key` among entries read all at once (discover's `readCacheEntries`: bytes
 * by key, and why others could not be read), decoded ({@link decodeCacheEntry}): its value, why it
 * cannot be used (`unreadable` with the reason the read gave), or undefined when there is none.
 * The one entry of an index (the render stage's `modules.bin`, the manifest stage's `records.bin`).
 */
export function decodeEntryRead(
  read: { found: ReadonlyMap<string, Uint8Array>; unreadable: ReadonlyMap<string, string> },
  expected: CacheExpectation,
): DecodedEntry | { problem: "unreadable"; detail: string } | undefined {
  const unreadable = read.unreadable.get(expected.key);
  if (unreadable !== undefined) return { problem: "unreadable", detail: unreadable };
  const bytes = read.found.get(expected.key);
  return bytes === undefined ? undefined : decodeCacheEntry(bytes, expected);
}
