import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import v8 from "node:v8";
import { describe, expect, it } from "vitest";
import { usesCache } from "../../compiler/cli.js";
import { MAX_CACHE_ENTRY_BYTES, openCacheReader, readCacheEntries } from "../../compiler/discover/readCache.js";
import { CACHE_FORMAT, CACHE_MAGIC, cacheKey, decodeCacheEntry, encodeCacheEntry } from "../../compiler/support/cacheEntry.js";
import { openCacheWrite, writeCacheEntries } from "../../compiler/write/writeCache.js";
import { exitedProcessId } from "./helpers.js";

// The incremental cache's store (ADR 0017c): entry bytes, reading and writing them. The cache in a
// compile is tested in test/property/incrementalCache.test.ts.

const COMPILER = "contract-assets 9.9.9";
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const value = { diagnostics: [{ code: "CA2009", related: [] }], document: { value: { id: "a.b", n: [1, -0, 2.5], s: "é\u0000" }, ranges: Int32Array.from([0, 4, -1, 7]), lineStarts: [0, 10] } };
const KEY = cacheKey("config-hash", "contracts/a.yaml", bytes("id: a.b\n"));

/** An entry whose header says something else: the bytes a compiler of another version would write. */
function withHeader(change: Record<string, unknown>): Uint8Array {
  const entry = Buffer.from(encodeCacheEntry(KEY, COMPILER, value));
  const start = CACHE_MAGIC.length + 4;
  const length = entry.readUInt32LE(CACHE_MAGIC.length);
  const header = { ...JSON.parse(entry.subarray(start, start + length).toString("utf8")), ...change };
  const json = Buffer.from(JSON.stringify(header));
  const size = Buffer.alloc(4);
  size.writeUInt32LE(json.byteLength);
  return Buffer.concat([entry.subarray(0, CACHE_MAGIC.length), size, json, entry.subarray(start + length)]);
}

describe("a cache entry", () => {
  it("gives back the value it holds, typed arrays and -0 included", () => {
    const decoded = decodeCacheEntry(encodeCacheEntry(KEY, COMPILER, value), { key: KEY, compiler: COMPILER });
    expect(decoded).toEqual({ value });
    const back = (decoded as { value: typeof value }).value;
    expect(back.document.ranges).toBeInstanceOf(Int32Array);
    expect(Object.is(back.document.value.n[1], -0)).toBe(true);
  });

  it("is damaged when cut short at any point", () => {
    const entry = encodeCacheEntry(KEY, COMPILER, value);
    for (const cut of [0, 5, CACHE_MAGIC.length + 2, CACHE_MAGIC.length + 10, entry.byteLength - 40, entry.byteLength - 1]) {
      const decoded = decodeCacheEntry(entry.subarray(0, cut), { key: KEY, compiler: COMPILER });
      expect(decoded, `cut at ${cut}`).toMatchObject({ problem: "damaged" });
    }
  });

  it("is damaged when it is garbage, or its payload was altered, even to a valid serialisation", () => {
    const expectation = { key: KEY, compiler: COMPILER };
    expect(decodeCacheEntry(bytes("hello, world"), expectation)).toEqual({ problem: "damaged", detail: "not a cache entry" });
    expect(decodeCacheEntry(Buffer.concat([Buffer.from(CACHE_MAGIC), Buffer.from([5, 0, 0, 0]), Buffer.from("{{{{{")]), expectation)).toEqual({ problem: "damaged", detail: "its header is not JSON" });
    const entry = Buffer.from(encodeCacheEntry(KEY, COMPILER, value));
    entry[entry.byteLength - 3] ^= 0xff;
    expect(decodeCacheEntry(entry, expectation)).toEqual({ problem: "damaged", detail: "its content does not match its sha256" });
    // Another value's payload of the same size under this header: caught by the hash, never deserialised.
    const other = v8.serialize({ ...value, diagnostics: [{ code: "CA2008", related: [] }] });
    const original = Buffer.from(encodeCacheEntry(KEY, COMPILER, value));
    const swapped = Buffer.concat([original.subarray(0, original.byteLength - other.byteLength), other]);
    expect(decodeCacheEntry(swapped, expectation)).toMatchObject({ problem: "damaged" });
    expect(decodeCacheEntry(Buffer.concat([original, Buffer.from([0])]), expectation)).toEqual({ problem: "damaged", detail: "longer than its header says" });
  });

  it("is damaged under another key, and foreign from another compiler, cache format or V8", () => {
    const entry = encodeCacheEntry(KEY, COMPILER, value);
    expect(decodeCacheEntry(entry, { key: cacheKey("config-hash", "contracts/b.yaml", bytes("id: a.b\n")), compiler: COMPILER })).toEqual({ problem: "damaged", detail: "it was written under another key" });
    expect(decodeCacheEntry(entry, { key: KEY, compiler: "contract-assets 9.9.10" })).toEqual({ problem: "foreign", detail: 'written by "contract-assets 9.9.9", not "contract-assets 9.9.10"' });
    expect(decodeCacheEntry(withHeader({ format: 0 }), { key: KEY, compiler: COMPILER })).toEqual({ problem: "foreign", detail: `cache format 0, not ${CACHE_FORMAT}` });
    expect(decodeCacheEntry(withHeader({ v8: "1.0.0" }), { key: KEY, compiler: COMPILER })).toMatchObject({ problem: "foreign", detail: expect.stringContaining('V8 "1.0.0"') });
    // The rewritten header itself is sound: only the field changed decides.
    expect(decodeCacheEntry(withHeader({}), { key: KEY, compiler: COMPILER })).toEqual({ value });
  });

  it("has a key that changes with the context, the path and the bytes, and never runs two parts together", () => {
    const keys = [
      cacheKey("c1", "contracts/a.yaml", bytes("x")),
      cacheKey("c2", "contracts/a.yaml", bytes("x")),
      cacheKey("c1", "contracts/b.yaml", bytes("x")),
      cacheKey("c1", "contracts/a.yaml", bytes("y")),
      cacheKey("c1", "ab", bytes("c")),
      cacheKey("c1", "a", bytes("bc")),
    ];
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(cacheKey("c1", "contracts/a.yaml", bytes("x"))).toBe(keys[0]);
  });
});

describe("the cache folder", () => {
  const folder = ".contract-assets/cache/parse";
  const top = ".contract-assets/cache";

  // Entry names are sha256 hex keys (cacheKey); the pruning touches nothing else.
  const [A, B, C, D] = ["a", "b", "c", "d"].map((c) => c.repeat(64)) as [string, string, string, string];

  it("is written atomically, ignores itself in Git, and keeps only the entries in use", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-cache-"));
    const first = writeCacheEntries(root, top, folder, new Map([[A, bytes("A")], [B, bytes("B")]]), new Set());
    expect(first).toEqual({ value: { written: 2, removed: 0 }, diagnostics: [] });
    expect(fs.readFileSync(path.join(root, top, ".gitignore"), "utf8")).toMatch(/^\*$/m);
    expect(fs.readFileSync(path.join(root, top, "CACHEDIR.TAG"), "utf8")).toMatch(/^Signature: 8a477f597d28d172789f06886806bc55\n/);
    // A is still in use, B is not, C is new; a temporary file of this process is never left.
    const second = writeCacheEntries(root, top, folder, new Map([[C, bytes("C")]]), new Set([A]));
    expect(second.value).toEqual({ written: 1, removed: 1 });
    expect(fs.readdirSync(path.join(root, folder)).sort()).toEqual([`${A}.bin`, `${C}.bin`]);
    const read = readCacheEntries(root, folder, [A, B, C]);
    expect([...read.found].map(([k, v]) => [k, Buffer.from(v).toString()])).toEqual([[A, "A"], [C, "C"]]);
    expect(read.unreadable.size).toBe(0);
  });

  it("reads nothing from a project without one, and names an entry it cannot read (a folder, a FIFO) without blocking", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-cache-"));
    expect(readCacheEntries(root, folder, [A])).toEqual({ found: new Map(), unreadable: new Map() });
    fs.mkdirSync(path.join(root, folder, `${A}.bin`), { recursive: true });
    // A FIFO with no writer: reading it would block for ever.
    expect(spawnSync("mkfifo", [path.join(root, folder, `${B}.bin`)]).status).toBe(0);
    expect(readCacheEntries(root, folder, [A, B]).unreadable).toEqual(new Map([[A, "a folder"], [B, "not a regular file"]]));
  });

  it("reads an entry with one open that follows no link, and refuses a link (dangling or not), a FIFO, a folder and a file too large, as it did with lstat", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-cache-"));
    writeCacheEntries(root, top, folder, new Map([[A, bytes("A entry")], [B, bytes("B")]]), new Set());
    const dir = path.join(root, folder);
    // A link to a real entry of the cache, and one to nothing: neither is read through.
    fs.symlinkSync(path.join(dir, `${A}.bin`), path.join(dir, `${C}.bin`));
    fs.symlinkSync(path.join(dir, "nowhere.bin"), path.join(dir, `${D}.bin`));
    const [E, F, G] = ["e", "f", "0"].map((c) => c.repeat(64)) as [string, string, string];
    expect(spawnSync("mkfifo", [path.join(dir, `${E}.bin`)]).status).toBe(0);
    fs.mkdirSync(path.join(dir, `${F}.bin`));
    // Sparse: one byte over the limit without writing 64 MiB.
    fs.writeFileSync(path.join(dir, `${G}.bin`), "");
    fs.truncateSync(path.join(dir, `${G}.bin`), MAX_CACHE_ENTRY_BYTES + 1);
    const missing = "9".repeat(64);
    const read = readCacheEntries(root, folder, [A, B, C, D, E, F, G, missing]);
    expect(read.unreadable).toEqual(new Map([[C, "a symbolic link"], [D, "a symbolic link"], [E, "not a regular file"], [F, "a folder"], [G, "too large"]]));
    expect([...read.found].map(([k, v]) => [k, Buffer.from(v).toString()])).toEqual([[A, "A entry"], [B, "B"]]);
    // Each entry's bytes are its own buffer, not one reused (v8.deserialize's typed arrays are views of them).
    const reader = openCacheReader(root, folder);
    const first = reader(A) as { bytes: Uint8Array };
    const second = reader(B) as { bytes: Uint8Array };
    expect(first.bytes.buffer).not.toBe(second.bytes.buffer);
    expect(Buffer.from(first.bytes).toString()).toBe("A entry");
    // An entry is exactly its file's bytes, whatever its size (here over one page of the read).
    const large = Buffer.alloc(200_000, 7);
    writeCacheEntries(root, top, folder, new Map([[A, large]]), new Set([B]));
    expect(Buffer.from((reader(A) as { bytes: Uint8Array }).bytes).equals(large)).toBe(true);
  });

  it("prunes only its own entry names, each on its own, and never follows a symbolic link out of the project", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-cache-"));
    writeCacheEntries(root, top, folder, new Map([[A, bytes("A")], [B, bytes("B")], [C, bytes("C")]]), new Set());
    // A folder where an unused entry's name is, and a file that is not an entry name: neither stops the rest.
    fs.rmSync(path.join(root, folder, `${A}.bin`));
    fs.mkdirSync(path.join(root, folder, `${A}.bin`));
    fs.writeFileSync(path.join(root, folder, "notes.bin"), "the user's\n");
    const pruned = writeCacheEntries(root, top, folder, new Map(), new Set([C]));
    expect(pruned.value).toEqual({ written: 0, removed: 1 });
    expect(pruned.diagnostics).toEqual([]);
    expect(fs.readdirSync(path.join(root, folder)).sort()).toEqual([`${A}.bin`, `${C}.bin`, "notes.bin"]);
    // Pruned by the types readdir gives (ADR 0017q): a link named like an unused entry is not a
    // regular file, so neither it nor what it points at is removed. A temporary of a compile still
    // writing (its process running: this one's parent) is kept unless it is ten minutes old and
    // more; one of a compile that stopped (its process gone) is removed at once.
    const outside = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "ca-outside-")), "kept.txt");
    fs.writeFileSync(outside, "not the cache's\n");
    fs.symlinkSync(outside, path.join(root, folder, `${D}.bin`));
    const running = process.ppid;
    const [old, young, stopped] = [`${B}.bin.${running}.1.tmp`, `${B}.bin.${running}.2.tmp`, `${B}.bin.${exitedProcessId()}.3.tmp`].map((n) => path.join(root, folder, n)) as [string, string, string];
    fs.writeFileSync(old, "old");
    fs.writeFileSync(young, "young");
    fs.writeFileSync(stopped, "stopped");
    fs.utimesSync(old, new Date(Date.now() - 11 * 60_000), new Date(Date.now() - 11 * 60_000));
    // An index's temporaries (its key a word, `records`, `modules`) by the same rule; a future
    // modification time as far off as an old one is as stale.
    const [indexStopped, indexRunning, future] = [`records.bin.${exitedProcessId()}.4.tmp`, `modules.bin.${running}.5.tmp`, `${B}.bin.${running}.6.tmp`].map((n) => path.join(root, folder, n)) as [string, string, string];
    for (const file of [indexStopped, indexRunning, future]) fs.writeFileSync(file, "index");
    fs.utimesSync(future, new Date(Date.now() + 11 * 60_000), new Date(Date.now() + 11 * 60_000));
    const again = writeCacheEntries(root, top, folder, new Map(), new Set([C]));
    expect(again).toEqual({ value: { written: 0, removed: 0 }, diagnostics: [] });
    expect(fs.readdirSync(path.join(root, folder)).sort()).toEqual([`${A}.bin`, `${B}.bin.${running}.2.tmp`, `${C}.bin`, `${D}.bin`, `modules.bin.${running}.5.tmp`, "notes.bin"]);
    expect(fs.readFileSync(outside, "utf8")).toBe("not the cache's\n");
    fs.rmSync(path.join(root, folder, `${D}.bin`));

    // The parse folder a link to elsewhere: nothing is read through it, written into it or removed from it.
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), "ca-elsewhere-"));
    fs.writeFileSync(path.join(elsewhere, `${D}.bin`), "not the cache's\n");
    const linked = fs.mkdtempSync(path.join(os.tmpdir(), "ca-cache-"));
    fs.mkdirSync(path.join(linked, top), { recursive: true });
    fs.symlinkSync(elsewhere, path.join(linked, folder));
    expect(readCacheEntries(linked, folder, [D]).found.size).toBe(0);
    const refused = writeCacheEntries(linked, top, folder, new Map([[A, bytes("A")]]), new Set());
    expect(refused.value.written).toBe(0);
    expect(refused.diagnostics.map((d) => d.code)).toEqual(["CA9950"]);
    expect(refused.diagnostics[0]!.message).toMatch(/\.contract-assets\/cache\/parse is a symbolic link/);
    expect(fs.readdirSync(elsewhere)).toEqual([`${D}.bin`]);

    // A dangling link where the cache's .gitignore goes is not written through.
    const dangling = fs.mkdtempSync(path.join(os.tmpdir(), "ca-cache-"));
    const target = path.join(elsewhere, "written-through.txt");
    fs.mkdirSync(path.join(dangling, top), { recursive: true });
    fs.symlinkSync(target, path.join(dangling, top, ".gitignore"));
    expect(writeCacheEntries(dangling, top, folder, new Map([[A, bytes("A")]]), new Set()).value.written).toBe(1);
    expect(fs.existsSync(target)).toBe(false);
  });

  it("is written entry by entry as a compile makes them, and names the first failure in path order whatever order they came in", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-cache-"));
    writeCacheEntries(root, top, folder, new Map([[D, bytes("D")]]), new Set());
    const write = openCacheWrite(root, top, folder);
    // Nothing is held for the end: each entry is on the disk once added (ADR 0017m).
    write.add(B, bytes("B"));
    expect(fs.readFileSync(path.join(root, folder, `${B}.bin`), "utf8")).toBe("B");
    expect(fs.readdirSync(path.join(root, folder)).sort()).toEqual([`${B}.bin`, `${D}.bin`]);
    // Folders where C's and A's entries go: added C first, A is named (path order), with one more.
    fs.mkdirSync(path.join(root, folder, `${C}.bin`));
    fs.mkdirSync(path.join(root, folder, `${A}.bin`));
    write.add(C, bytes("C"));
    write.add(A, bytes("A"));
    const finished = write.finish(new Set());
    // D was not used by this compile: removed; the folders in the way are not entries.
    expect(finished.value).toEqual({ written: 1, removed: 1 });
    expect(finished.diagnostics.map((d) => [d.code, d.location?.file])).toEqual([["CA9950", `${folder}/${A}.bin`]]);
    expect(finished.diagnostics[0]!.message).toMatch(/\(and 1 more\)/);
    expect(fs.readdirSync(path.join(root, folder)).filter((f) => !f.endsWith(".tmp")).sort()).toEqual([`${A}.bin`, `${B}.bin`, `${C}.bin`]);
    expect(() => write.add(D, bytes("D"))).toThrow(/after finish/);
  });

  it("that cannot be written is one CA9950 note, never a throw", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-cache-"));
    fs.writeFileSync(path.join(root, ".contract-assets"), "a file where the folder goes\n");
    const result = writeCacheEntries(root, top, folder, new Map([[A, bytes("A")], [B, bytes("B")]]), new Set());
    expect(result.value.written).toBe(0);
    expect(result.diagnostics.map((d) => [d.code, d.severity, d.location?.file])).toEqual([["CA9950", "info", folder]]);
    expect(result.diagnostics[0]!.message).toMatch(/^cannot write the incremental cache.s ".contract-assets\/cache\/parse": (ENOTDIR|EEXIST)/);
    // Fed one at a time: the folder is tried once, every entry dropped, the same one note.
    const write = openCacheWrite(root, top, folder);
    write.add(A, bytes("A"));
    write.add(B, bytes("B"));
    expect(write.finish(new Set()).diagnostics.map((d) => [d.code, d.location?.file, d.message.includes("more")])).toEqual([["CA9950", folder, false]]);
  });
});

describe("whether a command uses the cache", () => {
  it("follows --cache and --no-cache, else is on except under CI", () => {
    expect(usesCache({}, {})).toBe(true);
    expect(usesCache({}, { CI: "true" })).toBe(false);
    expect(usesCache({}, { CI: "1" })).toBe(false);
    expect(usesCache({}, { CI: "false" })).toBe(true);
    expect(usesCache({}, { CI: "0" })).toBe(true);
    expect(usesCache({ cache: true }, { CI: "true" })).toBe(true);
    expect(usesCache({ cache: false }, {})).toBe(false);
  });
});
