import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import v8 from "node:v8";
import { describe, expect, it } from "vitest";
import { defaultLayout, discoverProject } from "../../compiler/discover/discoverProject.js";
import { isOdcsDocument } from "../../compiler/model/odcs.js";
import { fromPayload, moduleClosure, PARSE_CACHE_FOLDER, parseCacheWriter, toPayload } from "../../compiler/parse/parseCache.js";
import { parseContracts } from "../../compiler/parse/parseContracts.js";
import { parseData } from "../../compiler/parse/parseDocument.js";
import { compileProject } from "../../compiler/pipeline.js";
import { CACHE_MAGIC, decodeCacheEntry, encodeCacheEntry } from "../../compiler/support/cacheEntry.js";
import { listPackageFiles } from "../../compiler/support/package-root.js";
import { SCHEMA_FILES } from "../../compiler/validate/schemas.js";
import { isStoredVerdict, restoreVerdict, storedVerdictOf, validateDocument, type StoredVerdict } from "../../compiler/validate/validateDocuments.js";
import { REPO, snapshot } from "./helpers.js";

// The validation verdicts the incremental cache keeps beside each parse (ADR 0017j): what is kept
// gives back the verdict a fresh validation gives, and an entry whose verdict is not one is
// damaged, never trusted. The compile-level property (a warm compile equals a cold one after any
// edits) is in test/property/incrementalCache.test.ts.

const CASES = path.join(REPO, "test", "cases");

let roots: string[] | undefined;

/** Every golden case's input, with the shared base config under it (as the golden runner lays it out); copied once. */
function caseRoots(): string[] {
  // Sort for determinism.
  return (roots ??= fs
    .readdirSync(CASES)
    .filter((c) => c !== "_base" && fs.existsSync(path.join(CASES, c, "input")))
    .sort()
    .map((c) => {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-verdict-"));
      fs.cpSync(path.join(CASES, "_base"), root, { recursive: true });
      fs.cpSync(path.join(CASES, c, "input"), root, { recursive: true });
      return root;
    }));
}

describe("a stored validation verdict", () => {
  it("gives back, after a round trip through v8.serialize, the verdict validating the document gives, for every document of every golden case", () => {
    let kept = 0;
    let odcs = 0;
    for (const root of caseRoots()) {
      const discovered = discoverProject(defaultLayout(root), { previous: "none" }).value;
      for (const [files, config] of [[discovered.contracts, false], [discovered.configs, true]] as const) {
        for (const document of parseContracts(files).value) {
          const fresh = validateDocument(document, config);
          const stored = storedVerdictOf(document, fresh, config);
          if (isOdcsDocument(document.value)) {
            // An ODCS document's verdict holds the contract translated from it: not kept.
            expect(stored).toBeNull();
            odcs++;
            continue;
          }
          expect(stored, document.file.path).not.toBeNull();
          const back = v8.deserialize(v8.serialize(stored)) as unknown;
          expect(isStoredVerdict(back), document.file.path).toBe(true);
          expect(restoreVerdict(document, back as StoredVerdict, config), document.file.path).toEqual(validateDocument(document, config));
          // Kept for a contract, it is no config's verdict (and the other way round).
          expect(restoreVerdict(document, back as StoredVerdict, !config)).toBeUndefined();
          kept++;
        }
      }
    }
    // The cases hold accepted and refused documents of every kind, and ODCS ones.
    expect(kept).toBeGreaterThan(300);
    expect(odcs).toBeGreaterThan(3);
  });

  it("is refused when its shape is not a verdict's", () => {
    const good: StoredVerdict = { config: false, diagnostics: [{ code: "CA3802", severity: "error", message: "m", location: { file: "contracts/a.yaml", line: 3, column: 5 }, related: [] }], failed: { names: ["a.b"], id: "a.b" } };
    expect(isStoredVerdict(good)).toBe(true);
    expect(isStoredVerdict({ config: false, diagnostics: [], accepted: "contract" })).toBe(true);
    const bad: unknown[] = [
      null,
      "verdict",
      { diagnostics: [] },
      { config: "no", diagnostics: [] },
      { config: false, diagnostics: [{ code: "CA3802", severity: "fatal", message: "m", related: [] }] },
      { config: false, diagnostics: [{ code: "CA3802", severity: "error", message: "m" }] },
      { config: false, diagnostics: [{ code: "CA3802", severity: "error", message: "m", related: [], location: { file: "a", line: "3", column: 1 } }] },
      { config: false, diagnostics: [], accepted: "dag" },
      { config: false, diagnostics: [], failed: { names: [1], id: undefined } },
      // An error with the document accepted, or a refusal without an error: no validation gives either.
      { ...good, failed: undefined, accepted: "contract" },
      { config: false, diagnostics: [], failed: { names: [], id: undefined } },
    ];
    for (const value of bad) expect(isStoredVerdict(value), JSON.stringify(value)).toBe(false);
  });
});

describe("an entry's payload", () => {
  const data = parseData({ path: "contracts/a.yaml", text: "id: a.b\nn: [1, -0, 2.50]\ns: \"\u00e9 \\ud800\"\nm: {z: 1, a: {b: [true, null]}}\n" });
  const entry = { data, verdict: { config: false, diagnostics: [], accepted: "contract" } };

  it("gives back the parse and the verdict exactly, -0 and lone surrogates included, as views of one copy that holds no more than the tables", () => {
    expect(data.document).toBeDefined();
    const serialized = v8.serialize(toPayload(entry));
    const back = fromPayload(v8.deserialize(serialized))!;
    expect(back).toEqual(entry);
    expect(Object.is((back.data.document!.value as { n: number[] }).n[1], -0)).toBe(true);
    const { nodes, items, ranges } = back.data.document!.index;
    for (const table of [nodes, items, ranges]) expect(table).toBeInstanceOf(Int32Array);
    // One backing store for the three (not one each), of just their bytes: not the entry's.
    expect(items.buffer).toBe(nodes.buffer);
    expect(ranges.buffer).toBe(nodes.buffer);
    expect(nodes.buffer.byteLength).toBe(nodes.byteLength + items.byteLength + ranges.byteLength);
    expect(nodes.buffer.byteLength).toBeLessThan(serialized.byteLength);
    // Without a -0 the value is kept as its JSON text, and read back the same.
    const plain = parseData({ path: "contracts/b.yaml", text: "id: a.c\nv: [0, 1.5, \"x\"]\n" });
    const payload = toPayload({ data: plain, verdict: null });
    expect(payload.document?.json).toBe('{"id":"a.c","v":[0,1.5,"x"]}');
    expect(fromPayload(v8.deserialize(v8.serialize(payload)))).toEqual({ data: plain, verdict: null });
    // A file without a document.
    const broken = parseData({ path: "contracts/c.yaml", text: "id: [\n" });
    expect(broken.document).toBeUndefined();
    expect(fromPayload(toPayload({ data: broken, verdict: null }))).toEqual({ data: broken, verdict: null });
  });

  it("is no parse result when its parts do not fit together", () => {
    const good = toPayload(entry);
    const d = good.document!;
    const bad: unknown[] = [
      null,
      { ...good, diagnostics: "none" },
      { diagnostics: [], document: null },
      { ...good, document: { ...d, ints: Array.from(d.ints) } },
      { ...good, document: { ...d, lengths: [d.lengths[0], d.lengths[1], d.lengths[2], d.lengths[3] + 1] } },
      { ...good, document: { ...d, lengths: [-1, d.lengths[1] + 1, d.lengths[2], d.lengths[3]] } },
      { ...good, document: { ...d, json: "{not json" } },
      { ...good, document: { ...d, json: 7 } },
      { ...good, document: { ...d, keyText: undefined } },
    ];
    for (const payload of bad) expect(fromPayload(payload), JSON.stringify(payload)).toBeUndefined();
  });
});

describe("the cache's writer", () => {
  it("is fingerprinted over the parse and validate modules with all they import, and the JSON Schemas", () => {
    const closure = moduleClosure(["parse/parseContracts", "validate/validateDocuments"]).map((f) => f.replace(/^(dist\/)?compiler\//, "").replace(/\.(js|ts)$/, ""));
    const rules = listPackageFiles("compiler/validate/rules").map((f) => `validate/rules/${f.replace(/\.ts$/, "")}`);
    for (const module of [...rules, "validate/schemas", "validate/mapSchemaErrors", "validate/readOdcs", "parse/parseContracts", "support/hash", "diagnostics/catalogue", "support/cron"]) expect(closure).toContain(module);
    // Nothing of a later stage.
    expect(closure.filter((m) => /^(link|graph|plan|manifest|diff|render|write)\//.test(m))).toEqual([]);
    expect([...SCHEMA_FILES].sort()).toEqual(listPackageFiles("compiler/schemas/v1").map((f) => `compiler/schemas/v1/${f}`));
    const both = parseCacheWriter("contract-assets", "9.9.9", { modules: ["parse/parseContracts", "validate/validateDocuments"], files: SCHEMA_FILES });
    expect(both).toMatch(/^contract-assets 9\.9\.9 \(parse and validate [0-9a-f]{16}\)$/);
    expect(parseCacheWriter("contract-assets", "9.9.9", { modules: ["parse/parseContracts"], files: [] })).not.toBe(both);
  });
});

describe("an entry whose verdict was altered", () => {
  it("with its hash recomputed, is damaged, ignored with a note and rewritten; the output is a cold compile's", () => {
    const root = caseRoots().find((r) => fs.existsSync(path.join(r, "contracts", "sales", "orders_clean.yaml")) && !fs.existsSync(path.join(r, ".contract-assets")))!;
    const reference = fs.mkdtempSync(path.join(os.tmpdir(), "ca-verdict-ref-"));
    fs.cpSync(root, reference, { recursive: true });
    const cold = compileProject(defaultLayout(reference), { write: "write" });
    const first = compileProject(defaultLayout(root), { write: "write", cache: true });
    expect(first.diagnostics).toEqual(cold.diagnostics);
    const folder = path.join(root, PARSE_CACHE_FOLDER);
    const names = fs.readdirSync(folder).filter((f) => f.endsWith(".bin")).sort();
    expect(names.length).toBe(cold.sources.size);
    // Each entry re-encoded under its own key and writer, so its hash matches: only the shape
    // check of the verdict stands between it and the compile.
    const forge = (name: string, change: (verdict: Record<string, unknown>) => unknown): void => {
      const file = path.join(folder, name);
      const bytes = fs.readFileSync(file);
      const length = bytes.readUInt32LE(CACHE_MAGIC.length);
      const header = JSON.parse(bytes.subarray(CACHE_MAGIC.length + 4, CACHE_MAGIC.length + 4 + length).toString("utf8")) as { key: string; compiler: string };
      const payload = (decodeCacheEntry(bytes, header) as { value: { verdict: Record<string, unknown> } }).value;
      fs.writeFileSync(file, encodeCacheEntry(header.key, header.compiler, { ...payload, verdict: change(payload.verdict) }));
    };
    const withVerdict = names.filter((name) => {
      const bytes = fs.readFileSync(path.join(folder, name));
      const length = bytes.readUInt32LE(CACHE_MAGIC.length);
      const header = JSON.parse(bytes.subarray(CACHE_MAGIC.length + 4, CACHE_MAGIC.length + 4 + length).toString("utf8")) as { key: string; compiler: string };
      return (decodeCacheEntry(bytes, header) as { value: { verdict: unknown } }).value.verdict !== null;
    });
    expect(withVerdict.length).toBeGreaterThanOrEqual(2);
    forge(withVerdict[0]!, (v) => ({ ...v, diagnostics: "none" }));
    forge(withVerdict[1]!, (v) => ({ ...v, accepted: "everything" }));
    const damaged = compileProject(defaultLayout(root), { write: "write", cache: true });
    const notes = damaged.diagnostics.filter((d) => d.code === "CA1950");
    expect(notes.map((d) => d.message)).toEqual([
      "the incremental cache's entry of this file is damaged (it holds no validation verdict), so it was ignored and the file parsed again; so were the damaged entries of 1 other file(s)",
    ]);
    expect(damaged.diagnostics.filter((d) => d.code !== "CA1950")).toEqual(cold.diagnostics);
    expect(damaged.cache).toMatchObject({ hits: cold.sources.size - 2, parsed: 2, verdicts: cold.sources.size - 2 - (names.length - withVerdict.length) });
    expect(snapshot(path.join(root, "generated"))).toEqual(snapshot(path.join(reference, "generated")));
    // Rewritten: the next compile takes every entry, verdicts included, without a note.
    const again = compileProject(defaultLayout(root), { write: "write", cache: true });
    expect(again.diagnostics).toEqual(cold.diagnostics);
    expect(again.cache).toMatchObject({ hits: cold.sources.size, parsed: 0, verdicts: withVerdict.length });
  });
});
