import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CASES, compileRoot, readTree, stageCase, toCrlf, UPDATE, type CaseOutput } from "./golden.js";

/**
 * Golden cases: each folder of test/cases is a project (`input/`) with what compiling it must give
 * (`expected/`): `exit-code`, `diagnostics.txt` (gcc-style with the source excerpt), when it
 * compiles `generated/` file by file (missing and extra files both fail), and for a before/after
 * case (`previous/`) the diff report `changes.txt` and `changes.json`. UPDATE_GOLDEN=1 rewrites
 * `expected/`; review the change with `git diff`.
 */
const names = fs
  .readdirSync(CASES)
  .filter((n) => !n.startsWith("_") && fs.statSync(path.join(CASES, n)).isDirectory())
  .sort();

function expectedOf(caseDir: string): CaseOutput {
  const dir = path.join(caseDir, "expected");
  return {
    exitCode: Number(fs.readFileSync(path.join(dir, "exit-code"), "utf8").trim()),
    diagnostics: fs.existsSync(path.join(dir, "diagnostics.txt")) ? fs.readFileSync(path.join(dir, "diagnostics.txt"), "utf8") : "",
    generated: readTree(path.join(dir, "generated")),
    ...(fs.existsSync(path.join(dir, "changes.txt"))
      ? { changes: { text: fs.readFileSync(path.join(dir, "changes.txt"), "utf8"), json: fs.readFileSync(path.join(dir, "changes.json"), "utf8") } }
      : {}),
  };
}

function writeExpected(caseDir: string, out: CaseOutput): void {
  const dir = path.join(caseDir, "expected");
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "exit-code"), `${out.exitCode}\n`);
  if (out.diagnostics) fs.writeFileSync(path.join(dir, "diagnostics.txt"), out.diagnostics);
  if (out.changes) {
    fs.writeFileSync(path.join(dir, "changes.txt"), out.changes.text);
    fs.writeFileSync(path.join(dir, "changes.json"), out.changes.json);
  }
  for (const [rel, text] of out.generated) {
    fs.mkdirSync(path.dirname(path.join(dir, "generated", rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, "generated", rel), text);
  }
}

describe("golden cases", () => {
  it("has cases", () => {
    expect(names.length).toBeGreaterThan(10);
  });

  for (const name of names) {
    const caseDir = path.join(CASES, name);
    it(name, () => {
      const first = compileRoot(stageCase(caseDir));
      if (UPDATE) writeExpected(caseDir, first);
      const expected = expectedOf(caseDir);
      expect(first.exitCode).toBe(expected.exitCode);
      expect(first.diagnostics).toBe(expected.diagnostics);
      expect([...first.generated.keys()]).toEqual([...expected.generated.keys()]);
      for (const [rel, text] of expected.generated) expect(first.generated.get(rel), rel).toBe(text);
      expect(first.changes?.text).toBe(expected.changes?.text);
      expect(first.changes?.json).toBe(expected.changes?.json);

      // Deterministic: a second compile of a fresh copy is byte-identical.
      const second = compileRoot(stageCase(caseDir));
      expect(second).toEqual(first);
      // Discovery order does not matter.
      const reversed = compileRoot(stageCase(caseDir), { reorder: (files) => [...files].reverse() });
      expect(reversed).toEqual(first);
      // CRLF line ends give the same output.
      const crlfRoot = stageCase(caseDir);
      toCrlf(crlfRoot);
      expect(compileRoot(crlfRoot)).toEqual(first);
    });
  }

  it("has no expected output that no case produces", () => {
    for (const name of fs.readdirSync(CASES).filter((n) => !n.startsWith("_"))) {
      const dir = path.join(CASES, name);
      expect(fs.existsSync(path.join(dir, "input")), `${name}/input`).toBe(true);
      expect(fs.existsSync(path.join(dir, "expected", "exit-code")), `${name}/expected/exit-code`).toBe(true);
      const extra = fs.readdirSync(dir).filter((e) => !["input", "expected", "previous", "README.md"].includes(e));
      expect(extra, `${name} holds unknown entries`).toEqual([]);
    }
  });
});
