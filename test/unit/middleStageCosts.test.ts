import { describe, expect, it, vi } from "vitest";
import { buildAssetTable } from "../../compiler/link/assetTable.js";
import { mergeConfigs } from "../../compiler/link/config.js";
import { resolveContracts } from "../../compiler/link/resolveContracts.js";
import { canonicalCondition } from "../../compiler/model/conditions.js";
import type { Contract } from "../../compiler/model/contract.js";
import { parseDocument } from "../../compiler/parse/parseDocument.js";
import { conditionOf, qualityNames } from "../../compiler/plan/planDags.js";
import { parseDurationSeconds } from "../../compiler/support/duration.js";
import type { Located, ValidatedProject } from "../../compiler/validate/validateDocuments.js";

/** The names qualityNames gave before it was written as loops: the reference it must agree with. */
function referenceNames(rules: ReadonlyArray<{ name?: string; type?: string; metric?: string; column?: string }>): string[] {
  const names = rules.map((q, i) => q.name ?? (q.type === "sql" ? `sql_${i + 1}` : [q.metric, q.column].filter(Boolean).join("_")));
  return names.map((n, i) => (names.indexOf(n) !== i || (rules[i]!.name === undefined && rules.some((r) => r.name === n)) ? `${n}_${i + 1}` : n));
}

describe("qualityNames", () => {
  it("gives the reference's names for every list of a few rules with clashing names, metrics and columns", () => {
    // Every rule shape from a small alphabet, so names clash in every way: an own name equal to a
    // derived one, two equal derived ones, an empty metric or column, SQL rules.
    const shapes: Array<{ name?: string; type?: string; metric?: string; column?: string }> = [
      {},
      { name: "rowCount" },
      { name: "nullValues_id" },
      { name: "sql_2" },
      { name: "" },
      { metric: "rowCount" },
      { metric: "nullValues", column: "id" },
      { metric: "nullValues", column: "" },
      { metric: "", column: "id" },
      { column: "id" },
      { type: "sql" },
      { type: "sql", name: "rowCount" },
      { type: "library", metric: "rowCount" },
    ];
    let lists = 0;
    const check = (rules: typeof shapes): void => {
      lists++;
      expect(qualityNames(rules), JSON.stringify(rules)).toEqual(referenceNames(rules));
    };
    check([]);
    for (const a of shapes) {
      check([a]);
      for (const b of shapes) {
        check([a, b]);
        for (const c of shapes) check([a, b, c]);
      }
    }
    expect(lists).toBe(1 + 13 + 13 ** 2 + 13 ** 3);
    // One case spelt out: the derived name a later rule's own name takes gets its position.
    expect(qualityNames([{ metric: "rowCount" }, { metric: "rowCount" }, { name: "rowCount" }])).toEqual(["rowCount_1", "rowCount_2", "rowCount_3"]);
  });
});

describe("link locations", () => {
  const text = [
    "kind: TransformContract",
    "id: sales.orders",
    "domain: sales",
    "upstreams:",
    "  - asset: sales.raw",
    "  - asset: sales.other",
    "    schema_version: 2",
    "datasets:",
    "  - name: orders",
    "    schema:",
    "      version: 3",
    "  - name: lines",
    "    uri: s3://bucket/lines",
    "    schema:",
    "      version: 1",
    "",
  ].join("\n");

  /** The contract above, located, with a count of the locations asked of its source. */
  function located(): { contract: Located<Contract>; asked: () => number } {
    const source = parseDocument({ path: "contracts/sales/orders.yaml", text } as Parameters<typeof parseDocument>[0]).value!;
    const locate = vi.fn(source.locate);
    const contract = { document: source.value as Contract, source: { ...source, locate } };
    return { contract, asked: () => locate.mock.calls.length };
  }

  it("are made when first read, once, and are the locations of the fields they name", () => {
    const { contract, asked } = located();
    const { config } = mergeConfigs([]);
    const validated = { contracts: [contract], externals: [], configs: [] } as unknown as ValidatedProject;
    const table = buildAssetTable(validated, { ...config, uriTemplate: "s3://lake/{layer}/{domain}/{name}" });
    const linked = resolveContracts(table, config);
    // Nothing located yet: the link stage's work for a project without findings asks for none.
    expect(asked()).toBe(0);
    const orders = table.assets.get("sales.orders")!;
    const lines = table.assets.get("sales.lines")!;
    const [raw, other] = linked[0]!.upstreams;
    expect(orders.location).toEqual(contract.source.locate(["datasets", 0, "name"]));
    expect(orders.location.line).toBe(9);
    // A dataset without a uri is located at its name for both.
    expect(orders.uriLocation).toBe(orders.location);
    expect(orders.schemaVersionLocation).toEqual(contract.source.locate(["datasets", 0, "schema", "version"]));
    expect(lines.uriLocation).toEqual(contract.source.locate(["datasets", 1, "uri"]));
    expect(lines.uriLocation.line).toBe(13);
    expect(raw!.location).toEqual(contract.source.locate(["upstreams", 0, "asset"]));
    expect(other!.location.line).toBe(6);
    expect(other!.schemaVersion).toBe(2);
    const made = asked();
    // Read again: the same object, not located again.
    expect(orders.location).toBe(orders.location);
    expect(raw!.location).toBe(raw!.location);
    expect(asked()).toBe(made);
  });
});

describe("conditionOf of a trigger by name (all or any of the triggering upstreams)", () => {
  it("is canonicalCondition of the leaves: the same order and the same names once, quotes, escapes and prefixes included", () => {
    // Names whose JSON texts sort otherwise than the names (a quote, a backslash, a control
    // character, a line separator), prefixes of one another, and names outside the BMP.
    const alphabet = ["a", "ab", "a.b", "a b", 'a"', "a\\", "a\u0001", "a\u2028", "\u00e9", "\ud83d\ude00", "\uffff", "A", "b"];
    let seed = 7;
    const next = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
    for (let round = 0; round < 400; round++) {
      const names = Array.from({ length: 2 + next(6) }, () => alphabet[next(alphabet.length)]!);
      for (const spec of ["all", "any"] as const) {
        const contract = { trigger: { assets: spec } } as unknown as Contract;
        const leaves = names.map((asset) => ({ asset }));
        expect(conditionOf(contract, names), JSON.stringify(names)).toEqual(canonicalCondition(spec === "all" ? { all: leaves } : { any: leaves }));
      }
    }
    expect(conditionOf({ trigger: { assets: "any" } } as unknown as Contract, ["b", 'a"', "a", "b"])).toEqual({ any: [{ asset: "a" }, { asset: 'a"' }, { asset: "b" }] });
  });
});

describe("parseDurationSeconds, read once per text", () => {
  it("gives each text its own answer, asked in any order and again", () => {
    const cases: Array<[string, number | undefined]> = [
      ["PT1H", 3600],
      ["PT1H ", undefined],
      ["pt1h", undefined],
      ["P1DT2H30M", 95400],
      ["P2W", 1209600],
      ["PT0.0005S", undefined],
      ["PT1.5S", 1.5],
      ["P", undefined],
      ["PT", undefined],
      ["P3651D", undefined],
    ];
    for (let round = 0; round < 3; round++) {
      for (const [text, seconds] of round === 1 ? [...cases].reverse() : cases) expect(parseDurationSeconds(text), text).toBe(seconds);
    }
  });
});
