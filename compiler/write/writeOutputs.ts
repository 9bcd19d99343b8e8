import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import fg from "fast-glob";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, StageResult } from "../diagnostics/diagnostic.js";
import type { ProjectLayout } from "../discover/discoverProject.js";
import { GENERATED_HEADER_PREFIX, type FileMap } from "../render/renderModules.js";
import { compareStrings } from "../support/compare.js";

/** What writing (or checking) did, by project-relative path, each list sorted. */
export interface WriteReport {
  written: string[];
  deleted: string[];
  unchanged: string[];
  /** Files in the output folder without the generated header: never touched, only reported. */
  foreign: string[];
}

function existingOutputs(layout: ProjectLayout): string[] {
  const outDir = path.join(layout.root, layout.outDir);
  if (!fs.existsSync(outDir)) return [];
  // Sort for determinism.
  return fg
    .sync("**/*", { cwd: outDir, onlyFiles: true, dot: true, followSymbolicLinks: false, ignore: ["**/__pycache__/**"] })
    .map((p) => `${layout.outDir}/${p}`)
    .sort(compareStrings);
}

function readIfExists(absolute: string): string | undefined {
  try {
    return fs.readFileSync(absolute, "utf8");
  } catch {
    return undefined;
  }
}

/** Works out which files differ from the rendered map, without writing. */
export function planWrite(layout: ProjectLayout, files: FileMap): WriteReport {
  const report: WriteReport = { written: [], deleted: [], unchanged: [], foreign: [] };
  for (const relative of [...files.keys()].sort(compareStrings)) {
    const current = readIfExists(path.join(layout.root, relative));
    (current === files.get(relative) ? report.unchanged : report.written).push(relative);
  }
  for (const relative of existingOutputs(layout)) {
    if (files.has(relative)) continue;
    const text = readIfExists(path.join(layout.root, relative)) ?? "";
    (text.startsWith(GENERATED_HEADER_PREFIX) ? report.deleted : report.foreign).push(relative);
  }
  return report;
}

/**
 * The write stage: the only stage that writes the disk. Writes only files whose contents changed
 * (a no-op compile keeps every modification time), deletes generated modules that no DAG produces
 * any more (only files that carry the generated header), and reports hand-written files in the
 * output folder without touching them.
 *
 * Atomicity: every changed file is first written beside its target as a temporary file; only
 * when all temporaries exist are they renamed into place (rename is atomic per file on POSIX). If
 * staging fails, the temporaries are removed and nothing in the output folder has changed.
 *
 * With `check`, nothing is written: each file that would change is CA9001 (exit 1 in the CLI).
 */
export function writeOutputs(layout: ProjectLayout, files: FileMap, options: { check: boolean }): StageResult<WriteReport> {
  const diagnostics: Diagnostic[] = [];
  const report = planWrite(layout, files);
  for (const f of report.foreign) diagnostics.push(createDiagnostic(Diagnostics.ForeignFileInOutput, { path: f }, undefined));
  if (options.check) {
    for (const f of report.written) {
      const exists = fs.existsSync(path.join(layout.root, f));
      diagnostics.push(createDiagnostic(Diagnostics.CheckDrift, { path: f, change: exists ? "out of date" : "missing" }, undefined));
    }
    for (const f of report.deleted) diagnostics.push(createDiagnostic(Diagnostics.CheckDrift, { path: f, change: "stale (its contract is gone)" }, undefined));
    return { value: report, diagnostics };
  }
  const suffix = `.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
  const staged: Array<{ temp: string; target: string }> = [];
  try {
    for (const relative of report.written) {
      const target = path.join(layout.root, relative);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      const temp = target + suffix;
      fs.writeFileSync(temp, files.get(relative)!, "utf8");
      staged.push({ temp, target });
    }
  } catch (error) {
    for (const s of staged) fs.rmSync(s.temp, { force: true });
    diagnostics.push(createDiagnostic(Diagnostics.WriteFailed, { path: layout.outDir, reason: (error as NodeJS.ErrnoException).code ?? String(error) }, undefined));
    return { value: { ...report, written: [], deleted: [] }, diagnostics };
  }
  for (const s of staged) fs.renameSync(s.temp, s.target);
  for (const relative of report.deleted) {
    fs.rmSync(path.join(layout.root, relative), { force: true });
    removeEmptyParents(path.dirname(path.join(layout.root, relative)), path.join(layout.root, layout.outDir));
  }
  return { value: report, diagnostics };
}

function removeEmptyParents(dir: string, stop: string): void {
  let current = dir;
  while (current.startsWith(stop) && current !== stop) {
    try {
      const left = fs.readdirSync(current).filter((e) => e !== "__pycache__");
      if (left.length > 0) return;
      fs.rmSync(current, { recursive: true, force: true });
    } catch {
      return;
    }
    current = path.dirname(current);
  }
}
