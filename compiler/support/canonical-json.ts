/**
 * Canonical JSON: object keys sorted by code unit, two-space indentation, a final newline.
 *
 * Input: any JSON value (objects, arrays, strings, finite numbers, booleans, null).
 * Output: the same text for equal values on every machine, so manifests diff cleanly in Git: the
 * text of `JSON.stringify(sortKeys(value), null, 2)` plus a newline (keys that are array indices,
 * such as `"10"`, come first in numeric order, as a JavaScript object enumerates them; ECMA-262
 * OrdinaryOwnPropertyKeys). An own `__proto__` key is left
 * out, as {@link sortKeys} leaves it out (the parse stage refuses such keys); `toJSON` is never
 * called. Throws a TypeError on a value JSON cannot carry (undefined, a function, a symbol, a
 * bigint, a non-finite number, an array hole, a circular structure); the callers only pass values
 * the validate stage has already checked, so a throw here is a bug.
 */
export function canonicalJson(value: unknown): string {
  // Native JSON.stringify without a replacer (a replacer is a call per key and value) of a value
  // whose objects are already in canonical order: sorted copies only where they are not.
  return JSON.stringify(inCanonicalOrder(value, []), null, 2) + "\n";
}

/** Throws the TypeError of {@link canonicalJson} unless `value` is a JSON primitive. */
function checkPrimitive(value: unknown): void {
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: non-finite number ${String(value)}`);
  } else if (value !== null && typeof value !== "string" && typeof value !== "boolean") {
    throw new TypeError(`canonicalJson: ${typeof value} is not a JSON value`);
  }
}

/**
 * `keys` (distinct strings) sorted in place by code unit, as `Array.prototype.sort` sorts them: an
 * insertion sort for the few keys of a record (about half the time of the built-in sort there).
 */
function sortCodeUnits(keys: string[]): void {
  if (keys.length > 16) {
    keys.sort();
    return;
  }
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    for (; j >= 0 && keys[j]! > key; j--) keys[j + 1] = keys[j]!;
    keys[j + 1] = key;
  }
}

/**
 * `value` checked as {@link canonicalJson} checks it, with every object's keys in code-unit
 * order: the same value (the same object, not mutated) where it already is, a copy of an object
 * whose keys are not in order or that has a `toJSON` (and of each object or array holding such a
 * copy) where not. Native `JSON.stringify(result, null, 2)` is then the text of stringifying
 * {@link sortKeys}(value). `ancestors` are the objects being walked (a cycle is a TypeError, as
 * JSON.stringify's own).
 */
function inCanonicalOrder(value: unknown, ancestors: object[]): unknown {
  if (value === null || typeof value !== "object") {
    checkPrimitive(value);
    return value;
  }
  if (ancestors.includes(value)) throw new TypeError("canonicalJson: circular structure");
  ancestors.push(value);
  let out: unknown;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const canonical = item !== null && typeof item === "object" ? inCanonicalOrder(item, ancestors) : (checkPrimitive(item), item);
      if (copy) copy.push(canonical);
      else if (canonical !== item) (copy = value.slice(0, i)).push(canonical);
    }
    out = copy ?? value;
  } else {
    const object = value as Record<string, unknown>;
    const keys = Object.keys(object);
    // A toJSON would be called by JSON.stringify on the object itself, never by sortKeys.
    let inOrder = typeof object.toJSON !== "function" && keys[0] !== "__proto__";
    for (let i = 1; i < keys.length && inOrder; i++) inOrder = keys[i - 1]! < keys[i]! && keys[i] !== "__proto__";
    if (!inOrder) sortCodeUnits(keys);
    let copy: Record<string, unknown> | undefined = inOrder ? undefined : {};
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (key === "__proto__") continue;
      const item = object[key];
      const canonical = item !== null && typeof item === "object" ? inCanonicalOrder(item, ancestors) : (checkPrimitive(item), item);
      if (copy) copy[key] = canonical;
      else if (canonical !== item) {
        copy = {};
        for (let j = 0; j < i; j++) copy[keys[j]!] = object[keys[j]!];
        copy[key] = canonical;
      }
    }
    out = copy ?? value;
  }
  ancestors.pop();
  return out;
}

/** Deep copy of a JSON value with every object's keys in code-unit order. */
export function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) {
      throw new TypeError(`canonicalJson: non-finite number ${String(value)}`);
    }
    if (value === undefined || typeof value === "function" || typeof value === "bigint") {
      throw new TypeError(`canonicalJson: ${typeof value} is not a JSON value`);
    }
    return value;
  }
  const out: Record<string, unknown> = {};
  // Sort for determinism.
  for (const key of Object.keys(value).sort()) {
    out[key] = sortKeys((value as Record<string, unknown>)[key]);
  }
  return out;
}

/** Characters outside ASCII (JSON text carries them only inside strings). */
const NON_ASCII = /[\u0080-\uffff]/g;

/**
 * `text` with every character outside ASCII written as a JSON `\uXXXX` escape (lowercase hex, a
 * pair of escapes for a character beyond the BMP), as Python's `json.dumps` writes by default.
 * Only for JSON text: it changes no value.
 */
export function asciiJson(text: string): string {
  return text.replace(NON_ASCII, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Records of a top-level array stringified at a time by {@link canonicalJsonAscii}. */
const RECORDS_PER_PIECE = 200;

/** The buffer {@link asciiPiece} flattens through, grown to the largest piece up to {@link FLATTEN_KEPT_BYTES}. */
let flattenBuffer: Buffer | undefined;
/** A larger piece is flattened through a buffer of its own, not kept. */
const FLATTEN_KEPT_BYTES = 16 << 20;

/**
 * A piece of JSON text as ASCII, held one byte per character (a Latin-1 round trip flattens it
 * so). Through one buffer kept between pieces: a new one per piece was 90 MB of short-lived
 * external memory in a manifest of 10,000 contracts, which starts garbage collections of its own.
 */
function asciiPiece(text: string): string {
  if (!/[^\x00-\x7f]/.test(text)) return text;
  const ascii = asciiJson(text);
  if (ascii.length > FLATTEN_KEPT_BYTES) return Buffer.from(ascii, "latin1").toString("latin1");
  if (!flattenBuffer || flattenBuffer.length < ascii.length) flattenBuffer = Buffer.allocUnsafe(Math.min(FLATTEN_KEPT_BYTES, Math.max(ascii.length, 1 << 20)));
  return flattenBuffer.toString("latin1", 0, flattenBuffer.write(ascii, 0, "latin1"));
}

/**
 * What {@link canonicalJsonAscii} is told about the records of some top-level arrays (the
 * manifest's `assets` and `dags`): each record is then made on its own, or taken as the caller
 * knows it, and where its text lies in the whole is reported.
 */
export interface RecordTexts {
  /** The top-level arrays whose records are taken one at a time. */
  readonly fields: readonly string[];
  /**
   * The text of `record` (element `index` of the top-level array `field`) as it stands in the
   * whole, from its `{` to its `}` (indented as an element of a top-level array), when the caller
   * knows it: a string, or the bytes `[start, end)` of an ASCII text (read as Latin-1, one byte a
   * character); undefined to have it made. The caller answers only with the text this function
   * would make (ASCII), or the whole is not canonical. Consecutive records answered from the same
   * bytes, lying there with just the separator between them, become one piece.
   */
  known(field: string, index: number, record: unknown): string | KnownBytes | undefined;
  /** Where the text of element `index` of `field` lies in the whole: `[start, end)`, in characters (bytes: the text is ASCII). */
  placed(field: string, index: number, start: number, end: number): void;
  /** Handed the whole text's bytes (ASCII), once made, before they are read as the text. */
  finished?(bytes: Uint8Array): void;
}

/** A known text as bytes of a larger ASCII text: `bytes[start, end)` (see {@link RecordTexts.known}). */
export interface KnownBytes {
  bytes: Uint8Array;
  start: number;
  end: number;
}

/** The separator of two elements of a top-level array, as bytes. */
const SEPARATOR = Array.from(",\n    ", (c) => c.charCodeAt(0));

/**
 * The parts of {@link canonicalJsonAscii}'s text, in order, and their length in characters: strings
 * (ASCII, one byte per character) and, with `records`, known bytes. With `records`, each element
 * of the arrays it names is a part, its text asked of `records.known` first and made only when
 * unknown, and its place in the whole reported to `records.placed`. Throws as
 * {@link canonicalJson} throws (on a record made here).
 */
function canonicalParts(value: Record<string, unknown>, records?: RecordTexts): { parts: Array<string | KnownBytes>; length: number } {
  // Strings, and known bytes taken as they are (one piece for a run of consecutive records).
  const parts: Array<string | KnownBytes> = ["{"];
  // Characters in `parts` so far: where the next record's text starts.
  let length = 1;
  const push = (...texts: string[]): void => {
    for (const text of texts) {
      parts.push(text);
      length += text.length;
    }
  };
  const pushKnown = (known: KnownBytes, first: boolean): void => {
    const last = parts[parts.length - 1]!;
    // The separator before it is already in the bytes of the record before it: extend that piece.
    if (!first && typeof last !== "string" && last.bytes === known.bytes && known.start - last.end === SEPARATOR.length && SEPARATOR.every((b, i) => known.bytes[last.end + i] === b)) {
      length += known.end - last.end;
      last.end = known.end;
      return;
    }
    push(first ? "\n    " : ",\n    ");
    parts.push({ ...known });
    length += known.end - known.start;
  };
  // Sort for determinism, in canonicalJson's order: a fresh object's, so keys that are array
  // indices come first (`__proto__` left out, as canonicalJson leaves it out).
  const order: Record<string, true> = {};
  for (const key of Object.keys(value).sort()) if (key !== "__proto__") order[key] = true;
  const keys = Object.keys(order);
  keys.forEach((key, k) => {
    const field = value[key];
    // `{"key": ...}` in the layout of the whole: the field as it stands at depth 1.
    const member = (v: unknown): string => JSON.stringify({ [key]: inCanonicalOrder(v, []) }, null, 2);
    if (k) push(",");
    const head = `{\n  ${JSON.stringify(key)}: [`;
    const tail = "\n  ]\n}".length;
    if (Array.isArray(field) && field.length > 0 && records?.fields.includes(key)) {
      push(head.slice(1));
      for (let i = 0; i < field.length; i++) {
        const record: unknown = field[i];
        // One record as the element of a one-element array: `\n    {` ... `}` (checked as canonicalJson checks it).
        const known = records.known(key, i, record);
        if (known !== undefined && typeof known !== "string") {
          const start = length + (i ? SEPARATOR.length : "\n    ".length);
          pushKnown(known, i === 0);
          records.placed(key, i, start, length);
          continue;
        }
        const text = known ?? asciiPiece(member([record]).slice(head.length + "\n    ".length, -tail));
        push(i ? ",\n    " : "\n    ");
        records.placed(key, i, length, length + text.length);
        push(text);
      }
      push("\n  ]");
      return;
    }
    if (!Array.isArray(field) || field.length <= RECORDS_PER_PIECE) {
      push(asciiPiece(member(field).slice(1, -2)));
      return;
    }
    push(asciiPiece(head.slice(1)));
    for (let i = 0; i < field.length; i += RECORDS_PER_PIECE) {
      const text = member(field.slice(i, i + RECORDS_PER_PIECE));
      push(i ? "," : "", asciiPiece(text.slice(head.length, -tail)));
    }
    push("\n  ]");
  });
  push(parts.length > 1 ? "\n}\n" : "}\n");
  return { parts, length };
}

/**
 * The canonical JSON of a large object whose top-level arrays hold records (the manifest): the
 * text of `asciiJson(canonicalJson(value))`, built a top-level field, or {@link RECORDS_PER_PIECE}
 * records of a top-level array, at a time, each piece made ASCII and one byte per character, then
 * joined once. A whole text with a single character beyond Latin-1 would be held as UTF-16 (two
 * bytes per character), and JSON.stringify builds its result from parts before copying it out;
 * this holds the text's length in bytes about twice at its peak, not four times.
 *
 * With `records` ({@link RecordTexts}), each record of the arrays it names is made on its own or
 * taken as `records.known` answers, and the parts are copied into one buffer (known bytes without
 * becoming strings first), handed to `records.finished`, then read as the text: the same text as
 * without `records` whenever `known` answers as its contract says.
 */
export function canonicalJsonAscii(value: Record<string, unknown>, records?: RecordTexts): string {
  const { parts, length } = canonicalParts(value, records);
  if (!records) return (parts as string[]).join("");
  const whole = Buffer.allocUnsafe(length);
  let at = 0;
  for (const part of parts) {
    if (typeof part === "string") at += whole.write(part, at, "latin1");
    else at += Buffer.from(part.bytes.buffer, part.bytes.byteOffset, part.bytes.byteLength).copy(whole, at, part.start, part.end);
  }
  records.finished?.(whole);
  return whole.toString("latin1", 0, length);
}
