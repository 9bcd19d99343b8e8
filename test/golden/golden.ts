import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { formatDiagnostics } from "../../compiler/diagnostics/format.js";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { compileProject, type CompileOptions } from "../../compiler/pipeline.js";
import { formatChangesJson, formatChangesText } from "../../compiler/report/formatChanges.js";
import { writeOutputs } from "../../compiler/write/writeOutputs.js";

export const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "..");
export const CASES = path.join(REPO, "test", "cases");
export const UPDATE = process.env.UPDATE_GOLDEN === "1";

/** Every file under a folder, by POSIX path relative to it, with its text. */
export function readTree(root: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!fs.existsSync(root)) return out;
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) out.set(path.relative(root, full).split(path.sep).join("/"), fs.readFileSync(full, "utf8"));
    }
  };
  walk(root);
  return new Map([...out].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Copies a case's project into a fresh temporary root: the shared base config, then `input/`. A
 * case with `previous/` is a before/after pair: `previous/` is laid first and compiled (it must
 * compile cleanly), then its contracts and SQL are replaced by `input/`'s, so the next compile
 * diffs against the previous manifest in `generated/`.
 */
export function stageCase(caseDir: string): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-case-"));
  fs.cpSync(path.join(CASES, "_base"), root, { recursive: true });
  if (fs.existsSync(path.join(caseDir, "previous"))) {
    fs.cpSync(path.join(caseDir, "previous"), root, { recursive: true, verbatimSymlinks: true });
    const before = compileRoot(root);
    if (before.exitCode !== 0) throw new Error(`${caseDir}/previous does not compile:\n${before.diagnostics}`);
    for (const part of ["contracts", "sql"]) fs.rmSync(path.join(root, part), { recursive: true, force: true });
  }
  fs.cpSync(path.join(caseDir, "input"), root, { recursive: true, verbatimSymlinks: true });
  return root;
}

export interface CaseOutput {
  exitCode: number;
  diagnostics: string;
  generated: Map<string, string>;
  /** The diff report against the previous manifest, text and JSON (before/after cases only). */
  changes?: { text: string; json: string };
}

/** Compiles a staged root like `contract-assets compile` does, and collects what it wrote. */
export function compileRoot(root: string, options: CompileOptions = {}): CaseOutput {
  const layout = defaultLayout(root);
  const result = compileProject(layout, options);
  let diagnostics = result.diagnostics;
  if (result.files) diagnostics = [...diagnostics, ...writeOutputs(layout, result.files, { check: false }).diagnostics];
  const exitCode = diagnostics.some((d) => d.severity === "error") ? 1 : 0;
  const out: CaseOutput = {
    exitCode,
    diagnostics: formatDiagnostics(diagnostics, "text", (f) => result.sources.get(f)),
    generated: readTree(path.join(root, "generated")),
  };
  if (result.diff) out.changes = { text: formatChangesText(result.diff), json: formatChangesJson(result.diff) };
  return out;
}

/** Rewrites every contract and config file of a root with CRLF line ends. */
export function toCrlf(root: string): void {
  for (const rel of readTree(root).keys()) {
    if (!/\.ya?ml$/.test(rel)) continue;
    // Bytes, not text: a file that is not UTF-8 must stay exactly as broken.
    const bytes = fs.readFileSync(path.join(root, rel));
    const out: number[] = [];
    bytes.forEach((b, i) => {
      if (b === 0x0a && bytes[i - 1] !== 0x0d) out.push(0x0d);
      out.push(b);
    });
    fs.writeFileSync(path.join(root, rel), Buffer.from(out));
  }
}
