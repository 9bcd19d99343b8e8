import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import YAML, { isMap, isSeq, type Node } from "yaml";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { compileProject } from "../../compiler/pipeline.js";
import { canonicalCondition } from "../../compiler/model/conditions.js";
import { copyBundledProject } from "./helpers.js";

/** Reverses a YAML sequence in place (comments and layout of each item kept). */
function reverseSeq(node: unknown): boolean {
  if (!isSeq(node) || node.items.length < 2) return false;
  node.items.reverse();
  return true;
}

/** Reverses every `all`/`any` list of a trigger tree, at every depth. */
function reverseTree(node: unknown): number {
  if (!isMap(node)) return 0;
  let count = 0;
  for (const op of ["all", "any"]) {
    const items = node.get(op, true) as Node | undefined;
    if (!isSeq(items)) continue;
    for (const item of items.items) count += reverseTree(item);
    if (reverseSeq(items)) count++;
  }
  return count;
}

/**
 * Every contract of a project with its `upstreams` list and its trigger tree members reversed;
 * returns how many lists were reversed, per file.
 */
function reverseUpstreams(root: string): Map<string, number> {
  const changed = new Map<string, number>();
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.name.endsWith(".yaml")) {
        const doc = YAML.parseDocument(fs.readFileSync(full, "utf8"));
        let count = reverseSeq(doc.get("upstreams", true)) ? 1 : 0;
        count += reverseTree((doc.getIn(["trigger", "assets"], true) as unknown) ?? null);
        if (count === 0) continue;
        fs.writeFileSync(full, doc.toString());
        changed.set(path.relative(root, full), count);
      }
    }
  };
  walk(path.join(root, "contracts"));
  return changed;
}

describe("canonical order of upstreams and trigger trees", () => {
  it("gives byte-identical manifest and modules when every contract's upstreams and trigger members are reversed", () => {
    const root = copyBundledProject();
    const before = compileProject(defaultLayout(root));
    expect(before.files).toBeDefined();
    const reversed = reverseUpstreams(root);
    // The bundled corpus has several multi-upstream contracts and a nested trigger tree.
    expect(reversed.size).toBeGreaterThanOrEqual(4);
    expect([...reversed.values()].some((n) => n >= 3)).toBe(true);
    const after = compileProject(defaultLayout(root));
    expect(after.files).toBeDefined();

    // The contract's own identity (sha256, git blob id: provenance of the file as committed)
    // changes with its bytes, by design; nothing else may.
    const identity = new Map<string, string>();
    const note = (old: string, now: string): void => void (old !== now && identity.set(old, now));
    for (const asset of before.manifest!.assets) note(asset.contract_sha256, after.manifest!.assets.find((a) => a.name === asset.name)!.contract_sha256);
    for (const dag of before.manifest!.dags) {
      const now = after.manifest!.dags.find((d) => d.dag_id === dag.dag_id)!;
      note(dag.contract_sha256, now.contract_sha256);
      note(dag.contract_git_blob, now.contract_git_blob);
    }
    expect(identity.size).toBeGreaterThanOrEqual(reversed.size);
    const restamp = (text: string): string => [...identity].reduce((t, [old, now]) => t.split(old).join(now), text);

    expect([...after.files!.keys()].sort()).toEqual([...before.files!.keys()].sort());
    for (const [file, text] of before.files!) {
      expect(after.files!.get(file), file).toBe(restamp(text));
    }
    // The schedules really were written in another order: the module text is what changed before.
    const billings = after.files!.get("generated/dags/finance/billings_by_contract.py")!;
    expect(billings).toContain("schedule=((BILLING__CREDIT_NOTES_RAW | FINANCE__INVOICES_CURATED) & FINANCE__CONTRACTS_CURATED),");
  });

  it("sorts members: nested all groups, then any groups, then assets by name, each group by its own members", () => {
    const tree = canonicalCondition({
      any: [{ asset: "s.d" }, { all: [{ any: [{ asset: "s.c" }, { asset: "s.b" }] }, { asset: "s.a" }] }, { any: [{ asset: "s.z" }, { asset: "s.y" }] }, { asset: "s.a_b" }, { asset: "s.a" }],
    });
    expect(tree).toEqual({
      any: [
        { all: [{ any: [{ asset: "s.b" }, { asset: "s.c" }] }, { asset: "s.a" }] },
        { any: [{ asset: "s.y" }, { asset: "s.z" }] },
        { asset: "s.a" },
        { asset: "s.a_b" },
        { asset: "s.d" },
      ],
    });
  });
});
