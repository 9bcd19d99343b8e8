import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { parseManifest, parseManifestAgainst, upgradeFromV1 } from "../../compiler/discover/readManifest.js";
import { expandToV1 } from "../../compiler/manifest/manifestV1.js";
import { MANIFEST_VERSION, type ManifestV1 } from "../../compiler/model/manifest.js";
import { compileProject } from "../../compiler/pipeline.js";
import { canonicalJsonAscii } from "../../compiler/support/canonical-json.js";
import { REPO } from "./helpers.js";

// manifestVersion 2 stores each dataset's schema, URI and authored rules once, on its asset, and
// derives the implied and data-time rules (ADR 0017f). The fixtures are the manifests version 1
// wrote for two golden cases (the last v1 compiler's output): one with freshness.column (data-time
// rules), one with primaryKey and unique properties and authored rules (implied rules, names).
const FIXTURES = path.join(REPO, "test", "unit", "fixtures", "manifest-v1");
const CASES = ["freshness-monitor-and-deadlines", "yaml12-float-in-extra-and-params"];

function project(name: string, previous?: string): string {
  const root = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), "ca-v1-"));
  // The config of test/cases/_base under the case's input, as the golden runner lays it (the
  // fixtures were compiled so: a compile without it differs in defaults and lineage namespace).
  fs.cpSync(path.join(REPO, "test", "cases", "_base"), root, { recursive: true });
  fs.cpSync(path.join(REPO, "test", "cases", name, "input"), root, { recursive: true });
  if (previous !== undefined) {
    fs.mkdirSync(path.join(root, "generated"), { recursive: true });
    fs.writeFileSync(path.join(root, "generated", "manifest.json"), previous);
  }
  return root;
}

const datasetsOf = (m: { dags: Array<{ dag_id: string; runtime: { datasets: unknown[] } }> }): Array<[string, unknown[]]> => m.dags.map((d) => [d.dag_id, d.runtime.datasets]);

describe("manifestVersion 2 against the manifests version 1 wrote", () => {
  for (const name of CASES) {
    const v1Text = fs.readFileSync(path.join(FIXTURES, `${name}.json`), "utf8");
    const v1 = JSON.parse(v1Text) as ManifestV1;

    it(`${name}: version 2 expanded gives version 1's runtime datasets, and stores each asset's schema once`, () => {
      const root = project(name);
      try {
        const compiled = compileProject(defaultLayout(root), { write: "check" });
        const v2 = compiled.manifest!;
        expect(v2.manifestVersion).toBe(MANIFEST_VERSION);
        expect(v1.manifestVersion).toBe(1);
        expect(v2.dags.flatMap((d) => d.runtime.datasets.map((x) => Object.keys(x).sort()))).toEqual(v1.dags.flatMap((d) => d.runtime.datasets.map((x) => Object.keys(x).filter((k) => !["uri", "schema", "quality"].includes(k)).sort())));
        expect(datasetsOf(expandToV1(v2))).toEqual(datasetsOf(v1));
        // The fixture holds implied rules (and, in the freshness case, data-time rules) to derive.
        const rules = v1.dags.flatMap((d) => d.runtime.datasets.flatMap((x) => x.quality));
        expect(rules.some((r) => r.implied_by !== undefined)).toBe(true);
        if (name.startsWith("freshness")) expect(rules.some((r) => r.metric === "freshness")).toBe(true);
        const v2Text = canonicalJsonAscii(v2 as unknown as Record<string, unknown>);
        expect(Buffer.byteLength(v2Text)).toBeLessThan(Buffer.byteLength(canonicalJsonAscii(expandToV1(v2) as unknown as Record<string, unknown>)));
      } finally {
        fs.rmSync(root, { recursive: true, force: true });
      }
    });

    it(`${name}: a version-1 previous manifest is read as version 2 and diffs against the new compile with no change`, () => {
      const root = project(name, v1Text);
      try {
        const result = compileProject(defaultLayout(root), { diff: true, write: "check" });
        expect(result.diagnostics.filter((d) => d.code === "CA1101")).toEqual([]);
        expect(result.diff!.changes).toEqual([]);
        const current = { manifest: result.manifest!, text: canonicalJsonAscii(result.manifest! as unknown as Record<string, unknown>) };
        const read = parseManifest(v1Text);
        expect(read.problem).toBeUndefined();
        expect(read.manifest!.manifestVersion).toBe(2);
        expect(datasetsOf(read.manifest!)).toEqual(datasetsOf(current.manifest));
        // Read against the new manifest (ADR 0017d): no record's text is equal, so the full read's result.
        expect(parseManifestAgainst(v1Text, current)).toEqual(read);
        expect(upgradeFromV1(v1)).toEqual(read.manifest);
      } finally {
        fs.rmSync(root, { recursive: true, force: true });
      }
    });

    it(`${name}: a damaged version-1 previous manifest is refused against the version-1 schema`, () => {
      const bad = JSON.parse(v1Text) as ManifestV1;
      delete (bad.dags[0]!.runtime.datasets[0] as Partial<ManifestV1["dags"][0]["runtime"]["datasets"][0]>).schema;
      expect(parseManifest(JSON.stringify(bad, null, 2)).problem).toBe("not a contract-assets manifest: /dags/0/runtime/datasets/0: must have required property 'schema'");
    });
  }
});
