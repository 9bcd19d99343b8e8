import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { formatDiagnostics } from "../../compiler/diagnostics/format.js";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { AsciiText, parseManifest, parseManifestAgainst } from "../../compiler/discover/readManifest.js";
import type { Manifest } from "../../compiler/model/manifest.js";
import { compileProject } from "../../compiler/pipeline.js";
import { formatChangesJson } from "../../compiler/report/formatChanges.js";
import { canonicalJsonAscii } from "../../compiler/support/canonical-json.js";
// @ts-expect-error -- plain JavaScript module of the benchmark (scripts/bench), no type declarations
import { writeCorpus } from "../../scripts/bench/corpus.mjs";

// The previous manifest is read against the new one (ADR 0017d): a record whose text is unchanged
// is the new manifest's record, only the others are parsed and schema-checked, and the result is
// the full parse's, damage included.

function corpus(): string {
  const root = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? "/tmp"), "ca-previous-"));
  writeCorpus({ contracts: 150, seed: 20250101, root });
  return root;
}

/** Edits two contracts (a description, a new optional column) and removes a third one nobody reads. */
function editContracts(root: string, previous: Manifest): string[] {
  const dags = previous.dags.filter((d) => d.runtime.kind === "TransformContract");
  const read = new Set(previous.dags.flatMap((d) => d.inlets));
  const unread = dags.find((d) => d.outlets.every((o) => !read.has(o)))!;
  const [first, second] = dags.filter((d) => d !== unread);
  const edit = (file: string, change: (text: string) => string): void => {
    const absolute = path.join(root, file);
    const before = fs.readFileSync(absolute, "utf8");
    const after = change(before);
    expect(after).not.toBe(before);
    fs.writeFileSync(absolute, after);
  };
  edit(first!.contract, (t) => t.replace(/^description: .*$/m, "description: edited by the test"));
  edit(second!.contract, (t) => t.replace(/^(\s+)- \{name: (\w+), logicalType: (\w+)/m, "$1- {name: added_by_the_test, logicalType: string}\n$1- {name: $2, logicalType: $3"));
  fs.rmSync(path.join(root, unread.contract));
  return [first!.dag_id, second!.dag_id, unread.dag_id];
}

/** A text's UTF-8 bytes read as the text, as compile reads the output folder's manifest (ASCII). */
function asBytes(text: string): AsciiText {
  const read = AsciiText.of(Buffer.from(text, "utf8"));
  expect(read).toBeDefined();
  return read!;
}

describe("a manifest file's ASCII bytes read as its text", () => {
  it("searches and slices as the text does, and is no text when a byte is not ASCII", () => {
    const text = '{\n  "assets": [\n    {\n      "name": "a"\n    }\n  ]\n}\n';
    const bytes = asBytes(text);
    expect(bytes.length).toBe(text.length);
    for (const search of ['"assets"', "\n    {", "\n    }", "]", "missing"]) {
      for (const from of [0, 5, text.length, text.length + 3]) expect(bytes.indexOf(search, from), `${search} from ${from}`).toBe(text.indexOf(search, from));
    }
    for (const at of [0, 1, 14, text.length - 2, text.length]) expect(bytes.startsWith("\n    {", at)).toBe(text.startsWith("\n    {", at));
    expect(bytes.startsWith("}\n", text.length - 2)).toBe(true);
    expect(bytes.slice(2, 10)).toBe(text.slice(2, 10));
    expect(bytes.slice(20)).toBe(text.slice(20));
    expect(bytes.text()).toBe(text);
    // Not ASCII: the caller decodes the file as UTF-8 instead.
    expect(AsciiText.of(Buffer.from('{"name": "caf\u00e9"}', "utf8"))).toBeUndefined();
  });
});

describe("the previous manifest read against the new one", () => {
  it("gives the full parse's manifest, diff and diagnostics, parsing only the changed records", () => {
    const root = corpus();
    try {
      expect(compileProject(defaultLayout(root), { write: "write" }).diagnostics.filter((d) => d.severity === "error")).toEqual([]);
      const previousText = fs.readFileSync(path.join(root, "generated", "manifest.json"), "utf8");
      const full = parseManifest(previousText);
      expect(full.problem).toBeUndefined();
      const touched = editContracts(root, full.manifest!);

      const lazy = compileProject(defaultLayout(root), { diff: true, write: "check" });
      const reference = compileProject(defaultLayout(root), { diff: true, write: "check", previousManifest: full.manifest! });
      const format = (r: typeof lazy): string => formatDiagnostics(r.diagnostics, "text", (f) => r.sources.get(f));
      expect(format(lazy)).toBe(format(reference));
      expect(formatChangesJson(lazy.diff!)).toBe(formatChangesJson(reference.diff!));
      expect(lazy.diff!.changes.map((c) => c.asset)).toEqual(expect.arrayContaining([expect.stringContaining(touched[2]!.split(".")[1]!)]));

      const current = { manifest: lazy.manifest!, text: canonicalJsonAscii(lazy.manifest! as unknown as Record<string, unknown>) };
      const against = parseManifestAgainst(previousText, current);
      expect(against.manifest).toEqual(full.manifest);
      // The file's ASCII bytes read as its text (what compile reads): the same manifest.
      expect(parseManifestAgainst(asBytes(previousText), current)).toEqual(against);
      // Unchanged records are the new manifest's own objects; the parsed ones are the DAGs touched
      // (and the assets they produce), nothing else.
      const ours = new Set<unknown>([...current.manifest.dags, ...current.manifest.assets]);
      const parsedDags = against.manifest!.dags.filter((d) => !ours.has(d)).map((d) => d.dag_id);
      expect(parsedDags.sort()).toEqual([...touched].sort());
      const parsedAssets = against.manifest!.assets.filter((a) => !ours.has(a));
      expect(parsedAssets.length).toBeGreaterThan(0);
      expect(parsedAssets.every((a) => a.producer !== null && touched.includes(a.producer))).toBe(true);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("refuses a damaged file with the full parse's reason and offset, and reads another layout whole", () => {
    const root = corpus();
    try {
      compileProject(defaultLayout(root), { write: "write" });
      const previousText = fs.readFileSync(path.join(root, "generated", "manifest.json"), "utf8");
      const previous = parseManifest(previousText).manifest!;
      editContracts(root, previous);
      const built = compileProject(defaultLayout(root), { render: false }).manifest!;
      const current = { manifest: built, text: canonicalJsonAscii(built as unknown as Record<string, unknown>) };
      const damaged = [
        // In a changed record: a field the schema refuses.
        previousText.replace(/"status": "active"/, '"status": "bogus"'),
        // Between records: not JSON any more.
        previousText.replace(/\n {4}\},\n {4}\{/, "\n    }\n    {"),
        // Outside the records.
        previousText.replace(/"namespace": "[^"]*"/, '"namespace": 7'),
        previousText.replace('"manifestVersion": 2', '"manifestVersion": 99'),
      ];
      for (const text of damaged) {
        expect(text).not.toBe(previousText);
        const expected = parseManifest(text);
        expect(expected.problem).toBeDefined();
        expect(parseManifestAgainst(text, current)).toEqual(expected);
        expect(parseManifestAgainst(asBytes(text), current)).toEqual(expected);
      }
      // Another layout (compact JSON): nothing to take over, read whole, the same manifest.
      expect(parseManifestAgainst(JSON.stringify(previous), current).manifest).toEqual(previous);
      // The same text: the current manifest itself.
      expect(parseManifestAgainst(current.text, current).manifest).toBe(built);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
