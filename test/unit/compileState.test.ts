import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { compileStateWriter, decodeCompileState, encodeCompileState, STATE_FOLDER, STATE_KEY, STATE_PATH, type CompileState } from "../../compiler/manifest/compileState.js";
import { spliceRecords, type IndexPayload } from "../../compiler/manifest/recordCache.js";
import { compileProject, type CompileResult } from "../../compiler/pipeline.js";
import { Diagnostics } from "../../compiler/diagnostics/catalogue.js";
import { STAMP_FIELDS } from "../../compiler/support/fileStamp.js";
import { removeCacheEntry } from "../../compiler/write/writeCache.js";
import { COMPILER_NAME, COMPILER_VERSION } from "../../compiler/version.js";
import { runCli } from "../../compiler/cli.js";
import { copyBundledProject, corpusCopies, snapshot, temporaryRoots } from "./helpers.js";

// The compile state and the splice of ADR 0022, piece by piece; the property test
// (test/property/incrementalCache.test.ts) compares whole splices with compiles without the cache.

const ascii = (text: string): Buffer => Buffer.from(text, "latin1");

/** A text of keyed records, `{"assets":[r0,r1,r2],"dags":[d0,d1]}`, and its complete index. */
function indexed(assets: string[], dags: string[]): { bytes: Buffer; index: IndexPayload } {
  let text = '{"assets":[';
  const spans: number[] = [];
  const put = (records: string[]): void => {
    records.forEach((r, i) => {
      if (i > 0) text += ",";
      spans.push(text.length, text.length + r.length);
      text += r;
    });
  };
  put(assets);
  text += '],"dags":[';
  put(dags);
  text += "]}";
  const keys = [...assets, ...dags].map((_, i) => `k${i}`);
  return { bytes: ascii(text), index: { digest: "0".repeat(64), keys, spans: Uint32Array.from(spans), counts: [assets.length, dags.length], totals: [assets.length, dags.length] } };
}

const joined = (pieces: Uint8Array[]): string => Buffer.concat(pieces).toString("latin1");

describe("spliceRecords", () => {
  it("puts each record in place of the old one and moves every later span by what it grew or shrank", () => {
    const { bytes, index } = indexed(['{"a":0}', '{"a":1}', '{"a":2}'], ['{"d":0}', '{"d":1}']);
    const spliced = spliceRecords(index, bytes, [
      { array: 1, index: 0, key: "new-d0", text: ascii("{}") },
      { array: 0, index: 1, key: "new-a1", text: ascii('{"a":"a longer one"}') },
    ])!;
    const text = joined(spliced.pieces);
    expect(text).toBe('{"assets":[{"a":0},{"a":"a longer one"},{"a":2}],"dags":[{},{"d":1}]}');
    // Every span points at its record in the new text, and the replaced ones carry their new keys.
    const records = spliced.index.keys.map((_, p) => text.slice(spliced.index.spans[2 * p], spliced.index.spans[2 * p + 1]));
    expect(records).toEqual(['{"a":0}', '{"a":"a longer one"}', '{"a":2}', "{}", '{"d":1}']);
    expect(spliced.index.keys).toEqual(["k0", "new-a1", "k2", "new-d0", "k4"]);
    // The old index is left as it was.
    expect(index.keys).toEqual(["k0", "k1", "k2", "k3", "k4"]);
    // Nothing replaced: the same bytes, in pieces.
    expect(joined(spliceRecords(index, bytes, [])!.pieces)).toBe(bytes.toString("latin1"));
  });

  it("refuses a record the index does not hold, or a span that is not a record's", () => {
    const { bytes, index } = indexed(['{"a":0}'], ['{"d":0}']);
    expect(spliceRecords(index, bytes, [{ array: 0, index: 1, key: "x", text: ascii("{}") }])).toBeUndefined();
    expect(spliceRecords(index, bytes, [{ array: 2, index: 0, key: "x", text: ascii("{}") }])).toBeUndefined();
    const shifted = { ...index, spans: Uint32Array.from([index.spans[0]! + 1, index.spans[1]!, index.spans[2]!, index.spans[3]!]) };
    expect(spliceRecords(shifted, bytes, [{ array: 0, index: 0, key: "x", text: ascii("{}") }])).toBeUndefined();
  });
});

describe("the compile state's entry", () => {
  const state = (): CompileState => ({
    context: "c",
    manifest: "m",
    counts: { dags: 1, assets: 2 },
    paths: ["contracts/a.yaml"],
    keys: ["k"],
    stamps: new BigInt64Array(STAMP_FIELDS),
    interfaces: ["i"],
    reads: [[]],
    records: [[0, 0, 0, 1, 1, 0]],
    referenced: [["sql/a.sql", "h"]],
    referencedStamps: new BigInt64Array(STAMP_FIELDS),
    diagnostics: [],
  });
  const read = (bytes: Uint8Array) => ({ found: new Map([[STATE_KEY, bytes]]), unreadable: new Map<string, string>() });
  const writer = compileStateWriter(COMPILER_NAME, COMPILER_VERSION);

  it("reads back what was written, and nothing when there is none", () => {
    expect(decodeCompileState(read(encodeCompileState(state(), writer)), writer)).toEqual({ state: state() });
    expect(decodeCompileState({ found: new Map(), unreadable: new Map() }, writer)).toBeUndefined();
  });

  it("ignores a damaged, foreign, unreadable or misshapen state with a CA1953 note at its file", () => {
    const noteOf = (r: ReturnType<typeof decodeCompileState>): string => (r && "note" in r ? `${r.note.code} ${r.note.location?.file} ${r.note.message}` : "none");
    expect(noteOf(decodeCompileState(read(ascii("garbage")), writer))).toBe(`CA1953 ${STATE_PATH} the incremental cache's compile state is damaged (not a cache entry), so it was ignored and the whole project compiled`);
    expect(noteOf(decodeCompileState(read(encodeCompileState(state(), "another compiler")), writer))).toMatch(/^CA1953 .* is foreign \(written by "another compiler"/);
    expect(noteOf(decodeCompileState({ found: new Map(), unreadable: new Map([[STATE_KEY, "EACCES"]]) }, writer))).toMatch(/^CA1953 .* is unreadable \(EACCES\)/);
    // Parallel arrays of other lengths, a record index past the manifest, a finding that is an error.
    for (const bad of [{ keys: [] }, { records: [[0, 9]] }, { diagnostics: [{ code: "CA4005", severity: "error", message: "m", related: [] }] }]) {
      expect(noteOf(decodeCompileState(read(encodeCompileState({ ...state(), ...bad } as CompileState, writer)), writer))).toMatch(/^CA1953 .* is damaged \(it holds no compile state\)/);
    }
  });
});

describe("a splice", () => {
  const copies = corpusCopies("ca-splice", 40, 20261204);
  const { adopt } = temporaryRoots("ca-splice-unused-");
  const compile = (root: string, splice: boolean): CompileResult => compileProject(defaultLayout(root), { write: "write", ...(splice ? { cache: true, splice: true } : {}) });

  it("reads only the changed files, their neighbours and the files its findings point at, once the others are older than its racy margin", async () => {
    const warm = copies();
    const cold = copies();
    adopt(warm, cold);
    // Files younger than 2 s before a compile are read each time (git's racily clean rule, ADR 0017q).
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const first = compile(warm, true);
    compile(cold, false);
    expect(first.cache?.splice).toBeUndefined();
    expect(fs.existsSync(path.join(warm, STATE_FOLDER, `${STATE_KEY}.bin`))).toBe(true);
    const contracts = first.sources.size - fs.readdirSync(path.join(warm, "orchestration", "airflow", "sources")).length;
    const file = [...first.sources.keys()].filter((f) => f.startsWith("contracts/")).sort()[5]!;
    for (const root of [warm, cold]) fs.appendFileSync(path.join(root, file), "# a comment\n");
    const a = compile(warm, true);
    const b = compile(cold, false);
    expect(a.cache?.splice).toMatchObject({ changed: 1 });
    expect(a.diagnostics).toEqual(b.diagnostics);
    expect(snapshot(path.join(warm, "generated"))).toEqual(snapshot(path.join(cold, "generated")));
    const read = [...a.sources.keys()].filter((f) => f.startsWith("contracts/"));
    expect(read).toContain(file);
    expect(read.length).toBeLessThan(contracts);
    // Every file a finding points at was read, for its excerpt.
    for (const d of a.diagnostics) if (d.location) expect(a.sources.has(d.location.file), d.location.file).toBe(true);
    // No change at all: a splice of nothing, which writes no output file.
    const c = compile(warm, true);
    expect(c.cache?.splice).toMatchObject({ changed: 0, compiled: 0 });
    expect(c.written?.written).toEqual([]);
    expect(c.diagnostics).toEqual(b.diagnostics);
  });

  it("reports a lineage identity clash with a file outside the neighbourhood, as a whole compile does (CA4020)", async () => {
    const root = copies();
    adopt(root);
    const files = fs.readdirSync(path.join(root, "contracts"), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".yaml")).sort();
    const declare = (file: string): void => {
      const at = path.join(root, "contracts", file);
      const text = fs.readFileSync(at, "utf8");
      const next = text.replace(/^( {2}- name: \S+\n)/m, `$1    physical: {namespace: "postgres://wh:5432", name: analytics.public.orders}\n`);
      expect(next).not.toBe(text);
      fs.writeFileSync(at, next);
    };
    declare(files[0]!);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const first = compile(root, true);
    expect(first.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(fs.existsSync(path.join(root, STATE_FOLDER, `${STATE_KEY}.bin`))).toBe(true);
    // A file that neither reads the first nor is read by it now declares the same identity.
    declare(files[files.length - 1]!);
    const second = compile(root, true);
    const clash = second.diagnostics.filter((d) => d.code === "CA4020");
    expect(clash.map((d) => [d.location?.file, d.related[0]?.location.file])).toEqual([[`contracts/${files[files.length - 1]}`, `contracts/${files[0]}`]]);
    expect(second.cache?.splice).toBeUndefined();
  });

  it("leaves no state after a compile with an error, so the next compile is a whole one", () => {
    const root = copies();
    adopt(root);
    compile(root, true);
    const state = path.join(root, STATE_FOLDER, `${STATE_KEY}.bin`);
    expect(fs.existsSync(state)).toBe(true);
    const file = path.join(root, "contracts", fs.readdirSync(path.join(root, "contracts")).sort()[0]!);
    const yaml = fs.readdirSync(file).find((f) => f.endsWith(".yaml"))!;
    fs.appendFileSync(path.join(file, yaml), "colour: blue\n");
    const broken = compile(root, true);
    expect(broken.diagnostics.some((d) => d.severity === "error")).toBe(true);
    expect(fs.existsSync(state)).toBe(false);
  });
});

describe("a damaged parse cache entry", () => {
  const { adopt } = temporaryRoots("ca-damaged-entry-unused-");

  it("is noted (CA1950) by every kind of compile that reads it: compile, --check, validate, diff, a splice taken or not, graph", async () => {
    const root = copyBundledProject();
    adopt(root);
    const run = (options: Parameters<typeof compileProject>[1]): CompileResult => compileProject(defaultLayout(root), options);
    const entries = path.join(root, ".contract-assets", "cache", "parse");
    // Each entry cut short right after its magic line, as the golden case cache-entry-damaged has it.
    const damage = (): void => {
      for (const f of fs.readdirSync(entries)) fs.writeFileSync(path.join(entries, f), fs.readFileSync(path.join(entries, f)).subarray(0, 24));
    };
    const noted = (r: { diagnostics: Array<{ code: string; message: string }> }): string[] => r.diagnostics.filter((d) => d.code === "CA1950").map((d) => d.message);
    expect(noted(run({ cache: true, splice: true, write: "write" }))).toEqual([]);
    // Older than the racy margin, so that a splice reads only the changed file (ADR 0017q).
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const kinds: Array<[string, Parameters<typeof compileProject>[1]]> = [
      ["compile", { cache: true, write: "write" }],
      ["compile --check", { cache: true, splice: true, write: "check" }],
      ["validate", { cache: true, splice: true, render: false }],
      ["diff", { cache: true, splice: true, render: false, diff: true }],
    ];
    for (const [kind, options] of kinds) {
      damage();
      expect(noted(run(options)), kind).toHaveLength(1);
    }
    // A splice taken: a comment in one contract; its neighbourhood's entries are read.
    const file = path.join(root, "contracts", "billing", "invoices_raw.yaml");
    fs.appendFileSync(file, "# a comment\n");
    damage();
    const spliced = run({ cache: true, splice: true, write: "write" });
    expect(spliced.cache?.splice).toMatchObject({ changed: 1 });
    expect(noted(spliced)).toHaveLength(1);
    // A splice not taken (a retyped column is not metadata-only): the neighbourhood's compile read
    // and rewrote its entries, and the whole compile notes them with every other file's.
    const text = fs.readFileSync(file, "utf8");
    fs.writeFileSync(file, text.replace("{name: account_id, logicalType: string, physicalType: varchar,", "{name: account_id, logicalType: integer, physicalType: bigint,"));
    damage();
    const whole = run({ cache: true, splice: true, write: "write" });
    expect(whole.cache?.splice).toBeUndefined();
    const read = [...whole.sources.keys()].filter((p) => p !== "contracts/billing/invoices_raw.yaml").length;
    expect(noted(whole)).toEqual([expect.stringContaining(`so were the damaged entries of ${read - 1} other file(s)`)]);
    // graph (and explain) print nothing else of a clean compile, but the note.
    fs.writeFileSync(file, text);
    damage();
    const graph = await runCli(["graph", "--root", root, "--cache"]);
    expect(graph.exitCode).toBe(0);
    expect(graph.stderr).toContain("info CA1950");
  });
});

describe("removeCacheEntry", () => {
  const { root } = temporaryRoots("ca-remove-entry-");

  it("removes the entry in the project's own folders, never through a symbolic link", () => {
    const project = root();
    const elsewhere = root();
    fs.mkdirSync(path.join(project, STATE_FOLDER), { recursive: true });
    fs.writeFileSync(path.join(project, STATE_PATH), "state");
    expect(removeCacheEntry(project, STATE_FOLDER, STATE_KEY, Diagnostics.CompileStateNotWritten)).toEqual([]);
    expect(fs.existsSync(path.join(project, STATE_PATH))).toBe(false);
    // Nothing there: nothing to say.
    expect(removeCacheEntry(project, STATE_FOLDER, STATE_KEY, Diagnostics.CompileStateNotWritten)).toEqual([]);
    // The folder is a link to another place: that place's entry stays, and the note says why.
    fs.rmSync(path.join(project, STATE_FOLDER), { recursive: true });
    fs.writeFileSync(path.join(elsewhere, `${STATE_KEY}.bin`), "state");
    fs.symlinkSync(elsewhere, path.join(project, STATE_FOLDER));
    const notes = removeCacheEntry(project, STATE_FOLDER, STATE_KEY, Diagnostics.CompileStateNotWritten);
    expect(notes.map((d) => `${d.code} ${d.message}`)).toEqual([`CA9953 cannot write the incremental cache's "${STATE_PATH}": ${STATE_FOLDER} is a symbolic link; the output is complete, and the next compile compiles the whole project`]);
    expect(fs.readFileSync(path.join(elsewhere, `${STATE_KEY}.bin`), "utf8")).toBe("state");
    // The entry itself a link: left, said; a folder in its place: left, no note (nothing was there to remove).
    fs.rmSync(path.join(project, STATE_FOLDER));
    fs.mkdirSync(path.join(project, STATE_FOLDER));
    fs.symlinkSync(path.join(elsewhere, `${STATE_KEY}.bin`), path.join(project, STATE_PATH));
    expect(removeCacheEntry(project, STATE_FOLDER, STATE_KEY, Diagnostics.CompileStateNotWritten).map((d) => d.code)).toEqual(["CA9953"]);
    expect(fs.existsSync(path.join(elsewhere, `${STATE_KEY}.bin`))).toBe(true);
    fs.rmSync(path.join(project, STATE_PATH));
    fs.mkdirSync(path.join(project, STATE_PATH));
    expect(removeCacheEntry(project, STATE_FOLDER, STATE_KEY, Diagnostics.CompileStateNotWritten)).toEqual([]);
    expect(fs.statSync(path.join(project, STATE_PATH)).isDirectory()).toBe(true);
  });
});
