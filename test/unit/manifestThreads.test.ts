import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultLayout, discoverProject } from "../../compiler/discover/discoverProject.js";
import { READ_AHEAD_MIN_BYTES, startManifestReadAhead } from "../../compiler/discover/manifestReadAhead.js";
import { RECORD_INDEX_PATH } from "../../compiler/manifest/recordCache.js";
import { STAGE_THREAD_MIN_BYTES } from "../../compiler/write/stageThread.js";
import { openWrite, type WriteOptions } from "../../compiler/write/writeOutputs.js";
import { compileRoot, corpusCopies, snapshot, STALLING_THREAD, temporaryRoots, TEST_HEADER, THROWING_THREAD, tree } from "./helpers.js";

// The manifest's bytes go through a thread of their own (ADR 0017w): the write stages and hashes
// them in one, discover reads and hashes the previous manifest in another. What is written, the
// digest and every failure are the same as without the threads, and a thread that cannot start,
// throws or stalls is done without.

const { root, adopt } = temporaryRoots("ca-threads-");
const HEADER = TEST_HEADER;
const THROWS = THROWING_THREAD;
const STALLS = STALLING_THREAD;
const sha256 = (bytes: Uint8Array | string): string => createHash("sha256").update(bytes).digest("hex");
/** A file name too long for the file system once the temporary's suffix is added (NAME_MAX is 255 bytes). */
const TOO_LONG = `generated/${"m".repeat(245)}.json`;

/** An ASCII manifest-like text of about `kib` KiB, and its bytes in a buffer of their own (as `canonicalJsonAscii` makes them). */
function manifestText(kib: number, seed = 1): { text: string; bytes: () => Uint8Array } {
  const text = `{\n  "records": [${Array.from({ length: kib * 16 }, (_, i) => `\n    {"n": ${i * seed}, "pad": "${"p".repeat(40)}"}`).join(",")}\n  ]\n}\n`;
  return { text, bytes: () => Buffer.from(Buffer.from(text, "latin1")) };
}

/** `count` modules and the manifest (with its bytes), written by one write with `options`. */
function write(dir: string, manifest: { text: string; bytes: () => Uint8Array }, options: Partial<WriteOptions> = {}, extra: Array<[string, string]> = []) {
  const w = openWrite(defaultLayout(dir), { check: false, ...options });
  const bytes = manifest.bytes();
  w.add("generated/manifest.json", manifest.text, bytes);
  for (let i = 0; i < 30; i++) w.add(`generated/dags/m${i}.py`, `${HEADER}dag_id = "m${i}"\n`);
  for (const [relative, text] of extra) w.add(relative, text);
  const result = w.finish();
  return { result, digest: w.digestOf("generated/manifest.json"), detached: bytes.byteLength === 0, plain: w.digestOf("generated/dags/m0.py") };
}

const THREAD: WriteOptions["thread"] = { minBytes: 0 };

describe("the write's staging thread", () => {
  it("writes the same bytes as the calling thread, takes the bytes over and gives their sha256", () => {
    const manifest = manifestText(512);
    const [threaded, here] = [root(), root()];
    const a = write(threaded, manifest, { thread: THREAD });
    const b = write(here, manifest, { thread: { script: null } });
    expect(a.detached).toBe(true);
    expect(b.detached).toBe(false);
    expect(snapshot(threaded)).toEqual(snapshot(here));
    expect(fs.readFileSync(path.join(threaded, "generated/manifest.json"), "latin1")).toBe(manifest.text);
    for (const [dir, run] of [[threaded, a], [here, b]] as const) {
      expect(run.result.diagnostics).toEqual([]);
      expect(run.digest).toBe(sha256(fs.readFileSync(path.join(dir, "generated/manifest.json"))));
      expect(run.plain).toBeUndefined();
    }
    expect(a.result.value).toEqual(b.result.value);
  });

  it("is not started for a file below its size, nor twice", () => {
    const manifest = manifestText(64);
    const small = write(root(), manifest);
    expect(small.detached).toBe(false);
    expect(small.digest).toBe(sha256(manifest.text));
  });

  it("gives the same digest of a file found unchanged, without staging it", () => {
    const manifest = manifestText(256);
    const dir = root();
    write(dir, manifest, { thread: THREAD });
    const again = write(dir, manifest, { thread: THREAD });
    expect(again.detached).toBe(false);
    expect(again.result.value.written).toEqual([]);
    expect(again.digest).toBe(sha256(manifest.text));
  });

  for (const [name, script] of [["throws", THROWS], ["stalls", STALLS]] as const) {
    it(`is done without when it ${name}: the same files, the same digest, no temporary left`, () => {
      const manifest = manifestText(256, 3);
      const [failing, here] = [root(), root()];
      const started = Date.now();
      const a = write(failing, manifest, { thread: { minBytes: 0, script, stallMs: 300 } });
      expect(Date.now() - started).toBeLessThan(5000);
      write(here, manifest, { thread: { script: null } });
      expect(a.detached).toBe(true);
      expect(a.result.diagnostics).toEqual([]);
      expect(snapshot(failing)).toEqual(snapshot(here));
      expect(tree(failing).filter((f) => f.includes(".tmp-"))).toEqual([]);
      expect(a.digest).toBe(sha256(manifest.text));
    });
  }

  it("reports a temporary it cannot create as the calling thread does (CA9003), with nothing renamed and no temporary left", () => {
    const manifest = manifestText(256);
    const runs = [THREAD, { script: null }].map((thread) => {
      const dir = root();
      fs.mkdirSync(path.join(dir, "generated"));
      const before = snapshot(dir);
      const w = openWrite(defaultLayout(dir), { check: false, thread });
      w.add("generated/dags/a.py", `${HEADER}a = 1\n`);
      w.add(TOO_LONG, manifest.text, manifest.bytes());
      w.add("generated/dags/z.py", `${HEADER}z = 1\n`);
      const result = w.finish();
      expect(snapshot(dir)).toEqual(before);
      expect(tree(dir).filter((f) => f.includes(".tmp-"))).toEqual([]);
      return result.diagnostics.map((d) => [d.code, d.location?.file, d.message]);
    });
    expect(runs[0]).toEqual([["CA9003", TOO_LONG, expect.stringContaining("ENAMETOOLONG")]]);
    expect(runs[0]).toEqual(runs[1]);
  });

  it("says only the thread's failure when a file offered after it fails too, as the calling thread does (a full disk)", () => {
    const manifest = manifestText(256);
    const later = `generated/dags/${"n".repeat(245)}.py`;
    const runs = [THREAD, { script: null }].map((thread) => {
      const dir = root();
      fs.mkdirSync(path.join(dir, "generated"));
      const w = openWrite(defaultLayout(dir), { check: false, thread });
      w.add(TOO_LONG, manifest.text, manifest.bytes());
      w.add(later, `${HEADER}n = 1\n`);
      const result = w.finish();
      expect(tree(dir).filter((f) => f.includes(".tmp-"))).toEqual([]);
      return result.diagnostics.map((d) => [d.code, d.location?.file]);
    });
    expect(runs[1]).toEqual([["CA9003", TOO_LONG]]);
    expect(runs[0]).toEqual(runs[1]);
  });

  it("removes what the thread staged when the write is discarded", () => {
    const dir = root();
    const w = openWrite(defaultLayout(dir), { check: false, thread: THREAD });
    const manifest = manifestText(256);
    w.add("generated/manifest.json", manifest.text, manifest.bytes());
    w.discard();
    expect(tree(dir)).toEqual([]);
  });
});

describe("discover's read-ahead of the output folder's manifest", () => {
  it("gives the file's bytes and their sha256, as the calling thread reads them", () => {
    const dir = root();
    const file = path.join(dir, "manifest.json");
    const { text } = manifestText(300);
    fs.writeFileSync(file, text);
    const read = startManifestReadAhead(file, 1 << 30, { minBytes: 0 })!.take();
    expect(read && "bytes" in read && read.bytes.toString("latin1")).toBe(text);
    expect(read && "sha256" in read && read.sha256).toBe(sha256(text));
    expect(startManifestReadAhead(file, 1000, { minBytes: 0 })!.take()).toEqual({ refused: { reason: "too large", size: text.length } });
  });

  it("starts no thread below its size, for a file that is not regular, or without a script", () => {
    const dir = root();
    const file = path.join(dir, "manifest.json");
    fs.writeFileSync(file, "{}\n");
    expect(startManifestReadAhead(file, 1 << 30)).toBeUndefined();
    expect(startManifestReadAhead(dir, 1 << 30, { minBytes: 0 })).toBeUndefined();
    expect(startManifestReadAhead(path.join(dir, "missing.json"), 1 << 30, { minBytes: 0 })).toBeUndefined();
  });

  for (const [name, script] of [["throws", THROWS], ["stalls", STALLS]] as const) {
    it(`gives nothing when its thread ${name}, so the caller reads the file`, () => {
      const dir = root();
      const file = path.join(dir, "manifest.json");
      fs.writeFileSync(file, "{}\n");
      const started = Date.now();
      expect(startManifestReadAhead(file, 1 << 30, { minBytes: 0, script, stallMs: 300 })!.take()).toBeUndefined();
      expect(Date.now() - started).toBeLessThan(5000);
    });
  }

  it("hands discover's outputManifestBytes the bytes and sha256 when the record index is there, and reads them itself otherwise", () => {
    const dir = root();
    fs.mkdirSync(path.join(dir, "generated"));
    fs.mkdirSync(path.join(dir, "cache"));
    // Just over the least size read ahead: a project of about 1,800 contracts.
    const text = `{"pad": "${"p".repeat(READ_AHEAD_MIN_BYTES)}"}\n`;
    fs.writeFileSync(path.join(dir, "generated/manifest.json"), text);
    const ahead = discoverProject(defaultLayout(dir), { readAheadWith: "cache" }).value.outputManifestBytes!()!;
    expect(ahead.sha256).toBe(sha256(text));
    expect(ahead.bytes.toString("latin1")).toBe(text);
    const here = discoverProject(defaultLayout(dir), { readAheadWith: "cache/missing.bin" }).value.outputManifestBytes!()!;
    expect(here.sha256).toBeUndefined();
    expect(here.bytes.equals(ahead.bytes)).toBe(true);
  });
});

describe("a warm compile of a manifest large enough for the threads", () => {
  // 2,000 contracts: a manifest of about 18 MB, over both threads' least size.
  const copyCorpus = corpusCopies("ca-threads", 2000, 20261202);

  it("writes the bytes a cold compile writes, and an index whose digest is the file's sha256", { timeout: 240_000 }, () => {
    const warm = copyCorpus();
    const cold = copyCorpus();
    adopt(warm, cold);
    expect(compileRoot(warm, { cache: true }).diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const manifest = path.join(warm, "generated/manifest.json");
    expect(fs.statSync(manifest).size).toBeGreaterThan(Math.max(READ_AHEAD_MIN_BYTES, STAGE_THREAD_MIN_BYTES));
    for (const dir of [warm, cold]) {
      const file = path.join(dir, "contracts", fs.readdirSync(path.join(dir, "contracts"))[0]!);
      const first = path.join(file, fs.readdirSync(file).sort()[0]!);
      fs.writeFileSync(first, fs.readFileSync(first, "utf8").replace('description: "', 'description: "edited '));
    }
    const result = compileRoot(warm, { cache: true });
    expect(result.cache?.records?.reused).toBeGreaterThan(0);
    expect(result.written?.written).toContain("generated/manifest.json");
    compileRoot(cold);
    expect(snapshot(path.join(warm, "generated"))).toEqual(snapshot(path.join(cold, "generated")));
    expect(tree(warm).filter((f) => f.includes(".tmp-"))).toEqual([]);
    // The index names the sha256 of the file the thread wrote.
    const index = fs.readFileSync(path.join(warm, RECORD_INDEX_PATH));
    expect(index.includes(Buffer.from(sha256(fs.readFileSync(manifest))))).toBe(true);
  });
});
