import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { asciiJson, canonicalJson, canonicalJsonAscii } from "../../compiler/support/canonical-json.js";

// The algorithm canonicalJson had before it walked the value itself: a sorted deep copy (each
// object's keys sorted, assigned to a fresh `{}`), then JSON.stringify. Kept here as the reference
// the faster path must equal byte for byte.
function referenceSortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(referenceSortKeys);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = referenceSortKeys((value as Record<string, unknown>)[key]);
  return out;
}
const reference = (value: unknown): string => JSON.stringify(referenceSortKeys(value), null, 2) + "\n";

// Keys out of order, integer-like keys (enumerated before the others whatever their order),
// `__proto__`, non-ASCII, a character beyond the BMP and lone surrogates.
const key = fc.oneof(
  fc.constantFrom("__proto__", "a", "b", "z", "A", "10", "9", "0", "é", "😀", "\ud800", "\udfff", "toJSON", ""),
  fc.string({ unit: "binary", maxLength: 6 }),
);
const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.constantFrom("\ud800", "x\udc00y", "😀", "\u2028\u2029", "Umsätze", "\u007f\u0080", '"\\\n'),
);
const leaf = fc.oneof(text, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(-0), fc.boolean(), fc.constant(null));
// Objects with own properties in the generated order (Object.fromEntries makes `__proto__` an own key).
const { json } = fc.letrec((tie) => ({
  json: fc.oneof({ depthSize: "small", withCrossShrink: true }, leaf, tie("array"), tie("object"), tie("wide")),
  array: fc.array(tie("json"), { maxLength: 5 }),
  object: fc.array(fc.tuple(key, tie("json")), { maxLength: 6 }).map((entries) => Object.fromEntries(entries)),
  // More keys than the insertion sort takes.
  wide: fc.array(fc.tuple(key, leaf), { minLength: 15, maxLength: 30 }).map((entries) => Object.fromEntries(entries)),
}));
// Records of a manifest-like top-level array, longer than a piece (200 records) now and then.
const record = fc.array(fc.tuple(key, leaf), { maxLength: 4 }).map((entries) => Object.fromEntries(entries));
const topLevel = fc
  .tuple(fc.array(fc.tuple(key, json), { maxLength: 4 }), fc.array(record, { maxLength: 450 }), key)
  .map(([entries, records, name]) => Object.fromEntries([...entries, [name, records]]) as Record<string, unknown>);

/** A deep snapshot of `value` that also records each object's key order (to see it is not mutated). */
const snapshot = (value: unknown): string => JSON.stringify(value, (_, v: unknown) => (v !== null && typeof v === "object" && !Array.isArray(v) ? Object.entries(v) : v));

describe("canonicalJson against the reference algorithm (sortKeys + JSON.stringify)", () => {
  it("writes the same text byte for byte, and leaves the value as it was", () => {
    fc.assert(
      fc.property(json, (value) => {
        const before = snapshot(value);
        expect(canonicalJson(value)).toBe(reference(value));
        expect(snapshot(value)).toBe(before);
      }),
      { numRuns: 500 },
    );
  });

  it("canonicalJsonAscii, piece by piece, is the reference text with non-ASCII escaped", () => {
    fc.assert(
      fc.property(topLevel, (value) => {
        const before = snapshot(value);
        const text = canonicalJsonAscii(value);
        expect(text).toBe(asciiJson(reference(value)));
        expect(text).toBe(asciiJson(canonicalJson(value)));
        expect(/[^\x00-\x7f]/.test(text)).toBe(false);
        expect(snapshot(value)).toBe(before);
      }),
      { numRuns: 60 },
    );
  });

  it("never calls toJSON, as the reference does not (a Date is an object without own keys)", () => {
    const value = { when: new Date(0), list: [new Date(0)], b: 1, a: { toJSON: "not a function" } };
    expect(canonicalJson(value)).toBe(reference(value));
    expect(canonicalJson(value)).toContain('"when": {}');
  });

  // A value JSON cannot carry, planted at any depth of a JSON value, under any key but `__proto__`
  // (which is left out of the text, with whatever it holds).
  const bad = fc.constantFrom<() => unknown>(
    () => undefined,
    () => Number.NaN,
    () => Number.POSITIVE_INFINITY,
    () => Number.NEGATIVE_INFINITY,
    () => () => 1,
    () => 1n,
    () => Symbol("s"),
    // eslint-disable-next-line no-sparse-arrays
    () => [1, , 2],
    () => {
      const cycle: Record<string, unknown> = { a: 1 };
      cycle.self = { back: cycle };
      return cycle;
    },
  );
  const planted = fc
    .tuple(bad, fc.array(fc.tuple(fc.boolean(), json, key.filter((k) => k !== "__proto__")), { maxLength: 4 }))
    .map(([make, steps]) => steps.reduce<unknown>((inner, [inObject, sibling, name]) => (inObject ? Object.fromEntries([["m", sibling], [name, inner]]) : [sibling, inner]), make()));

  it("throws a TypeError on a non-JSON value wherever it stands, rather than writing null or dropping it", () => {
    fc.assert(
      fc.property(planted, (value) => {
        expect(() => canonicalJson(value)).toThrow(TypeError);
        expect(() => canonicalJsonAscii({ b: [value], a: value })).toThrow(TypeError);
        expect(() => canonicalJsonAscii({ records: [...Array.from({ length: 300 }, () => ({})), value] })).toThrow(TypeError);
      }),
      { numRuns: 200 },
    );
  });
});
