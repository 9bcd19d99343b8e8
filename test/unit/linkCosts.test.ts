import { describe, expect, it, vi } from "vitest";
import { buildAssetTable } from "../../compiler/link/assetTable.js";
import { mergeConfigs } from "../../compiler/link/config.js";
import { resolveContracts } from "../../compiler/link/resolveContracts.js";
import type { Contract } from "../../compiler/model/contract.js";
import { parseDocument } from "../../compiler/parse/parseContracts.js";
import { qualityNames } from "../../compiler/plan/planDags.js";
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
