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
