import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseManifest } from "../../compiler/discover/readManifest.js";
import { diffManifests } from "../../compiler/diff/diffManifests.js";
import { RECORD_INDEX_PATH } from "../../compiler/manifest/recordCache.js";
import { modulesToRender, snapshot, corpusCopies, compileRoot, random } from "./helpers.js";

// The manifest's record cache (ADR 0017p) in whole compiles: the manifest written with the cache
// is byte for byte the one written without it, whatever was edited, and a manifest edited by hand
// gives nothing to the next compile. test/property/recordCache.property.test.ts checks the text
// assembly over random records.

const copyCorpus = corpusCopies("ca-records", 30, 20261203);
const compile = compileRoot;

/** The contract files of a root, project-relative and sorted. */
function contracts(root: string): string[] {
  // Sort for determinism.
  return [...snapshot(path.join(root, "contracts")).keys()].map((f) => `contracts/${f.split(path.sep).join("/")}`).sort();
}

const manifestOf = (root: string): Buffer => fs.readFileSync(path.join(root, "generated", "manifest.json"));

describe("the manifest's record cache in a compile", () => {
  it("writes the bytes of a compile without it after random edits, taking every unchanged record from the last manifest", () => {
    const root = copyCorpus();
    const first = compile(root, { cache: true });
    const records = first.manifest!.assets.length + first.manifest!.dags.length;
    expect(first.cache?.records).toEqual({ reused: 0, made: records });
    expect(fs.statSync(path.join(root, RECORD_INDEX_PATH)).isFile()).toBe(true);
    // Nothing changed: every record taken from the last manifest, the same bytes.
    const again = compile(root, { cache: true });
    expect(again.cache?.records).toEqual({ reused: records, made: 0 });
    expect(again.cache?.modules?.rendered).toBe(0);
    const next = random(7);
    const files = contracts(root);
    for (let round = 0; round < 4; round++) {
      // One to three contracts edited: a description, or an asset's description and a column's.
      for (let n = 1 + Math.floor(next() * 3); n > 0; n--) {
        const file = path.join(root, files[Math.floor(next() * files.length)]!);
        const text = fs.readFileSync(file, "utf8");
        const count = (text.match(/description: "/g) ?? []).length;
        const at = Math.floor(next() * count);
        let seen = 0;
        fs.writeFileSync(file, text.replace(/description: "/g, (m) => (seen++ === at ? `${m}edit ${round} ` : m)));
      }
      const previous = parseManifest(manifestOf(root).toString("latin1")).manifest!;
      const warm = compile(root, { cache: true });
      expect(warm.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
      // The previous manifest, read against the new one where the cache says its records lie, is the file parsed whole.
      expect(warm.previousManifest).toEqual(previous);
      expect(warm.diff).toEqual(diffManifests(previous, warm.manifest!, new Set()));
      const reference = fs.mkdtempSync(path.join(os.tmpdir(), "ca-records-cold-"));
      fs.cpSync(path.join(root, "contracts"), path.join(reference, "contracts"), { recursive: true });
      for (const other of fs.readdirSync(root)) if (other !== "contracts" && other !== "generated" && other !== ".contract-assets") fs.cpSync(path.join(root, other), path.join(reference, other), { recursive: true });
      const cold = compile(reference);
      expect(manifestOf(root).equals(manifestOf(reference)), `round ${round}`).toBe(true);
      expect(snapshot(path.join(root, "generated"))).toEqual(snapshot(path.join(reference, "generated")));
      expect(warm.diagnostics).toEqual(cold.diagnostics);
      // Most records did not change; the edited ones (at least one asset or DAG) were written out.
      const counts = warm.cache!.records!;
      expect(counts.reused + counts.made).toBe(warm.manifest!.assets.length + warm.manifest!.dags.length);
      expect(counts.made).toBeGreaterThan(0);
      expect(counts.reused).toBeGreaterThan(records / 2);
      // The DAG modules are keyed by these records' keys (ADR 0017r): rendered again are exactly the
      // ones whose DAG record or a declared Asset's record changed (its consumers too), the rest skipped.
      const rendered = modulesToRender(previous, warm.manifest!);
      expect(rendered).toBeGreaterThan(0);
      expect(warm.cache!.modules).toEqual({ rendered, unchanged: warm.manifest!.dags.length + (warm.manifest!.freshness_monitor ? 1 : 0) - rendered });
    }
  });

  it("carries no record edited by hand in the manifest into the next compile's output, and says nothing of it", () => {
    const root = copyCorpus();
    compile(root, { cache: true });
    const file = path.join(root, "generated", "manifest.json");
    const text = fs.readFileSync(file, "latin1");
    // One asset's uri edited by hand, the same length: only the file's sha256 tells.
    const uri = /"uri": "([^"]+)"/.exec(text)!;
    const forged = text.replace(uri[0], `"uri": "${uri[1]!.slice(0, -1)}${uri[1]!.endsWith("x") ? "y" : "x"}"`);
    expect(forged.length).toBe(text.length);
    fs.writeFileSync(file, forged, "latin1");
    const result = compile(root, { cache: true });
    expect(result.cache?.records?.reused).toBe(0);
    expect(result.diagnostics.filter((d) => d.code === "CA1952")).toEqual([]);
    expect(fs.readFileSync(file, "latin1")).toBe(text);
    // Written again for the file as it now is: the next compile takes every record.
    expect(compile(root, { cache: true }).cache?.records?.made).toBe(0);
  });

  it("ignores a damaged index with one CA1952 note, and is neither read nor written without the cache or by --check", () => {
    const root = copyCorpus();
    compile(root);
    expect(fs.existsSync(path.join(root, ".contract-assets"))).toBe(false);
    const before = manifestOf(root);
    // --check finds the manifest unchanged but writes no index (it writes nothing it compares).
    const checked = compile(root, { cache: true, check: true });
    expect(checked.cache?.records).toEqual({ reused: 0, made: checked.manifest!.assets.length + checked.manifest!.dags.length });
    expect(fs.existsSync(path.join(root, RECORD_INDEX_PATH))).toBe(false);
    compile(root, { cache: true });
    const index = path.join(root, RECORD_INDEX_PATH);
    fs.writeFileSync(index, "not an index\n");
    const result = compile(root, { cache: true });
    expect(result.diagnostics.filter((d) => d.code === "CA1952").map((d) => [d.severity, d.location?.file])).toEqual([["info", RECORD_INDEX_PATH]]);
    expect(result.cache?.records?.reused).toBe(0);
    expect(manifestOf(root).equals(before)).toBe(true);
    const again = compile(root, { cache: true });
    expect(again.diagnostics.filter((d) => d.code === "CA1952")).toEqual([]);
    expect(again.cache?.records?.made).toBe(0);
  });
});
