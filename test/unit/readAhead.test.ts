import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { startReadAhead } from "../../compiler/discover/readAhead.js";
import { readRegularFile } from "../../compiler/discover/regularFile.js";
import { PARSE_CACHE_FOLDER } from "../../compiler/parse/parseCache.js";
import { compileProject, type CompileOptions, type CompileResult } from "../../compiler/pipeline.js";
import { cacheKey } from "../../compiler/support/cacheEntry.js";
import { corpusCopies, snapshot } from "./helpers.js";
// @ts-expect-error -- plain JavaScript module of the benchmark (scripts/bench), no type declarations

// Discover's reader thread (ADR 0017x) changes who reads the contracts and their cache entries,
// never what a compile gives: the same diagnostics in the same order, the same sources, the same
// cache counts and the same bytes written as a compile that reads them in the calling thread.

const CONTRACTS = 300;

/** Fresh copies of the corpus (`corpusCopies`, generated once). */
const copy = corpusCopies("ca-ahead", CONTRACTS, 20261202);

/** A fresh copy of the corpus with a warm cache (written without the thread). */
function warmCopy(): string {
  const root = copy();
  compileProject(defaultLayout(root), { write: "write", cache: true, readAhead: false });
  return root;
}

/** Contract files of a root, project-relative, sorted. */
function contractFiles(root: string): string[] {
  // Sort for determinism.
  return (fs.readdirSync(path.join(root, "contracts"), { recursive: true }) as string[]).filter((f) => f.endsWith(".yaml")).map((f) => `contracts/${f.split(path.sep).join("/")}`).sort();
}

const compile = (root: string, options: CompileOptions): CompileResult => compileProject(defaultLayout(root), { write: "write", cache: true, ...options });

/** What must be the same with and without the thread. */
function observed(result: CompileResult, root: string): unknown {
  const { readAhead: _, ...cache } = result.cache ?? {};
  return { diagnostics: result.diagnostics, sources: [...result.sources], cache, generated: snapshot(path.join(root, "generated")) };
}

/**
 * The same damage done to two warm copies: an edited contract, one over the size limit, one not
 * UTF-8, and five entries of others: cut short, garbage, of another build, a payload byte flipped,
 * a folder in an entry's place. (A FIFO is not listed as a contract; one that takes a file's place
 * after the listing is the unit test below.)
 */
function damage(root: string): void {
  const files = contractFiles(root);
  const text = (i: number): string => fs.readFileSync(path.join(root, files[i]!), "utf8");
  fs.writeFileSync(path.join(root, files[5]!), text(5).replace('description: "', 'description: "edited '));
  fs.writeFileSync(path.join(root, files[17]!), Buffer.concat([Buffer.from(text(17)), Buffer.from([0xc3, 0x28])]));
  fs.writeFileSync(path.join(root, files[29]!), `${text(29)}\n# ${"x".repeat(1024 * 1024)}\n`);
  const folder = path.join(root, PARSE_CACHE_FOLDER);
  const entries = fs.readdirSync(folder).filter((f) => f.endsWith(".bin")).sort();
  const entry = (i: number): string => path.join(folder, entries[i]!);
  fs.truncateSync(entry(0), fs.statSync(entry(0)).size - 7);
  fs.writeFileSync(entry(1), "not a cache entry at all\n");
  const third = fs.readFileSync(entry(2));
  fs.writeFileSync(entry(2), Buffer.from(third.toString("latin1").replace(/\(parse and validate [0-9a-f]{16}\)/, "(parse and validate 0000000000000000)"), "latin1"));
  // A payload byte flipped: only its sha256 says so.
  const fourth = fs.readFileSync(entry(3));
  fourth[fourth.length - 10] = fourth[fourth.length - 10]! ^ 0xff;
  fs.writeFileSync(entry(3), fourth);
  fs.rmSync(entry(4));
  fs.mkdirSync(entry(4));
}

describe("discover's reader thread (ADR 0017x)", () => {
  it("gives what the calling thread's reads give, damaged, foreign and unreadable entries and refused files included", () => {
    const [ahead, plain] = [warmCopy(), warmCopy()];
    damage(ahead);
    damage(plain);
    const withThread = compile(ahead, { readAhead: "thread" });
    const without = compile(plain, { readAhead: false });
    // The thread did the reading: every contract file (the large one's refusal too), and the entry
    // of each that is a source (not the large one, nor the one not UTF-8).
    const count = contractFiles(ahead).length;
    expect(withThread.cache?.readAhead).toEqual({ files: count, entries: count - 2 });
    expect(without.cache?.readAhead).toBeUndefined();
    expect(observed(withThread, ahead)).toEqual(observed(without, plain));
    const codes = withThread.diagnostics.map((d) => d.code);
    expect(codes.filter((c) => c === "CA1950")).toHaveLength(3);
    expect(codes).toContain("CA1002");
    expect(codes).toContain("CA1005");
    // The damaged, foreign and unreadable entries were parsed again, and the edited file.
    expect(withThread.cache).toMatchObject({ hits: withThread.sources.size - 6, parsed: 6 });
  });

  it("gives the same output when its thread fails at once, or posts an error", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ca-ahead-script-"));
    const throwing = path.join(dir, "throwing.mjs");
    fs.writeFileSync(throwing, 'throw new Error("the reader thread fails before it reads");\n');
    // Claims every entry, then fails as the real one reports a failure: the entries are read here.
    const failing = path.join(dir, "failing.mjs");
    fs.writeFileSync(
      failing,
      [
        'import { workerData } from "node:worker_threads";',
        "const counters = new Int32Array(workerData.signal);",
        "Atomics.add(counters, 2, 1 << 20);",
        'workerData.port.postMessage({ kind: "error", error: "failed" });',
        "Atomics.add(counters, 0, 1);",
        "Atomics.notify(counters, 0);",
      ].join("\n"),
    );
    const plain = warmCopy();
    damage(plain);
    const reference = observed(compile(plain, { readAhead: false }), plain);
    for (const script of [throwing, failing]) {
      const root = warmCopy();
      damage(root);
      const result = compile(root, { readAhead: true, readAheadScript: pathToFileURL(script) });
      expect(result.cache?.readAhead).toEqual({ files: 0, entries: 0 });
      expect(observed(result, root)).toEqual(reference);
    }
  });

  it("is not started without a parse cache folder, or below its size", () => {
    const root = copy();
    // A first compile: nothing to read ahead.
    expect(compile(root, {}).cache?.readAhead).toBeUndefined();
    // About 300 contracts: below MIN_READ_AHEAD_FILES.
    expect(compile(root, {}).cache?.readAhead).toBeUndefined();
    const count = contractFiles(root).length;
    expect(compile(root, { readAhead: "thread" }).cache?.readAhead).toEqual({ files: count, entries: count });
  });

  it("gives the same output when the entries are looked up out of its order (reorder)", () => {
    const reorder = (files: Parameters<NonNullable<CompileOptions["reorder"]>>[0]) => [...files].reverse();
    const [ahead, plain] = [warmCopy(), warmCopy()];
    damage(ahead);
    damage(plain);
    for (const mode of ["thread", true] as const) {
      const withThread = compile(ahead, { readAhead: mode, reorder });
      if (mode === "thread") expect(withThread.cache?.readAhead?.files).toBe(contractFiles(ahead).length);
      expect(observed(withThread, ahead)).toEqual(observed(compile(plain, { readAhead: false, reorder }), plain));
    }
  });

  it("refuses what readRegularFile refuses, for the same reasons: a FIFO, a folder, a missing or too large file", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-ahead-refusals-"));
    fs.mkdirSync(path.join(root, "c", "folder.yaml"), { recursive: true });
    expect(spawnSync("mkfifo", [path.join(root, "c", "fifo.yaml")]).status).toBe(0);
    fs.writeFileSync(path.join(root, "c", "large.yaml"), "x".repeat(2049));
    fs.writeFileSync(path.join(root, "c", "plain.yaml"), "a: 1\n");
    const paths = ["c/fifo.yaml", "c/folder.yaml", "c/gone.yaml", "c/large.yaml", "c/plain.yaml"];
    const ahead = startReadAhead(root, { limit: 2048, folder: PARSE_CACHE_FOLDER, claims: false })!;
    ahead.begin({ paths, context: "c0ffee", compiler: "test" });
    const got = paths.map(() => ahead.nextFile());
    ahead.close();
    expect(got.map((f) => f && ("bytes" in f.read ? f.read.bytes.toString() : f.read))).toEqual([
      { reason: "not a regular file" },
      { reason: "a folder" },
      { reason: "missing" },
      { reason: "too large", size: 2049 },
      "a: 1\n",
    ]);
    expect(paths.map((p) => readRegularFile(path.join(root, p), { limit: 2048, follow: true })).slice(0, 4)).toEqual(got.slice(0, 4).map((f) => f!.read));
    expect(got[4]!.key).toBe(cacheKey("c0ffee", "c/plain.yaml", Buffer.from("a: 1\n")));
  });
});
