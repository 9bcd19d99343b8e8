/**
 * Canonical JSON: object keys sorted by code unit, two-space indentation, a final newline.
 *
 * Input: any JSON value (objects, arrays, strings, finite numbers, booleans, null).
 * Output: the same text for equal values on every machine, so manifests diff cleanly in Git.
 * Throws a TypeError on a value JSON cannot carry (undefined, functions, non-finite numbers); the
 * callers only pass values the validate stage has already checked, so a throw here is a bug.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value), null, 2) + "\n";
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
