import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { runCli } from "../../compiler/cli.js";
import { formatDiagnostics } from "../../compiler/diagnostics/format.js";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { compileProject, type CompileOptions } from "../../compiler/pipeline.js";
import { formatChangesJson, formatChangesText } from "../../compiler/report/formatChanges.js";

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
export function stageCase(caseDir: string, options: { git?: boolean } = {}): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-case-"));
  fs.cpSync(path.join(CASES, "_base"), root, { recursive: true });
  if (fs.existsSync(path.join(caseDir, "previous"))) {
    fs.cpSync(path.join(caseDir, "previous"), root, { recursive: true, verbatimSymlinks: true });
    const before = compileRoot(root);
    if (before.exitCode !== 0) throw new Error(`${caseDir}/previous does not compile:\n${before.diagnostics}`);
    // The previous state committed as HEAD, for `diff --against HEAD`.
    if (options.git) commitAll(root);
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
  /** Pinned command outputs by file name under `expected/commands/` (cases with `commands.txt`). */
  commands?: Map<string, string>;
}

/** Compiles a staged root like `contract-assets compile` does, and collects what it wrote. */
export function compileRoot(root: string, options: CompileOptions = {}): CaseOutput {
  const layout = defaultLayout(root);
  // The pipeline drives write, as `contract-assets compile` does.
  const result = compileProject(layout, { write: "write", ...options });
  const diagnostics = result.diagnostics;
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

function commitAll(root: string): void {
  const git = (...args: string[]): void =>
    void execFileSync("git", ["-c", "user.name=golden", "-c", "user.email=golden@example.invalid", "-c", "commit.gpgsign=false", ...args], { cwd: root, stdio: "ignore" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("commit", "-qm", "previous");
}

/** One CLI command line of a case's `commands.txt`, and the file its output is pinned in. */
export interface CaseCommand {
  /** The arguments after `contract-assets`, without `--root` (the runner adds it). */
  args: string[];
  /** `expected/commands/<file>`: the command line with every run of other characters as `-`. */
  file: string;
}

/**
 * A case's command lines: `commands.txt`, one command per line (`diff --format json`), `#` starts a
 * comment. Absent file: no commands.
 */
export function caseCommands(caseDir: string): CaseCommand[] {
  const file = path.join(caseDir, "commands.txt");
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .map((line) => line.replace(/#.*/, "").trim())
    .filter((line) => line !== "")
    .map((line) => ({ args: line.split(/\s+/), file: `${line.replace(/[^A-Za-z0-9_.]+/g, "-").replace(/^-|-$/g, "")}.txt` }));
}

/**
 * Runs one command on a fresh copy of the case, in process, as the bin would (`runCli`), and renders
 * what a user sees: the command line, the exit code, stdout and stderr. The temporary root never
 * shows: `--root` is added by the runner and any mention of the folder reads `<root>`.
 */
export async function runCaseCommand(caseDir: string, command: CaseCommand): Promise<string> {
  const root = stageCase(caseDir, { git: command.args.includes("--against") });
  const result = await runCli([...command.args, "--root", root]);
  const clean = (text: string): string => text.split(root).join("<root>");
  return [
    `$ contract-assets ${command.args.join(" ")}`,
    `exit ${result.exitCode}`,
    "--- stdout",
    clean(result.stdout) + "--- stderr",
    clean(result.stderr),
  ].join("\n");
}
