import { describe, expect, it } from "vitest";
import { MAX_DOCUMENT_DEPTH, parseData } from "../../compiler/parse/parseDocument.js";

// ADR 0019: a document nests at most 64 levels (the root mapping is level 1), a `key: value` item
// of a flow list a mapping of its own and an alias as deep as its anchor's collection; CA2015 at the
// first node too deep, after the file's syntax errors unless its token tree nests beyond 256.
const codes = (text: string): string[] => parseData({ path: "f.yaml", text }).diagnostics.map((d) => `${d.code} ${d.location?.line}:${d.location?.column}`);
const list = (n: number, inner = "1"): string => `${"[".repeat(n)}${inner}${"]".repeat(n)}`;

describe("how deep a document may nest", () => {
  it("takes 64 levels and refuses 65, at the first collection too deep", () => {
    expect(MAX_DOCUMENT_DEPTH).toBe(64);
    expect(codes(`a: ${list(63)}\n`)).toEqual([]);
    // The root mapping is level 1, so the 64th list (column 4 + 63) is level 65.
    expect(codes(`a: ${list(64)}\n`)).toEqual(["CA2015 1:67"]);
    const block = (n: number): string => Array.from({ length: n }, (_, i) => `${"  ".repeat(i)}k${i}:${i === n - 1 ? " 1" : ""}`).join("\n") + "\n";
    expect(codes(block(64))).toEqual([]);
    expect(codes(block(65))).toEqual(["CA2015 65:129"]);
  });

  it("counts a key: value item of a flow list as the mapping it is", () => {
    // [k: [k: 1]] is [{k: [{k: 1}]}]: two levels an item.
    const pairs = (n: number): string => `a: ${"[k: ".repeat(n)}1${"]".repeat(n)}\n`;
    expect(codes(pairs(31))).toEqual([]);
    expect(codes(pairs(32))).toEqual([`CA2015 1:${4 + 4 * 31 + 1}`]);
  });

  it("counts an alias as deep as its anchor's collection, and refuses one inside its own anchor", () => {
    expect(codes(`a: &a ${list(40, "x")}\nb: ${list(20, "*a")}\n`)).toEqual([]);
    expect(codes(`a: &a ${list(40, "x")}\nb: ${list(24, "*a")}\n`)).toEqual(["CA2015 2:28"]);
    // The anchor is the last of its name before the alias.
    expect(codes(`a: &a ${list(40, "x")}\nb: &a [x]\nc: ${list(50, "*a")}\n`)).toEqual([]);
    // A value that holds itself, without end: the library's toJS would build it.
    const cycle = parseData({ path: "f.yaml", text: "a: &x {self: [*x]}\n" });
    expect(cycle.document).toBeUndefined();
    expect(cycle.diagnostics.map((d) => [d.code, d.location?.column, d.hint])).toEqual([["CA2015", 15, "the alias is inside the collection its anchor names, so it holds itself without end"]]);
    // An alias to a scalar adds nothing.
    expect(codes("a: &s 1\nb: [*s]\n")).toEqual([]);
  });

  it("reports a syntax error before the depth, unless the token tree nests past 256", () => {
    // Recovering from line 1's error, the parser would nest line 2 one level deeper than written.
    expect(codes(`a: b: c\nc: ${list(63)}\n`)).toEqual(["CA2001 1:4"]);
    expect(codes(`a: [1, 2\nb: ${list(300)}\n`).map((c) => c.split(" ")[0])).toEqual(["CA2015"]);
  });
});
