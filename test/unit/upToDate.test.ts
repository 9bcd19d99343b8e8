import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { formatDiagnostics } from "../../compiler/diagnostics/format.js";
import { CHANGE_RULES } from "../../compiler/diff/changeRules.js";
import { diffManifests } from "../../compiler/diff/diffManifests.js";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { parseManifest } from "../../compiler/discover/readManifest.js";
import type { Manifest } from "../../compiler/manifest/buildManifest.js";
import { compileProject } from "../../compiler/pipeline.js";
import { formatChangesJson } from "../../compiler/report/formatChanges.js";
import { canonicalJsonAscii } from "../../compiler/support/canonical-json.js";
import { planWrite } from "../../compiler/write/writeOutputs.js";
import { CASES } from "../golden/golden.js";
import { copyBundledProject } from "./helpers.js";

// What the up-to-date commands skip (ADR 0017g) changes nothing they report. A manifest diffed with
// itself (its previous text was the new one's, ADR 0017) runs only the rules that read the current
// state alone (`inOneState`); the reference is the full rule set, which `diffManifests` runs when the
// previous state is another object (a deep copy of the same manifest). And the output folder's
// manifest, once found holding the new bytes, is not compared again by the write stage.

/** A case's `input/` over the shared base config, in a fresh temporary root (no previous state). */
function stageInput(name: string): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-same-state-"));
  fs.cpSync(path.join(CASES, "_base"), root, { recursive: true });
  fs.cpSync(path.join(CASES, name, "input"), root, { recursive: true, verbatimSymlinks: true });
  return root;
}

const caseNames = fs
  .readdirSync(CASES)
  .filter((n) => !n.startsWith("_") && fs.existsSync(path.join(CASES, n, "input")))
  .sort();

describe("a manifest diffed with itself", () => {
  it("gives the full rule set's diff on every golden case's manifest (built with errors too)", () => {
    expect(caseNames.length).toBeGreaterThan(100);
    const found = new Map<string, number>();
    for (const name of caseNames) {
      const root = stageInput(name);
      try {
        const manifest = compileProject(defaultLayout(root), { render: false }).manifest;
        if (!manifest) continue;
        const full = diffManifests(structuredClone(manifest), manifest);
        const same = diffManifests(manifest, manifest);
        expect(formatChangesJson(same), name).toBe(formatChangesJson(full));
        expect(same, name).toEqual(full);
        if (full.changes.length) found.set(name, full.changes.length);
      } finally {
        fs.rmSync(root, { recursive: true, force: true });
      }
    }
    // Not empty by construction: a consumer of a retired asset breaks whether or not it changed.
    expect(found.get("diff-consumer-upstream-retired")).toBe(1);
  });

  it("marks only rules that find nothing in a state against itself as skippable", () => {
    // The one rule marked reads the current state alone; every rule comparing a before with an
    // after is skipped. A new rule of the first kind must be marked (the test above catches it
    // on its golden case).
    expect(CHANGE_RULES.filter((r) => r.inOneState).map((r) => r.id)).toEqual(["CONSUMER_UPSTREAM_RETIRED"]);
  });

  it("keeps the pipeline's diff and diagnostics when the previous text is the new manifest's", () => {
    // A project with an error (a consumer of a retired contract) and, as its previous state, the
    // very text of the manifest it builds: the shortcut takes the new object as the previous state.
    const root = stageInput("diff-consumer-upstream-retired");
    try {
      const built = compileProject(defaultLayout(root), { render: false });
      fs.mkdirSync(path.join(root, "generated"), { recursive: true });
      const text = canonicalJsonAscii(built.manifest! as unknown as Record<string, unknown>);
      fs.writeFileSync(path.join(root, "generated", "manifest.json"), text);
      const parsed = parseManifest(text);
      expect(parsed.problem).toBeUndefined();
      const shortcut = compileProject(defaultLayout(root), { diff: true, render: false });
      const reference = compileProject(defaultLayout(root), { diff: true, render: false, previousManifest: parsed.manifest as Manifest });
      expect(shortcut.previousManifest).toBe(shortcut.manifest);
      expect(reference.previousManifest).toBeUndefined();
      const format = (r: typeof shortcut): string => formatDiagnostics(r.diagnostics, "text", (f) => r.sources.get(f));
      expect(format(shortcut)).toBe(format(reference));
      expect(formatChangesJson(shortcut.diff!)).toBe(formatChangesJson(reference.diff!));
      expect(shortcut.diff!.changes.map((c) => c.rule)).toEqual(["CONSUMER_UPSTREAM_RETIRED"]);
      expect(shortcut.diagnostics.some((d) => d.code === "CA4006")).toBe(true);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("compile --check after the previous manifest was found holding the new one", () => {
  it("reports every stale, missing and extra file as the full comparison does, and not the manifest", () => {
    const root = copyBundledProject();
    try {
      const layout = defaultLayout(root);
      expect(compileProject(layout, { write: "write" }).written?.written.length).toBeGreaterThan(3);
      const dags = path.join(root, "generated", "dags");
      const modules = fs.readdirSync(dags, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".py")).sort();
      // One module edited by hand, one deleted, one generated module no contract produces.
      fs.appendFileSync(path.join(dags, modules[0]!), "# edited\n");
      fs.rmSync(path.join(dags, modules[1]!));
      fs.writeFileSync(path.join(dags, "gone_contract.py"), fs.readFileSync(path.join(dags, modules[2]!), "utf8"));
      const check = compileProject(layout, { write: "check", keepFiles: true });
      expect(check.previousManifest).toBe(check.manifest);
      const drift = check.written!.drift!.map((d) => [d.path, d.onDisk === null ? "missing" : d.compiled === null ? "stale" : "out of date"]);
      expect(drift).toEqual(
        [
          [`generated/dags/${modules[0]}`, "out of date"],
          [`generated/dags/${modules[1]}`, "missing"],
          ["generated/dags/gone_contract.py", "stale"],
        ].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
      );
      expect(check.diagnostics.filter((d) => d.code === "CA9001").map((d) => d.location?.file).sort()).toEqual(drift.map((d) => d[0]).sort());
      // The same as comparing every file, the manifest included.
      const full = planWrite(layout, check.files!, check.writeScope);
      expect(check.written!.unchanged).toEqual(full.unchanged);
      expect(check.written!.unchanged).toContain("generated/manifest.json");
      expect([check.written!.written, check.written!.deleted]).toEqual([full.written, full.deleted]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("compares the manifest when its bytes are not the new one's", () => {
    const root = copyBundledProject();
    try {
      const layout = defaultLayout(root);
      compileProject(layout, { write: "write" });
      const file = path.join(root, "generated", "manifest.json");
      // Same value, another text: parsed and found the same state, but the file is stale.
      fs.writeFileSync(file, fs.readFileSync(file, "utf8") + "\n");
      const check = compileProject(layout, { write: "check" });
      expect(check.previousManifest).toBeDefined();
      expect(check.previousManifest).not.toBe(check.manifest);
      expect(check.written!.drift!.map((d) => d.path)).toEqual(["generated/manifest.json"]);
      expect(compileProject(layout, { write: "write" }).written!.written).toEqual(["generated/manifest.json"]);
      expect(compileProject(layout, { write: "check" }).written!.drift).toEqual([]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
