import fs from "node:fs";
import path from "node:path";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, StageResult } from "../diagnostics/diagnostic.js";
import { compareStrings } from "../support/compare.js";
import { isLeftOverTemporary } from "./leftOver.js";

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

let temporaries = 0;

/**
 * An entry's name, `<sha256 hex>.bin`, and a temporary one, `<key>.bin.<pid>.<n>.tmp`, of an entry
 * or of an index (whose keys are words: `records`, `modules`).
 */
const ENTRY_NAME = /^([0-9a-f]{64})\.bin$/;
const TEMPORARY_NAME = /^(?:[0-9a-f]{64}|[a-z]+)\.bin\.(\d+)\.\d+\.tmp$/;

/**
 * Creates `folder` (project-relative, POSIX) below `root` one folder at a time, never through a
 * symbolic link: the cache is written and pruned only inside the project. Throws (with a `code`
 * that says why) when something on the way is a link or not a folder.
 */
function makePlainFolder(root: string, folder: string): void {
  let at = root;
  for (const part of folder.split("/")) {
    at = path.join(at, part);
    const stat = fs.lstatSync(at, { throwIfNoEntry: false });
    if (!stat) fs.mkdirSync(at);
    else if (stat.isSymbolicLink()) throw Object.assign(new Error("a symbolic link"), { code: `${path.relative(root, at).split(path.sep).join("/")} is a symbolic link` });
    else if (!stat.isDirectory()) throw Object.assign(new Error("not a folder"), { code: "ENOTDIR" });
  }
}

/** One compile's writing of the incremental cache's entries, fed one entry at a time ({@link openCacheWrite}). */
export interface CacheWrite {
  /**
   * Writes one new entry at once (temporary file, then rename), so its bytes need not be held
   * until the compile ends. A failure is recorded for {@link CacheWrite.finish}'s note; never throws.
   */
  add(key: string, bytes: Uint8Array): void;
  /**
   * Removes every `.bin` entry of the folder whose key is neither written by this session nor in
   * `keep`, and reports what was done: one CA9950 note for every failure of the session, naming
   * the first (the folder's, else the first entry in path order, so the note is the same whatever
   * order the entries came in). Never throws; call once, after the last `add`.
   */
  finish(keep: ReadonlySet<string>): StageResult<CacheWriteReport>;
}

const reasonOf = (error: unknown): string => (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));

/**
 * Opens the writing of the incremental cache's entries into `<top>/<folder>/<key>.bin`
 * (project-relative; ADR 0017c, ADR 0017m). The folder (never through a symbolic link), the
 * `.gitignore` of `*` and the `CACHEDIR.TAG` of `top` are made at the first `add`, or by `finish`
 * when nothing was added. Each entry is written to a temporary file and renamed over its name, so
 * a reader sees a whole entry or none; `finish` prunes what this compile did not use, so the cache
 * holds what the last compile used and never grows with edits.
 *
 * A cache that cannot be written costs the next compile time, nothing else: a folder that cannot
 * be made stops every entry (each later `add` drops its bytes); an entry that fails does not stop
 * the rest. `notWritten` is the note's catalogue entry (the parse entries' CA9950 by default; the
 * index of rendered modules has its own, CA9951).
 */
export function openCacheWrite(root: string, top: string, folder: string, notWritten: typeof Diagnostics.CacheNotWritten = Diagnostics.CacheNotWritten): CacheWrite {
  const dir = path.join(root, folder);
  const report: CacheWriteReport = { written: 0, removed: 0 };
  const failures: Array<{ path: string; reason: string }> = [];
  const written = new Set<string>();
  let folderState: "unmade" | "made" | { reason: string } = "unmade";
  let finished = false;
  const makeFolder = (): boolean => {
    if (folderState === "unmade") {
      try {
        makePlainFolder(root, folder);
        for (const [name, text] of [[".gitignore", SELF_IGNORE], ["CACHEDIR.TAG", CACHEDIR_TAG]] as const) {
          const file = path.join(root, top, name);
          // Anything already there (a dangling link too) is left alone; `wx` never follows one.
          if (!fs.lstatSync(file, { throwIfNoEntry: false })) fs.writeFileSync(file, text, { flag: "wx" });
        }
        folderState = "made";
      } catch (error) {
        folderState = { reason: reasonOf(error) };
      }
    }
    return folderState === "made";
  };
  return {
    add(key, bytes) {
      if (finished) throw new Error("openCacheWrite: add after finish");
      // Counted once a key is written, as a map of entries would hold it once.
      written.add(key);
      if (!makeFolder()) return;
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
    },
    finish(keep) {
      if (finished) throw new Error("openCacheWrite: finish called twice");
      finished = true;
      const diagnostics: Diagnostic[] = [];
      if (!makeFolder()) {
        const reason = typeof folderState === "object" ? folderState.reason : "unknown";
        diagnostics.push(createDiagnostic(notWritten, { path: folder, reason, others: 0 }, { file: folder, line: 1, column: 1 }));
        return { value: report, diagnostics };
      }
      // Sort for determinism: entries arrive in the order worker threads finish their files.
      failures.sort((a, b) => compareStrings(a.path, b.path));
      let entries: fs.Dirent[] = [];
      try {
        // With their types (`d_type`), so an entry in use costs no `lstat` (ADR 0017q); Node
        // looks up the type itself where the file system gives none.
        entries = fs.readdirSync(dir, { withFileTypes: true });
      } catch (error) {
        failures.push({ path: folder, reason: reasonOf(error) });
      }
      const now = Date.now();
      // Only regular files named as this cache names them are removed, each on its own: one that
      // cannot be removed (a folder in its place) does not keep the others.
      for (const found of entries) {
        const name = found.name;
        const entry = ENTRY_NAME.exec(name);
        const temporary = entry ? null : TEMPORARY_NAME.exec(name);
        if ((!entry && !temporary) || !found.isFile()) continue;
        if (entry && (keep.has(entry[1]!) || written.has(entry[1]!))) continue;
        const file = path.join(dir, name);
        try {
          if (entry) {
            fs.rmSync(file, { force: true });
            report.removed++;
          } else if (isLeftOverTemporary(Number(temporary![1]), fs.lstatSync(file, { throwIfNoEntry: false })?.mtimeMs ?? now, now)) fs.rmSync(file, { force: true });
        } catch (error) {
          failures.push({ path: `${folder}/${name}`, reason: reasonOf(error) });
        }
      }
      if (failures.length > 0) {
        const first = failures[0]!;
        diagnostics.push(createDiagnostic(notWritten, { path: first.path, reason: first.reason, others: failures.length - 1 }, { file: first.path, line: 1, column: 1 }));
      }
      return { value: report, diagnostics };
    },
  };
}

/**
 * Writes the incremental cache's new `entries` into `<top>/<folder>/<key>.bin` and removes every
 * `.bin` entry of that folder whose key is neither written nor in `keep` ({@link openCacheWrite}
 * fed the whole map, then finished). Never throws.
 */
export function writeCacheEntries(
  root: string,
  top: string,
  folder: string,
  entries: ReadonlyMap<string, Uint8Array>,
  keep: ReadonlySet<string>,
  notWritten: typeof Diagnostics.CacheNotWritten = Diagnostics.CacheNotWritten,
): StageResult<CacheWriteReport> {
  const write = openCacheWrite(root, top, folder, notWritten);
  for (const [key, bytes] of entries) write.add(key, bytes);
  return write.finish(keep);
}

/**
 * Removes the entry `<folder>/<key>.bin` (project-relative; an index or the compile state, whose
 * key is a word) when it is a regular file in real folders of the project: what a compile that
 * leaves no such entry of its own must not leave of an earlier one (ADR 0022). Nothing is removed
 * through a symbolic link on the way (one `notWritten` note, as a write there says), and nothing
 * there, or something else than a folder on the way, is no error; an entry that cannot be removed
 * is one `notWritten` note. Never throws.
 */
export function removeCacheEntry(root: string, folder: string, key: string, notWritten: typeof Diagnostics.CacheNotWritten): Diagnostic[] {
  const relative = `${folder}/${key}.bin`;
  const note = (reason: string): Diagnostic[] => [createDiagnostic(notWritten, { path: relative, reason, others: 0 }, { file: relative, line: 1, column: 1 })];
  try {
    const parts = relative.split("/");
    let at = root;
    for (const [i, part] of parts.entries()) {
      at = path.join(at, part);
      const stat = fs.lstatSync(at, { throwIfNoEntry: false });
      if (!stat) return [];
      if (stat.isSymbolicLink()) return note(`${parts.slice(0, i + 1).join("/")} is a symbolic link`);
      if (i === parts.length - 1) {
        if (stat.isFile()) fs.rmSync(at);
      } else if (!stat.isDirectory()) return [];
    }
    return [];
  } catch (error) {
    return note(reasonOf(error));
  }
}
