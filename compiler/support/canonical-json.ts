/**
 * Canonical JSON: object keys sorted by code unit, two-space indentation, a final newline.
 *
 * Input: any JSON value (objects, arrays, strings, finite numbers, booleans, null).
 * Output: the same text for equal values on every machine, so manifests diff cleanly in Git.
 * Throws a TypeError on a value JSON cannot carry (undefined, functions, non-finite numbers); the
 * callers only pass values the validate stage has already checked, so a throw here is a bug.
 */
export function canonicalJson(value: unknown): string {
  // The same text as stringifying sortKeys(value), but each object is sorted when JSON.stringify
  // reaches it, so no sorted deep copy of a large manifest is kept alive while it is written out.
  return JSON.stringify(value, sortingReplacer, 2) + "\n";
}

/** JSON.stringify replacer with the checks and key order of {@link sortKeys}. */
function sortingReplacer(this: unknown, key: string): unknown {
  // The raw value, before any toJSON (sortKeys never calls toJSON).
  const value = (this as Record<string, unknown>)[key];
  if (Array.isArray(value)) return value;
  if (value === null || typeof value !== "object") return sortKeys(value);
  const keys = Object.keys(value);
  let sorted = true;
  for (let i = 1; i < keys.length && sorted; i++) sorted = keys[i - 1]! < keys[i]!;
  if (sorted && !keys.includes("__proto__")) return value;
  const out: Record<string, unknown> = {};
  // Sort for determinism.
  for (const k of keys.sort()) out[k] = (value as Record<string, unknown>)[k];
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

/** A piece of JSON text as ASCII, held one byte per character (a Latin-1 round trip flattens it so). */
function asciiPiece(text: string): string {
  if (!/[^\x00-\x7f]/.test(text)) return text;
  return Buffer.from(asciiJson(text), "latin1").toString("latin1");
}

/**
 * The canonical JSON of a large object whose top-level arrays hold records (the manifest): the
 * text of `asciiJson(canonicalJson(value))`, built a top-level field, or {@link RECORDS_PER_PIECE}
 * records of a top-level array, at a time, each piece made ASCII and one byte per character, then
 * joined once. A whole text with a single character beyond Latin-1 would be held as UTF-16 (two
 * bytes per character), and JSON.stringify builds its result from parts before copying it out;
 * this holds the text's length in bytes about twice at its peak, not four times.
 */
export function canonicalJsonAscii(value: Record<string, unknown>): string {
  const parts: string[] = ["{"];
  Object.keys(value)
    .sort()
    .forEach((key, k) => {
      const field = value[key];
      // `{"key": ...}` in the layout of the whole: the field as it stands at depth 1.
      const member = (v: unknown): string => JSON.stringify({ [key]: v }, sortingReplacer, 2);
      if (k) parts.push(",");
      if (!Array.isArray(field) || field.length <= RECORDS_PER_PIECE) {
        parts.push(asciiPiece(member(field).slice(1, -2)));
        return;
      }
      const head = `{\n  ${JSON.stringify(key)}: [`;
      parts.push(asciiPiece(head.slice(1)));
      for (let i = 0; i < field.length; i += RECORDS_PER_PIECE) {
        const text = member(field.slice(i, i + RECORDS_PER_PIECE));
        parts.push(i ? "," : "", asciiPiece(text.slice(head.length, -"\n  ]\n}".length)));
      }
      parts.push("\n  ]");
    });
  parts.push(parts.length > 1 ? "\n}\n" : "}\n");
  return parts.join("");
}
