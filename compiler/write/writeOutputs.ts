import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import fg from "fast-glob";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, StageResult } from "../diagnostics/diagnostic.js";
import { fileHoldsText, type ProjectLayout } from "../discover/discoverProject.js";
import { GENERATED_HEADER_PREFIX, type FileMap } from "../render/renderModules.js";
import { compareStrings } from "../support/compare.js";
import { utf8Chunks } from "../support/utf8.js";

/** What writing (or checking) did, by project-relative path, each list sorted. */
export interface WriteReport {
  written: string[];
  deleted: string[];
  unchanged: string[];
  /** Files in the output folder without the generated header: never touched, only reported. */
  foreign: string[];
  /** With `check` only: each file that differs, in path order, for `report/formatDrift.ts`. */
  drift?: DriftedFile[];
}

/**
 * A file `--check` found different: its text on disk (null when missing) and what compile would
 * write (null when compile would delete it).
 */
export interface DriftedFile {
  path: string;
  onDisk: string | null;
  compiled: string | null;
}

/**
 * Which files of the output folder a write manages (deletes when stale, reports when hand-written),
 * as fast-glob patterns relative to it: `owns` (default every file) less `ignore`. Files outside
 * that scope are never looked at, so a write can share a folder with files it does not own (the ODCS
 * export under generated/odcs/ when compile does not write it, contracts/ for `import odcs`).
 */
export interface WriteScope {
  owns?: string[];
  ignore?: string[];
}

function existingOutputs(layout: ProjectLayout, scope: WriteScope = {}): string[] {
  const outDir = path.join(layout.root, layout.outDir);
  const owns = scope.owns ?? ["**/*"];
  if (owns.length === 0 || !fs.existsSync(outDir) || !fs.statSync(outDir).isDirectory()) return [];
  // Sort for determinism.
  return fg
    .sync(owns, { cwd: outDir, onlyFiles: true, dot: true, followSymbolicLinks: false, ignore: ["**/__pycache__/**", ...(scope.ignore ?? [])] })
    .map((p) => `${layout.outDir}/${p}`)
    .sort(compareStrings);
}

function readIfExists(absolute: string): string | undefined {
  try {
    // No exception for the common "not there yet" (a first compile has thousands).
    if (!fs.statSync(absolute, { throwIfNoEntry: false })) return undefined;
    return fs.readFileSync(absolute, "utf8");
  } catch {
    return undefined;
  }
}

/** Writes `text` as UTF-8, chunk by chunk (`utf8Chunks`), holding one chunk's bytes at a time. */
function writeText(absolute: string, text: string): void {
  const fd = fs.openSync(absolute, "w");
  try {
    for (const chunk of utf8Chunks(text)) {
      for (let done = 0; done < chunk.length; ) done += fs.writeSync(fd, chunk, done, chunk.length - done);
    }
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Files of the output folder this compile already found holding exactly a text, by
 * project-relative path: the previous manifest when its bytes were the new one's (discover's
 * `checkPrevious`, ADR 0017d). A file whose rendered text is that very text is not compared again
 * (ADR 0017g); any other text is compared as usual.
 */
export type KnownOutputs = ReadonlyMap<string, string>;

/** Works out which files differ from the rendered map, without writing. */
export function planWrite(layout: ProjectLayout, files: FileMap, scope: WriteScope = {}, known?: KnownOutputs): WriteReport {
  const report: WriteReport = { written: [], deleted: [], unchanged: [], foreign: [] };
  for (const relative of [...files.keys()].sort(compareStrings)) {
    const text = files.get(relative)!;
    (known?.get(relative) === text || fileHoldsText(path.join(layout.root, relative), text) ? report.unchanged : report.written).push(relative);
  }
  for (const relative of existingOutputs(layout, scope)) {
    if (files.has(relative)) continue;
    const text = readIfExists(path.join(layout.root, relative)) ?? "";
    (text.startsWith(GENERATED_HEADER_PREFIX) ? report.deleted : report.foreign).push(relative);
  }
  return report;
}

/** The first folder of `dir` (or `dir` itself) that does not exist yet, to remove on failure. */
function firstMissing(dir: string): string | undefined {
  let missing: string | undefined;
  for (let current = dir; !fs.existsSync(current); current = path.dirname(current)) {
    missing = current;
    if (path.dirname(current) === current) break;
  }
  return missing;
}

const at = (file: string) => ({ file, line: 1, column: 1 });
const reason = (error: unknown): string => (error as NodeJS.ErrnoException).code ?? String(error);

/**
 * Why the output folder cannot take the planned writes, before anything is touched: the folder is
 * not a folder, or a target path is taken by something that is not a regular file.
 */
function blockers(layout: ProjectLayout, report: WriteReport): Diagnostic[] {
  const out: Diagnostic[] = [];
  const outDir = path.join(layout.root, layout.outDir);
  if (fs.existsSync(outDir) && !fs.statSync(outDir).isDirectory()) {
    return [createDiagnostic(Diagnostics.WriteFailed, { path: layout.outDir, reason: "it exists and is not a folder" }, at(layout.outDir))];
  }
  // Folders are shared by many targets: look at each path once.
  const stats = new Map<string, fs.Stats | undefined>();
  const lstat = (partial: string): fs.Stats | undefined => {
    if (!stats.has(partial)) {
      let stat: fs.Stats | undefined;
      try {
        stat = fs.lstatSync(path.join(layout.root, partial), { throwIfNoEntry: false });
      } catch {
        stat = undefined;
      }
      stats.set(partial, stat);
    }
    return stats.get(partial);
  };
  for (const relative of report.written) {
    // Every folder on the way must be a folder (or missing), and the target a file (or missing).
    const parts = relative.split("/");
    for (let i = 1; i <= parts.length; i++) {
      const partial = parts.slice(0, i).join("/");
      const stat = lstat(partial);
      if (!stat) break;
      const last = i === parts.length;
      if ((last && !stat.isFile()) || (!last && !stat.isDirectory())) {
        out.push(createDiagnostic(Diagnostics.WriteFailed, { path: partial, reason: last ? "it is not a regular file" : "it is not a folder" }, at(partial)));
        break;
      }
    }
  }
  return out;
}

/**
 * The write stage: the only stage that writes the disk. Writes only files whose contents changed
 * (a no-op compile keeps every modification time), deletes generated modules that no DAG produces
 * any more (only files that carry the generated header), and reports hand-written files in the
 * output folder without touching them.
 *
 * Atomicity: targets are checked first (a folder where a file must go stops everything before any
 * change); every changed file is then written beside its target as a temporary file, and only when
 * all temporaries exist are they renamed into place (rename is atomic per file on POSIX). If
 * staging fails, the temporaries and any folder made for them are removed, so nothing in the
 * output folder has changed. A failure after that point (a rename or delete refused by the file
 * system) is reported, never thrown.
 *
 * With `check`, nothing is written: each file that would change is CA9001 (exit 1 in the CLI).
 * `known`: files already found holding their text (see {@link KnownOutputs}), not compared again.
 */
export function writeOutputs(layout: ProjectLayout, files: FileMap, options: { check: boolean; known?: KnownOutputs } & WriteScope): StageResult<WriteReport> {
  const diagnostics: Diagnostic[] = [];
  let report: WriteReport;
  try {
    report = planWrite(layout, files, options, options.known);
  } catch (error) {
    return { value: { written: [], deleted: [], unchanged: [], foreign: [] }, diagnostics: [createDiagnostic(Diagnostics.WriteFailed, { path: layout.outDir, reason: reason(error) }, at(layout.outDir))] };
  }
  for (const f of report.foreign) diagnostics.push(createDiagnostic(Diagnostics.ForeignFileInOutput, { path: f }, at(f)));
  if (options.check) {
    const drift: DriftedFile[] = [];
    for (const f of report.written) {
      const onDisk = readIfExists(path.join(layout.root, f)) ?? null;
      drift.push({ path: f, onDisk, compiled: files.get(f)! });
      diagnostics.push(createDiagnostic(Diagnostics.CheckDrift, { path: f, change: onDisk !== null ? "out of date" : "missing" }, at(f)));
    }
    for (const f of report.deleted) {
      drift.push({ path: f, onDisk: readIfExists(path.join(layout.root, f)) ?? "", compiled: null });
      diagnostics.push(createDiagnostic(Diagnostics.CheckDrift, { path: f, change: "stale (its contract is gone)" }, at(f)));
    }
    // Sort for determinism.
    drift.sort((a, b) => compareStrings(a.path, b.path));
    return { value: { ...report, drift }, diagnostics };
  }
  const nothing: WriteReport = { ...report, written: [], deleted: [] };
  const blocked = blockers(layout, report);
  if (blocked.length) return { value: nothing, diagnostics: [...diagnostics, ...blocked] };

  const suffix = `.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
  const staged: Array<{ temp: string; target: string }> = [];
  const createdFolders: string[] = [];
  const readyFolders = new Set<string>();
  let current = layout.outDir;
  try {
    for (const relative of report.written) {
      current = relative;
      const target = path.join(layout.root, relative);
      const folder = path.dirname(target);
      if (!readyFolders.has(folder)) {
        const missing = firstMissing(folder);
        fs.mkdirSync(folder, { recursive: true });
        if (missing) createdFolders.push(missing);
        readyFolders.add(folder);
      }
      const temp = target + suffix;
      writeText(temp, files.get(relative)!);
      staged.push({ temp, target });
    }
  } catch (error) {
    for (const s of staged) fs.rmSync(s.temp, { force: true });
    for (const folder of createdFolders.reverse()) fs.rmSync(folder, { recursive: true, force: true });
    diagnostics.push(createDiagnostic(Diagnostics.WriteFailed, { path: current, reason: reason(error) }, at(current)));
    return { value: nothing, diagnostics };
  }
  const done: WriteReport = { ...report, written: [], deleted: [] };
  for (const s of staged) {
    const relative = path.relative(layout.root, s.target).split(path.sep).join("/");
    try {
      fs.renameSync(s.temp, s.target);
      done.written.push(relative);
    } catch (error) {
      fs.rmSync(s.temp, { force: true });
      diagnostics.push(createDiagnostic(Diagnostics.WriteFailed, { path: relative, reason: reason(error) }, at(relative)));
    }
  }
  for (const relative of report.deleted) {
    try {
      fs.rmSync(path.join(layout.root, relative), { force: true });
      done.deleted.push(relative);
      removeEmptyParents(path.dirname(path.join(layout.root, relative)), path.join(layout.root, layout.outDir));
    } catch (error) {
      diagnostics.push(createDiagnostic(Diagnostics.WriteFailed, { path: relative, reason: reason(error) }, at(relative)));
    }
  }
  return { value: done, diagnostics };
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
