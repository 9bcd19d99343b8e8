import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openRecordCache, RECORD_INDEX_KEY, recordKey, type RecordCache } from "../../compiler/manifest/recordCache.js";
import { canonicalJsonAscii } from "../../compiler/support/canonical-json.js";

// The manifest's record cache (ADR 0017p): a text assembled from records sliced out of the last
// text and records made now is canonicalJsonAscii's text, whatever the records are. A hit may
// only ever give what canonicalJsonAscii gives; where canonicalJsonAscii throws, so must it.

const COMPILER = { name: "contract-assets", version: "test" };

// Keys out of order, integer-like keys, `__proto__`, `toJSON`, non-ASCII and lone surrogates.
const key = fc.oneof(fc.constantFrom("__proto__", "a", "b", "z", "10", "9", "0", "é", "😀", "\ud800", "toJSON", ""), fc.string({ unit: "binary", maxLength: 5 }));
const text = fc.oneof(fc.string({ unit: "binary", maxLength: 12 }), fc.constantFrom("\ud800", "x\udc00y", "😀", "Umsätze", "1970-01-01T00:00:00.000Z"));
const leaf = fc.oneof(text, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(-0), fc.boolean(), fc.constant(null));
const { json } = fc.letrec((tie) => ({
  json: fc.oneof({ depthSize: "small", withCrossShrink: true }, leaf, tie("array"), tie("object")),
  array: fc.array(tie("json"), { maxLength: 4 }),
  object: fc.array(fc.tuple(key, tie("json")), { maxLength: 5 }).map((entries) => Object.fromEntries(entries)),
}));
const record = fc.array(fc.tuple(key, json), { maxLength: 5 }).map((entries) => Object.fromEntries(entries) as Record<string, unknown>);

/**
 * Values whose compact JSON.stringify text is `r`'s (so their key is `r`'s, were it not refused)
 * but on which canonicalJson throws or writes another text: the cases where the two disagree.
 */
const twins: Array<[string, (r: Record<string, unknown>) => unknown]> = [
  ["an undefined member", (r) => ({ ...r, zz: undefined })],
  ["a function member", (r) => ({ ...r, zz: () => 1 })],
  ["a symbol member", (r) => ({ ...r, zz: Symbol("s") })],
  ["an own toJSON", (r) => ({ toJSON: () => r })],
  ["an inherited toJSON (canonicalJson writes {})", (r) => Object.create({ toJSON: () => r }) as unknown],
  ["a class instance with toJSON", (r) => new (class Wrapped { toJSON(): unknown { return r; } })()],
  ["a Date for its ISO string", (r) => ({ ...r, when: new Date(0) })],
  ["NaN for null", (r) => ({ ...r, nothing: Number.NaN })],
  ["Infinity for null", (r) => ({ ...r, nothing: Number.POSITIVE_INFINITY })],
  ["undefined in an array for null", (r) => ({ ...r, list: [undefined] })],
  ["a hole in an array for null", (r) => ({ ...r, list: new Array(1) as unknown[] })],
  ["a boxed string", (r) => ({ ...r, boxed: new String("x") })],
  ["a boxed number", (r) => ({ ...r, count: new Number(1) })],
];
/** The plain record a twin stands for (what its compact text reads back as). */
const twinOf: Record<string, (r: Record<string, unknown>) => Record<string, unknown>> = {
  "a Date for its ISO string": (r) => ({ ...r, when: "1970-01-01T00:00:00.000Z" }),
  "NaN for null": (r) => ({ ...r, nothing: null }),
  "Infinity for null": (r) => ({ ...r, nothing: null }),
  "undefined in an array for null": (r) => ({ ...r, list: [null] }),
  "a hole in an array for null": (r) => ({ ...r, list: [null] }),
  "a boxed string": (r) => ({ ...r, boxed: "x" }),
  "a boxed number": (r) => ({ ...r, count: 1 }),
};

/** `text` as canonicalJsonAscii builds it with `cache`, and the index written for it. */
function build(value: Record<string, unknown>, cache: RecordCache): { text: string; index: Uint8Array } {
  const text = canonicalJsonAscii(value, cache.texts);
  return { text, index: cache.encode() };
}

const open = (index?: Uint8Array, bytes?: Uint8Array): RecordCache =>
  openRecordCache(COMPILER, { found: new Map(index ? [[RECORD_INDEX_KEY, index]] : []), unreadable: new Map() }, () => bytes && { bytes });

/** canonicalJsonAscii's text, or the error it throws, as a string to compare. */
const outcome = (f: () => string): string => {
  try {
    return f();
  } catch (error) {
    return `throws ${(error as Error).name}`;
  }
};

describe("the manifest's record cache", () => {
  it("assembles canonicalJsonAscii's text from random records, hits and misses, byte for byte", () => {
    // Each record of the next manifest: the same, an equal copy, another record, its keys in another order, or a twin.
    const change = fc.constantFrom("same", "copy", "other", "reordered", "twin");
    fc.assert(
      fc.property(fc.array(record, { maxLength: 30 }), fc.array(record, { maxLength: 30 }), json, fc.array(fc.tuple(change, record, fc.nat())), fc.constantFrom("kept", "reversed", "first dropped", "doubled"), (assets, dags, edges, changes, order) => {
        const previous = { assets, dags, edges, manifestVersion: 2 };
        const first = build(previous, open());
        expect(first.text).toBe(canonicalJsonAscii(previous));
        let kept = 0;
        const next = (records: Array<Record<string, unknown>>, offset: number): unknown[] =>
          records.map((r, i) => {
            const [what, other, pick] = changes[(i + offset) % Math.max(changes.length, 1)] ?? ["same", r, 0];
            if (what === "same" || what === "copy") {
              kept++;
              return what === "same" ? r : (JSON.parse(JSON.stringify(r)) as unknown);
            }
            if (what === "other") return other;
            if (what === "reordered") return Object.fromEntries(Object.entries(r).reverse());
            return twins[pick % twins.length]![1](r);
          });
        // Records in another order, one fewer or each twice: hits that do not lie side by side in the last text.
        const arranged = (records: unknown[]): unknown[] =>
          order === "reversed" ? records.reverse() : order === "first dropped" ? records.slice(1) : order === "doubled" ? records.flatMap((r) => [r, r]) : records;
        const value = { assets: arranged(next(assets, 0)), dags: arranged(next(dags, 7)), edges, manifestVersion: 2 };
        const cache = open(first.index, Buffer.from(first.text, "latin1"));
        const expected = outcome(() => canonicalJsonAscii(value));
        expect(outcome(() => canonicalJsonAscii(value, cache.texts))).toBe(expected);
        // Every record kept (the same object or an equal copy, `-0` read back as 0) was sliced, not made.
        if (!expected.startsWith("throws") && order === "kept") expect(cache.counts.reused).toBeGreaterThanOrEqual(kept);
      }),
      { numRuns: 300 },
    );
  });

  it.each(twins)("never takes a record's text for a value that only stringifies like it: %s", (name, twin) => {
    const plain = { name: "sales.orders", tags: ["a"], size: 3 };
    const stands = (twinOf[name] ?? ((r) => r))(plain);
    // The twin's compact text is the plain record's: a key over it alone would be a hit.
    expect(JSON.stringify(twin(plain))).toBe(JSON.stringify(stands));
    expect(recordKey(twin(plain))).toBeUndefined();
    const first = build({ assets: [stands], dags: [] }, open());
    const cache = open(first.index, Buffer.from(first.text, "latin1"));
    const value = { assets: [twin(plain)], dags: [] };
    expect(outcome(() => canonicalJsonAscii(value, cache.texts))).toBe(outcome(() => canonicalJsonAscii(value)));
    expect(cache.counts.reused).toBe(0);
  });

  it("takes nothing from a text that is not the one indexed, and says nothing of it", () => {
    const value = { assets: [{ name: "a", n: 1 }, { name: "b", n: 2 }], dags: [{ dag_id: "d" }] };
    const first = build(value, open());
    const same = open(first.index, Buffer.from(first.text, "latin1"));
    expect(canonicalJsonAscii(value, same.texts)).toBe(first.text);
    expect(same.counts).toEqual({ reused: 3, made: 0 });
    // One byte edited by hand, the same length: the sha256 differs, so no record is taken.
    const edited = Buffer.from(first.text.replace('"n": 1', '"n": 7'), "latin1");
    for (const bytes of [edited, undefined, Buffer.from(first.text.slice(0, -1), "latin1")]) {
      const cache = open(first.index, bytes);
      expect(canonicalJsonAscii(value, cache.texts)).toBe(first.text);
      expect(cache.counts).toEqual({ reused: 0, made: 3 });
      expect(cache.notes).toEqual([]);
    }
  });

  it("ignores a damaged or foreign index with one CA1952 note", () => {
    const value = { assets: [{ name: "a" }], dags: [] };
    const first = build(value, open());
    const bytes = Buffer.from(first.text, "latin1");
    const foreign = openRecordCache({ ...COMPILER, version: "other" }, { found: new Map([[RECORD_INDEX_KEY, first.index]]), unreadable: new Map() }, () => bytes && { bytes });
    const damaged = open(Buffer.from("not an index\n"), bytes);
    const unreadable = openRecordCache(COMPILER, { found: new Map(), unreadable: new Map([[RECORD_INDEX_KEY, "EISDIR"]]) }, () => bytes && { bytes });
    for (const [cache, problem] of [[foreign, "foreign"], [damaged, "damaged"], [unreadable, "unreadable"]] as const) {
      expect(cache.notes.map((d) => d.code)).toEqual(["CA1952"]);
      expect(cache.notes[0]!.message).toContain(`is ${problem}`);
      expect(canonicalJsonAscii(value, cache.texts)).toBe(first.text);
      expect(cache.counts.reused).toBe(0);
    }
  });
});
