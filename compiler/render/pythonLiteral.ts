import { sortKeys } from "../support/canonical-json.js";

/**
 * Encodes a JSON value as a Python literal in pure ASCII.
 *
 * Strings become double-quoted literals where every character outside printable ASCII, and every
 * quote and backslash, is an escape (`\n`, `\xNN`, `\uNNNN`, `\UNNNNNNNN`), so no contract text can
 * close the string or become code, and the module compiles under any locale (`LANG=C`). Objects
 * keep canonical (sorted) key order so one Asset renders byte-identically in every module.
 *
 * Input: strings, finite numbers, booleans, null, arrays and plain objects. Throws a TypeError on
 * anything else (the validate stage rejects such values first, so a throw is a bug).
 */
export function pythonLiteral(value: unknown): string {
  return encode(sortKeys(value));
}

function encode(value: unknown): string {
  if (value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "string") return pythonString(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`pythonLiteral: non-finite number ${value}`);
    if (Object.is(value, -0)) return "0";
    return Number.isInteger(value) && Math.abs(value) < 1e21 ? value.toFixed(0) : String(value);
  }
  if (Array.isArray(value)) return `[${value.map(encode).join(", ")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) => `${pythonString(k)}: ${encode(v)}`);
    return `{${entries.join(", ")}}`;
  }
  throw new TypeError(`pythonLiteral: ${typeof value} is not a JSON value`);
}

const SHORT_ESCAPES: Record<string, string> = { "\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t" };

const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A double-quoted Python string literal of pure printable ASCII. */
export function pythonString(text: string): string {
  // Most text is printable ASCII without a quote or backslash: nothing to escape.
  if (PLAIN.test(text)) return `"${text}"`;
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    let code = unit;
    // Join a valid surrogate pair into one code point; a lone surrogate stays a \u escape.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        code = (unit - 0xd800) * 0x400 + (next - 0xdc00) + 0x10000;
        i++;
      }
    }
    const ch = String.fromCodePoint(code);
    const short = SHORT_ESCAPES[ch];
    if (short) out += short;
    else if (code >= 0x20 && code < 0x7f) out += ch;
    else if (code <= 0xff) out += `\\x${code.toString(16).padStart(2, "0")}`;
    else if (code <= 0xffff) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else out += `\\U${code.toString(16).padStart(8, "0")}`;
  }
  return out + '"';
}
