import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runCli } from "../../compiler/cli.js";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { STATE_FOLDER } from "../../compiler/manifest/compileState.js";
import { PARSE_CACHE_FOLDER } from "../../compiler/parse/parseCache.js";
import { compileProject, type CompileResult } from "../../compiler/pipeline.js";
import { CACHE_MAGIC } from "../../compiler/support/cacheEntry.js";
import { mtimes, snapshot } from "../unit/helpers.js";
// @ts-expect-error -- plain JavaScript module of the benchmark (scripts/bench), no type declarations
import { writeCorpus } from "../../scripts/bench/corpus.mjs";

// The incremental cache (ADR 0017c) changes how fast a compile is, never what it gives: a compile
// with a warm cache writes the same bytes and reports the same diagnostics as a compile without one.

const CONTRACTS = 40;

/** Contract files of a root, sorted. */
function contractFiles(root: string): string[] {
  // Sort for determinism.
  return [...mtimes(path.join(root, "contracts")).keys()].filter((f) => f.endsWith(".yaml")).map((f) => `contracts/${f.split(path.sep).join("/")}`).sort();
}

const corpus = (() => {
  let made: string | undefined;
  return (): string => {
    if (made) return made;
    made = fs.mkdtempSync(path.join(os.tmpdir(), "ca-cache-corpus-"));
    writeCorpus({ contracts: CONTRACTS, seed: 20261201, root: made });
    return made;
  };
})();

/** A fresh copy of the generated corpus. */
function copyCorpus(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-cache-"));
  fs.cpSync(corpus(), root, { recursive: true });
  return root;
}

const compile = (root: string, cache: boolean, splice = false): CompileResult => compileProject(defaultLayout(root), { write: "write", ...(cache ? { cache: true } : {}), ...(splice ? { splice: true } : {}) });

/** An edit of one project file, applied the same way to both copies. */
type Edit =
  | { kind: "description"; pick: number; text: string }
  | { kind: "comment"; pick: number }
  | { kind: "syntaxError"; pick: number }
  | { kind: "placeholder"; pick: number }
  | { kind: "unknownField"; pick: number }
  | { kind: "revert"; pick: number }
  | { kind: "delete"; pick: number }
  | { kind: "copy"; pick: number }
  | { kind: "config" }
  // A generated module edited by hand or deleted: the render index's hash check must find it (ADR 0017n).
  | { kind: "handEdit"; pick: number }
  | { kind: "deleteModule"; pick: number }
  // A hand-written file in generated/ (CA9002), or removed again: the write's finding is each compile's own.
  | { kind: "foreign" }
  // A property added without a minor version bump: the diff's finding is against the manifest before (ADR 0022).
  | { kind: "addProperty"; pick: number };

const edit: fc.Arbitrary<Edit> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("description" as const), pick: fc.nat(), text: fc.string({ minLength: 1, maxLength: 12 }).map((s) => s.replace(/["\\\n\r]/g, "x")) }) },
  fc.record({ kind: fc.constant("comment" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("syntaxError" as const), pick: fc.nat() }),
  // Parse the same, validate otherwise (ADR 0017j: the cached verdict): a rule's error, a schema's.
  fc.record({ kind: fc.constant("placeholder" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("unknownField" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("revert" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("delete" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("copy" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("config" as const) }),
  fc.record({ kind: fc.constant("handEdit" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("deleteModule" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("foreign" as const) }),
  fc.record({ kind: fc.constant("addProperty" as const), pick: fc.nat() }),
);

/** The generated DAG modules of a root, project-relative, sorted. */
function moduleFiles(root: string): string[] {
  // Sort for determinism.
  return [...mtimes(path.join(root, "generated", "dags")).keys()].filter((f) => f.endsWith(".py")).map((f) => `generated/dags/${f.split(path.sep).join("/")}`).sort();
}

/** Applies an edit under `root`; returns the project-relative files whose bytes it changed or created. */
function apply(root: string, e: Edit, original: string): string[] {
  if (e.kind === "config") {
    const config = path.join(root, "orchestration", "airflow", "sources");
    const file = path.join(config, fs.readdirSync(config).sort()[0]!);
    fs.appendFileSync(file, "# edited\n");
    return ["*"];
  }
  if (e.kind === "foreign") {
    const file = path.join(root, "generated", "NOTES.md");
    if (fs.existsSync(file)) fs.rmSync(file);
    else fs.writeFileSync(file, "Not generated.\n");
    return [];
  }
  if (e.kind === "handEdit" || e.kind === "deleteModule") {
    const modules = moduleFiles(root);
    const file = path.join(root, modules[e.pick % modules.length]!);
    if (e.kind === "deleteModule") fs.rmSync(file);
    // The same size: only the bytes differ.
    else fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace("max_active_runs=1", "max_active_runs=2"));
    return [];
  }
  const files = contractFiles(root);
  const relative = files[e.pick % files.length]!;
  const file = path.join(root, relative);
  const text = fs.readFileSync(file, "utf8");
  switch (e.kind) {
    case "description": {
      const edited = text.replace(/description: "([^"]*)"/, (_, d: string) => `description: "${d} ${e.text}"`);
      fs.writeFileSync(file, edited === text ? `${text}# ${e.text}\n` : edited);
      return [relative];
    }
    case "comment":
      fs.appendFileSync(file, "# a comment changes the bytes, not the document\n");
      return [relative];
    case "syntaxError":
      fs.writeFileSync(file, text.replace(/\n/, "\n\t"));
      return [relative];
    case "placeholder": {
      // TemplateFreeTextRule's error: the document parses, its verdict refuses it.
      const edited = text.replace(/description: "([^"]*)"/, (_, d: string) => `description: "${d} \${ENVIRONMENT}"`);
      fs.writeFileSync(file, edited === text ? `${text}colour: blue\n` : edited);
      return [relative];
    }
    case "addProperty": {
      const edited = text.replace(/\n(\s+)- \{name: /, (_, indent: string) => `\n${indent}- {name: added_${e.pick % 7}, logicalType: string}\n${indent}- {name: `);
      fs.writeFileSync(file, edited === text ? `${text}# no property\n` : edited);
      return [relative];
    }
    case "unknownField":
      fs.appendFileSync(file, "colour: blue\n");
      return [relative];
    case "revert": {
      const before = fs.readFileSync(path.join(original, relative), { encoding: "utf8", flag: "r" });
      fs.writeFileSync(file, before);
      return before === text ? [] : [relative];
    }
    case "delete":
      fs.rmSync(file);
      return [];
    case "copy": {
      const target = relative.replace(/\.yaml$/, "_copy.yaml");
      fs.writeFileSync(path.join(root, target), text);
      return [target];
    }
  }
}

describe("the incremental cache", () => {
  it("gives the bytes and diagnostics of a compile without it, after any sequence of edits", () => {
    fc.assert(
      fc.property(fc.array(edit, { minLength: 2, maxLength: 3 }), (edits) => {
        const warm = copyCorpus();
        const cold = copyCorpus();
        const first = compile(warm, true);
        expect(first.cache).toMatchObject({ hits: 0 });
        compile(cold, false);
        for (const e of edits) {
          const changed = apply(warm, e, corpus());
          apply(cold, e, corpus());
          const a = compile(warm, true);
          const b = compile(cold, false);
          expect(a.diagnostics, JSON.stringify(e)).toEqual(b.diagnostics);
          expect(snapshot(path.join(warm, "generated")), JSON.stringify(e)).toEqual(snapshot(path.join(cold, "generated")));
          // And the cache was used: every file but the changed ones came from it.
          const inputs = contractFiles(warm).length + fs.readdirSync(path.join(warm, "orchestration", "airflow", "sources")).length;
          expect(a.cache?.hits, JSON.stringify(e)).toBe(changed[0] === "*" ? 0 : inputs - changed.length);
          expect(a.cache?.parsed, JSON.stringify(e)).toBe(inputs - a.cache!.hits);
          // Each document from the cache came with its verdict (no ODCS documents in this corpus);
          // a file cached with a YAML error has no document, so no verdict.
          const unparsed = new Set(a.diagnostics.filter((d) => d.severity === "error" && d.code.startsWith("CA20")).map((d) => d.location?.file)).size;
          expect(a.cache?.verdicts, JSON.stringify(e)).toBeLessThanOrEqual(a.cache!.hits);
          expect(a.cache?.verdicts, JSON.stringify(e)).toBeGreaterThanOrEqual(a.cache!.hits - unparsed);
          // Every module was rendered or found unchanged by its hash (ADR 0017n); one edited by
          // hand or deleted was rendered, and an edit of one contract leaves most unrendered.
          // (A compile with an error renders nothing.)
          const clean = !a.diagnostics.some((d) => d.severity === "error");
          expect(a.cache?.modules !== undefined, JSON.stringify(e)).toBe(clean);
          const { unchanged = 0, rendered = 0 } = a.cache?.modules ?? {};
          if (clean) expect(unchanged + rendered, JSON.stringify(e)).toBe(moduleFiles(warm).length);
          if (clean && (e.kind === "handEdit" || e.kind === "deleteModule")) expect(rendered, JSON.stringify(e)).toBeGreaterThan(0);
          if (clean && (e.kind === "description" || e.kind === "comment")) expect(unchanged, JSON.stringify(e)).toBeGreaterThan(moduleFiles(warm).length / 2);
        }
        expect(fs.existsSync(path.join(cold, ".contract-assets"))).toBe(false);
      }),
      { seed: 20261201, numRuns: 5 },
    );
  });

  it("splices a warm compile of few changed files (ADR 0022) into the bytes and diagnostics of a compile without the cache", () => {
    const taken: string[] = [];
    fc.assert(
      fc.property(fc.array(edit, { minLength: 2, maxLength: 4 }), (edits) => {
        const warm = copyCorpus();
        const cold = copyCorpus();
        compile(warm, true, true);
        compile(cold, false);
        for (const e of edits) {
          apply(warm, e, corpus());
          apply(cold, e, corpus());
          const a = compile(warm, true, true);
          const b = compile(cold, false);
          expect(a.diagnostics, JSON.stringify(e)).toEqual(b.diagnostics);
          expect(snapshot(path.join(warm, "generated")), JSON.stringify(e)).toEqual(snapshot(path.join(cold, "generated")));
          expect(a.written?.written, JSON.stringify(e)).toEqual(b.written?.written);
          expect(a.written?.deleted, JSON.stringify(e)).toEqual(b.written?.deleted);
          expect(a.counts ?? { dags: a.manifest?.dags.length, assets: a.manifest?.assets.length }, JSON.stringify(e)).toEqual({ dags: b.manifest?.dags.length, assets: b.manifest?.assets.length });
          if (a.cache?.splice) taken.push(e.kind);
          // A splice compiles the changed files and their neighbours, never the whole corpus.
          if (a.cache?.splice) expect(a.cache.splice.compiled, JSON.stringify(e)).toBeLessThan(contractFiles(warm).length);
        }
      }),
      { seed: 20261204, numRuns: 8 },
    );
    // Edits of descriptions and comments are spliced; a hand-edited module is not (it is rendered again).
    expect(taken).toContain("description");
    expect(taken).not.toContain("handEdit");
  });

  it("does not splice a change of a file's interface, and the next compile of a clean project splices again", () => {
    const warm = copyCorpus();
    const cold = copyCorpus();
    compile(warm, true, true);
    compile(cold, false);
    const files = contractFiles(warm);
    // A new upstream-facing name: the dataset's Asset is another one.
    const renamed = files.find((f) => /\n {2}- name: ([a-z_]+)\n/.test(fs.readFileSync(path.join(warm, f), "utf8")))!;
    for (const root of [warm, cold]) {
      const file = path.join(root, renamed);
      fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(/\n {2}- name: ([a-z_]+)\n/, "\n  - name: $1_renamed\n"));
    }
    const a = compile(warm, true, true);
    const b = compile(cold, false);
    expect(a.cache?.splice).toBeUndefined();
    expect(a.diagnostics).toEqual(b.diagnostics);
    expect(snapshot(path.join(warm, "generated"))).toEqual(snapshot(path.join(cold, "generated")));
    // Renamed back: a compile with an error left no state, so this one compiles the whole project
    // and leaves one; a comment only is then spliced, nothing compiled but the file and its neighbours.
    const renames = b.diagnostics.some((x) => x.severity === "error");
    for (const root of [warm, cold]) fs.writeFileSync(path.join(root, renamed), fs.readFileSync(path.join(corpus(), renamed)));
    expect(compile(warm, true, true).cache?.splice).toBeUndefined();
    compile(cold, false);
    for (const root of [warm, cold]) fs.appendFileSync(path.join(root, files[0]!), "# a comment\n");
    const c = compile(warm, true, true);
    const d = compile(cold, false);
    expect(c.diagnostics).toEqual(d.diagnostics);
    expect(snapshot(path.join(warm, "generated"))).toEqual(snapshot(path.join(cold, "generated")));
    expect(c.cache?.splice).toMatchObject({ changed: 1 });
    expect(c.cache!.splice!.compiled).toBeLessThan(files.length);
    expect(renames).toBe(true);
  });

  it("keeps a refused document's verdict: a later compile takes it from the cache and reports as a cold one", () => {
    const warm = copyCorpus();
    const cold = copyCorpus();
    compile(warm, true);
    compile(cold, false);
    // A rule's error in one file, a schema's in another, then an edit elsewhere: the two refused
    // documents' verdicts come from the cache in the last compile.
    const edits: Edit[] = [
      { kind: "placeholder", pick: 3 },
      { kind: "unknownField", pick: 11 },
      { kind: "description", pick: 20, text: "later" },
    ];
    let last: CompileResult | undefined;
    for (const e of edits) {
      apply(warm, e, corpus());
      apply(cold, e, corpus());
      last = compile(warm, true);
      const b = compile(cold, false);
      expect(last.diagnostics, JSON.stringify(e)).toEqual(b.diagnostics);
      expect(snapshot(path.join(warm, "generated"))).toEqual(snapshot(path.join(cold, "generated")));
    }
    const inputs = contractFiles(warm).length + fs.readdirSync(path.join(warm, "orchestration", "airflow", "sources")).length;
    expect(last!.cache).toMatchObject({ hits: inputs - 1, parsed: 1, verdicts: inputs - 1 });
    const files = contractFiles(warm);
    const errors = last!.diagnostics.filter((d) => d.severity === "error");
    expect(errors.find((d) => d.code === "CA3802")?.location?.file).toBe(files[3]);
    expect(errors.some((d) => d.location?.file === files[11] && d.message.includes("colour"))).toBe(true);
  });

  it("ignores a damaged or foreign entry with a note, and the output stays a cold compile's", () => {
    const root = copyCorpus();
    const reference = copyCorpus();
    compile(root, true);
    const cold = compile(reference, false);
    const folder = path.join(root, PARSE_CACHE_FOLDER);
    const entries = fs.readdirSync(folder).filter((f) => f.endsWith(".bin")).sort();
    expect(entries.length).toBe(cold.sources.size);
    const entry = (i: number): string => path.join(folder, entries[i]!);
    // Truncated, garbage, another compiler version, and a folder where an entry goes.
    fs.truncateSync(entry(0), fs.statSync(entry(0)).size - 7);
    fs.writeFileSync(entry(1), "not a cache entry at all\n");
    const third = fs.readFileSync(entry(2));
    // Another build: the same header but another parse fingerprint (same length, so only that differs).
    fs.writeFileSync(entry(2), Buffer.from(third.toString("latin1").replace(/\(parse and validate [0-9a-f]{16}\)/, "(parse and validate 0000000000000000)"), "latin1"));
    fs.writeFileSync(entry(3), fs.readFileSync(entry(3)).subarray(0, CACHE_MAGIC.length + 2));
    fs.rmSync(entry(4));
    fs.mkdirSync(entry(4));
    const damaged = compile(root, true);
    const notes = damaged.diagnostics.filter((d) => d.code === "CA1950");
    expect(notes.map((d) => [d.severity, d.message.replace(/\(.*\), so it was/, "(…), so it was")]).sort()).toEqual([
      ["info", "the incremental cache's entry of this file is damaged (…), so it was ignored and the file parsed again; so were the damaged entries of 2 other file(s)"],
      ["info", "the incremental cache's entry of this file is foreign (…), so it was ignored and the file parsed again"],
      ["info", "the incremental cache's entry of this file is unreadable (…), so it was ignored and the file parsed again"],
    ]);
    expect(notes.find((d) => d.message.includes("foreign"))!.message).toMatch(/written by "contract-assets [^"]+ \(parse and validate 0000000000000000\)", not "contract-assets [^"]+ \(parse and validate [0-9a-f]{16}\)"/);
    // The folder in the entry's place cannot be written over either: one CA9950 note, nothing else.
    const unwritten = damaged.diagnostics.filter((d) => d.code === "CA9950");
    expect(unwritten.map((d) => d.location?.file)).toEqual([`${PARSE_CACHE_FOLDER}/${entries[4]}`]);
    expect(damaged.diagnostics.filter((d) => d.code !== "CA1950" && d.code !== "CA9950")).toEqual(cold.diagnostics);
    expect(damaged.cache).toMatchObject({ hits: cold.sources.size - 5, parsed: 5 });
    expect(snapshot(path.join(root, "generated"))).toEqual(snapshot(path.join(reference, "generated")));
    // The ignored entries were written again (the folder in the way stays, and says so again).
    const again = compile(root, true);
    expect(again.diagnostics.filter((d) => d.code === "CA1950" || d.code === "CA9950").map((d) => d.message.split(" (")[0]!.split(":")[0]).sort()).toEqual([
      `cannot write the incremental cache's "${PARSE_CACHE_FOLDER}/${entries[4]}"`,
      "the incremental cache's entry of this file is unreadable",
    ]);
    expect(again.cache).toMatchObject({ hits: cold.sources.size - 1 });
  });

  it("is neither read nor written with --no-cache, nor by default under CI", async () => {
    const root = copyCorpus();
    const off = await runCli(["compile", "--no-cache", "--root", root]);
    expect(off.exitCode, off.stderr).toBe(0);
    expect(fs.existsSync(path.join(root, ".contract-assets"))).toBe(false);
    const ci = process.env.CI;
    process.env.CI = "true";
    try {
      expect((await runCli(["validate", "--root", root])).exitCode).toBe(0);
      expect(fs.existsSync(path.join(root, ".contract-assets"))).toBe(false);
      // --cache overrides CI; a garbage entry then gives a note, which --no-cache never reads.
      expect((await runCli(["compile", "--cache", "--root", root])).exitCode).toBe(0);
      const folder = path.join(root, PARSE_CACHE_FOLDER);
      const first = fs.readdirSync(folder).filter((f) => f.endsWith(".bin")).sort()[0]!;
      fs.writeFileSync(path.join(folder, first), "garbage");
      expect((await runCli(["compile", "--no-cache", "--root", root])).stderr).not.toContain("CA1950");
      // Without the compile state (ADR 0022) the whole project is compiled: each entry is looked up.
      fs.rmSync(path.join(root, STATE_FOLDER), { recursive: true });
      expect((await runCli(["compile", "--cache", "--root", root])).stderr).toMatch(/info CA1950: the incremental cache's entry of this file is damaged \(not a cache entry\)/);
    } finally {
      if (ci === undefined) delete process.env.CI;
      else process.env.CI = ci;
    }
  });
});
