import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseManifest } from "../../compiler/discover/readManifest.js";
import type { Manifest } from "../../compiler/manifest/buildManifest.js";
import { openRecordCache, RECORD_INDEX_KEY, recordKey, type RecordCache } from "../../compiler/manifest/recordCache.js";
import { canonicalJsonAscii } from "../../compiler/support/canonical-json.js";
import { compileRoot, corpusCopies, random, snapshot } from "./helpers.js";

// ADR 0017t: an Asset record made of a producer's dataset is keyed by its file's parse-cache key
// and the rest of the record, not by the whole record's text; the index says how many records each
// array of the text has, so places are handed on only when it holds them all.

const COMPILER = { name: "contract-assets", version: "test" };
const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

const open = (index?: Uint8Array, bytes?: Uint8Array, fileKeys?: ReadonlyMap<string, string>): RecordCache =>
  openRecordCache(COMPILER, { found: new Map(index ? [[RECORD_INDEX_KEY, index]] : []), unreadable: new Map() }, () => bytes && { bytes }, fileKeys);

/** One Asset record as `buildManifest` lays it out, and the origin it tells the cache. */
function asset(name: string, description: string) {
  const schema = { version: 1, properties: [{ name: "id", description }] };
  const quality: unknown[] = [];
  const renamed: string[] = [];
  const record = { name, uri: `s3://b/${name}`, contract: `contracts/${name}.yaml`, schema, quality, renamed_from: renamed };
  return { record, origin: { path: `contracts/${name}.yaml`, dataset: 0, schema, quality, renamedFrom: renamed } };
}

describe("the keys of Asset records made of a dataset", () => {
  it("keys a record by its file's parse-cache key and the record without its dataset's fields", () => {
    const a = asset("d.a", "first");
    const keys = new Map([["contracts/d.a.yaml", "k".repeat(64)]]);
    const cache = open(undefined, undefined, keys);
    cache.texts.madeOf(a.record, a.origin);
    canonicalJsonAscii({ assets: [a.record], dags: [] }, cache.texts);
    const rest = JSON.stringify({ name: "d.a", uri: "s3://b/d.a", contract: "contracts/d.a.yaml" });
    expect(cache.keys.assets[0]).toBe(sha256(`dataset ${"k".repeat(64)} 0\n${rest}`));
    expect(cache.keys.assets[0]).not.toBe(recordKey(a.record));
  });

  it("keys by value a record that does not hold the values it was said to be made of, or whose file has no key", () => {
    const a = asset("d.a", "first");
    const b = asset("d.b", "second");
    const cache = open(undefined, undefined, new Map([["contracts/d.a.yaml", "k".repeat(64)]]));
    // Told, then given another schema object of the same value: the origin no longer stands for it.
    cache.texts.madeOf(a.record, a.origin);
    a.record.schema = { ...a.record.schema };
    cache.texts.madeOf(b.record, b.origin);
    canonicalJsonAscii({ assets: [a.record, b.record], dags: [] }, cache.texts);
    expect(cache.keys.assets).toEqual([recordKey(a.record), recordKey(b.record)]);
  });

  it("takes a record from the last text by its origin only under the same file key, and makes it again under another", () => {
    const first = asset("d.a", "first");
    const keys = new Map([["contracts/d.a.yaml", "k".repeat(64)]]);
    const made = open(undefined, undefined, keys);
    made.texts.madeOf(first.record, first.origin);
    const text = canonicalJsonAscii({ assets: [first.record], dags: [] }, made.texts);
    const index = made.encode();
    // The same origin (the same file key): the record's text is the last one, whatever it now holds.
    const same = asset("d.a", "first");
    const hit = open(index, Buffer.from(text, "latin1"), keys);
    hit.texts.madeOf(same.record, same.origin);
    expect(canonicalJsonAscii({ assets: [same.record], dags: [] }, hit.texts)).toBe(text);
    expect(hit.counts).toEqual({ reused: 1, made: 0 });
    // Another file key (the producer's file was edited): made again, its new text.
    const edited = asset("d.a", "edited");
    const miss = open(index, Buffer.from(text, "latin1"), new Map([["contracts/d.a.yaml", "e".repeat(64)]]));
    miss.texts.madeOf(edited.record, edited.origin);
    const next = canonicalJsonAscii({ assets: [edited.record], dags: [] }, miss.texts);
    expect(miss.counts).toEqual({ reused: 0, made: 1 });
    expect(next).toBe(canonicalJsonAscii({ assets: [edited.record], dags: [] }));
  });
});

describe("RecordCache.places", () => {
  it("gives nothing when the index lacks a record of the previous text (one without a key)", () => {
    // A class instance has no key (not plain JSON) but a canonical text: it is in the text, not in the index.
    class Odd {
      name = "odd";
    }
    const value = { assets: [{ name: "a" }, new Odd(), { name: "c" }], dags: [{ dag_id: "x" }] };
    const made = open();
    const text = canonicalJsonAscii(value, made.texts);
    const index = made.encode();
    const again = open(index, Buffer.from(text, "latin1"));
    expect(canonicalJsonAscii(value, again.texts)).toBe(text);
    expect(again.counts.reused).toBe(3);
    expect(again.places()).toBeUndefined();
    // Every record indexed: the places are handed on.
    const plain = { assets: [{ name: "a" }, { name: "b" }], dags: [{ dag_id: "x" }] };
    const full = open();
    const plainText = canonicalJsonAscii(plain, full.texts);
    const reread = open(full.encode(), Buffer.from(plainText, "latin1"));
    canonicalJsonAscii(plain, reread.texts);
    expect(reread.places()?.assets.shared).toEqual([0, 1]);
  });
});

const manifestOf = (root: string): Buffer => fs.readFileSync(path.join(root, "generated", "manifest.json"));

/** The files of the contracts next to `file` in the graph: its upstreams' producers and its Assets' consumers. */
function neighbours(manifest: Manifest, file: string): string[] {
  const producerOf = new Map(manifest.assets.map((a) => [a.name, a.contract]));
  const own = new Set(manifest.assets.filter((a) => a.contract === file).map((a) => a.name));
  const out = new Set<string>();
  for (const dag of manifest.dags) {
    const reads = dag.runtime.upstreams.map((u) => u.asset);
    if (dag.contract === file) for (const name of reads) out.add(producerOf.get(name) ?? "");
    else if (reads.some((name) => own.has(name))) out.add(dag.contract);
  }
  out.delete("");
  out.delete(file);
  // Sort for determinism.
  return [...out].sort();
}

/** One edit of a contract's datasets or of its own fields: a column's or a dataset's description, a column added, the owner. */
function edit(root: string, file: string, next: () => number, round: number): void {
  const absolute = path.join(root, file);
  const text = fs.readFileSync(absolute, "utf8");
  const kind = Math.floor(next() * 4);
  let edited = text;
  if (kind === 0) {
    // A column's description (inside schema.properties).
    const columns = [...text.matchAll(/\{name: [a-z_0-9]+, [^}\n]*description: "/g)];
    const at = columns[Math.floor(next() * columns.length)];
    if (at) edited = text.slice(0, at.index! + at[0].length) + `edit ${round} ` + text.slice(at.index! + at[0].length);
  } else if (kind === 1) {
    // An optional column added to the first dataset's schema (additive).
    edited = text.replace(/(\n( +)properties:\n)/, `$1$2  - {name: added_${round}, logicalType: string}\n`);
  } else if (kind === 2) {
    // A dataset's own description.
    edited = text.replace(/(\n    description: ")/, `$1edit ${round} `);
  } else {
    // The owner: in the Asset record's extra, outside the dataset's fields.
    edited = text.replace(/\nowner: ([a-z0-9-]+)/, `\nowner: $1-e${round}`);
  }
  fs.writeFileSync(absolute, edited === text ? `${text}# edit ${round}\n` : edited);
}

describe("Asset records keyed by their file in a compile", () => {
  const copy = corpusCopies("ca-origin", 40, 20261204);
  it("writes the bytes of a compile without the cache after random edits of contracts, their upstreams and consumers", () => {
    const root = copy();
    const first = compileRoot(root, { cache: true });
    expect(first.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const next = random(11);
    for (let round = 0; round < 4; round++) {
      const previous = parseManifest(manifestOf(root).toString("latin1")).manifest!;
      const producing = [...new Set(previous.assets.filter((a) => a.producer).map((a) => a.contract))].sort();
      const chosen = producing[Math.floor(next() * producing.length)]!;
      const near = neighbours(previous, chosen);
      const edited = [chosen, ...near.filter(() => next() < 0.5).slice(0, 2)];
      for (const file of edited) edit(root, file, next, round);
      // The reference: the same files and the same previous output (the diff reads it), no cache.
      const reference = fs.mkdtempSync(path.join(os.tmpdir(), "ca-origin-cold-"));
      for (const other of fs.readdirSync(root)) if (other !== ".contract-assets") fs.cpSync(path.join(root, other), path.join(reference, other), { recursive: true });
      const warm = compileRoot(root, { cache: true });
      expect(warm.diagnostics.filter((d) => d.severity === "error"), `round ${round}`).toEqual([]);
      const cold = compileRoot(reference);
      expect(manifestOf(root).equals(manifestOf(reference)), `round ${round}: ${edited.join(", ")}`).toBe(true);
      expect(snapshot(path.join(root, "generated"))).toEqual(snapshot(path.join(reference, "generated")));
      expect(warm.diagnostics).toEqual(cold.diagnostics);
      // The untouched records were taken from the last manifest.
      expect(warm.cache!.records!.made).toBeGreaterThan(0);
      expect(warm.cache!.records!.reused).toBeGreaterThan((warm.manifest!.assets.length + warm.manifest!.dags.length) / 2);
    }
  });
});
