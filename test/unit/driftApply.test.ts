import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { applyProposal, compileProject } from "../../compiler/pipeline.js";
import { mergeProposal, parseProposal, setContractVersion } from "../../compiler/report/driftApply.js";
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

describe("drift apply: the version the change needs (ADR 0015), so that the next compile is clean", () => {
  // billing.invoices_raw as the bundled project has it: version "1.3.0", schema.version 3, and a
  // property of integer type added here for the widening.
  const base = [
    { name: "invoice_id", logicalType: "string", physicalType: "varchar" },
    { name: "account_id", logicalType: "string", physicalType: "varchar" },
    { name: "contract_id", logicalType: "string", physicalType: "varchar" },
    { name: "invoice_date", logicalType: "date" },
    { name: "due_date", logicalType: "date" },
    { name: "currency", logicalType: "string", physicalType: "varchar(3)" },
    { name: "status", logicalType: "string" },
    { name: "updated_at", logicalType: "timestamp" },
    { name: "line_count", logicalType: "integer" },
  ];
  const contractFile = (root: string): string => path.join(root, "contracts", "billing", "invoices_raw.yaml");
  /** The bundled project with `line_count` added and the version set, compiled once so generated/manifest.json is the previous state. */
  function compiledProject(version: string, options: { compile?: boolean } = {}): string {
    const root = copyBundledProject();
    const text = fs
      .readFileSync(contractFile(root), "utf8")
      .replace('version: "1.3.0"', `version: "${version}"`)
      .replace(/( {8}- \{name: updated_at.*\n)/, "$1        - {name: line_count, logicalType: integer}\n");
    fs.writeFileSync(contractFile(root), text);
    if (options.compile !== false) expect(compileProject(defaultLayout(root), { write: "write" }).diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    return root;
  }
  /** The proposal the runtime writes for `properties` (the contract's other fields do not matter to the merge). */
  function propose(root: string, properties: Array<Record<string, string>>): string {
    fs.mkdirSync(path.join(root, "proposals"), { recursive: true });
    fs.writeFileSync(path.join(root, "proposals", "p.yaml"), JSON.stringify({ id: "billing.invoices_raw", version: "1.3.0", datasets: [{ name: "invoices_raw", schema: { version: 4, properties } }] }));
    return "proposals/p.yaml";
  }
  const without = (name: string) => base.filter((p) => p.name !== name);
  const retyped = (name: string, logicalType: string) => base.map((p) => (p.name === name ? { name, logicalType } : p));
  const cases: Array<{ drift: string; version: string; properties: Array<Record<string, string>>; expected: string; line?: string }> = [
    { drift: "column removed", version: "1.3.0", properties: without("account_id"), expected: "2.0.0", line: "version 1.3.0 -> 2.0.0 (a breaking change needs a major version, ADR 0015)" },
    { drift: "column retyped (narrowed or incompatible)", version: "1.3.0", properties: retyped("status", "integer"), expected: "2.0.0" },
    { drift: "column added", version: "1.3.0", properties: [...base, { name: "channel", logicalType: "string" }], expected: "1.4.0", line: "version 1.3.0 -> 1.4.0 (an additive change wants a minor version, ADR 0015)" },
    { drift: "column added and another removed", version: "1.3.0", properties: [...without("account_id"), { name: "channel", logicalType: "string" }], expected: "2.0.0" },
    { drift: "column widened (integer -> number)", version: "1.3.0", properties: retyped("line_count", "number"), expected: "1.3.0" },
    { drift: "column removed below 1.0.0 (the minor is the major)", version: "0.3.2", properties: without("account_id"), expected: "0.4.0" },
    { drift: "column added below 1.0.0 (the patch is the minor)", version: "0.3.2", properties: [...base, { name: "channel", logicalType: "string" }], expected: "0.3.3" },
  ];
  for (const c of cases) {
    it(`${c.drift}: merged with version ${c.expected}, and compile then reports no error and no version rule`, () => {
      const root = compiledProject(c.version);
      const result = applyProposal(defaultLayout(root), propose(root, c.properties));
      expect(result.problem).toBeUndefined();
      expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
      expect(result.written).toBe(true);
      const text = fs.readFileSync(contractFile(root), "utf8");
      expect(/^version: "([^"]*)"/m.exec(text)?.[1]).toBe(c.expected);
      if (c.line) expect(result.changes).toContain(c.line);
      if (c.expected === c.version) expect(result.changes.some((x) => x.startsWith("version "))).toBe(false);
      const after = compileProject(defaultLayout(root), { write: "write" });
      expect(after.diagnostics.filter((d) => d.severity === "error" || d.code === "CA7701" || d.code === "CA7702").map((d) => `${d.code} ${d.message}`)).toEqual([]);
      expect(after.diff?.changes.filter((x) => x.rule.startsWith("VERSION_") && x.rule !== "VERSION_CHANGED" && x.rule !== "VERSION_BREAKING_ACKNOWLEDGED")).toEqual([]);
    });
  }

  it("keeps a version already bumped since the last compile, and bumps from the contract itself when nothing was compiled", () => {
    const root = compiledProject("1.3.0");
    fs.writeFileSync(contractFile(root), fs.readFileSync(contractFile(root), "utf8").replace('version: "1.3.0"', 'version: "2.0.0"'));
    const kept = applyProposal(defaultLayout(root), propose(root, without("account_id")));
    expect(kept.written).toBe(true);
    expect(fs.readFileSync(contractFile(root), "utf8")).toMatch(/^version: "2\.0\.0"/m);
    const fresh = compiledProject("1.3.0", { compile: false });
    expect(fs.existsSync(path.join(fresh, "generated", "manifest.json"))).toBe(false);
    const bumped = applyProposal(defaultLayout(fresh), propose(fresh, without("account_id")));
    expect(bumped.written).toBe(true);
    expect(fs.readFileSync(contractFile(fresh), "utf8")).toMatch(/^version: "2\.0\.0"/m);
  });

  it("sets the version in the author's quoting and nothing else", () => {
    expect(setContractVersion('id: a.b\nversion: "1.3.0"   # semver\n', "2.0.0").text).toBe('id: a.b\nversion: "2.0.0"   # semver\n');
    expect(setContractVersion("version: 0.3.2\n", "0.4.0").text).toBe("version: 0.4.0\n");
    expect(setContractVersion("id: a.b\n", "1.0.0").problem).toMatch(/no "version"/);
  });
});
