import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../../compiler/cli.js";
import type { Diagnostic } from "../../compiler/diagnostics/diagnostic.js";
import { formatDiagnostics } from "../../compiler/diagnostics/format.js";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { parseManifest } from "../../compiler/discover/readManifest.js";
import { compileProject, type CompileOptions } from "../../compiler/pipeline.js";
import { formatChangesJson } from "../../compiler/report/formatChanges.js";
// @ts-expect-error -- plain JavaScript module of the benchmark (scripts/bench), no type declarations
import { writeCorpus } from "../../scripts/bench/corpus.mjs";
import { CASES, stageCase } from "../golden/golden.js";
import { copyBundledProject } from "./helpers.js";

// `validate` stops before render, and a compile whose new manifest has the text of the previous
// one takes it as that state without parsing it (ADR 0017). Neither may change what a command
// reports: validate prints every diagnostic `compile` prints but the write stage's (CA9xxx), and
// the shortcut gives the diff and diagnostics of the full parse and check.

/** What a user reads: every diagnostic with its excerpt, less the write stage's own (CA9xxx). */
function shown(root: string, options: CompileOptions): { text: string; errors: boolean } {
  const result = compileProject(defaultLayout(root), options);
  const kept = result.diagnostics.filter((d: Diagnostic) => !d.code.startsWith("CA9"));
  return { text: formatDiagnostics(kept, "text", (f) => result.sources.get(f)), errors: kept.some((d) => d.severity === "error") };
}

// The options `compileCommand` (cli.ts) passes for each command.
const VALIDATE: CompileOptions = { render: false };
const CHECK: CompileOptions = { write: "check" };
const COMPILE: CompileOptions = { write: "write" };

const caseNames = fs
  .readdirSync(CASES)
  .filter((n) => !n.startsWith("_") && fs.statSync(path.join(CASES, n)).isDirectory())
  .sort();

describe("validate reports what compile reports", () => {
  it("on every golden case, before and after a compile wrote generated/", () => {
    expect(caseNames.length).toBeGreaterThan(100);
    const differ: string[] = [];
    for (const name of caseNames) {
      const root = stageCase(path.join(CASES, name));
      try {
        // First against the case's own generated/ state (none, or the previous compile's) and
        // the compile that writes it; then against `--check` of what that compile wrote (up to
        // date for every clean case).
        for (const [round, other] of [["compile", COMPILE], ["--check after it", CHECK]] as const) {
          const validate = shown(root, VALIDATE);
          const compared = shown(root, other);
          if (validate.text !== compared.text) differ.push(`${name} (${round})`);
          expect(validate.errors, name).toBe(compared.errors);
        }
      } finally {
        fs.rmSync(root, { recursive: true, force: true });
      }
    }
    expect(differ).toEqual([]);
  });

  it("through the CLI on the bundled project: the same diagnostics, exit 0, and `valid:`", async () => {
    const root = copyBundledProject();
    try {
      const compile = await runCli(["compile", "--root", root]);
      const validate = await runCli(["validate", "--root", root]);
      expect(compile.exitCode).toBe(0);
      expect(validate.exitCode).toBe(0);
      const body = (stderr: string): string => stderr.split("\n").slice(0, -2).join("\n");
      expect(body(validate.stderr)).toBe(body(compile.stderr));
      expect(validate.stderr).toMatch(/\nvalid: \d+ contracts, \d+ assets\n$/);
      expect(compile.stderr).toMatch(/\ncompiled \d+ DAGs and \d+ assets: \d+ written, 0 deleted, 0 unchanged\n$/);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("an unchanged previous manifest is taken as the same state", () => {
  // The reference: the same previous state parsed and schema-checked (`parseManifest`) and handed
  // to the pipeline, so the shortcut is not taken.
  const parsedFrom = (root: string) => {
    const parsed = parseManifest(fs.readFileSync(path.join(root, "generated", "manifest.json"), "utf8"));
    expect(parsed.problem).toBeUndefined();
    return parsed.manifest!;
  };

  for (const [label, make] of [
    ["the bundled project", () => copyBundledProject()],
    [
      "the bench corpus of 150 contracts",
      () => {
        const root = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? "/tmp"), "ca-corpus-"));
        writeCorpus({ contracts: 150, seed: 20250101, root });
        return root;
      },
    ],
  ] as const) {
    it(`gives the diff and diagnostics of the parsed manifest: ${label}`, () => {
      const root = make();
      try {
        expect(shown(root, COMPILE).errors).toBe(false);
        const shortcut = compileProject(defaultLayout(root), { diff: true, write: "check" });
        const parsed = compileProject(defaultLayout(root), { diff: true, write: "check", previousManifest: parsedFrom(root) });
        const format = (r: typeof shortcut): string => formatDiagnostics(r.diagnostics, "text", (f) => r.sources.get(f));
        expect(format(shortcut)).toBe(format(parsed));
        expect(formatChangesJson(shortcut.diff!)).toBe(formatChangesJson(parsed.diff!));
        expect(shortcut.diff!.changes.length).toBe(parsed.diff!.changes.length);
        // Up to date: --check finds nothing to write, and the previous state is the new manifest.
        expect(shortcut.written?.written).toEqual([]);
        expect(shortcut.previousManifest).toBe(shortcut.manifest);
      } finally {
        fs.rmSync(root, { recursive: true, force: true });
      }
    });
  }

  it("parses a previous manifest whose text differs, and still reports it damaged (CA1101)", () => {
    const root = copyBundledProject();
    try {
      expect(shown(root, COMPILE).errors).toBe(false);
      const file = path.join(root, "generated", "manifest.json");
      fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace('"manifestVersion": 2', '"manifestVersion": 99'));
      for (const options of [VALIDATE, CHECK, COMPILE]) {
        const result = compileProject(defaultLayout(root), options);
        expect(result.diagnostics.map((d) => d.code)).toContain("CA1101");
        expect(result.files).toBeUndefined();
      }
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
