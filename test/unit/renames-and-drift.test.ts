import { describe, expect, it } from "vitest";
import { isWidening, requiredVersion } from "../../compiler/diff/changeRules.js";
import { driftPatches, formatDriftText } from "../../compiler/report/formatDrift.js";
import { matchProbableRenames, RENAME_SIMILARITY_THRESHOLD, schemaSimilarity } from "../../compiler/support/renames.js";

const props = (...names: string[]) => names.map((n) => ({ name: n, logicalType: "string" }));

describe("probable renames", () => {
  it("measures schema similarity over name and type", () => {
    expect(schemaSimilarity(props("a", "b", "c", "d"), props("a", "b", "c", "d", "e"))).toEqual({ similarity: 0.8, matching: 4, total: 5 });
    expect(schemaSimilarity([{ name: "a", logicalType: "string" }], [{ name: "a", logicalType: "number" }])).toEqual({ similarity: 0, matching: 0, total: 2 });
    expect(schemaSimilarity([], [])).toEqual({ similarity: 1, matching: 0, total: 0 });
    expect(RENAME_SIMILARITY_THRESHOLD).toBe(0.8);
  });

  it("pairs within one contract by schema, across contracts only by URI, each asset once", () => {
    const removed = [
      { name: "s.old", uri: "x-datalake://curated/s/old", contractId: "s.c", properties: props("a", "b", "c", "d") },
      { name: "s.gone", uri: "x-datalake://curated/s/gone", contractId: "s.c", properties: props("a", "b", "c", "d") },
    ];
    const added = [
      { name: "s.new", uri: "x-datalake://curated/s/new", contractId: "s.c", properties: props("a", "b", "c", "d", "e") },
      { name: "s.elsewhere", uri: "x-datalake://curated/s/elsewhere", contractId: "s.other", properties: props("a", "b", "c", "d") },
    ];
    // s.gone and s.old both match s.new; s.gone comes first by name and takes it. s.elsewhere is of
    // another contract with another URI: never a rename.
    expect(matchProbableRenames(removed, added)).toEqual([{ from: "s.gone", to: "s.new", sameContract: true, similarity: 0.8, matching: 4, total: 5, uri: "follows_name" }]);
    expect(matchProbableRenames([removed[0]!], added)).toEqual([{ from: "s.old", to: "s.new", sameContract: true, similarity: 0.8, matching: 4, total: 5, uri: "follows_name" }]);
    const sameUri = { ...added[1]!, uri: "x-datalake://curated/s/old" };
    expect(matchProbableRenames([removed[0]!], [sameUri])).toEqual([{ from: "s.old", to: "s.elsewhere", sameContract: false, similarity: 1, matching: 4, total: 4, uri: "same" }]);
    const below = { ...added[0]!, properties: props("a", "b", "x", "y") };
    expect(matchProbableRenames([removed[0]!], [below])).toEqual([]);
    const moved = { ...added[0]!, uri: "s3://lake/new" };
    expect(matchProbableRenames([removed[0]!], [moved])).toEqual([{ from: "s.old", to: "s.new", sameContract: true, similarity: 0.8, matching: 4, total: 5, uri: "different" }]);
  });
});

describe("type widening", () => {
  it("tells widened from narrowed types", () => {
    expect(isWidening("logicalType", "integer", "number")).toBe(true);
    expect(isWidening("logicalType", "number", "integer")).toBe(false);
    expect(isWidening("logicalType", "number", "string")).toBe(false);
    expect(isWidening("physicalType", "varchar(10)", "varchar(20)")).toBe(true);
    expect(isWidening("physicalType", "varchar(20)", "varchar(10)")).toBe(false);
    expect(isWidening("physicalType", "varchar(20)", "varchar")).toBe(true);
    expect(isWidening("physicalType", "decimal(10,2)", "decimal(12,2)")).toBe(true);
    expect(isWidening("physicalType", "decimal(10,2)", "decimal(10,4)")).toBe(false);
    expect(isWidening("physicalType", "int", "BIGINT")).toBe(true);
    expect(isWidening("physicalType", "bigint", "int")).toBe(false);
    expect(isWidening("physicalType", "real", "double")).toBe(true);
    expect(isWidening("physicalType", "int", "varchar")).toBe(false);
  });
});

describe("the version a version rule asks for (what drift apply sets)", () => {
  it("is the next major for a breaking change and the next minor for an additive one, one place lower below 1.0.0", () => {
    expect(requiredVersion({ rule: "VERSION_BREAKING_WITHOUT_MAJOR", before: "1.3.0" })).toBe("2.0.0");
    expect(requiredVersion({ rule: "VERSION_ADDITIVE_WITHOUT_MINOR", before: "1.3.7" })).toBe("1.4.0");
    expect(requiredVersion({ rule: "VERSION_BREAKING_WITHOUT_MAJOR", before: "0.3.2" })).toBe("0.4.0");
    expect(requiredVersion({ rule: "VERSION_ADDITIVE_WITHOUT_MINOR", before: "0.3.2" })).toBe("0.3.3");
    expect(requiredVersion({ rule: "VERSION_CHANGED", before: "1.3.0" })).toBeUndefined();
    expect(requiredVersion({ rule: "VERSION_BREAKING_WITHOUT_MAJOR", before: "next" })).toBeUndefined();
  });
});

describe("compile --check diffs", () => {
  it("bounds each file's diff and counts what it cut", () => {
    const before = Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n") + "\n";
    const after = before.replace(/line (\d+)/g, "row $1");
    const [patch] = driftPatches([{ path: "generated/x.py", onDisk: before, compiled: after }], 10);
    // 2 file headers + 1 hunk header + 100 removed + 100 added lines in all; 10 shown.
    expect(patch!.patch.split("\n").slice(0, 3)).toEqual(["--- a/generated/x.py", "+++ b/generated/x.py", "@@ -1,100 +1,100 @@"]);
    expect(patch!.patch.trimEnd().split("\n")).toHaveLength(10);
    expect(patch!.cut_lines).toBe(193);
    expect(formatDriftText([patch!])).toMatch(/\n\.\.\. 193 more lines of this diff cut; run "contract-assets compile" and "git diff" for all of it\n$/);
  });

  it("names a missing and a deleted file /dev/null, and summarises an edit too large to compute", () => {
    const [missing, deleted] = driftPatches([
      { path: "generated/a.py", onDisk: null, compiled: "x\n" },
      { path: "generated/b.py", onDisk: "y\n", compiled: null },
    ]);
    expect(missing).toEqual({ path: "generated/a.py", change: "missing", patch: "--- /dev/null\n+++ b/generated/a.py\n@@ -0,0 +1,1 @@\n+x\n", cut_lines: 0 });
    expect(deleted).toEqual({ path: "generated/b.py", change: "stale", patch: "--- a/generated/b.py\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-y\n", cut_lines: 0 });
    const huge = (tag: string): string => Array.from({ length: 3_000 }, (_, i) => `${tag} ${i}`).join("\n") + "\n";
    const [big] = driftPatches([{ path: "generated/manifest.json", onDisk: huge("a"), compiled: huge("b") }]);
    expect(big!.patch).toBe("--- a/generated/manifest.json\n+++ b/generated/manifest.json\n(too many differences to show: 3000 lines on disk, 3000 compiled)\n");
  });
});
