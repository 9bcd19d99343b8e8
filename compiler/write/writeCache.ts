import fs from "node:fs";
import path from "node:path";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, StageResult } from "../diagnostics/diagnostic.js";

/** What {@link writeCacheEntries} did. */
export interface CacheWriteReport {
  written: number;
  /** Entries no file of this compile uses any more, removed. */
  removed: number;
}

/** Written into the cache's top folder: Git ignores the folder (and this file) even without a line in .gitignore. */
const SELF_IGNORE = "# Written by contract-assets: the incremental cache, never committed.\n*\n";
/** https://bford.info/cachedir/: backup and archiving tools skip the folder. */
const CACHEDIR_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by contract-assets.\n";

/** A temporary file older than this is left over from a compile that stopped half way; removed. */
const STALE_TEMPORARY_MS = 10 * 60 * 1000;

let temporaries = 0;

/**
 * Writes the incremental cache's new entries into `<top>/<folder>/<key>.bin` (project-relative;
 * ADR 0017c) and removes every `.bin` entry of that folder whose key is neither written nor in
 * `keep`, so the cache holds what the last compile used and never grows with edits. Each entry is
 * written to a temporary file and renamed over its name, so a reader sees a whole entry or none;
 * `top` gets a `.gitignore` of `*` and a `CACHEDIR.TAG`.
 *
 * A cache that cannot be written costs the next compile time, nothing else: one CA9950 note names
 * the first entry (or the folder) that could not be written, with the count of the others; an
 * entry that fails does not stop the rest. Never throws.
 */
export function writeCacheEntries(
  root: string,
  top: string,
  folder: string,
  entries: ReadonlyMap<string, Uint8Array>,
  keep: ReadonlySet<string>,
): StageResult<CacheWriteReport> {
  const diagnostics: Diagnostic[] = [];
  const report: CacheWriteReport = { written: 0, removed: 0 };
  const failures: Array<{ path: string; reason: string }> = [];
  const reasonOf = (error: unknown): string => (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
  const dir = path.join(root, folder);
  try {
    fs.mkdirSync(dir, { recursive: true });
    for (const [name, text] of [[".gitignore", SELF_IGNORE], ["CACHEDIR.TAG", CACHEDIR_TAG]] as const) {
      const file = path.join(root, top, name);
      if (!fs.existsSync(file)) fs.writeFileSync(file, text);
    }
  } catch (error) {
    diagnostics.push(createDiagnostic(Diagnostics.CacheNotWritten, { path: folder, reason: reasonOf(error), others: 0 }, { file: folder, line: 1, column: 1 }));
    return { value: report, diagnostics };
  }
  // One entry that cannot be written (something else in its place) does not stop the others.
  for (const [key, bytes] of entries) {
    const target = path.join(dir, `${key}.bin`);
    const temporary = `${target}.${process.pid}.${temporaries++}.tmp`;
    try {
      fs.writeFileSync(temporary, bytes);
      fs.renameSync(temporary, target);
      report.written++;
    } catch (error) {
      fs.rmSync(temporary, { force: true });
      failures.push({ path: `${folder}/${key}.bin`, reason: reasonOf(error) });
    }
  }
  try {
    const now = Date.now();
    for (const name of fs.readdirSync(dir)) {
      const file = path.join(dir, name);
      if (name.endsWith(".bin")) {
        const key = name.slice(0, -".bin".length);
        if (keep.has(key) || entries.has(key)) continue;
        fs.rmSync(file, { force: true });
        report.removed++;
      } else if (name.endsWith(".tmp")) {
        const stat = fs.statSync(file, { throwIfNoEntry: false });
        if (stat && now - stat.mtimeMs > STALE_TEMPORARY_MS) fs.rmSync(file, { force: true });
      }
    }
  } catch (error) {
    failures.push({ path: folder, reason: reasonOf(error) });
  }
  if (failures.length > 0) {
    const first = failures[0]!;
    diagnostics.push(createDiagnostic(Diagnostics.CacheNotWritten, { path: first.path, reason: first.reason, others: failures.length - 1 }, { file: first.path, line: 1, column: 1 }));
  }
  return { value: report, diagnostics };
}
