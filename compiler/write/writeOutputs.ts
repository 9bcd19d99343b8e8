import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import fg from "fast-glob";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, StageResult } from "../diagnostics/diagnostic.js";
import { fileHoldsText, type ProjectLayout } from "../discover/discoverProject.js";
import { readRegularFile } from "../discover/regularFile.js";
import { GENERATED_HEADER_PREFIX, type FileMap } from "../render/renderModules.js";
import { isGeneratedPools, POOLS_FILE } from "../render/renderPools.js";
import { compareStrings } from "../support/compare.js";
import { sameStamp, stampOf, type FileStamp } from "../support/fileStamp.js";
import { utf8Chunks } from "../support/utf8.js";
import { isLeftOverTemporary } from "./leftOver.js";
import { BATCH_STAGE_AFTER, BATCH_STAGE_MAX_CHARS, startBatchStager, type BatchStageOptions, type BatchStager } from "./batchStager.js";
import { startStagingThread, type StageThreadOptions, type StagingThread } from "./stageThread.js";

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

/**
 * The UTF-8 text of an output file, or undefined when it is missing or is not a regular file one
 * can read (a folder, a FIFO, a link to a device: `readRegularFile`, which never blocks, so
 * `--check` never waits on a FIFO or reads `/dev/zero` for ever where a target goes).
 */
function readIfExists(absolute: string): string | undefined {
  const read = readRegularFile(absolute, { limit: Number.MAX_SAFE_INTEGER, follow: true });
  if (!("bytes" in read)) return undefined;
  try {
    return read.bytes.toString("utf8");
  } catch {
    // Longer than a string can be.
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

/** Writes `bytes` (a text's UTF-8 bytes, as {@link writeText} would write them) into a new file. */
function writeBytes(absolute: string, bytes: Uint8Array): void {
  const fd = fs.openSync(absolute, "w");
  try {
    for (let done = 0; done < bytes.length; ) done += fs.writeSync(fd, bytes, done, bytes.length - done);
  } finally {
    fs.closeSync(fd);
  }
}

/** Writes `pieces`, in order, into a new file. */
function writePieces(absolute: string, pieces: readonly Uint8Array[]): void {
  const fd = fs.openSync(absolute, "w");
  try {
    for (const piece of pieces) for (let done = 0; done < piece.length; ) done += fs.writeSync(fd, piece, done, piece.length - done);
  } finally {
    fs.closeSync(fd);
  }
}

/** Whether the file at `absolute` is a regular file holding exactly the bytes of `pieces`, in order. */
function fileHoldsBytes(absolute: string, pieces: readonly Uint8Array[]): boolean {
  let fd: number | undefined;
  try {
    const size = pieces.reduce((n, p) => n + p.byteLength, 0);
    const stat = fs.statSync(absolute, { throwIfNoEntry: false });
    if (!stat?.isFile() || stat.size !== size) return false;
    fd = fs.openSync(absolute, "r");
    let position = 0;
    const buffer = Buffer.allocUnsafe(1 << 20);
    for (const piece of pieces) {
      for (let done = 0; done < piece.byteLength; ) {
        const want = Math.min(buffer.length, piece.byteLength - done);
        const got = fs.readSync(fd, buffer, 0, want, position);
        if (got === 0 || !buffer.subarray(0, got).equals(piece.subarray(done, done + got))) return false;
        done += got;
        position += got;
      }
    }
    return true;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * Files of the output folder this compile already found holding exactly a text, by
 * project-relative path: the previous manifest when its bytes were the new one's (discover's
 * `checkPrevious`, ADR 0017d). A file whose rendered text is that very text is not compared again
 * (ADR 0017g); any other text is compared as usual.
 */
export type KnownOutputs = ReadonlyMap<string, string>;

/**
 * Whether a rendered file's text is the file's on disk (a `known` one is not read again; one
 * `absent` says is not there is not looked at).
 */
function holdsText(layout: ProjectLayout, relative: string, text: string, known?: KnownOutputs, absent?: (relative: string) => boolean): boolean {
  return known?.get(relative) === text || (!absent?.(relative) && fileHoldsText(path.join(layout.root, relative), text));
}

/**
 * The stamp of the file (`support/fileStamp.ts`) when it is a regular file whose bytes have the
 * sha256 `digest`, taken by `fstat` before its bytes are read; false when it has other bytes or
 * cannot be read. `stamp`: one taken when the file was known to have that digest; a file whose
 * `lstat` is still exactly it is taken to have it without being read (ADR 0017q). Read by
 * `readRegularFile` (never blocking: a FIFO or a folder is never read) into one buffer kept for
 * the process.
 */
function fileHasDigest(absolute: string, digest: Uint8Array, stamp?: FileStamp): FileStamp | false {
  try {
    if (stamp) {
      const now = fs.lstatSync(absolute, { bigint: true, throwIfNoEntry: false });
      if (!now) return false;
      if (now.isFile() && sameStamp(stampOf(now), stamp)) return stamp;
    }
  } catch {
    return false;
  }
  const read = readRegularFile(absolute, { limit: Number.MAX_SAFE_INTEGER, follow: true, stamp: true, reuse: true });
  return "bytes" in read && createHash("sha256").update(read.bytes).digest().equals(digest) && read.stamp!;
}

/** The name a write stages a file under, beside its target: `<target>.tmp-<pid>-<8 hex digits>`. */
function temporarySuffix(): string {
  return `.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
}
/** The end of a temporary's name ({@link temporarySuffix}), whichever write staged it; group 1 its writer's process id. */
const TEMPORARY = /\.tmp-(\d+)-[0-9a-f]{8}$/;

/**
 * The files of the output folder (within `scope`) that no rendered file is: the generated ones
 * (with the header, or a `pools.json` of `renderPools`) to delete, the others (hand-written) to report. A temporary left beside a
 * file this compile renders, by a write killed before its renames, is the compiler's whatever it
 * holds (the manifest's is JSON, one killed before its first byte is empty): stale, deleted.
 * A temporary of another compile still writing (its process running, the file younger than
 * `STALE_TEMPORARY_MS`: `isLeftOverTemporary`) is neither: that compile renames it next.
 * `skip`: this write's own temporaries, staged beside their targets before the folder is listed.
 */
function staleOutputs(layout: ProjectLayout, rendered: ReadonlySet<string>, scope: WriteScope, skip?: string): Pick<WriteReport, "deleted" | "foreign"> {
  const out: Pick<WriteReport, "deleted" | "foreign"> = { deleted: [], foreign: [] };
  for (const relative of existingOutputs(layout, scope)) {
    if (rendered.has(relative) || (skip !== undefined && relative.endsWith(skip))) continue;
    const temporary = TEMPORARY.exec(relative);
    if (temporary) {
      const mtimeMs = fs.lstatSync(path.join(layout.root, relative), { throwIfNoEntry: false })?.mtimeMs;
      // Gone since the listing: its write renamed it.
      if (mtimeMs === undefined || !isLeftOverTemporary(Number(temporary[1]), mtimeMs)) continue;
      if (rendered.has(relative.replace(TEMPORARY, ""))) {
        out.deleted.push(relative);
        continue;
      }
    }
    const text = readIfExists(path.join(layout.root, relative)) ?? "";
    const generated = text.startsWith(GENERATED_HEADER_PREFIX) || (relative === `${layout.outDir}/${POOLS_FILE}` && isGeneratedPools(text));
    (generated ? out.deleted : out.foreign).push(relative);
  }
  return out;
}

/** Works out which files differ from the rendered map, without writing. */
export function planWrite(layout: ProjectLayout, files: FileMap, scope: WriteScope = {}, known?: KnownOutputs): WriteReport {
  const report: WriteReport = { written: [], deleted: [], unchanged: [], foreign: [] };
  for (const relative of [...files.keys()].sort(compareStrings)) (holdsText(layout, relative, files.get(relative)!, known) ? report.unchanged : report.written).push(relative);
  return { ...report, ...staleOutputs(layout, new Set(files.keys()), scope) };
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

/**
 * Removes a temporary this write staged, if it is there. One that could not be created is no
 * error (`rmSync`'s `force` forgives only ENOENT, not the ENAMETOOLONG that made its creation fail).
 */
function removeTemporary(temp: string): void {
  try {
    fs.rmSync(temp, { force: true });
  } catch {
    // Never created: nothing to remove.
  }
}
const reason = (error: unknown): string => (error as NodeJS.ErrnoException).code ?? String(error);

/** Why the output folder cannot be written at all: it exists and is not a folder. */
function outDirBlocker(layout: ProjectLayout): Diagnostic | undefined {
  const outDir = path.join(layout.root, layout.outDir);
  return fs.existsSync(outDir) && !fs.statSync(outDir).isDirectory() ? createDiagnostic(Diagnostics.WriteFailed, { path: layout.outDir, reason: "it exists and is not a folder" }, at(layout.outDir)) : undefined;
}

/**
 * Why a target path cannot take its file, looked at before the file is staged: a folder on the
 * way is not a folder, or the target is not a regular file. `lstat` is shared by every target
 * (folders are shared by many: each path is looked at once).
 */
function pathBlocker(relative: string, lstat: (partial: string) => fs.Stats | undefined): Diagnostic | undefined {
  // Every folder on the way must be a folder (or missing), and the target a file (or missing).
  const parts = relative.split("/");
  for (let i = 1; i <= parts.length; i++) {
    const partial = parts.slice(0, i).join("/");
    const stat = lstat(partial);
    if (!stat) return undefined;
    const last = i === parts.length;
    if ((last && !stat.isFile()) || (!last && !stat.isDirectory())) {
      return createDiagnostic(Diagnostics.WriteFailed, { path: partial, reason: last ? "it is not a regular file" : "it is not a folder" }, at(partial));
    }
  }
  return undefined;
}

/**
 * One write (or check) of the output folder, fed one rendered file at a time (ADR 0017i), so no
 * rendered text is held longer than it takes to compare it: a file found holding its text is
 * dropped at once; a changed one is staged as its temporary file beside its target (with `check`,
 * kept for the drift report). {@link finish} then lists the output folder and, only when every
 * changed file was staged, renames the temporaries into place and deletes the stale modules;
 * {@link discard} (a later error) removes what was staged. Either way nothing in the output folder
 * has changed unless `finish` reached its renames.
 */
export interface OutputWrite {
  /**
   * Offers one rendered file (a project-relative path, each once); the text is not kept unless it
   * must be written by `check`. `bytes`: the text's UTF-8 bytes when the caller has them (the
   * manifest's, ADR 0017w), a buffer the write takes over: a large changed file's are staged, and
   * hashed, by a thread while the caller goes on ({@link digestOf}); the caller must not use them
   * after. The text is then kept until the thread is done, to stage it here if the thread gives nothing.
   */
  add(relative: string, text: string, bytes?: Uint8Array): void;
  /**
   * Offers one file as its UTF-8 bytes in `pieces`, in order (a splice's manifest, ADR 0022: the
   * last manifest's bytes around the records replaced), so no text or joined copy of them is made:
   * compared with the file on the disk byte for byte, and when it differs staged here, piece by
   * piece, and hashed ({@link digestOf}). Not with `check` (whose report needs the text).
   */
  addBytes(relative: string, pieces: readonly Uint8Array[]): void;
  /**
   * The sha256 (hex) of the bytes of a file {@link add}ed with `bytes` (made by the staging thread,
   * else here), or undefined for a file added without them, with `check`, or not staged (a
   * blocked path, a failure). After {@link finish}.
   */
  digestOf(relative: string): string | undefined;
  /**
   * Takes the file at `relative` as added and unchanged without reading or comparing it: the
   * caller knows it holds what would be added (a splice of no changed record offers the manifest
   * it read, whose sha256 is its compile state's, ADR 0022).
   */
  holds(relative: string): void;
  /**
   * {@link holds} for a file that may be absent: when `relative` exists it is taken as added and
   * unchanged, when it does not nothing is recorded (a splice keeps `pools.json` as the last
   * compile left it: a function of the config, which a splice has unchanged; ADR 0030).
   */
  holdsIfPresent(relative: string): void;
  /**
   * Whether the file at `relative` is a regular file whose bytes have the sha256 `digest` (the
   * incremental cache's hash of what its render gives, ADR 0017n). If so it is taken as added and
   * unchanged, as `add` of that text would take it; if not, nothing is recorded and the caller
   * renders the file and `add`s it. Gives the file's stamp when it holds the digest (`stamp`
   * itself when its `lstat` still is that stamp, and then it is not read: ADR 0017q), else false.
   */
  holdsDigest(relative: string, digest: Uint8Array, stamp?: FileStamp): FileStamp | false;
  /** Ends the write: see {@link writeOutputs} for what it does and reports. */
  finish(): StageResult<WriteReport>;
  /** Ends the write without touching the output folder: every temporary staged is removed. */
  discard(): void;
}

/**
 * Options of a write: `check` compares only; the scope of what it manages; `known` files
 * ({@link KnownOutputs}) are not compared again, and the write takes the map over: each entry is
 * deleted once its file is added, so a known text (the manifest's, as large as its file) is not
 * held to the end of the write by the map.
 */
export type WriteOptions = { check: boolean; known?: Map<string, string>; thread?: StageThreadOptions; batch?: BatchStageOptions } & WriteScope;

/**
 * Opens a write of `layout.outDir` (see {@link OutputWrite}). Nothing is touched until a changed
 * file is added; a target whose path is blocked (CA9003) stops the staging before that file, and
 * a file system error while staging (CA9003) removes what was staged; the other files are still
 * compared, so the report says the same as a comparison of every file.
 */
export function openWrite(layout: ProjectLayout, options: WriteOptions): OutputWrite {
  const { check, known = new Map<string, string>(), thread, batch: batchOptions, ...scope } = options;
  const diagnostics: Diagnostic[] = [];
  const unchanged: string[] = [];
  const changed: string[] = [];
  const rendered = new Set<string>();
  // With `check`: the compiled text of each changed file, for the drift report.
  const compiled = new Map<string, string>();
  const suffix = temporarySuffix();
  const staged: Array<{ temp: string; target: string; relative: string }> = [];
  const createdFolders: string[] = [];
  const readyFolders = new Set<string>();
  let stopped = false;
  let ended = false;
  // The file a thread is staging (ADR 0017w): its place in `staged` (the order the files were
  // offered in), and its text to stage here if the thread gives nothing.
  let staging: { thread: StagingThread; place: number; text: string } | undefined;
  // The thread staging the small files after the first ones (ADR 0020), each tagged with its place in `staged`.
  let batch: BatchStager<number> | undefined;
  let batchTried = false;
  let stagedHere = 0;
  // The sha256 of each file added with its bytes (`digestOf`).
  const digests = new Map<string, string>();
  const sha256 = (data: Uint8Array | string): string => createHash("sha256").update(data).digest("hex");
  const unstage = (): void => {
    settle();
    for (const s of staged) removeTemporary(s.temp);
    for (const folder of createdFolders.reverse()) fs.rmSync(folder, { recursive: true, force: true });
    staged.length = 0;
    createdFolders.length = 0;
  };
  /**
   * Stops the staging at `diagnostic`: a failure to stage a file, or (`blocker`) a target path
   * that cannot take its file. The files the threads are at were offered before this one: a
   * failure among them comes first and is the write's one failure, as when the calling thread
   * stages them all (ADR 0017w, 0020); a later file's failure, here, is then never tried in that
   * order, so it is not said. A blocked path is said whatever stopped the staging before it, as
   * without the threads.
   */
  const stop = (diagnostic: Diagnostic, blocker = false): void => {
    settle();
    if (stopped && !blocker) return;
    diagnostics.push(diagnostic);
    if (!stopped) unstage();
    stopped = true;
  };
  // An output folder that is not a folder is said once, not under every target.
  const outDirBlocked = !check && outDirBlocker(layout);
  if (outDirBlocked) stop(outDirBlocked, true);
  const stats = new Map<string, fs.Stats | undefined>();
  // One listing of each output folder a file goes into (undefined when it cannot be read): a
  // target it lacks is neither compared nor looked at (a cold compile's thousands of files).
  const listings = new Map<string, ReadonlySet<string> | undefined>();
  const folderOf = (relative: string): string => relative.slice(0, Math.max(relative.lastIndexOf("/"), 0));
  const listed = (relative: string): boolean | undefined => listings.get(folderOf(relative))?.has(relative.slice(relative.lastIndexOf("/") + 1));
  const absent = (relative: string): boolean => {
    const folder = folderOf(relative);
    if (!listings.has(folder)) {
      const stat = lstat(folder);
      let names: ReadonlySet<string> | undefined;
      try {
        names = !stat ? new Set() : stat.isDirectory() ? new Set(fs.readdirSync(path.join(layout.root, folder))) : undefined;
      } catch {
        names = undefined;
      }
      listings.set(folder, names);
    }
    return listed(relative) === false;
  };
  const lstat = (partial: string): fs.Stats | undefined => {
    if (!stats.has(partial) && listed(partial) === false) stats.set(partial, undefined);
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
  /** Stages a file here that a thread gave nothing for: its temporary removed first (a late write of the thread goes to the removed file; one it has not created yet is refused, `wx`), then written from the text. The errno code of a failure. */
  const restage = (temp: string, text: string): string | undefined => {
    try {
      removeTemporary(temp);
      writeText(temp, text);
      return undefined;
    } catch (error) {
      return reason(error);
    }
  };
  /**
   * Waits for the staging threads at work, if any: the large file's digest, or its failure, or,
   * when it gave nothing (it threw or stalled), the file staged here; the batch's files, and
   * those it did not count (it stalled or died) staged here. The first failure of them all, in
   * the order the files were offered, is the write's (CA9003, as a failure here).
   */
  const settle = (): void => {
    const failures: Array<{ place: number; reason: string }> = [];
    if (staging) {
      const { thread, place, text } = staging;
      const { relative, temp } = staged[place]!;
      staging = undefined;
      const done = thread.wait();
      if (done && "sha256" in done) digests.set(relative, done.sha256);
      else if (done) failures.push({ place, reason: done.failed });
      else if (!stopped) {
        digests.set(relative, sha256(text));
        const failed = restage(temp, text);
        if (failed) failures.push({ place, reason: failed });
      }
    }
    if (batch) {
      const drained = batch.drain();
      batch = undefined;
      if (drained.failed) failures.push({ place: drained.failed.tag, reason: drained.failed.reason });
      for (const file of stopped || drained.failed ? [] : drained.left) {
        const failed = restage(file.temp, file.text);
        if (failed) {
          failures.push({ place: file.tag, reason: failed });
          break;
        }
      }
    }
    failures.sort((a, b) => a.place - b.place);
    const first = failures[0] && staged[failures[0].place]?.relative;
    if (first !== undefined) stop(createDiagnostic(Diagnostics.WriteFailed, { path: first, reason: failures[0]!.reason }, at(first)));
  };
  /** The batch thread, started at the write's small file number {@link BATCH_STAGE_AFTER} (undefined before, or when it cannot start). */
  const batchFor = (): BatchStager<number> | undefined => {
    if (!batchTried && ++stagedHere > (batchOptions?.after ?? BATCH_STAGE_AFTER)) {
      batchTried = true;
      batch = startBatchStager<number>(batchOptions);
    }
    return batch;
  };
  // The target's folder, made (and remembered, to remove on failure) when missing.
  const prepareFolder = (folder: string): void => {
    if (readyFolders.has(folder)) return;
    const missing = firstMissing(folder);
    fs.mkdirSync(folder, { recursive: true });
    if (missing) createdFolders.push(missing);
    readyFolders.add(folder);
  };
  // Stages one file: `write` puts its bytes into the temporary beside the target.
  const stageWith = (relative: string, write: (temp: string) => void): void => {
    if (outDirBlocked) return;
    const blocked = pathBlocker(relative, lstat);
    if (blocked) return stop(blocked, true);
    if (stopped) return;
    const target = path.join(layout.root, relative);
    try {
      prepareFolder(path.dirname(target));
      const temp = target + suffix;
      staged.push({ temp, target, relative });
      write(temp);
    } catch (error) {
      stop(createDiagnostic(Diagnostics.WriteFailed, { path: relative, reason: reason(error) }, at(relative)));
    }
  };
  const stage = (relative: string, text: string, bytes?: Uint8Array): void =>
    stageWith(relative, (temp) => {
      if (bytes) {
        // The thread takes the bytes over when it starts; else they are written here (or, if a
        // failed start took them, the text).
        const length = bytes.byteLength;
        const started = !staging && startStagingThread(temp, bytes, thread);
        if (started) return void (staging = { thread: started, place: staged.length - 1, text });
        const intact = bytes.byteLength === length;
        digests.set(relative, sha256(intact ? bytes : text));
        if (intact) writeBytes(temp, bytes);
        else writeText(temp, text);
      } else if (text.length > BATCH_STAGE_MAX_CHARS || !batchFor()?.post(temp, text, staged.length - 1)) writeText(temp, text);
    });
  return {
    add(relative, text, bytes) {
      if (ended) throw new Error("openWrite: add after the write ended");
      rendered.add(relative);
      const holds = holdsText(layout, relative, text, known, absent);
      known.delete(relative);
      if (holds) {
        if (bytes) digests.set(relative, sha256(bytes));
        return void unchanged.push(relative);
      }
      changed.push(relative);
      if (check) compiled.set(relative, text);
      else stage(relative, text, bytes);
    },
    addBytes(relative, pieces) {
      if (ended) throw new Error("openWrite: addBytes after the write ended");
      if (check) throw new Error("openWrite: addBytes with check");
      rendered.add(relative);
      known.delete(relative);
      const hash = createHash("sha256");
      for (const piece of pieces) hash.update(piece);
      digests.set(relative, hash.digest("hex"));
      if (!absent(relative) && fileHoldsBytes(path.join(layout.root, relative), pieces)) return void unchanged.push(relative);
      changed.push(relative);
      // Staged here, piece by piece.
      stageWith(relative, (temp) => writePieces(temp, pieces));
    },
    digestOf(relative) {
      return digests.get(relative);
    },
    holds(relative) {
      if (ended) throw new Error("openWrite: holds after the write ended");
      rendered.add(relative);
      known.delete(relative);
      unchanged.push(relative);
    },
    holdsIfPresent(relative) {
      if (fs.existsSync(path.join(layout.root, relative))) this.holds(relative);
    },
    holdsDigest(relative, digest, stamp) {
      if (ended) throw new Error("openWrite: holdsDigest after the write ended");
      const found = fileHasDigest(path.join(layout.root, relative), digest, stamp);
      if (!found) return false;
      rendered.add(relative);
      known.delete(relative);
      unchanged.push(relative);
      return found;
    },
    discard() {
      ended = true;
      unstage();
    },
    finish() {
      ended = true;
      // The staging thread is done (or given up, and its file staged here) before anything is renamed.
      settle();
      // Sort for determinism.
      unchanged.sort(compareStrings);
      changed.sort(compareStrings);
      let stale: Pick<WriteReport, "deleted" | "foreign">;
      try {
        stale = staleOutputs(layout, rendered, scope, suffix);
      } catch (error) {
        unstage();
        return { value: { written: [], deleted: [], unchanged: [], foreign: [] }, diagnostics: [createDiagnostic(Diagnostics.WriteFailed, { path: layout.outDir, reason: reason(error) }, at(layout.outDir))] };
      }
      const report: WriteReport = { written: changed, deleted: stale.deleted, unchanged, foreign: stale.foreign };
      const found = stale.foreign.map((f) => createDiagnostic(Diagnostics.ForeignFileInOutput, { path: f }, at(f)));
      if (check) {
        const drift: DriftedFile[] = [];
        for (const f of report.written) {
          const onDisk = readIfExists(path.join(layout.root, f)) ?? null;
          drift.push({ path: f, onDisk, compiled: compiled.get(f)! });
          found.push(createDiagnostic(Diagnostics.CheckDrift, { path: f, change: onDisk !== null ? "out of date" : "missing" }, at(f)));
        }
        for (const f of report.deleted) {
          drift.push({ path: f, onDisk: readIfExists(path.join(layout.root, f)) ?? "", compiled: null });
          found.push(createDiagnostic(Diagnostics.CheckDrift, { path: f, change: "stale (its contract is gone)" }, at(f)));
        }
        // Sort for determinism.
        drift.sort((a, b) => compareStrings(a.path, b.path));
        return { value: { ...report, drift }, diagnostics: [...found, ...diagnostics] };
      }
      const done: WriteReport = { ...report, written: [], deleted: [] };
      if (stopped) return { value: done, diagnostics: [...found, ...diagnostics] };
      // Renamed in path order, as the report lists them.
      staged.sort((a, b) => compareStrings(a.relative, b.relative));
      for (const s of staged) {
        try {
          fs.renameSync(s.temp, s.target);
          done.written.push(s.relative);
        } catch (error) {
          removeTemporary(s.temp);
          diagnostics.push(createDiagnostic(Diagnostics.WriteFailed, { path: s.relative, reason: reason(error) }, at(s.relative)));
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
      return { value: done, diagnostics: [...found, ...diagnostics] };
    },
  };
}

/**
 * The write stage: the only stage that writes the disk. Writes only files whose contents changed
 * (a no-op compile keeps every modification time), deletes generated modules that no DAG produces
 * any more (only files that carry the generated header, and the temporaries a killed write left
 * beside a file it renders), and reports hand-written files in the
 * output folder without touching them (CA9002).
 *
 * Atomicity: each target is checked before its file is staged (a folder where a file must go stops
 * the staging, CA9003, and what was staged is removed); every changed file is written beside its
 * target as a temporary file, and only when all temporaries exist are they renamed into place
 * (rename is atomic per file on POSIX). If staging fails, the temporaries and any folder made for
 * them are removed, so nothing in the output folder has changed. A failure after that point (a
 * rename or delete refused by the file system) is reported, never thrown.
 *
 * With `check`, nothing is written: each file that would change is CA9001 (exit 1 in the CLI).
 * `known`: files already found holding their text (see {@link KnownOutputs}), not compared again.
 * The map is fed to {@link openWrite} in path order; a caller that renders file by file feeds
 * `openWrite` itself.
 */
export function writeOutputs(layout: ProjectLayout, files: FileMap, options: WriteOptions): StageResult<WriteReport> {
  const write = openWrite(layout, options);
  for (const relative of [...files.keys()].sort(compareStrings)) write.add(relative, files.get(relative)!);
  return write.finish();
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
