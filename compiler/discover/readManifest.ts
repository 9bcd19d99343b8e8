import { Buffer, isAscii } from "node:buffer";
import jsonc from "jsonc-parser";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, SourceLocation } from "../diagnostics/diagnostic.js";
import { MANIFEST_VERSION, type DagPlan, type Manifest, type ManifestV1 } from "../model/manifest.js";
import { checkManifest, MAX_MANIFEST_DEPTH } from "./manifestSchema.js";

/** Why a manifest text cannot be used, and where: a UTF-16 offset into the text (0 when the whole text is at fault). */
export interface ManifestProblem {
  problem: string;
  offset: number;
}

/** The offset of the value a JSON pointer names (or of its nearest parent that exists), in a text that is valid JSON. */
function offsetOfPointer(text: string, pointer: string): number {
  const tree = jsonc.parseTree(text);
  if (!tree) return 0;
  const segments = pointer === "" || pointer === "/" ? [] : pointer.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
  for (let length = segments.length; length >= 0; length--) {
    const path = segments.slice(0, length).map((s) => (/^\d+$/.test(s) ? Number(s) : s));
    const node = jsonc.findNodeAtLocation(tree, path);
    if (node) return node.offset;
  }
  return 0;
}

/**
 * The offset and JSON pointer of the first `{` or `[` (in text order) that opens a level deeper
 * than `limit` in a text that is valid JSON, or undefined. Iterative: a stack of the open
 * containers, each with its current index or key (so the pointer is the text's, whatever order
 * `JSON.parse` gives an object's keys in).
 */
function deeperThanInText(text: string, limit: number): { offset: number; pointer: string } | undefined {
  const open: Array<{ array: boolean; index: number; key: string; expectKey: boolean }> = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const from = i;
      // A string: to its closing quote, over escapes.
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
      const top = open.at(-1);
      if (top && !top.array && top.expectKey) {
        top.key = JSON.parse(text.slice(from, i + 1)) as string;
        top.expectKey = false;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (open.length + 1 > limit) {
        const pointer = open.map((o) => (o.array ? String(o.index) : o.key.replace(/~/g, "~0").replace(/\//g, "~1"))).join("/");
        return { offset: i, pointer: `/${pointer}` };
      }
      open.push({ array: c === 0x5b, index: 0, key: "", expectKey: c === 0x7b });
    } else if (c === 0x7d || c === 0x5d) open.pop();
    else if (c === 0x2c) {
      const top = open.at(-1);
      if (top?.array) top.index++;
      else if (top) top.expectKey = true;
    }
  }
  return undefined;
}

/** Where strict JSON parsing failed: the first error jsonc-parser finds, else V8's own position, else the start. */
function offsetOfSyntaxError(text: string, message: string): number {
  const errors: jsonc.ParseError[] = [];
  jsonc.parseTree(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  if (errors[0]) return errors[0].offset;
  const position = /at position (\d+)/.exec(message);
  return position ? Number(position[1]) : 0;
}

/**
 * Reads a manifest written by this compiler (the previous state of a diff, the input of `stale`).
 *
 * Returns the manifest (a version-1 manifest upgraded to version 2, `upgradeFromV1`: the diff
 * then compares like with like, ADR 0017f), or a one-line reason when the text is not JSON, of a `manifestVersion`
 * this compiler does not know, or not valid against the manifest schema of its version (the
 * reason then names the offending field by JSON pointer), with the offset of the fault in the text.
 * Valid manifests are parsed once with `JSON.parse`; the text is walked again only to locate a fault.
 */
export function parseManifest(text: string): { manifest: Manifest; problem?: undefined } | ({ manifest?: undefined } & ManifestProblem) {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message.split("\n")[0] ?? "";
    // The location says where; V8's offset would only repeat it.
    return { problem: `not JSON (${message.replace(/ in JSON at position \d+.*$/, "")})`, offset: offsetOfSyntaxError(text, message) };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return { problem: "not a JSON object", offset: offsetOfPointer(text, "") };
  const version = (value as { manifestVersion?: unknown }).manifestVersion;
  if (version !== MANIFEST_VERSION && version !== 1) {
    return {
      problem: `manifestVersion ${JSON.stringify(version)} is not ${MANIFEST_VERSION} (nor 1, which this compiler still reads); compile it again with this compiler`,
      offset: offsetOfPointer(text, "/manifestVersion"),
    };
  }
  const checked = checkManifest(value, version);
  // A version-1 manifest (an upgraded project's committed previous state) as version 2 holds it.
  if (checked.manifest) return { manifest: version === 1 ? upgradeFromV1(checked.manifest as unknown as ManifestV1) : checked.manifest };
  // Too deep for jsonc-parser's tree too (it recurses): the place is found by counting brackets.
  const deep = checked.tooDeep ? deeperThanInText(text, MAX_MANIFEST_DEPTH) : undefined;
  if (deep) {
    // The first segments name the record; the rest is the same step again and again.
    const segments = deep.pointer.split("/");
    const shown = segments.length > 8 ? `${segments.slice(0, 7).join("/")}/… (${segments.length - 7} levels more)` : deep.pointer;
    return { problem: `not a contract-assets manifest: ${shown}: ${checked.problem}`, offset: deep.offset };
  }
  return { problem: `not a contract-assets manifest: ${checked.problem}`, offset: offsetOfPointer(text, checked.pointer) };
}

/**
 * A manifest of version 1 as version 2 holds the same project (ADR 0017f): each runtime dataset
 * keeps `name`, `asset`, `layer` and `physical` and drops what its asset holds (`uri`, `schema`)
 * or what is derived from it (`quality`). The diff reads an upgraded project's committed v1
 * manifest through this, so it compares like with like. The input is not changed.
 */
export function upgradeFromV1(v1: ManifestV1): Manifest {
  return {
    ...v1,
    manifestVersion: 2,
    dags: v1.dags.map((dag) => ({
      ...dag,
      runtime: {
        ...dag.runtime,
        datasets: dag.runtime.datasets.map(({ uri: _uri, schema: _schema, quality: _quality, ...kept }) => kept),
      },
    })) as DagPlan[],
  };
}

/**
 * A manifest file's bytes read as its text without decoding all of it, when they are ASCII (every
 * manifest this compiler writes is: `canonicalJsonAscii`): each byte is one UTF-16 code unit, so
 * offsets and slices are the text's. The previous state read against the new manifest slices
 * records out of it and never holds the whole text beside the bytes, which at 10,000 contracts
 * are 87 MB each; {@link text} decodes it whole, only to read another layout or to locate a fault.
 */
export class AsciiText {
  private constructor(private readonly bytes: Buffer) {}

  /** The bytes as text, or undefined when one is not ASCII (the caller then decodes them as UTF-8). */
  static of(bytes: Uint8Array): AsciiText | undefined {
    return isAscii(bytes) ? new AsciiText(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)) : undefined;
  }

  get length(): number {
    return this.bytes.length;
  }

  indexOf(search: string, position = 0): number {
    return this.bytes.indexOf(search, position, "latin1");
  }

  startsWith(search: string, position = 0): boolean {
    if (position < 0 || position + search.length > this.bytes.length) return false;
    // Byte by byte: the searches are a few characters, and a string per question was the cost.
    for (let i = 0; i < search.length; i++) if (this.bytes[position + i] !== search.charCodeAt(i)) return false;
    return true;
  }

  slice(start = 0, end = this.bytes.length): string {
    return this.bytes.toString("latin1", start, end);
  }

  /** The whole text. */
  text(): string {
    return this.bytes.toString("latin1");
  }

  /**
   * How many code units the text from `mine` and `other` from `theirs` have in common, forward
   * (`backward: false`), or backward from just before those offsets, at most `limit`. Compared
   * natively a chunk at a time: each chunk of `other` is encoded into one scratch buffer as UTF-8,
   * which is its code units exactly when the chunk is ASCII (the byte count tells); a chunk that
   * is not, and the chunk where the two differ, are compared code unit by code unit (a code unit
   * beyond ASCII never equals an ASCII byte).
   */
  common(mine: number, other: string, theirs: number, limit: number, backward: boolean): number {
    const bytes = this.bytes;
    let done = 0;
    while (done < limit) {
      const size = Math.min(COMPARE_CHUNK, limit - done);
      // The chunk's first offset in each text.
      const my = backward ? mine - done - size : mine + done;
      const their = backward ? theirs - done - size : theirs + done;
      const written = scratch.write(other.slice(their, their + size), 0, "utf8");
      if (written === size && scratch.compare(bytes, my, my + size, 0, size) === 0) {
        done += size;
        continue;
      }
      const stop = done + size;
      if (backward) while (done < stop && bytes[mine - 1 - done] === other.charCodeAt(theirs - 1 - done)) done++;
      else while (done < stop && bytes[mine + done] === other.charCodeAt(theirs + done)) done++;
      if (done < stop) return done;
    }
    return done;
  }
}

/** Code units compared natively at a time ({@link AsciiText.common}). */
const COMPARE_CHUNK = 1 << 16;
/** Room for a chunk encoded as UTF-8 (at most three bytes per UTF-16 code unit). */
const scratch = Buffer.allocUnsafe(3 * COMPARE_CHUNK);

/** {@link AsciiText.common} for two strings: a chunk at a time (string equality is native), then code unit by code unit where they differ. */
function commonOfStrings(a: string, mine: number, b: string, theirs: number, limit: number, backward: boolean): number {
  let done = 0;
  while (done < limit) {
    const size = Math.min(COMPARE_CHUNK, limit - done);
    const my = backward ? mine - done - size : mine + done;
    const their = backward ? theirs - done - size : theirs + done;
    if (a.slice(my, my + size) === b.slice(their, their + size)) {
      done += size;
      continue;
    }
    const stop = done + size;
    if (backward) while (done < stop && a.charCodeAt(mine - 1 - done) === b.charCodeAt(theirs - 1 - done)) done++;
    else while (done < stop && a.charCodeAt(mine + done) === b.charCodeAt(theirs + done)) done++;
    if (done < stop) return done;
  }
  return done;
}

/** `previous[previous, previous + length)` holds the same code units as `current[current, current + length)`. */
export interface Run {
  previous: number;
  current: number;
  length: number;
}

/**
 * Where a previous manifest's text and the current one are the same: both texts are cut at the
 * same places (`cuts`: offsets in each, increasing, as many in both), and each piece of one is
 * compared with the same piece of the other from its start and from its end (native compares a
 * chunk at a time). Returns the common start and end of each pair of pieces (never overlapping);
 * every difference lies between them. One edit in each of the arrays `assets` and `dags` (a
 * contract's asset and its DAG) leaves two small differing middles, where a common prefix and
 * suffix of the whole texts would leave all that lies between the two edits.
 */
export function commonRuns(previous: ManifestText, current: string, cuts: { previous: number[]; current: number[] } = { previous: [], current: [] }): Run[] {
  const common = (mine: number, theirs: number, limit: number, backward: boolean): number =>
    typeof previous === "string" ? commonOfStrings(previous, mine, current, theirs, limit, backward) : previous.common(mine, current, theirs, limit, backward);
  const mine = [0, ...cuts.previous, previous.length];
  const theirs = [0, ...cuts.current, current.length];
  const runs: Run[] = [];
  for (let i = 0; i + 1 < mine.length; i++) {
    const limit = Math.min(mine[i + 1]! - mine[i]!, theirs[i + 1]! - theirs[i]!);
    const start = common(mine[i]!, theirs[i]!, limit, false);
    const end = common(mine[i + 1]!, theirs[i + 1]!, limit - start, true);
    if (start > 0) runs.push({ previous: mine[i]!, current: theirs[i]!, length: start });
    if (end > 0) runs.push({ previous: mine[i + 1]! - end, current: theirs[i + 1]! - end, length: end });
  }
  return runs;
}

/** A manifest file's text: decoded, or its ASCII bytes ({@link AsciiText}). */
export type ManifestText = string | AsciiText;

/** The whole text of a {@link ManifestText}. */
export function wholeText(text: ManifestText): string {
  return typeof text === "string" ? text : text.text();
}

/** What {@link recordsOf} reads of a text: a string, or an {@link AsciiText}. */
type Searchable = Pick<string, "indexOf" | "startsWith" | "length"> & { slice(start?: number, end?: number): string };

/** The top-level arrays whose records a manifest read against the current one takes over when their text is unchanged. */
const RECORD_ARRAYS = ["assets", "dags"] as const;

/** A record's text: `[start, end)`, from its `{` to its `}`. */
interface Span {
  start: number;
  end: number;
}

/** The records of one top-level array, and where its opening line `\n  "key": [` starts. */
interface Records {
  openingAt: number;
  records: Span[];
}

/**
 * Where the first line `\n  "key": [` of a text starts (-1 when there is none): the offset
 * `indexOf` gives for that line, found by stepping through the lines `\n  "` (a top-level key's,
 * in the layout of `canonicalJson`), which native search finds about twice as fast as the whole line.
 */
function openingOf(text: Searchable, key: string): number {
  const opening = `\n  ${JSON.stringify(key)}: [`;
  for (let at = text.indexOf('\n  "'); at !== -1; at = text.indexOf('\n  "', at + 1)) if (text.startsWith(opening, at)) return at;
  return -1;
}

/**
 * What {@link recordsOf} may take over from the same scan of another text (the previous
 * manifest's): where the two texts are the same ({@link commonRuns}). `shared[i]` is then the index
 * of the other text's record whose text is record i's, or -1 for a record scanned here.
 */
interface Known {
  scan: Records;
  runs: readonly Run[];
}

/** The record of `scan` whose step starts at `position` of the other text within a run (mapped), with that run; or undefined. */
function stepAt(known: Known, position: number): { index: number; run: Run } | undefined {
  for (const run of known.runs) {
    if (position < run.current || position >= run.current + run.length) continue;
    const there = position - run.current + run.previous;
    const records = known.scan.records;
    let low = 0;
    let high = records.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (records[mid]!.start - 5 < there) low = mid + 1;
      else high = mid;
    }
    return low < records.length && records[low]!.start - 5 === there ? { index: low, run } : undefined;
  }
  return undefined;
}

/**
 * The records of the top-level array `key` in a manifest text laid out as `canonicalJson` writes
 * it (two-space indentation, so each record spans from a line `    {` to a line `    }`; a string
 * never holds a raw line break, so every line is structure). Returns the records' offsets and where
 * the array's opening line is, or undefined when the text is not laid out that way (the caller then
 * parses it whole). `at` is where the opening line is, when the caller has searched it already.
 *
 * The scan reads forward only, one step per record, from its line `    {` to at most four code units
 * past its `}` (the `,` or `\n  ]` after it); what a step decides depends on what it reads alone.
 * With `known` (the same scan of a text that is the same as this one in runs), a step that starts
 * here at a place where the other scan's step started, and whose reads there lie inside one run, is
 * that step, at this text's place: it is taken from the other scan without reading this text
 * (`shared`), so only the records outside the runs are scanned.
 */
function recordsOf(text: Searchable, key: string, known?: Known, at = openingOf(text, key)): (Records & { shared: number[] }) | undefined {
  if (at === -1) return undefined;
  let position = at + `\n  ${JSON.stringify(key)}: [`.length;
  if (text.startsWith("]", position)) return { openingAt: at, records: [], shared: [] };
  const records: Span[] = [];
  const shared: number[] = [];
  for (;;) {
    const hit = known && stepAt(known, position);
    if (hit) {
      const theirs = known.scan.records;
      const shift = hit.run.current - hit.run.previous;
      const runEnd = hit.run.previous + hit.run.length;
      let index = hit.index;
      // The other scan's steps that read only this run: 4 covers the look past the `}`.
      while (index < theirs.length && theirs[index]!.end + 4 <= runEnd) {
        const r = theirs[index]!;
        records.push({ start: r.start + shift, end: r.end + shift });
        shared.push(index);
        // The other scan's last step saw the array close; any other went on past its `,`.
        if (index === theirs.length - 1) return { openingAt: at, records, shared };
        position = r.end + shift + 1;
        index++;
      }
    }
    if (!text.startsWith("\n    {", position)) return undefined;
    const start = position + 5;
    const close = text.indexOf("\n    }", start);
    if (close === -1) return undefined;
    const end = close + 6;
    records.push({ start, end });
    shared.push(-1);
    if (text.startsWith(",", end)) position = end + 1;
    else if (text.startsWith("\n  ]", end)) return { openingAt: at, records, shared };
    else return undefined;
  }
}

/**
 * Where the records of `assets[]` and `dags[]` lie in the previous manifest's text and in the
 * current one's, as the manifest's record cache knows them (ADR 0017p): per array, `previous` and
 * `current` are `[start, end)` pairs of every record of that array in each text, in order, and
 * `shared[i]` is the index of the previous record whose text is current record i's (the cache took
 * it from there), or -1. Given only for the very bytes the cache checked against its index.
 */
export type RecordPlaces = Record<(typeof RECORD_ARRAYS)[number], { previous: ArrayLike<number>; current: ArrayLike<number>; shared: ArrayLike<number> }>;

/** Spans of `[start, end)` pairs. */
function spansOf(pairs: ArrayLike<number>): Span[] {
  const spans: Span[] = new Array(pairs.length / 2);
  for (let i = 0; i < spans.length; i++) spans[i] = { start: pairs[2 * i]!, end: pairs[2 * i + 1]! };
  return spans;
}

/**
 * A previous manifest read against the current one (the diff's previous state): each `assets[]`
 * or `dags[]` record whose text is the current manifest's record of the same text is taken from
 * `current` (equal text, equal value), and only the other records, and what lies between the
 * records, are parsed and checked against the schema. The result is the same as {@link
 * parseManifest}'s, which it falls back to for a text laid out otherwise and to report a fault
 * (so a damaged file is refused with the same reason and offset). An unchanged project's previous
 * state is then no second copy of the manifest, and a diff of a few edited contracts parses a few
 * records (ADR 0017d). `text` is the file's text, or its ASCII bytes read as the text
 * ({@link AsciiText}, ADR 0017i), decoded whole only for the full parse.
 *
 * What it costs is what changed (ADR 0017k): where the two texts are the same is found first
 * ({@link commonRuns}: both cut where `assets` and `dags` open, each piece compared natively from
 * both ends); the current text's records lying in those runs are the previous scan's, shifted, and
 * a previous record wholly in them is taken over by position, without slicing or hashing its text.
 * Only the records around the differences are sliced, matched by text among the current text's
 * records scanned there (a record moved, not changed, is still taken over) and else parsed.
 *
 * With `current.places` (the record cache's, ADR 0017p) the records' places and which previous
 * record each current one is are taken from it rather than found; everything else is read and
 * checked as without it (places that do not describe the text fail those checks: a full parse).
 */
export function parseManifestAgainst(text: ManifestText, current: { manifest: Manifest; text: string; places?: RecordPlaces }): ReturnType<typeof parseManifest> {
  if (text === current.text) return { manifest: current.manifest };
  const whole = (): string => wholeText(text);
  const places = current.places;
  let previousAt: number[] = [];
  let currentAt: number[] = [];
  let runs: Run[] = [];
  if (!places) {
    // Each text cut where its arrays open (found natively), so that each array's edits are apart.
    previousAt = RECORD_ARRAYS.map((key) => openingOf(text, key));
    currentAt = RECORD_ARRAYS.map((key) => openingOf(current.text, key));
    const increasing = (xs: number[]): boolean => xs.every((x, i) => x !== -1 && (i === 0 || x > xs[i - 1]!));
    const cuts = increasing(previousAt) && increasing(currentAt) ? { previous: previousAt, current: currentAt } : undefined;
    runs = commonRuns(text, current.text, cuts);
    // The same text, read from its bytes: the current manifest itself, as for the same string.
    if (text.length === current.text.length && runs.reduce((n, r) => n + r.length, 0) === text.length) return { manifest: current.manifest };
  }
  const previousRecords = new Map<string, Span[]>();
  // Per array, the value each previous record is taken over as (undefined: sliced and matched).
  const takenAt = new Map<string, unknown[]>();
  // Per array, the current records of the differing middles by text: a record is matched only in
  // its own array (an asset's text standing in dags[] is parsed and checked, never taken as one).
  const middles = new Map<string, Map<string, unknown>>();
  for (const [k, key] of RECORD_ARRAYS.entries()) {
    const middle = new Map<string, unknown>();
    middles.set(key, middle);
    const known = places?.[key];
    const theirs = known ? { openingAt: -1, records: spansOf(known.previous) } : recordsOf(text, key, undefined, previousAt[k]);
    if (!theirs) return parseManifest(whole());
    const ours = known ? { records: spansOf(known.current), shared: Array.from(known.shared) } : recordsOf(current.text, key, { scan: theirs, runs }, currentAt[k]);
    const values = current.manifest[key] as unknown[];
    if (!ours || ours.records.length !== values.length) return parseManifest(whole());
    const taken: unknown[] = new Array(theirs.records.length);
    ours.shared.forEach((previousIndex, i) => {
      if (previousIndex === -1) middle.set(current.text.slice(ours.records[i]!.start, ours.records[i]!.end), values[i]);
      else taken[previousIndex] = values[i];
    });
    previousRecords.set(key, theirs.records);
    takenAt.set(key, taken);
  }
  // The text outside the records, each record standing as 0: its syntax and every other field.
  const spans = RECORD_ARRAYS.flatMap((key) => previousRecords.get(key)!).sort((a, b) => a.start - b.start);
  const outside: string[] = [];
  let from = 0;
  for (const span of spans) {
    outside.push(text.slice(from, span.start), "0");
    from = span.end;
  }
  outside.push(text.slice(from));
  let skeleton: unknown;
  try {
    skeleton = JSON.parse(outside.join(""));
  } catch {
    return parseManifest(whole());
  }
  if (skeleton === null || typeof skeleton !== "object" || Array.isArray(skeleton)) return parseManifest(whole());
  const value = skeleton as Record<string, unknown>;
  if (value.manifestVersion !== MANIFEST_VERSION) return parseManifest(whole());
  const view: Record<string, unknown> = { ...value };
  for (const key of RECORD_ARRAYS) {
    const records = previousRecords.get(key)!;
    const taken = takenAt.get(key)!;
    const middle = middles.get(key)!;
    const out: unknown[] = new Array(records.length);
    const parsed: unknown[] = [];
    for (let i = 0; i < records.length; i++) {
      if (taken[i] !== undefined) {
        out[i] = taken[i];
        continue;
      }
      const record = text.slice(records[i]!.start, records[i]!.end);
      if (middle.has(record)) {
        out[i] = middle.get(record);
        continue;
      }
      let fresh: unknown;
      try {
        fresh = JSON.parse(record);
      } catch {
        return parseManifest(whole());
      }
      out[i] = fresh;
      parsed.push(fresh);
    }
    // The array holds the records' stand-ins and nothing else: the records are its elements.
    const standing = value[key];
    if (!Array.isArray(standing) || standing.length !== out.length || !standing.every((x) => x === 0)) return parseManifest(whole());
    value[key] = out;
    // The records taken over are the current manifest's, which this compiler built valid.
    view[key] = parsed;
  }
  if (!checkManifest(view).manifest) return parseManifest(whole());
  return { manifest: value as unknown as Manifest };
}

/** 1-based line and column (UTF-16 code units, as every diagnostic counts) of an offset. */
function locationAt(file: string, text: string, offset: number): SourceLocation {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { file, line, column: offset - lineStart + 1 };
}

/**
 * The previous state of a compile, checked: the manifest of `file` (the output folder's, or one
 * committed at a Git ref), or CA1101 at the line and column of the fault when it is damaged (not
 * JSON, a foreign `manifestVersion`, not valid against the manifest schema). A damaged previous
 * manifest is never read as empty: that would report every asset as added and let a breaking
 * change through. With `current` (the manifest this compile built, and its text) the records that
 * did not change are taken from it rather than parsed ({@link parseManifestAgainst}). With `force`
 * (`compile --force`) CA1101 is a warning and the compile goes on without a previous state, so
 * `write` replaces the file.
 */
export function readPreviousManifest(
  file: { path: string; text: ManifestText },
  force: boolean,
  current?: { manifest: Manifest; text: string; places?: RecordPlaces },
): { manifest?: Manifest; diagnostics: Diagnostic[] } {
  const parsed = current ? parseManifestAgainst(file.text, current) : parseManifest(wholeText(file.text));
  if (parsed.manifest) return { manifest: parsed.manifest, diagnostics: [] };
  const hint = force
    ? "--force: the compile goes on without a previous state and rewrites it"
    : "restore it from Git, delete it to compile without a previous state, or run \"contract-assets compile --force\" to regenerate it";
  const diagnostic = createDiagnostic(Diagnostics.PreviousManifestDamaged, { path: file.path, problem: parsed.problem }, locationAt(file.path, wholeText(file.text), parsed.offset), {
    hint,
    ...(force ? { severity: "warning" as const } : {}),
  });
  return { diagnostics: [diagnostic] };
}
