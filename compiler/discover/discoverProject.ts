import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import fg from "fast-glob";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, StageResult } from "../diagnostics/diagnostic.js";
import type { Manifest } from "../model/manifest.js";
import { compareStrings } from "../support/compare.js";
import { relativePosix, staysInside, toPosix } from "../support/paths.js";
import { utf8Chunks } from "../support/utf8.js";
import { readStamp, sameStamp, STAMP_FIELDS, stampOf, trustedStamp, writeStamps } from "../support/fileStamp.js";
import { AsciiText, readPreviousManifest, wholeText, type ManifestText, type RecordPlaces } from "./readManifest.js";
import { cacheKey } from "../support/cacheEntry.js";
import { startManifestReadAhead, type ManifestReadAhead } from "./manifestReadAhead.js";
import { MIN_READ_AHEAD_FILES, startReadAhead, type ReadAhead } from "./readAhead.js";
import { isPlainFolderPath, type CacheEntryRead } from "./readCache.js";
import { readRegularFile, type RegularFileRead } from "./regularFile.js";

/** Largest contract or config file read, in bytes; a larger one is CA1002 (guards memory and time). */
export const MAX_FILE_BYTES = 1024 * 1024;
/** Largest manifest read, in bytes: about 1 KiB per asset and 10 KiB per DAG leaves ample room. */
export const MAX_MANIFEST_BYTES = 512 * 1024 * 1024;

/** A file read from the project: its project-relative POSIX path, raw bytes and decoded text. */
export interface SourceFile {
  path: string;
  bytes: Uint8Array;
  /** UTF-8 text without a leading byte-order mark. */
  text: string;
}

/**
 * The previous state as `checkPrevious` found it, with the file read (its text for excerpts), or
 * `holding`: the project-relative path of the output folder's manifest when it was found to hold
 * exactly the new manifest's bytes (then it is the new manifest, and its text was never read).
 */
export type PreviousState = StageResult<Manifest | undefined> & { file?: Pick<SourceFile, "path" | "text">; holding?: string };

/** Where the project keeps its inputs and outputs, all relative to the root. */
export interface ProjectLayout {
  /** Absolute root; never written into any output. */
  root: string;
  contractsDir: string;
  configDir: string;
  outDir: string;
}

/** Everything the pure stages need from disk. */
export interface DiscoveredProject {
  /** Every contract file found, read or not (an unreadable file is still there). */
  contractPaths: string[];
  contracts: SourceFile[];
  configs: SourceFile[];
  /**
   * The previous state (the manifest in `outDir` or at a Git ref), read, parsed and checked against
   * its schema when first called (then memoised): the manifest when the file is a valid one (the
   * diff compares with it), else undefined with CA1101 (a warning with `force`), or with CA1002 or
   * CA1005 when the output folder's file cannot be read as text. Present whenever there is such a
   * file. Deferred so that the output folder's file is read only after the manifest stage, and,
   * given the manifest this compile built, the records whose text did not change are taken from it
   * rather than parsed, and a manifest of the very same text is not parsed at all
   * (`parseManifestAgainst`; ADR 0017, 0017d).
   */
  checkPrevious?: (current?: { manifest: Manifest; text: string; places?: RecordPlaces }) => PreviousState;
  /** True when the output folder's previous state was asked for and there is no manifest at all (a first compile). */
  firstCompile?: boolean;
  /**
   * The bytes of the output folder's manifest (`<outDir>/manifest.json`), read when first called,
   * or undefined when there is none or it cannot be read (CA1001 and CA1002 are `checkPrevious`'s
   * to report): for the manifest stage's record cache (ADR 0017p), before the manifest is built.
   * With the output folder's manifest as the previous state, `checkPrevious` reads those bytes
   * rather than the file again, and lets them go. `sha256` (hex) of the bytes when the read-ahead
   * thread hashed them (`DiscoverOptions.readAheadWith`, ADR 0017w).
   */
  outputManifestBytes?: () => { bytes: Buffer; sha256?: string } | undefined;
  /**
   * With `cache` and the reader thread (ADR 0017x): the cache context it keyed the contracts
   * under, the key of each contract read by it (by path; an overlaid one is not), and the reader of
   * one entry by key (the thread's checked entry, else read here); `close` stops the thread once the
   * entries are looked up.
   */
  readAhead?: { context: string; keys: Map<string, string>; entry: (key: string) => CacheEntryRead; close: () => void; taken: ReadAhead["taken"] };
}

/** The default layout of DESIGN §4 under a root. */
export function defaultLayout(root: string): ProjectLayout {
  return { root, contractsDir: "contracts", configDir: "orchestration/airflow/sources", outDir: "generated" };
}

/** One decoder for every file: `decode` without `stream` keeps no state between calls. */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

function decode(bytes: Uint8Array, file: string, diagnostics: Diagnostic[]): string | undefined {
  try {
    const text = UTF8.decode(bytes);
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  } catch {
    const offset = firstBadUtf8Offset(bytes);
    let line = 1;
    let lineStart = 0;
    for (let i = 0; i < offset; i++) {
      if (bytes[i] === 0x0a) {
        line++;
        lineStart = i + 1;
      }
    }
    diagnostics.push(createDiagnostic(Diagnostics.NotUtf8, { line }, { file, line, column: offset - lineStart + 1 }, { hint: "save the file as UTF-8" }));
    return undefined;
  }
}

/** Byte offset of the first byte that breaks UTF-8, for the CA1005 message. */
export function firstBadUtf8Offset(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const need = b < 0x80 ? 0 : b >= 0xc2 && b < 0xe0 ? 1 : b >= 0xe0 && b < 0xf0 ? 2 : b >= 0xf0 && b < 0xf5 ? 3 : -1;
    if (need < 0) return i;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
    }
    i += need + 1;
  }
  return i;
}

/**
 * Reads one project file, enforcing the size limit and UTF-8. Returns undefined (with a diagnostic)
 * when the file cannot be used.
 */
export function readSourceFile(root: string, relative: string, diagnostics: Diagnostic[], limit = MAX_FILE_BYTES): SourceFile | undefined {
  const bytes = readBytes(root, relative, diagnostics, limit);
  const text = bytes && decode(bytes, relative, diagnostics);
  return bytes && text !== undefined ? { path: relative, bytes, text } : undefined;
}

/**
 * The output folder's manifest as the previous state reads it ({@link readSourceFile}'s checks):
 * its bytes as text when they are ASCII, as this compiler writes it ({@link AsciiText}: the whole
 * text is not decoded beside the bytes), else its decoded text.
 */
function readManifestFile(root: string, relative: string, diagnostics: Diagnostic[], read?: { bytes?: Buffer; diagnostics: Diagnostic[] }): { path: string; text: ManifestText } | undefined {
  if (read) diagnostics.push(...read.diagnostics);
  const bytes = read ? read.bytes : readBytes(root, relative, diagnostics, MAX_MANIFEST_BYTES);
  const text = bytes && (AsciiText.of(bytes) ?? decode(bytes, relative, diagnostics));
  return text !== undefined ? { path: relative, text } : undefined;
}

/**
 * A project file's bytes, within the size limit (else CA1002); undefined with CA1001 when it cannot
 * be read or is not a regular file (a FIFO, a device: "not a regular file", never read, since
 * `readRegularFile` opens without blocking; a folder: "EISDIR", as the read of one fails). Links
 * are followed (discover has already refused those leaving the project). `orNone`: a missing file
 * is undefined without a diagnostic (a file that may not be there).
 */
function readBytes(root: string, relative: string, diagnostics: Diagnostic[], limit: number, orNone = false): Buffer | undefined {
  return bytesOf(readRegularFile(path.join(root, relative), { limit, follow: true }), relative, diagnostics, limit, orNone);
}

/** {@link readBytes}'s verdict on one read, on whichever thread it was made (the reader thread's, `readAhead.ts`, and the manifest's read-ahead thread's too). */
function bytesOf(read: RegularFileRead, relative: string, diagnostics: Diagnostic[], limit: number, orNone = false): Buffer | undefined {
  if ("bytes" in read) return read.bytes;
  if (orNone && read.reason === "missing") return undefined;
  const at = { file: relative, line: 1, column: 1 };
  if (read.reason === "too large") diagnostics.push(createDiagnostic(Diagnostics.FileTooLarge, { size: read.size, limit }, at));
  else {
    const reason = read.reason === "missing" ? "ENOENT" : read.reason === "a folder" ? "EISDIR" : read.reason === "error" ? read.code : read.reason;
    diagnostics.push(createDiagnostic(Diagnostics.FileUnreadable, { reason }, at));
  }
  return undefined;
}

/** Where {@link fileHoldsText} reads a file's bytes: one buffer for the process, grown to the largest chunk. */
let readBuffer: Buffer | undefined;
/** Where {@link fileHoldsText} encodes a small text: one buffer for the process. */
let textBuffer: Buffer | undefined;
/** Texts up to this many UTF-16 units are encoded whole into {@link textBuffer} (a DAG module), larger ones chunk by chunk. */
const SMALL_TEXT_CHARS = 1 << 16;

/**
 * Whether the file holds exactly the UTF-8 bytes of `text`: false when it is missing, is not a
 * file or has a size no encoding of `text` can have (one to three bytes a UTF-16 unit; the exact
 * length is not computed first, which would scan the whole text once more), and then it is not
 * read. A text of up to 65,536 UTF-16 units (a DAG module) is encoded whole into a buffer kept
 * for the process and compared with the file's bytes only when their lengths are equal, so
 * comparing thousands makes no garbage (a no-op compile, `compile --check`). A larger one is read
 * and compared chunk by chunk (`utf8Chunks`), stopping at the first chunk that differs or would
 * run past the file's end, each chunk's bytes read into one buffer kept for the process, so a file
 * of hundreds of MB is compared holding a few MB (the previous manifest, when it may be the new
 * one).
 */
export function fileHoldsText(absolute: string, text: string): boolean {
  let fd: number | undefined;
  try {
    const stat = fs.statSync(absolute, { throwIfNoEntry: false });
    if (!stat?.isFile() || stat.size < text.length || stat.size > text.length * 3) return false;
    // A small text is one chunk, encoded into a buffer kept for the process: no garbage per
    // file compared, and a file of another size is not opened.
    let whole: Buffer | undefined;
    if (text.length <= SMALL_TEXT_CHARS) {
      textBuffer ??= Buffer.allocUnsafe(SMALL_TEXT_CHARS * 3);
      whole = textBuffer.subarray(0, textBuffer.write(text, 0, "utf8"));
      if (whole.length !== stat.size) return false;
    }
    fd = fs.openSync(absolute, "r");
    let position = 0;
    for (const chunk of whole ? [whole] : utf8Chunks(text)) {
      if (position + chunk.length > stat.size) return false;
      if (!readBuffer || readBuffer.length < chunk.length) readBuffer = Buffer.allocUnsafe(Math.max(chunk.length, 1 << 16));
      const read = readBuffer.subarray(0, chunk.length);
      for (let done = 0; done < chunk.length; ) {
        const got = fs.readSync(fd, read, done, chunk.length - done, position + done);
        if (got === 0) return false;
        done += got;
      }
      if (!read.equals(chunk)) return false;
      position += chunk.length;
    }
    return position === stat.size;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * Whether something is at `absolute` (a file, a folder, a link, anything `lstat` finds) that is not
 * a file holding exactly `text` ({@link fileHoldsText}): what a writer that must not replace another
 * file's content (`import odcs`, CA3606) asks before it writes there.
 */
export function holdsOtherThan(absolute: string, text: string): boolean {
  let there: boolean;
  try {
    there = fs.lstatSync(absolute, { throwIfNoEntry: false }) !== undefined;
  } catch {
    // Cannot be looked at (a folder on the way is not one, no permission): nothing a write could
    // replace there; the write itself then says why it cannot (CA9003).
    there = false;
  }
  return there && !fileHoldsText(absolute, text);
}

/**
 * YAML files under a folder, sorted by path. Symbolic links are resolved: a link to a file inside
 * the project is read, a loop or a link leaving the project is CA1004, and linked folders are not
 * walked (so a loop can never hang discovery).
 */
function listYamlFiles(root: string, folder: string, diagnostics: Diagnostic[]): string[] {
  const absoluteFolder = path.join(root, folder);
  if (!fs.existsSync(absoluteFolder)) return [];
  let entries: fg.Entry[];
  try {
    entries = fg.sync("**/*", { cwd: absoluteFolder, onlyFiles: false, followSymbolicLinks: false, dot: false, objectMode: true, suppressErrors: false });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    const at = (error as NodeJS.ErrnoException).path;
    const relative = at ? relativePosix(root, at) : folder;
    diagnostics.push(createDiagnostic(Diagnostics.FileUnreadable, { reason: `${code} (a folder that cannot be listed)` }, { file: relative, line: 1, column: 1 }));
    return [];
  }
  const realRoot = fs.realpathSync(root);
  const files: string[] = [];
  for (const entry of entries) {
    const relative = toPosix(path.join(folder, entry.path));
    const isYaml = /\.ya?ml$/i.test(entry.name);
    if (entry.dirent.isSymbolicLink()) {
      let target: string;
      try {
        target = fs.realpathSync(path.join(root, relative));
      } catch {
        diagnostics.push(createDiagnostic(Diagnostics.SymlinkLoop, { path: relative }, { file: relative, line: 1, column: 1 }));
        continue;
      }
      if (!staysInside(relativePosix(realRoot, target))) {
        diagnostics.push(createDiagnostic(Diagnostics.SymlinkLoop, { path: relative }, { file: relative, line: 1, column: 1 }));
        continue;
      }
      if (isYaml && fs.statSync(target).isFile()) files.push(relative);
      continue;
    }
    if (entry.dirent.isFile() && isYaml) files.push(relative);
  }
  // Sort for determinism.
  return files.sort(compareStrings);
}

/** What discover reads besides the project's own files. */
export interface DiscoverOptions {
  /**
   * The previous state: the manifest of the output folder (`"output"`, the default), the one
   * committed at a Git ref (`{ref}`, `--against`), or none.
   */
  previous?: "output" | "none" | { ref: string };
  /** `compile --force`: a damaged previous manifest is a warning and is left out (see `readPreviousManifest`). */
  force?: boolean;
  /**
   * The compile will write the output folder: with a Git ref as the previous state, the output
   * folder's own manifest is checked too, so a damaged one is never overwritten without `force`.
   */
  writes?: boolean;
  /**
   * Texts that stand in for files on disk, by project-relative path: a contract merged in memory
   * (`drift apply`) is compiled before anything is written.
   */
  overlay?: ReadonlyMap<string, string>;
  /**
   * The record cache's index (project-relative), with the incremental cache on: when it and the
   * output folder's manifest (of at least `READ_AHEAD_MIN_BYTES`) exist, the manifest is read and
   * hashed in a thread started before the project's files are read, for `outputManifestBytes`
   * (ADR 0017w). Without it, or without either file, it is read in the calling thread when asked.
   */
  readAheadWith?: string;
  /**
   * The parse cache is used: when its folder exists and there are at least
   * {@link MIN_READ_AHEAD_FILES} contract files (or with `readAhead: true`; never with
   * `readAhead: false`), a reader thread reads them and their entries ahead (`readAhead.ts`, ADR
   * 0017x). `folder`: the entries' folder; `compiler`: who must have written them (asked once the
   * configs are read); `context`: the cache context of the configs (`cacheContext`), each file's
   * key made under it. `readAhead: "thread"` (tests): started whatever the size, and the calling
   * thread reads only what the thread gives up. `script`: the thread's script (tests).
   */
  cache?: { folder: string; compiler: () => string; context: (configs: readonly SourceFile[]) => string; readAhead?: boolean | "thread"; script?: URL };
}

/**
 * The previous manifest, read and checked: CA1002/CA1005 when the file cannot be read as text,
 * CA7002 when a Git ref has none, CA1101 when it is damaged. Never an empty stand-in.
 */
/** The output folder's manifest, project-relative. */
const outputManifestPath = (layout: ProjectLayout): string => toPosix(path.join(layout.outDir, "manifest.json"));

/** The read-ahead of the output folder's manifest that `options.readAheadWith` asks for, when its files exist (ADR 0017w). */
function startManifestRead(layout: ProjectLayout, options: DiscoverOptions): ManifestReadAhead | undefined {
  if (options.readAheadWith === undefined || !fs.existsSync(path.join(layout.root, options.readAheadWith))) return undefined;
  return startManifestReadAhead(path.join(layout.root, outputManifestPath(layout)), MAX_MANIFEST_BYTES);
}

function discoverPreviousState(layout: ProjectLayout, options: DiscoverOptions, diagnostics: Diagnostic[], ahead?: ManifestReadAhead): Pick<DiscoveredProject, "checkPrevious" | "firstCompile" | "outputManifestBytes"> {
  const previous = options.previous ?? "output";
  const ownPath = outputManifestPath(layout);
  // The output folder's manifest read early (`outputManifestBytes`), until the previous state takes it.
  let early: { bytes?: Buffer; diagnostics: Diagnostic[] } | undefined;
  const outputManifestBytes = (): { bytes: Buffer; sha256?: string } | undefined => {
    if (early) return early.bytes && { bytes: early.bytes };
    const problems: Diagnostic[] = [];
    // The read-ahead thread's read when it gave one (the same read as here), else read now.
    const read = ahead?.take();
    ahead = undefined;
    const bytes = read ? bytesOf("refused" in read ? read.refused : read, ownPath, problems, MAX_MANIFEST_BYTES, true) : readBytes(layout.root, ownPath, problems, MAX_MANIFEST_BYTES, true);
    // Kept only for the previous state that reads this very file; otherwise the caller's alone.
    if (previous === "output") early = { ...(bytes ? { bytes } : {}), diagnostics: problems };
    return bytes && { bytes, ...(read && "sha256" in read ? { sha256: read.sha256 } : {}) };
  };
  if (previous === "none") return { outputManifestBytes };
  const found: Diagnostic[] = [];
  // The file of the previous state, read when first checked: the output folder's is read then
  // (after the manifest stage), so its text is not held while the new manifest's is built.
  let readFile: (() => { file?: { path: string; text: ManifestText }; diagnostics: Diagnostic[] }) | undefined;
  // Whether the file holds exactly a text, compared on the disk chunk by chunk (the output folder's).
  let holds: { path: string; text: (text: string) => boolean } | undefined;
  const textOnly = (file: SourceFile | undefined): Pick<SourceFile, "path" | "text"> | undefined => (file ? { path: file.path, text: file.text } : undefined);
  if (previous === "output") {
    if (!fs.existsSync(path.join(layout.root, ownPath))) return { firstCompile: true, outputManifestBytes };
    holds = { path: ownPath, text: (text) => fileHoldsText(path.join(layout.root, ownPath), text) };
    readFile = () => {
      const problems: Diagnostic[] = [];
      // A read-ahead the record cache did not take (its index was foreign or damaged) is this read.
      if (!early && ahead) outputManifestBytes();
      const file = readManifestFile(layout.root, ownPath, problems, early);
      return { ...(file ? { file } : {}), diagnostics: problems };
    };
  } else {
    if (options.writes && fs.existsSync(path.join(layout.root, ownPath))) {
      const file = readSourceFile(layout.root, ownPath, found, MAX_MANIFEST_BYTES);
      if (file) found.push(...readPreviousManifest(file, options.force ?? false).diagnostics);
    }
    const read = readManifestAtRef(layout, previous.ref);
    if (read.file) {
      const file = textOnly(read.file);
      readFile = () => ({ file, diagnostics: [] });
    } else found.push(createDiagnostic(Diagnostics.PreviousManifestUnreadable, { path: `${previous.ref}:${layout.outDir}/manifest.json`, detail: read.problem ?? "unknown" }, undefined));
  }
  const out: Pick<DiscoveredProject, "checkPrevious" | "firstCompile" | "outputManifestBytes"> = { outputManifestBytes };
  if (readFile) {
    let checked: PreviousState | undefined;
    out.checkPrevious = (current) => {
      if (checked) return checked;
      // The bytes of the new manifest: the same state, and its text is never read (ADR 0017d).
      if (current && holds?.text(current.text)) {
        readFile = undefined;
        early = undefined;
        checked = { value: current.manifest, diagnostics: [], holding: holds.path };
        return checked;
      }
      // The record cache's places describe the output folder's bytes read early, and no other text.
      const against = current && (previous !== "output" || !early?.bytes) ? { manifest: current.manifest, text: current.text } : current;
      const read = readFile!();
      readFile = undefined;
      early = undefined;
      const manifest = read.file ? readPreviousManifest(read.file, options.force ?? false, against) : { diagnostics: [] };
      checked = { value: manifest.manifest, diagnostics: forced([...read.diagnostics, ...manifest.diagnostics], options) };
      // The text goes to the first caller only, to keep for an excerpt or to let go: not memoised;
      // decoded whole only if asked for.
      const source = read.file;
      return source ? { ...checked, file: { path: source.path, get text() { return wholeText(source.text); } } } : checked;
    };
  }
  diagnostics.push(...forced(found, options));
  return out;
}

/** --force: what keeps the previous state from being used is said, but does not stop the compile. */
function forced(found: Diagnostic[], options: DiscoverOptions): Diagnostic[] {
  return options.force ? found.map((d) => ({ ...d, severity: "warning" as const })) : found;
}

/**
 * The discover stage: the only stage that reads the disk (with {@link readReferencedFiles}, which
 * reads the files the parsed documents name before any stage interprets them).
 *
 * Input: a layout. Output: the contract files, the orchestration config files, each sorted by
 * path, and the previous state (the manifest in the output folder or at a Git ref; `checkPrevious`
 * checks it against its schema when the pipeline needs it). Diagnostics: CA1001–CA1006, CA7002
 * (CA1101 from `checkPrevious`, and here for the output folder's own manifest with `--against`).
 */
export function discoverProject(layout: ProjectLayout, options: DiscoverOptions = {}): StageResult<DiscoveredProject> {
  const diagnostics: Diagnostic[] = [];
  const overlaid = (p: string): SourceFile | undefined => {
    const text = options.overlay?.get(p);
    return text !== undefined ? { path: p, bytes: new TextEncoder().encode(text), text } : undefined;
  };
  const read = (paths: string[], problems: Diagnostic[], ahead?: { reader: ReadAhead; context: string; keys: Map<string, string> }): SourceFile[] =>
    paths
      .map((p) => {
        const read = ahead?.reader.nextFile();
        const overlay = overlaid(p);
        if (overlay) return overlay;
        if (!read) return readSourceFile(layout.root, p, problems);
        // Read by the thread or by this one (its share, ADR 0017x): the same checks as readSourceFile's.
        const bytes = bytesOf(read.read, p, problems, MAX_FILE_BYTES);
        const text = bytes && decode(bytes, p, problems);
        if (text === undefined) return undefined;
        let key = read.key;
        if (key === undefined) {
          // Keyed here: the thread may read its entry still.
          key = cacheKey(ahead!.context, p, bytes!);
          ahead!.reader.keyed(key);
        }
        ahead!.keys.set(p, key);
        return { path: p, bytes: bytes!, text };
      })
      .filter((f): f is SourceFile => f !== undefined);

  // Started first, so the thread reads the manifest while the project's files are read here.
  const manifestAhead = startManifestRead(layout, options);
  // The reader thread starts first, so that it runs by the time the contracts are listed: when
  // asked, or when the cache has a parse folder (a warm compile; a first one has nothing to read
  // ahead); stopped again when there are fewer contracts than pay for it.
  const cache = options.cache;
  let ahead = cache && (cache.readAhead ?? isPlainFolderPath(layout.root, cache.folder))
    ? startReadAhead(layout.root, { limit: MAX_FILE_BYTES, folder: cache.folder, ...(cache.script ? { script: cache.script } : {}), ...(cache.readAhead === "thread" ? { claims: false } : {}) })
    : undefined;
  const { contractPaths, configPaths } = listProjectFiles(layout, diagnostics);
  if (contractPaths.length === 0) {
    diagnostics.push(
      createDiagnostic(Diagnostics.NoContracts, { pattern: `${layout.contractsDir}/**/*.{yaml,yml}` }, undefined),
    );
  }
  if (configPaths.length === 0) {
    diagnostics.push(createDiagnostic(Diagnostics.NoOrchestrationConfig, { folder: layout.configDir }, undefined));
  }
  if (ahead && !cache!.readAhead && contractPaths.length < MIN_READ_AHEAD_FILES) {
    ahead.close();
    ahead = undefined;
  }
  // The configs are read first (the cache context is theirs), their diagnostics said after the
  // contracts', in the order of a compile without the thread.
  const configProblems: Diagnostic[] = [];
  const configs = read(configPaths, configProblems);
  let readAhead: DiscoveredProject["readAhead"];
  let contracts: SourceFile[];
  try {
    if (ahead) {
      const reader = ahead;
      const context = cache!.context(configs);
      reader.begin({ paths: contractPaths, context, compiler: cache!.compiler() });
      const keys = new Map<string, string>();
      contracts = read(contractPaths, diagnostics, { reader, context, keys });
      readAhead = { context, keys, entry: (key) => reader.entry(key), close: () => reader.close(), taken: reader.taken };
    } else contracts = read(contractPaths, diagnostics);
    diagnostics.push(...configProblems);
    const value: DiscoveredProject = { contractPaths, contracts, configs, ...discoverPreviousState(layout, options, diagnostics, manifestAhead), ...(readAhead ? { readAhead } : {}) };
    // The caller closes the thread once the entries are looked up.
    ahead = undefined;
    return { value, diagnostics };
  } finally {
    ahead?.close();
  }
}

/** Whether a path is a folder (the CLI's `--root`), without throwing. */
export function isFolder(absolute: string): boolean {
  try {
    return fs.statSync(absolute).isDirectory();
  } catch {
    return false;
  }
}

/** Whether a file or folder exists at an absolute path (where a tool such as the runtime's Python is). */
export function pathExists(absolute: string): boolean {
  return fs.existsSync(absolute);
}

/**
 * Reads the producer files contracts name (SQL), by project-relative path: only regular files
 * inside the project (links followed only when they stay inside), UTF-8, within the size limit.
 * A path missing from the result is reported by the link stage (CA1007); unreadable or oversized
 * files are reported here.
 */
export function readReferencedFiles(root: string, paths: Iterable<string>, limit = MAX_FILE_BYTES): StageResult<Map<string, string>> {
  const diagnostics: Diagnostic[] = [];
  const files = new Map<string, string>();
  let realRoot: string;
  try {
    realRoot = fs.realpathSync(root);
  } catch {
    return { value: files, diagnostics };
  }
  // Files share folders (one per domain): each folder's real path is asked once, and a file that
  // is not itself a link is that folder's real path and its name, without a realpath of its own
  // (an lstat per path segment) and a stat per file.
  const realFolders = new Map<string, string>();
  const realFolder = (folder: string): string => {
    let real = realFolders.get(folder);
    if (real === undefined) {
      real = fs.realpathSync(folder);
      realFolders.set(folder, real);
    }
    return real;
  };
  // Sort for determinism.
  for (const p of [...new Set(paths)].sort(compareStrings)) {
    if (!staysInside(p)) continue;
    try {
      const joined = path.join(root, p);
      const inFolder = path.join(realFolder(path.dirname(joined)), path.basename(joined));
      const entry = fs.lstatSync(inFolder);
      const real = entry.isSymbolicLink() ? fs.realpathSync(inFolder) : inFolder;
      if (!staysInside(relativePosix(realRoot, real)) || !(entry.isSymbolicLink() ? fs.statSync(real) : entry).isFile()) continue;
    } catch {
      // Missing or a loop: reported by the link stage as CA1007.
      continue;
    }
    const file = readSourceFile(root, p, diagnostics, limit);
    // A file that exists but cannot be used is reported here; an empty text keeps link from
    // also calling it missing (no render happens with this error anyway).
    files.set(p, file ? file.text.replace(/\r\n?/g, "\n") : "");
  }
  return { value: files, diagnostics };
}

/**
 * The manifest of the output folder as committed at a Git ref (`git show REF:./<outDir>/manifest.json`
 * run in the project root, so a project in a subfolder of its repository works). Returns the file,
 * or a one-line reason (not a repository, unknown ref, no manifest at that ref).
 */
export function readManifestAtRef(layout: ProjectLayout, ref: string): { file?: SourceFile; problem?: string } {
  const relative = `${layout.outDir}/manifest.json`;
  if (ref.startsWith("-")) return { problem: `invalid ref ${JSON.stringify(ref)}` };
  const result = spawnSync("git", ["show", `${ref}:./${relative}`], { cwd: layout.root, encoding: "buffer", maxBuffer: 256 * 1024 * 1024 });
  if (result.error) return { problem: `cannot run git: ${result.error.message}` };
  if (result.status !== 0) return { problem: result.stderr.toString("utf8").trim().split("\n")[0] ?? `git exited ${result.status}` };
  const diagnostics: Diagnostic[] = [];
  const text = decode(result.stdout, `${ref}:${relative}`, diagnostics);
  if (text === undefined) return { problem: "not UTF-8" };
  return { file: { path: `${ref}:${relative}`, bytes: result.stdout, text } };
}

/**
 * The project's contract files and orchestration config files (YAML, each list sorted by path,
 * `listYamlFiles`), none read: what {@link discoverProject} reads, and what a splice compares with
 * its compile state before it reads only what changed (ADR 0022). A folder that cannot be listed,
 * a link loop or a link leaving the project is a diagnostic pushed onto `diagnostics`; an empty
 * folder is not (the caller says what an empty one means).
 */
export function listProjectFiles(layout: ProjectLayout, diagnostics: Diagnostic[]): { contractPaths: string[]; configPaths: string[] } {
  return {
    contractPaths: listYamlFiles(layout.root, layout.contractsDir, diagnostics),
    configPaths: listYamlFiles(layout.root, layout.configDir, diagnostics),
  };
}

/**
 * The `lstat` stamp of each of `paths` (project-relative), kept only when `trustedStamp(stamp,
 * since)` holds (git's racily clean rule, ADR 0017q), as a table of `STAMP_FIELDS` per path; and,
 * given the table a compile state kept for the same paths (`known`), the indexes of the paths
 * whose stamp is not exactly the known one (a missing file, one without a known stamp: changed).
 */
export function stampFiles(root: string, paths: readonly string[], since: bigint, known?: BigInt64Array): { stamps: BigInt64Array; changed: number[] } {
  const stamps = new BigInt64Array(paths.length * STAMP_FIELDS);
  const changed: number[] = [];
  paths.forEach((p, i) => {
    let stat: fs.BigIntStats | undefined;
    try {
      stat = fs.lstatSync(path.join(root, p), { bigint: true, throwIfNoEntry: false });
    } catch {
      stat = undefined;
    }
    const stamp = stat?.isFile() ? stampOf(stat) : undefined;
    const before = known && known.length === stamps.length ? readStamp(known, i) : undefined;
    if (stamp && before && sameStamp(stamp, before)) return void writeStamps(stamps, i, before);
    changed.push(i);
    writeStamps(stamps, i, stamp && trustedStamp(stamp, since));
  });
  return { stamps, changed };
}

/** The output folder's manifest's bytes (for a splice, ADR 0022), or undefined when it is not a regular file that can be read. */
export function readOutputManifestBytes(layout: ProjectLayout): Buffer | undefined {
  const read = readRegularFile(path.join(layout.root, outputManifestPath(layout)), { limit: MAX_MANIFEST_BYTES, follow: true });
  return "bytes" in read ? Buffer.from(read.bytes.buffer, read.bytes.byteOffset, read.bytes.byteLength) : undefined;
}

/** Starts reading and hashing the output folder's manifest in a thread (ADR 0017w), for a splice (ADR 0022). */
export function startOutputManifestRead(layout: ProjectLayout): ManifestReadAhead | undefined {
  return startManifestReadAhead(path.join(layout.root, outputManifestPath(layout)), MAX_MANIFEST_BYTES);
}
