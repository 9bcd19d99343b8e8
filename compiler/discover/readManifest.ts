import { Buffer, isAscii } from "node:buffer";
import jsonc from "jsonc-parser";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, SourceLocation } from "../diagnostics/diagnostic.js";
import { MANIFEST_VERSION, type DagPlan, type Manifest, type ManifestV1 } from "../model/manifest.js";
import { checkManifest } from "./manifestSchema.js";

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
    return position + search.length <= this.bytes.length && this.bytes.toString("latin1", position, position + search.length) === search;
  }

  slice(start = 0, end = this.bytes.length): string {
    return this.bytes.toString("latin1", start, end);
  }

  /** The whole text. */
  text(): string {
    return this.bytes.toString("latin1");
  }
}

/** A manifest file's text: decoded, or its ASCII bytes ({@link AsciiText}). */
export type ManifestText = string | AsciiText;

/** The whole text of a {@link ManifestText}. */
export function wholeText(text: ManifestText): string {
  return typeof text === "string" ? text : text.text();
}

/** What {@link recordsOf} reads of a text: a string, or an {@link AsciiText}. */
type Searchable = Pick<string, "indexOf" | "startsWith"> & { slice(start?: number, end?: number): string };

/** The top-level arrays whose records a manifest read against the current one takes over when their text is unchanged. */
const RECORD_ARRAYS = ["assets", "dags"] as const;

/**
 * The records of the top-level array `key` in a manifest text laid out as `canonicalJson` writes
 * it (two-space indentation, so each record spans from a line `    {` to a line `    }`; a string
 * never holds a raw line break, so every line is structure). Returns the records' texts and
 * offsets, or undefined when the text is not laid out that way (the caller then parses it whole).
 */
function recordsOf(text: Searchable, key: string): Array<{ start: number; end: number }> | undefined {
  const opening = `\n  ${JSON.stringify(key)}: [`;
  const at = text.indexOf(opening);
  if (at === -1) return undefined;
  let position = at + opening.length;
  if (text.startsWith("]", position)) return [];
  const records: Array<{ start: number; end: number }> = [];
  for (;;) {
    if (!text.startsWith("\n    {", position)) return undefined;
    const start = position + 5;
    const close = text.indexOf("\n    }", start);
    if (close === -1) return undefined;
    const end = close + 6;
    records.push({ start, end });
    if (text.startsWith(",", end)) position = end + 1;
    else if (text.startsWith("\n  ]", end)) return records;
    else return undefined;
  }
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
 */
export function parseManifestAgainst(text: ManifestText, current: { manifest: Manifest; text: string }): ReturnType<typeof parseManifest> {
  if (text === current.text) return { manifest: current.manifest };
  const whole = (): string => wholeText(text);
  const taken = new Map<string, unknown>();
  const previousRecords = new Map<string, Array<{ start: number; end: number }>>();
  for (const key of RECORD_ARRAYS) {
    const ours = recordsOf(current.text, key);
    const theirs = recordsOf(text, key);
    const values = current.manifest[key] as unknown[];
    if (!ours || !theirs || ours.length !== values.length) return parseManifest(whole());
    ours.forEach((r, i) => taken.set(current.text.slice(r.start, r.end), values[i]));
    previousRecords.set(key, theirs);
  }
  // The text outside the records, each record standing as 0: its syntax and every other field.
  const spans = RECORD_ARRAYS.flatMap((key) => previousRecords.get(key)!.map((r) => ({ key, ...r }))).sort((a, b) => a.start - b.start);
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
    const out: unknown[] = [];
    const parsed: unknown[] = [];
    for (const r of records) {
      const record = text.slice(r.start, r.end);
      if (taken.has(record)) {
        out.push(taken.get(record));
        continue;
      }
      let fresh: unknown;
      try {
        fresh = JSON.parse(record);
      } catch {
        return parseManifest(whole());
      }
      out.push(fresh);
      parsed.push(fresh);
    }
    if (!Array.isArray(value[key]) || (value[key] as unknown[]).length !== out.length) return parseManifest(whole());
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
  current?: { manifest: Manifest; text: string },
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
