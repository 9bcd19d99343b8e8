import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MAX_MANIFEST_DEPTH } from "../../compiler/discover/manifestSchema.js";
import { parseManifest } from "../../compiler/discover/readManifest.js";
import { REPO } from "./helpers.js";

// ADR 0019: a previous manifest nests at most 128 levels (the root object is level 1), refused
// before anything walks it (CA1101), at the first container too deep in the text.
const bundled = fs.readFileSync(path.join(REPO, "generated", "manifest.json"), "utf8");
const opening = '      "extra": {\n';
const cut = bundled.indexOf(opening) + opening.length;
/** The bundled manifest with `fields` (JSON text) first in its first Asset's `extra` (level 4, so its arrays start at level 5). */
const withExtra = (fields: string): string => `${bundled.slice(0, cut)}        ${fields},\n${bundled.slice(cut)}`;
const arrays = (n: number): string => `${"[".repeat(n)}${"]".repeat(n)}`;

describe("how deep a previous manifest may nest", () => {
  it("takes 128 levels and refuses 129, at the first array too deep, its pointer the text's", () => {
    expect(MAX_MANIFEST_DEPTH).toBe(128);
    expect(parseManifest(withExtra(`"deep": ${arrays(124)}`)).problem).toBeUndefined();
    const text = withExtra(`"deep": ${arrays(125)}`);
    const refused = parseManifest(text);
    expect(refused.problem).toBe("not a contract-assets manifest: /assets/0/extra/deep/0/0/… (122 levels more): nested deeper than 128 levels, which no manifest this compiler writes is");
    expect(refused.offset).toBe(text.indexOf('"deep": ') + '"deep": '.length + 124);
  });

  it("names the branch the text has first, whatever order JSON.parse gives the keys", () => {
    // JSON.parse puts the integer-like key "1" before "b"; the text has "b" first.
    const text = withExtra(`"b": ${arrays(130)},\n        "1": ${arrays(130)}`);
    const refused = parseManifest(text);
    expect(refused.problem).toMatch(/: \/assets\/0\/extra\/b\/0\/0\/… \(122 levels more\): nested deeper than 128 levels/);
    expect(refused.offset).toBe(text.indexOf('"b": ') + '"b": '.length + 124);
  });
});
