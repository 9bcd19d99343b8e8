import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import type { Manifest, ManifestAsset } from "../../compiler/manifest/buildManifest.js";
import type { DagPlan } from "../../compiler/plan/planDags.js";
import { compileProject, type CompileResult } from "../../compiler/pipeline.js";
import { MODULE_INDEX_PATH } from "../../compiler/render/moduleCache.js";
import { assetRenderInputs, dagRenderInputs, renderDagModule, renderFreshnessMonitor } from "../../compiler/render/renderModules.js";
import { CACHE_MAGIC } from "../../compiler/support/cacheEntry.js";
import { REPO, snapshot } from "./helpers.js";
// @ts-expect-error -- plain JavaScript module of the benchmark (scripts/bench), no type declarations
import { writeCorpus } from "../../scripts/bench/corpus.mjs";

// The render stage's incremental cache (ADR 0017n): a DAG module whose inputs are the index's and
// whose file holds the index's hash is not rendered. What it skips must be what a render would
// write; the property test (test/property/incrementalCache.test.ts) compares whole outputs.

/** The manifests of every golden case: the records the render reads, in every shape the cases make. */
function goldenManifests(): Manifest[] {
  const cases = path.join(REPO, "test", "cases");
  return fs
    .readdirSync(cases)
    .map((c) => path.join(cases, c, "expected", "generated", "manifest.json"))
    .filter((f) => fs.statSync(f, { throwIfNoEntry: false })?.isFile())
    .flatMap((f) => {
      // A case whose output is a damaged manifest left as it was (CA1101) has no records to render.
      try {
        const m = JSON.parse(fs.readFileSync(f, "utf8")) as Manifest;
        return m.manifestVersion === 2 && Array.isArray(m.dags) && Array.isArray(m.assets) ? [m] : [];
      } catch {
        return [];
      }
    });
}

/** `value` behind a proxy that records the name of every property read of it (`prefix.name`). */
function recording<T extends object>(value: T, prefix: string, reads: Set<string>, inner?: (key: string, v: unknown) => unknown): T {
  return new Proxy(value, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver) as unknown;
      if (typeof key !== "string") return v;
      reads.add(`${prefix}.${key}`);
      return inner ? inner(key, v) : v;
    },
  });
}

const ROOT_CORPUS = (() => {
  let made: string | undefined;
  return (): string => {
    made ??= (() => {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-modules-corpus-"));
      writeCorpus({ contracts: 30, seed: 20261202, root });
      return root;
    })();
    return made;
  };
})();

function copyCorpus(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-modules-"));
  fs.cpSync(ROOT_CORPUS(), root, { recursive: true });
  return root;
}

const compile = (root: string, options: { cache?: boolean; check?: boolean } = {}): CompileResult =>
  compileProject(defaultLayout(root), { write: options.check ? "check" : "write", ...(options.cache ? { cache: true } : {}) });

/** The generated DAG modules of a root, project-relative and sorted. */
function modules(root: string): string[] {
  // Sort for determinism.
  return [...snapshot(path.join(root, "generated")).keys()].filter((f) => f.endsWith(".py")).map((f) => `generated/${f.split(path.sep).join("/")}`).sort();
}

describe("the render stage's incremental cache", () => {
  it("keys a module by every field its render reads: the render of each golden DAG reads nothing outside dagRenderInputs and assetRenderInputs", () => {
    let dags = 0;
    let monitors = 0;
    for (const manifest of goldenManifests()) {
      const reads = new Set<string>();
      const assets = new Map(manifest.assets.map((a) => [a.name, recording(a, "asset", reads)] as [string, ManifestAsset]));
      for (const dag of manifest.dags) {
        const watched = recording(dag, "dag", reads, (key, v) =>
          key === "tasks" ? recording(v as object[], "dag.tasks", reads, (i, t) => (i === "0" ? recording(t as object, "dag.tasks.0", reads) : t)) : v,
        );
        // Read through the proxies, the render is the same text.
        expect(renderDagModule(watched as DagPlan, assets)).toBe(renderDagModule(dag, new Map(manifest.assets.map((a) => [a.name, a]))));
        dags++;
      }
      if (manifest.freshness_monitor) {
        renderFreshnessMonitor(manifest.freshness_monitor, assets);
        monitors++;
      }
      const sample = { dag: manifest.dags[0], asset: manifest.assets[0] };
      const allowed = new Set([
        ...(sample.dag ? Object.keys(dagRenderInputs(sample.dag)).map((k) => `dag.${k}`) : []),
        ...(sample.asset ? Object.keys(assetRenderInputs(sample.asset)).map((k) => `asset.${k}`) : []),
        // tasks: only the first task's inlets are in the key.
        "dag.tasks.0",
        "dag.tasks.0.inlets",
      ]);
      expect([...reads].filter((r) => !allowed.has(r))).toEqual([]);
    }
    // The cases render DAGs and freshness monitors (a case without either would prove nothing).
    expect(dags).toBeGreaterThan(50);
    expect(monitors).toBeGreaterThan(0);
  });

  it("renders no unchanged module, and rewrites or reports a hand-edited or deleted one", () => {
    const root = copyCorpus();
    const first = compile(root, { cache: true });
    const all = modules(root);
    expect(first.cache?.modules).toEqual({ unchanged: 0, rendered: all.length });
    expect(fs.statSync(path.join(root, MODULE_INDEX_PATH)).isFile()).toBe(true);
    // Nothing changed: every module is found on the disk by its hash, none rendered; a temporary a
    // killed write left beside one is still stale (ADR 0017i), since the module counts as added.
    const temporary = `${all[0]!}.tmp-4242-0badcafe`;
    fs.writeFileSync(path.join(root, temporary), "");
    const again = compile(root, { cache: true });
    expect(again.cache?.modules).toEqual({ unchanged: all.length, rendered: 0 });
    expect(again.written?.deleted).toEqual([temporary]);

    // A hand edit of the same size (only a hash can tell), and a deleted module.
    const [edited, deleted] = [all[1]!, all[2]!];
    const text = fs.readFileSync(path.join(root, edited), "utf8");
    fs.writeFileSync(path.join(root, edited), text.replace("catchup=False", "catchup=Fals3"));
    expect(fs.statSync(path.join(root, edited)).size).toBe(Buffer.byteLength(text));
    fs.rmSync(path.join(root, deleted));
    const checked = compile(root, { cache: true, check: true });
    const drift = checked.diagnostics.filter((d) => d.code === "CA9001");
    expect(new Map(drift.map((d) => [d.location?.file, d.message.includes("missing")]))).toEqual(new Map([[edited, false], [deleted, true]]));
    expect(drift.length).toBe(2);
    expect(checked.written?.drift?.find((f) => f.path === edited)?.compiled).toBe(text);
    // --check wrote nothing; compile rewrites both, byte for byte the render.
    expect(fs.existsSync(path.join(root, deleted))).toBe(false);
    const fixed = compile(root, { cache: true });
    expect(fixed.written?.written).toEqual([edited, deleted].sort());
    expect(fixed.cache?.modules).toEqual({ unchanged: all.length - 2, rendered: 2 });
    expect(fs.readFileSync(path.join(root, edited), "utf8")).toBe(text);
    const reference = copyCorpus();
    compile(reference);
    expect(snapshot(path.join(root, "generated"))).toEqual(snapshot(path.join(reference, "generated")));
  });

  it("ignores a damaged, foreign or unreadable index with one CA1951 note, renders every module, and writes it again", () => {
    const root = copyCorpus();
    const reference = copyCorpus();
    compile(root, { cache: true });
    const cold = compile(reference);
    const index = path.join(root, MODULE_INDEX_PATH);
    const entry = fs.readFileSync(index);
    const cases: Array<[string, () => void, RegExp]> = [
      ["cut short", () => fs.writeFileSync(index, entry.subarray(0, entry.length - 9)), /is damaged \(cut short\)/],
      ["garbage", () => fs.writeFileSync(index, "not an index\n"), /is damaged \(not a cache entry\)/],
      ["altered", () => fs.writeFileSync(index, Buffer.concat([entry.subarray(0, entry.length - 1), Buffer.from([entry[entry.length - 1]! ^ 1])])), /is damaged \(its content does not match its sha256\)/],
      // Another build of the render: the same header but another fingerprint (same length).
      ["foreign", () => fs.writeFileSync(index, Buffer.from(entry.toString("latin1").replace(/\(render [0-9a-f]{16}\)/, "(render 0000000000000000)"), "latin1")), /is foreign \(written by .*\(render 0000000000000000\)/],
      ["a folder", () => (fs.rmSync(index), fs.mkdirSync(index)), /is unreadable \(a folder\)/],
    ];
    for (const [name, damage, note] of cases) {
      damage();
      // A module edited by hand meanwhile is rewritten too: no entry of the index was trusted.
      const result = compile(root, { cache: true });
      const notes = result.diagnostics.filter((d) => d.code === "CA1951");
      expect(notes.map((d) => [d.severity, d.location?.file]), name).toEqual([["info", MODULE_INDEX_PATH]]);
      expect(notes[0]!.message, name).toMatch(note);
      expect(result.diagnostics.filter((d) => d.code !== "CA1951" && d.code !== "CA9951"), name).toEqual(cold.diagnostics);
      expect(result.cache?.modules?.unchanged, name).toBe(0);
      expect(snapshot(path.join(root, "generated")), name).toEqual(snapshot(path.join(reference, "generated")));
      if (name === "a folder") {
        // The folder stays in the way: the index cannot be written either (CA9951), and says so.
        expect(result.diagnostics.filter((d) => d.code === "CA9951").map((d) => d.location?.file)).toEqual([MODULE_INDEX_PATH]);
        fs.rmSync(index, { recursive: true });
      }
      // Written again: the next compile skips every module and says nothing.
      const again = compile(root, { cache: true });
      expect(again.diagnostics.filter((d) => d.code === "CA1951"), name).toEqual([]);
      if (name !== "a folder") expect(again.cache?.modules?.rendered, name).toBe(0);
    }
    expect(entry.subarray(0, CACHE_MAGIC.length).toString("latin1")).toBe(CACHE_MAGIC);
  });

  it("is neither read nor written without the cache, nor when the compile keeps its files in memory", () => {
    const root = copyCorpus();
    compile(root);
    expect(fs.existsSync(path.join(root, ".contract-assets"))).toBe(false);
    const kept = compileProject(defaultLayout(root), { write: "write", cache: true, keepFiles: true });
    // Every file rendered into the map: nothing skipped, no index.
    expect(kept.cache?.modules).toBeUndefined();
    expect(kept.files?.size).toBe(modules(root).length + 1);
    expect(fs.existsSync(path.join(root, MODULE_INDEX_PATH))).toBe(false);
  });
});
