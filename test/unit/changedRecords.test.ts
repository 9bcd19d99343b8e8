import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { diffManifests } from "../../compiler/diff/diffManifests.js";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { AsciiText, commonRuns, parseManifest, parseManifestAgainst } from "../../compiler/discover/readManifest.js";
import type { Manifest, ManifestAsset } from "../../compiler/model/manifest.js";
import { LOGICAL_TYPES } from "../../compiler/model/manifest.js";
import { compileProject } from "../../compiler/pipeline.js";
import { formatChangesJson } from "../../compiler/report/formatChanges.js";
import { canonicalJson, canonicalJsonAscii } from "../../compiler/support/canonical-json.js";
// @ts-expect-error -- plain JavaScript module of the benchmark (scripts/bench), no type declarations
import { writeCorpus } from "../../scripts/bench/corpus.mjs";
import { CASES } from "../golden/golden.js";

// The previous manifest read against the new one costs what changed (ADR 0017k): the records lying
// where the two texts are the same are taken over by position, and the diff's comparing rules skip
// the pairs that are one object. Both must give exactly what the full parse and the full diff give:
// each test below compares them over random edits (seeded, so a failure reproduces).

/** A small deterministic PRNG (mulberry32): the same seed, the same edits. */
function random(seed: number): { int(n: number): number; pick<T>(xs: readonly T[]): T } {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { int: (n) => Math.floor(next() * n), pick: (xs) => xs[Math.floor(next() * xs.length)]! };
}

type Random = ReturnType<typeof random>;

/**
 * One random edit of a manifest (in place), of the kinds a compile between two states makes: an
 * asset's field, a property, a quality rule, a DAG's schedule or upstreams, an edge, the header,
 * an asset or a DAG added or removed, two records swapped. The result stays valid.
 */
function editOnce(m: Manifest, r: Random, n: number): string {
  const asset = (): ManifestAsset => r.pick(m.assets);
  const produced = (): ManifestAsset => r.pick(m.assets.filter((a) => a.schema && a.schema.properties.length > 1));
  const edits: Array<[string, () => void]> = [
    ["owner", () => void (asset().extra.owner = `team-edit-${n}`)],
    ["contract version", () => void (asset().extra.contract_version = `9.${n}.0`)],
    ["freshness", () => void (asset().extra.freshness = { max_age: `PT${n + 1}H` })],
    ["uri", () => void (asset().uri = `s3://edited/${n}`)],
    ["group", () => void (asset().group = `group${n}`)],
    ["status", () => void (asset().status = r.pick(["active", "retired", "deprecated"] as const))],
    ["property removed", () => void produced().schema!.properties.pop()],
    ["property added", () => void produced().schema!.properties.push({ name: `added_${n}`, logicalType: "string" })],
    ["property type", () => void (produced().schema!.properties[0]!.logicalType = r.pick(LOGICAL_TYPES))],
    ["property required", () => void (produced().schema!.properties[0]!.required = !produced().schema!.properties[0]!.required)],
    ["property description", () => void (produced().schema!.properties[0]!.description = `edited ${n}`)],
    ["schema version", () => void (produced().schema!.version += 1)],
    ["quality removed", () => void r.pick(m.assets.filter((a) => a.quality.length)).quality.pop()],
    ["quality changed", () => void (r.pick(m.assets.filter((a) => a.quality.length)).quality[0]!.mustBe = n)],
    ["schedule", () => void (r.pick(m.dags).schedule = { assets: null, cron: { expression: `${n % 60} 3 * * *`, timezone: "UTC" } })],
    ["upstream dropped", () => void r.pick(m.dags.filter((d) => d.runtime.upstreams.length)).runtime.upstreams.pop()],
    ["inlet dropped", () => void r.pick(m.dags.filter((d) => d.inlets.length)).inlets.pop()],
    ["DAG description", () => void (r.pick(m.dags).description = `edited ${n}`)],
    ["edge removed", () => void m.edges.splice(r.int(m.edges.length), 1)],
    ["edge added", () => void m.edges.push({ from: asset().name, to: asset().name, via: r.pick(m.dags).dag_id })],
    ["header", () => void (m.lineage.namespace = `edited-${n}`)],
    ["asset removed", () => void m.assets.splice(r.int(m.assets.length), 1)],
    ["asset added", () => void m.assets.push({ ...structuredClone(asset()), name: `edited.added_${n}` })],
    ["DAG removed", () => void m.dags.splice(r.int(m.dags.length), 1)],
    [
      "assets swapped",
      () => {
        const [i, j] = [r.int(m.assets.length), r.int(m.assets.length)];
        [m.assets[i], m.assets[j]] = [m.assets[j]!, m.assets[i]!];
      },
    ],
    [
      "DAGs swapped",
      () => {
        const [i, j] = [r.int(m.dags.length), r.int(m.dags.length)];
        [m.dags[i], m.dags[j]] = [m.dags[j]!, m.dags[i]!];
      },
    ],
  ];
  const [name, edit] = r.pick(edits);
  edit();
  return name;
}

const asText = (m: Manifest): string => canonicalJsonAscii(m as unknown as Record<string, unknown>);
const asBytes = (text: string): AsciiText => AsciiText.of(Buffer.from(text, "utf8"))!;

let root: string;
let current: { manifest: Manifest; text: string };

beforeAll(() => {
  root = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? "/tmp"), "ca-changed-"));
  writeCorpus({ contracts: 150, seed: 20250102, root });
  const built = compileProject(defaultLayout(root), { render: false }).manifest!;
  current = { manifest: built, text: asText(built) };
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** {@link commonRuns} by comparing code unit by code unit, for the test. */
function naiveRuns(a: string, b: string, cuts: { previous: number[]; current: number[] }): Array<{ previous: number; current: number; length: number }> {
  const mine = [0, ...cuts.previous, a.length];
  const theirs = [0, ...cuts.current, b.length];
  const out: Array<{ previous: number; current: number; length: number }> = [];
  for (let i = 0; i + 1 < mine.length; i++) {
    const limit = Math.min(mine[i + 1]! - mine[i]!, theirs[i + 1]! - theirs[i]!);
    let start = 0;
    while (start < limit && a[mine[i]! + start] === b[theirs[i]! + start]) start++;
    let end = 0;
    while (end < limit - start && a[mine[i + 1]! - 1 - end] === b[theirs[i + 1]! - 1 - end]) end++;
    if (start) out.push({ previous: mine[i]!, current: theirs[i]!, length: start });
    if (end) out.push({ previous: mine[i + 1]! - end, current: theirs[i + 1]! - end, length: end });
  }
  return out;
}

describe("where two texts are the same", () => {
  it("gives runs of equal code units that leave every difference outside them, for strings and ASCII bytes", () => {
    const r = random(7);
    // Longer than a compared chunk (65,536 code units), so that chunks and their edges are crossed.
    const base = Array.from({ length: 300_000 }, () => "ab\n {}"[r.int(6)]).join("");
    for (let round = 0; round < 40; round++) {
      let other = base;
      for (let k = r.int(4); k >= 0; k--) {
        const at = r.int(other.length);
        other = other.slice(0, at) + r.pick(["", "x", "é", "yy"]) + other.slice(at + r.int(3));
      }
      const cut = [r.int(base.length)];
      const cuts = { previous: cut, current: [Math.min(cut[0]!, other.length)] };
      for (const previous of [base, asBytes(base)]) {
        const runs = commonRuns(previous, other, round % 2 ? cuts : undefined);
        let covered = 0;
        for (const run of runs) {
          expect(base.slice(run.previous, run.previous + run.length)).toBe(other.slice(run.current, run.current + run.length));
          covered += run.length;
        }
        // Each run as long as it can be: the same as comparing code unit by code unit.
        expect(runs).toEqual(naiveRuns(base, other, round % 2 ? cuts : { previous: [], current: [] }));
        if (other === base) expect(covered).toBe(base.length);
      }
    }
  });
});

describe("the previous manifest read against the new one, over random edits", () => {
  it("gives the full parse's manifest, taking over every record outside the edits", () => {
    const r = random(16);
    for (let round = 0; round < 40; round++) {
      const previous = structuredClone(current.manifest);
      const names = Array.from({ length: 1 + r.int(3) }, (_, k) => editOnce(previous, r, round * 10 + k));
      const text = asText(previous);
      const full = parseManifest(text);
      expect(full.problem, names.join(", ")).toBeUndefined();
      const read = parseManifestAgainst(asBytes(text), current);
      expect(read, names.join(", ")).toEqual(full);
      expect(parseManifestAgainst(text, current), names.join(", ")).toEqual(full);
      // At most a few records are parsed: every other one is the current manifest's own object.
      const ours = new Set<unknown>([...current.manifest.assets, ...current.manifest.dags]);
      const parsed = [...read.manifest!.assets, ...read.manifest!.dags].filter((x) => !ours.has(x)).length;
      expect(parsed, names.join(", ")).toBeLessThanOrEqual(8);
    }
  });

  it("refuses a damaged text with the full parse's reason and offset, wherever the damage is", () => {
    const r = random(1601);
    const marks = ['"', ",", "{", "}", "[", "]", "0", " ", "\n", ":", "x", "é"];
    for (let round = 0; round < 20; round++) {
      const previous = structuredClone(current.manifest);
      editOnce(previous, r, round);
      let text = asText(previous);
      // One to three raw edits anywhere: records, between them, the header, the edges.
      for (let k = r.int(3); k >= 0; k--) {
        const at = r.int(text.length);
        text = text.slice(0, at) + (r.int(3) ? r.pick(marks) : "") + text.slice(at + r.int(2));
      }
      const full = parseManifest(text);
      expect(parseManifestAgainst(text, current), `round ${round}`).toEqual(full);
      const bytes = AsciiText.of(Buffer.from(text, "utf8"));
      // A text with a non-ASCII character is decoded as a string (above); else its bytes are read too.
      if (bytes) expect(parseManifestAgainst(bytes, current), `round ${round}`).toEqual(full);
    }
  });

  it("reads records added, removed and reordered, texts that are the same, tiny files, and a non-ASCII text", () => {
    const shuffled = structuredClone(current.manifest);
    shuffled.assets.reverse();
    shuffled.dags.push(...shuffled.dags.splice(0, 5));
    const fewer = structuredClone(current.manifest);
    fewer.assets.splice(3, 40);
    fewer.dags.splice(10, 1);
    for (const previous of [shuffled, fewer]) {
      const text = asText(previous);
      const read = parseManifestAgainst(asBytes(text), current);
      expect(read).toEqual(parseManifest(text));
      // Moved, not changed: still the current manifest's objects.
      const ours = new Set<unknown>(current.manifest.assets);
      expect(read.manifest!.assets.every((a) => ours.has(a))).toBe(true);
    }
    // The same text, as a string or as bytes: the current manifest itself.
    expect(parseManifestAgainst(current.text, current).manifest).toBe(current.manifest);
    expect(parseManifestAgainst(asBytes(current.text), current).manifest).toBe(current.manifest);
    for (const tiny of ["", "{", "0", " ", "]", "\n", "{}"]) {
      expect(parseManifestAgainst(tiny, current), JSON.stringify(tiny)).toEqual(parseManifest(tiny));
      if (tiny) expect(parseManifestAgainst(asBytes(tiny), current), JSON.stringify(tiny)).toEqual(parseManifest(tiny));
    }
    // A previous file with a raw non-ASCII character (read as a string), and a current text with one.
    const accented = structuredClone(current.manifest);
    accented.dags[7]!.description = "caf\u00e9 \u{1f600}";
    const raw = canonicalJson(accented as unknown as Record<string, unknown>);
    expect(AsciiText.of(Buffer.from(raw, "utf8"))).toBeUndefined();
    expect(parseManifestAgainst(raw, current)).toEqual(parseManifest(raw));
    const rawCurrent = { manifest: accented, text: raw };
    const text = asText(current.manifest);
    expect(parseManifestAgainst(asBytes(text), rawCurrent)).toEqual(parseManifest(text));
    expect(parseManifestAgainst(text, rawCurrent)).toEqual(parseManifest(text));
  });
  it("matches a record only in its own array: an asset's text standing in dags[] (or a DAG's in assets[]) is checked and refused as the full parse refuses it", () => {
    for (const [from, into] of [["assets", "dags"], ["dags", "assets"]] as const) {
      const previous = structuredClone(current.manifest) as unknown as Record<"assets" | "dags", unknown[]>;
      // The record moved is the current text of a record edited in the previous state: the current
      // record lies in a differing middle, so the copy is matched by its text.
      const source = previous[from];
      const moved = structuredClone(source[4]);
      if (from === "assets") (source[4] as ManifestAsset).group = "edited-for-the-middle";
      else (source[4] as { description: string }).description = "edited for the middle";
      previous[into].splice(2, 1, moved);
      const text = asText(previous as unknown as Manifest);
      const full = parseManifest(text);
      expect(full.problem, `${from} in ${into}`).toMatch(/must have required property|must NOT have additional properties/);
      expect(parseManifestAgainst(asBytes(text), current), `${from} in ${into}`).toEqual(full);
      expect(parseManifestAgainst(text, current), `${from} in ${into}`).toEqual(full);
    }
  });
});

describe("the diff of a previous state sharing the current manifest's records", () => {
  it("is the diff of the same state parsed whole, over random edits of a project's manifest", () => {
    const r = random(1602);
    let withChanges = 0;
    for (let round = 0; round < 40; round++) {
      const previous = structuredClone(current.manifest);
      const names = Array.from({ length: 1 + r.int(3) }, (_, k) => editOnce(previous, r, round * 10 + k));
      const text = asText(previous);
      const shared = parseManifestAgainst(asBytes(text), current).manifest!;
      const whole = parseManifest(text).manifest!;
      expect(shared.assets.some((a) => current.manifest.assets.includes(a))).toBe(true);
      expect(whole.assets.some((a) => current.manifest.assets.includes(a))).toBe(false);
      const expected = diffManifests(whole, current.manifest);
      const got = diffManifests(shared, current.manifest);
      expect(got, names.join(", ")).toEqual(expected);
      expect(formatChangesJson(got), names.join(", ")).toBe(formatChangesJson(expected));
      if (expected.changes.length) withChanges++;
    }
    // The edits are seen: most rounds compare diffs that report something (some edits, a swap or a
    // header, report nothing).
    expect(withChanges).toBeGreaterThanOrEqual(25);
  });

  it("reads an extra key named as a member of Object.prototype as an ordinary key, on either side", () => {
    const plain = structuredClone(current.manifest);
    const odd = structuredClone(current.manifest);
    const extra = odd.assets[0]!.extra as Record<string, unknown>;
    extra.toString = 1;
    extra.constructor = "x";
    for (const [before, after] of [[plain, odd], [odd, plain]]) {
      const changes = diffManifests(before, after).changes.filter((c) => c.rule === "EXTRA_CHANGED");
      expect(changes.map((c) => [c.asset, c.message])).toEqual([[odd.assets[0]!.name, `the extra of ${JSON.stringify(odd.assets[0]!.name)} changed ("constructor", "toString")`]]);
    }
  });

  it("is the diff of the same state parsed whole on every golden diff case", () => {
    const cases = fs.readdirSync(CASES).filter((n) => fs.existsSync(path.join(CASES, n, "previous")) && fs.existsSync(path.join(CASES, n, "input")));
    expect(cases.length).toBeGreaterThan(30);
    for (const name of cases) {
      const stage = (side: string): Manifest | undefined => {
        const dir = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? "/tmp"), "ca-changed-case-"));
        try {
          fs.cpSync(path.join(CASES, "_base"), dir, { recursive: true });
          fs.cpSync(path.join(CASES, name, side), dir, { recursive: true, verbatimSymlinks: true });
          return compileProject(defaultLayout(dir), { render: false }).manifest;
        } finally {
          fs.rmSync(dir, { recursive: true, force: true });
        }
      };
      const before = stage("previous");
      const after = stage("input");
      if (!before || !after) continue;
      const text = asText(before);
      const shared = parseManifestAgainst(text, { manifest: after, text: asText(after) }).manifest!;
      const whole = parseManifest(text).manifest!;
      expect(diffManifests(shared, after), name).toEqual(diffManifests(whole, after));
    }
  });
});
