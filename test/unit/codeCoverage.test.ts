import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { listCodes } from "../../compiler/diagnostics/catalogue.js";
import { REPO } from "./helpers.js";

/**
 * Codes no golden case produces yet. This list only shrinks: a new code fails the test until a
 * case under test/cases produces it, and a listed code that a case now produces fails until it is
 * taken off. Some are exercised by unit or Python tests instead (internal errors, file-system
 * failures, the preflight codes); each still wants a golden case.
 */
const NOT_YET_IN_A_GOLDEN_CASE = [
  // CA0001 is a compiler bug (test/unit/internal-error.test.ts); CA1002 needs a file over 1 MiB and
  // CA1006 a project without the cases' shared config (both in test/unit/discover.test.ts).
  "CA0001", "CA1002", "CA1006",
  // CA3101 (ImplementedProducerRule): no producer type lacks a runtime since the dbt producer landed.
  "CA3101",
  // Preflight runs the runtime's Python (test/python/test_fault_preflight.py).
  "CA8801", "CA8802", "CA8803", "CA8804", "CA8805", "CA8806", "CA8807",
];

function expectedOutputs(): string {
  const parts: string[] = [];
  const walk = (d: string, inExpected: boolean): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, e.name);
      if (e.isDirectory()) walk(full, inExpected || e.name === "expected");
      else if (inExpected) parts.push(fs.readFileSync(full, "utf8"));
    }
  };
  walk(path.join(REPO, "test", "cases"), false);
  return parts.join("\n");
}

describe("diagnostic codes", () => {
  it("are each produced by some golden case (the known gaps only shrink)", () => {
    const text = expectedOutputs();
    const uncovered = listCodes()
      .map((c) => c.code)
      .filter((code) => !new RegExp(`\\b${code}\\b`).test(text))
      .sort();
    expect(uncovered).toEqual([...NOT_YET_IN_A_GOLDEN_CASE].sort());
  });
});
