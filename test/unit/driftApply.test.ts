import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { applyProposal } from "../../compiler/pipeline.js";
import { mergeProposal, parseProposal } from "../../compiler/report/driftApply.js";
import { copyBundledProject } from "./helpers.js";

const CONTRACT = `apiVersion: contract-assets/v1
kind: IngestionContract
id: shop.orders_raw   # the id a proposal names
datasets:
  - name: orders_raw
    description: >-
      Orders as exported; a folded description the merge must not re-fold even though it is
      longer than eighty characters.
    schema:
      version: 2   # bumped by every merge
      properties:
        - {name: order_id, logicalType: string, required: true}   # the key
        - {name: amount, logicalType: number, physicalType: "decimal(18,2)"}

        # a comment between properties
        - {name: legacy_flag, logicalType: boolean}
        - name: placed_at
          logicalType: date
          description: block style item
    quality: [{metric: rowCount, mustBeGreaterThan: 0}]
`;

function proposal(properties: Array<Record<string, string>>, version = 3) {
  const parsed = parseProposal(
    JSON.stringify({ id: "shop.orders_raw", datasets: [{ name: "orders_raw", schema: { version, properties } }] }),
  );
  expect(parsed.problem).toBeUndefined();
  return parsed.proposal!;
}

describe("drift apply: mergeProposal", () => {
  it("edits only what changed and keeps comments, blank lines, folding and styles", () => {
    const merged = mergeProposal(
      CONTRACT,
      proposal([
        { name: "order_id", logicalType: "string" },
        { name: "amount", logicalType: "string" },
        { name: "placed_at", logicalType: "timestamp" },
        { name: "channel", logicalType: "string" },
      ]),
    );
    expect(merged.problem).toBeUndefined();
    expect(merged.text).toBe(`apiVersion: contract-assets/v1
kind: IngestionContract
id: shop.orders_raw   # the id a proposal names
datasets:
  - name: orders_raw
    description: >-
      Orders as exported; a folded description the merge must not re-fold even though it is
      longer than eighty characters.
    schema:
      version: 3   # bumped by every merge
      properties:
        - {name: order_id, logicalType: string, required: true}   # the key
        - {name: amount, logicalType: string}

        # a comment between properties
        - name: placed_at
          logicalType: timestamp
          description: block style item
        - {name: channel, logicalType: string}
    quality: [{metric: rowCount, mustBeGreaterThan: 0}]
`);
    expect(merged.changes).toEqual([
      "orders_raw: schema.version 2 -> 3",
      'orders_raw: property "amount" logicalType number -> string',
      'orders_raw: removed property "legacy_flag"',
      'orders_raw: property "placed_at" logicalType date -> timestamp',
      'orders_raw: added property "channel" (string)',
    ]);
  });

  it("leaves a contract that already matches unchanged, and refuses a flow sequence of properties", () => {
    const same = proposal(
      [
        { name: "order_id", logicalType: "string" },
        { name: "amount", logicalType: "number" },
        { name: "legacy_flag", logicalType: "boolean" },
        { name: "placed_at", logicalType: "date" },
      ],
      2,
    );
    expect(mergeProposal(CONTRACT, same)).toEqual({ text: CONTRACT, changes: [] });
    const flow = CONTRACT.replace(/ {6}properties:\n(?: {8}.*\n|\n)+/, "      properties: [{name: order_id, logicalType: string}]\n");
    expect(mergeProposal(flow, same).problem).toMatch(/flow sequence/);
  });

  it("rejects a proposal that is not a contract document", () => {
    expect(parseProposal("just: text").problem).toMatch(/"id" and "datasets"/);
    expect(parseProposal(JSON.stringify({ id: "a.b", datasets: [{ name: "x", schema: { properties: [] } }] })).problem).toMatch(/no schema with a version/);
  });
});

describe("drift apply: applyProposal (the pipeline merges in memory, then writes only a clean result)", () => {
  const properties = [
    { name: "invoice_id", logicalType: "string", physicalType: "varchar" },
    { name: "account_id", logicalType: "string", physicalType: "varchar" },
    { name: "contract_id", logicalType: "string", physicalType: "varchar" },
    { name: "invoice_date", logicalType: "date" },
    { name: "due_date", logicalType: "date" },
    { name: "currency", logicalType: "string", physicalType: "varchar(3)" },
    { name: "status", logicalType: "string" },
    { name: "updated_at", logicalType: "timestamp" },
  ];
  const write = (root: string, props: Array<Record<string, string>>): string => {
    fs.mkdirSync(path.join(root, "proposals"), { recursive: true });
    fs.writeFileSync(path.join(root, "proposals", "p.yaml"), JSON.stringify({ id: "billing.invoices_raw", datasets: [{ name: "invoices_raw", schema: { version: 4, properties: props } }] }));
    return "proposals/p.yaml";
  };
  const contractFile = (root: string): string => path.join(root, "contracts", "billing", "invoices_raw.yaml");

  it("writes the merged contract when the project still compiles", () => {
    const root = copyBundledProject();
    const result = applyProposal(defaultLayout(root), write(root, [...properties, { name: "channel", logicalType: "string" }]));
    expect(result.problem).toBeUndefined();
    expect(result.written).toBe(true);
    expect(result.changes.join("\n")).toContain("channel");
    const text = fs.readFileSync(contractFile(root), "utf8");
    expect(text).toMatch(/name: channel/);
    expect(text).toMatch(/version: 4/);
  });

  it("never touches the contract when the merge does not validate (a dropped column a quality rule reads)", () => {
    const root = copyBundledProject();
    const before = fs.readFileSync(contractFile(root), "utf8");
    const mtime = fs.statSync(contractFile(root)).mtimeMs;
    const result = applyProposal(defaultLayout(root), write(root, properties.filter((p) => p.name !== "invoice_id")));
    expect(result.written).toBe(false);
    expect(result.changes.length).toBeGreaterThan(0);
    expect(result.diagnostics.some((d) => d.severity === "error" && d.location?.file === "contracts/billing/invoices_raw.yaml")).toBe(true);
    expect(fs.readFileSync(contractFile(root), "utf8")).toBe(before);
    expect(fs.statSync(contractFile(root)).mtimeMs).toBe(mtime);
  });

  it("says why a proposal cannot be read, as a usage problem", () => {
    const root = copyBundledProject();
    const result = applyProposal(defaultLayout(root), "proposals/none.yaml");
    expect(result).toMatchObject({ problemKind: "unreadable", problem: 'cannot read the proposal "proposals/none.yaml": ENOENT', written: false });
  });
});
