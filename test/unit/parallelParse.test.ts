import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultLayout, discoverProject, type SourceFile } from "../../compiler/discover/discoverProject.js";
import { MIN_PARALLEL_BYTES, parseAll, workerCountFor } from "../../compiler/parse/parallelParse.js";
import { parseData } from "../../compiler/parse/parseDocument.js";
import { compileProject } from "../../compiler/pipeline.js";
// @ts-expect-error -- plain JavaScript module of the benchmark (scripts/bench), no type declarations
import { writeCorpus } from "../../scripts/bench/corpus.mjs";

// Parsing in worker threads (ADR 0017e) must not change a byte of the output: the same corpus,
// with broken files among the good ones, compiled with no worker and with three.
let root: string;
let files: SourceFile[];

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-parallel-"));
  writeCorpus({ contracts: 250, seed: 7, root });
  // Files the parse stage refuses, spread over the shares, and one that parses (a number not written as it prints) but is not a contract.
  const broken: Record<string, string> = {
    "aa/tabs.yaml": "apiVersion: contract-assets/v1\nkind: TransformContract\n\tid: x\n",
    "mm/duplicate.yaml": "apiVersion: contract-assets/v1\nkind: TransformContract\nid: a\nid: b\n",
    "zz/nan.yaml": "apiVersion: contract-assets/v1\nkind: TransformContract\nid: zz.nan\nversion: .nan\n",
    "zz/two.yaml": "a: 1\n---\nb: 2\n",
    "zz/number.yaml": "apiVersion: contract-assets/v1\nkind: TransformContract\nid: zz.number\nversion: 1.10\n",
    // Deeper than the calling thread's stack lets the YAML library compose, not a worker's (CA2015
    // in both, ADR 0019), and as deep by aliases alone.
    "mm/deep.yaml": `apiVersion: contract-assets/v1\nkind: TransformContract\nid: mm.deep\nx: ${"[".repeat(3000)}${"]".repeat(3000)}\n`,
    "mm/aliases.yaml": `apiVersion: contract-assets/v1\nkind: TransformContract\nid: mm.aliases\na0: &a0 [x]\n${Array.from({ length: 3000 }, (_, i) => `a${i + 1}: &a${i + 1} [*a${i}]`).join("\n")}\n`,
  };
  for (const [p, text] of Object.entries(broken)) {
    fs.mkdirSync(path.dirname(path.join(root, "contracts", p)), { recursive: true });
    fs.writeFileSync(path.join(root, "contracts", p), text);
  }
  files = discoverProject(defaultLayout(root), { previous: "none" }).value.contracts;
});

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe("parsing in worker threads", () => {
  it("gives every file's parse exactly as the calling thread does, all of it from the workers", () => {
    expect(files.length).toBeGreaterThan(250);
    const run = parseAll(files, 3);
    expect(run.byWorkers).toBe(files.length);
    expect(run.results).toEqual(files.map((f) => parseData(f)));
    expect(run.results.filter((r) => r.document === undefined).length).toBe(6);
  });

  it("compiles to the same files and diagnostics with no worker and with three", () => {
    const one = compileProject(defaultLayout(root), { workers: 0 });
    const three = compileProject(defaultLayout(root), { workers: 3 });
    expect(one.diagnostics.filter((d) => d.code.startsWith("CA20")).map((d) => d.code).sort()).toEqual(["CA2001", "CA2002", "CA2003", "CA2010", "CA2015", "CA2015"]);
    expect(three.diagnostics).toEqual(one.diagnostics);
    expect(three.manifest).toEqual(one.manifest);
    // Without the broken files it renders: the same bytes, file by file.
    for (const p of ["aa/tabs.yaml", "mm/duplicate.yaml", "zz/nan.yaml", "zz/two.yaml", "zz/number.yaml", "mm/deep.yaml", "mm/aliases.yaml"]) fs.rmSync(path.join(root, "contracts", p));
    const a = compileProject(defaultLayout(root), { workers: 0 });
    const b = compileProject(defaultLayout(root), { workers: 3 });
    expect(a.files?.size).toBeGreaterThan(200);
    expect([...b.files!.entries()]).toEqual([...a.files!.entries()]);
    expect(b.diagnostics).toEqual(a.diagnostics);
  });

  it("parses in the calling thread what a failed worker did not deliver", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ca-worker-"));
    try {
      // A worker that fails as the real one reports a failure: an error message, no results.
      const script = path.join(dir, "failing.mjs");
      fs.writeFileSync(
        script,
        `import { workerData } from "node:worker_threads";
const c = new Int32Array(workerData.signal);
workerData.port.postMessage({ error: "cannot parse here" });
Atomics.add(c, 0, 1);
Atomics.notify(c, 0);
workerData.port.close();
`,
      );
      const run = parseAll(files, 2, { script: pathToFileURL(script) });
      expect(run.byWorkers).toBe(0);
      expect(run.results).toEqual(files.map((f) => parseData(f)));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("starts a worker a thread, at most seven, only from 2 MiB of YAML and on more than one thread", () => {
    expect(workerCountFor(MIN_PARALLEL_BYTES - 1, 16)).toBe(0);
    expect(workerCountFor(MIN_PARALLEL_BYTES, 1)).toBe(0);
    expect(workerCountFor(MIN_PARALLEL_BYTES, 2)).toBe(2);
    expect(workerCountFor(30e6, 5)).toBe(5);
    expect(workerCountFor(30e6, 64)).toBe(7);
  });
});
