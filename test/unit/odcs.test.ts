import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Ajv2019Module from "ajv/dist/2019.js";
import addFormatsModule from "ajv-formats";
import YAML from "yaml";
import { describe, expect, it } from "vitest";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import type { Manifest } from "../../compiler/manifest/buildManifest.js";
import { compileProject, exportOdcs, importOdcs } from "../../compiler/pipeline.js";
import { renderOdcs } from "../../compiler/render/renderOdcs.js";
import { writeOutputs } from "../../compiler/write/writeOutputs.js";
import { CASES, stageCase } from "../golden/golden.js";
import { cli, copyBundledProject, REPO } from "./helpers.js";

const Ajv2019 = Ajv2019Module as unknown as typeof Ajv2019Module.default;
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/** The official ODCS schemas, beside the project (never copied into it). */
const SHARED_ODCS = path.resolve(REPO, "..", "shared", "odcs");
const OFFICIAL_SCHEMA = path.join(SHARED_ODCS, "odcs-json-schema-v3.1.0.json");
const HAVE_OFFICIAL = fs.existsSync(OFFICIAL_SCHEMA);
if (!HAVE_OFFICIAL) console.warn(`skipping the ODCS official-schema conformance tests: ${OFFICIAL_SCHEMA} is absent (it lies beside the project, in ../shared/odcs)`);

/** The bundled project exported to ODCS in a temporary root, as `export odcs --out exported` does. */
function exportBundled(): { root: string; files: Map<string, string> } {
  const root = copyBundledProject();
  const result = exportOdcs(defaultLayout(root), "exported");
  expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return { root, files: result.files! };
}

function compiled(root: string): Manifest {
  const result = compileProject(defaultLayout(root));
  expect(result.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return result.manifest!;
}

/**
 * What a round trip must keep (issue: "the same manifest assets, edges, schedules and quality
 * rules"): every asset but its provenance (file, hash), the edges, each DAG's schedule, inlets,
 * outlets, owner, tags and runtime, quality rules compared as a set by name (docs/odcs.md: ODCS
 * puts column rules under their property, so their order is not kept).
 */
function meaning(manifest: Manifest): unknown {
  const byName = (rules: unknown): unknown =>
    Array.isArray(rules) ? [...(rules as Array<{ name: string }>)].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) : rules;
  return {
    assets: manifest.assets.map((a) => ({ ...a, contract: undefined, contract_sha256: undefined, quality: byName(a.quality) })),
    edges: manifest.edges,
    dags: manifest.dags.map((d) => {
      const runtime = d.runtime as { datasets: Array<{ quality: unknown }> };
      return {
        ...d,
        contract: undefined,
        contract_sha256: undefined,
        contract_git_blob: undefined,
        runtime: { ...runtime, datasets: runtime.datasets.map((ds) => ({ ...ds, quality: byName(ds.quality) })) },
      };
    }),
  };
}

describe("export odcs", () => {
  it("writes one document per contract, named by its id, and the same text every time", () => {
    const first = exportBundled();
    const second = exportBundled();
    const contractIds = compiled(first.root).dags.map((d) => d.dag_id);
    expect([...first.files.keys()].sort()).toEqual(expect.arrayContaining(contractIds.map((id) => `exported/${id}.odcs.yaml`)));
    expect(first.files).toEqual(second.files);
    // Discovery order changes nothing.
    const reversed = compileProject(defaultLayout(first.root), { reorder: (f) => [...f].reverse() });
    expect(renderOdcs(reversed.project!, "exported").value).toEqual(first.files);
  });

  it("maps the contract fields to ODCS fields and the orchestration fields to documented customProperties", () => {
    const { files } = exportBundled();
    const doc = YAML.parse(files.get("exported/finance.billings_by_contract.odcs.yaml")!) as Record<string, any>;
    expect(doc.apiVersion).toBe("v3.1.0");
    expect(doc.kind).toBe("DataContract");
    expect(doc.id).toBe("finance.billings_by_contract");
    expect(doc.version).toBe("1.2.0");
    expect(doc.status).toBe("active");
    expect(doc.domain).toBe("finance");
    expect(doc.team).toEqual({ name: "team-finance-data" });
    expect(doc.tags).toEqual(["finance", "curated", "revrec-input"]);
    expect(doc.slaProperties).toEqual([{ property: "freshness", value: "PT26H" }]);
    expect(doc.servers[0]).toMatchObject({ server: "warehouse", type: "custom", customProperties: [{ property: "airflowConnectionId", value: "warehouse" }] });
    const custom = Object.fromEntries((doc.customProperties as Array<{ property: string; value: unknown }>).map((p) => [p.property, p.value]));
    expect(Object.keys(custom)).toEqual(["producer", "upstreams", "trigger", "freshnessDegradeAfter"]);
    expect(custom.trigger).toEqual({ assets: { all: [{ any: ["finance.invoices_curated", "billing.credit_notes_raw"] }, "finance.contracts_curated"] } });
    const object = doc.schema[0];
    expect(object).toMatchObject({ name: "billings_by_contract", logicalType: "object", physicalType: "table", customProperties: [{ property: "schemaVersion", value: 1 }] });
    const contractId = object.properties[0];
    expect(contractId).toMatchObject({ name: "contract_id", logicalType: "string", required: true, primaryKey: true, primaryKeyPosition: 1 });
    expect(contractId.quality).toEqual([{ metric: "nullValues", severity: "error", mustBe: 0 }]);
    expect(object.quality.map((q: { name?: string; metric?: string }) => q.name ?? q.metric)).toEqual(["one_row_per_contract_month", "credits_within_billings", "rowCount"]);
    // Processing purpose and legal basis, source and load settings of an ingestion.
    const accounts = YAML.parse(files.get("exported/crm.accounts_raw.odcs.yaml")!) as Record<string, any>;
    const accountProps = Object.fromEntries((accounts.customProperties as Array<{ property: string; value: unknown }>).map((p) => [p.property, p.value]));
    expect(accountProps).toMatchObject({ mode: "load", legalBasis: "contract" });
    expect(typeof accountProps.processingPurpose).toBe("string");
    expect((accountProps.source as { name: string }).name).toBe("crm_platform.accounts_export");
    const pii = (accounts.schema[0].properties as Array<{ classification?: string }>).filter((p) => p.classification === "pii");
    expect(pii.length).toBeGreaterThan(0);
  });

  it.skipIf(!HAVE_OFFICIAL)("gives documents valid under the official ODCS v3.1.0 JSON Schema", () => {
    const ajv = new Ajv2019({ allErrors: true, strict: false });
    addFormats(ajv);
    const validate = ajv.compile(JSON.parse(fs.readFileSync(OFFICIAL_SCHEMA, "utf8")) as object);
    const { files } = exportBundled();
    const problems: string[] = [];
    for (const [file, text] of files) {
      if (!validate(YAML.parse(text))) problems.push(`${file}: ${ajv.errorsText(validate.errors)}`);
    }
    expect(problems).toEqual([]);
    expect(files.size).toBe(compileProject(defaultLayout(copyBundledProject())).project!.contracts.length);
  });

  it("is written by compile only when the orchestration config asks, and compile leaves the folder alone otherwise", () => {
    const root = copyBundledProject();
    const layout = defaultLayout(root);
    fs.mkdirSync(path.join(root, "generated", "odcs"), { recursive: true });
    const stale = path.join(root, "generated", "odcs", "gone.contract.odcs.yaml");
    fs.writeFileSync(stale, "# Generated by contract-assets 0.1.0 from contracts/gone.yaml.\n");
    const plain = compileProject(layout);
    const written = writeOutputs(layout, plain.files!, { check: false, ...plain.writeScope });
    expect(written.diagnostics).toEqual([]);
    expect(written.value.deleted).toEqual([]);
    expect(fs.existsSync(stale)).toBe(true);
    expect([...plain.files!.keys()].some((f) => f.startsWith("generated/odcs/"))).toBe(false);

    const config = path.join(root, "orchestration", "airflow", "sources", "config.yaml");
    fs.appendFileSync(config, "exports: {odcs: true}\n");
    const asked = compileProject(layout);
    const odcs = [...asked.files!.keys()].filter((f) => f.startsWith("generated/odcs/"));
    expect(odcs).toHaveLength(asked.project!.contracts.length);
    const again = writeOutputs(layout, asked.files!, { check: false, ...asked.writeScope });
    expect(again.value.deleted).toEqual(["generated/odcs/gone.contract.odcs.yaml"]);
    expect(fs.readFileSync(path.join(root, "generated", "odcs", "finance.billings_by_contract.odcs.yaml"), "utf8")).toBe(exportOdcs(layout, "generated/odcs").files!.get("generated/odcs/finance.billings_by_contract.odcs.yaml"));
  });

  it("refuses a project with errors and writes nothing (CLI exit 1)", () => {
    const root = copyBundledProject();
    fs.writeFileSync(path.join(root, "contracts", "broken.yaml"), "apiVersion: contract-assets/v1\nkind: TransformContract\n");
    const r = cli(["export", "odcs", "--root", root]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("CA3003");
    expect(fs.existsSync(path.join(root, "generated", "odcs"))).toBe(false);
  });
});

describe("round trip", () => {
  it("export, then import, then compile gives the same assets, edges, schedules and quality rules", () => {
    const { root, files } = exportBundled();
    const before = compiled(root);
    fs.mkdirSync(path.join(root, "exported"));
    for (const [file, text] of files) fs.writeFileSync(path.join(root, file), text);
    // The imported contracts replace ours; ExternalAssets documents are not contracts and stay.
    const imported = importOdcs(defaultLayout(root), [...files.keys()], "imported");
    expect(imported.diagnostics).toEqual([]);
    for (const file of fs.readdirSync(path.join(root, "contracts"), { recursive: true, encoding: "utf8" })) {
      const full = path.join(root, "contracts", file);
      if (fs.statSync(full).isFile() && !/kind: ExternalAssets/.test(fs.readFileSync(full, "utf8"))) fs.rmSync(full);
    }
    for (const [file, text] of imported.files) {
      const target = path.join(root, "contracts", file.replace(/^imported\//, ""));
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, text);
    }
    const after = compiled(root);
    expect(meaning(after)).toEqual(meaning(before));
    expect(after.dags.map((d) => d.schedule)).toEqual(before.dags.map((d) => d.schedule));
  });

  it("the exported documents themselves compile, under contracts/, to the same assets, edges, schedules and quality rules", () => {
    const { root, files } = exportBundled();
    const before = compiled(root);
    for (const file of fs.readdirSync(path.join(root, "contracts"), { recursive: true, encoding: "utf8" })) {
      const full = path.join(root, "contracts", file);
      if (fs.statSync(full).isFile() && !/kind: ExternalAssets/.test(fs.readFileSync(full, "utf8"))) fs.rmSync(full);
    }
    for (const [file, text] of files) fs.writeFileSync(path.join(root, "contracts", path.basename(file)), text);
    expect(meaning(compiled(root))).toEqual(meaning(before));
  });
});

describe("partitioned contracts in ODCS", () => {
  it("export marks the partition column partitioned (position 1) with the grain as partitionGrain, and import gives the same manifest", () => {
    const root = stageCase(path.join(CASES, "partition-chain"));
    const before = compiled(root);
    const exported = exportOdcs(defaultLayout(root), "exported");
    expect(exported.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const daily = YAML.parse(exported.files!.get("exported/web.events_daily.odcs.yaml")!) as {
      customProperties: Array<{ property: string; value: unknown }>;
      schema: Array<{ properties: Array<{ name: string; partitioned?: boolean; partitionKeyPosition?: number }> }>;
    };
    expect(daily.customProperties).toContainEqual({ property: "partitionGrain", value: "day" });
    expect(daily.schema[0]!.properties.filter((p) => p.partitioned)).toEqual([expect.objectContaining({ name: "event_date", partitioned: true, partitionKeyPosition: 1 })]);
    for (const file of fs.readdirSync(path.join(root, "contracts", "web"))) {
      if (!/kind: ExternalAssets/.test(fs.readFileSync(path.join(root, "contracts", "web", file), "utf8"))) fs.rmSync(path.join(root, "contracts", "web", file));
    }
    for (const [file, text] of exported.files!) fs.writeFileSync(path.join(root, "contracts", "web", path.basename(file)), text);
    const after = compiled(root);
    expect(meaning(after)).toEqual(meaning(before));
    expect(after.assets.find((a) => a.name === "web.events_hourly")!.partitioning).toEqual({ column: "event_time", grain: "hour", key_format: "%Y-%m-%dT%H" });
    fs.rmSync(root, { recursive: true, force: true });
  });

  it("a partitioned property without partitionGrain is not honoured, and says what to add", () => {
    const root = stageCase(path.join(CASES, "partition-chain"));
    const exported = exportOdcs(defaultLayout(root), "exported");
    const text = exported.files!.get("exported/web.events_daily.odcs.yaml")!.replace(/\n  - property: partitionGrain\n    value: day/, "");
    expect(text).not.toContain("partitionGrain");
    fs.rmSync(path.join(root, "contracts", "web", "events_daily.yaml"));
    fs.writeFileSync(path.join(root, "contracts", "web", "events_daily.odcs.yaml"), text);
    const result = compileProject(defaultLayout(root), { render: false });
    const found = result.diagnostics.filter((d) => d.code === "CA3604").map((d) => d.message);
    expect(found).toEqual([expect.stringContaining("a partitioned contract needs its grain: add {property: partitionGrain, value: day}")]);
    fs.rmSync(root, { recursive: true, force: true });
  });
});

describe("the bundled ODCS contract", () => {
  it("billing.invoice_lines_raw, written in ODCS, compiles into the DAG and manifest entries its contract-assets/v1 form gave", () => {
    const odcsRoot = copyBundledProject();
    const v1Root = copyBundledProject();
    fs.rmSync(path.join(v1Root, "contracts", "billing", "invoice_lines_raw.odcs.yaml"));
    fs.copyFileSync(path.join(REPO, "test", "odcs", "invoice_lines_raw.v1.yaml"), path.join(v1Root, "contracts", "billing", "invoice_lines_raw.yaml"));
    const fromOdcs = compileProject(defaultLayout(odcsRoot));
    const fromV1 = compileProject(defaultLayout(v1Root));
    const module = "generated/dags/billing/invoice_lines_raw.py";
    // Only the header naming the contract file and its hash differs.
    const body = (text: string): string => text.split("\n").filter((l) => !l.startsWith("# Generated by") && !l.startsWith("# contract sha256")).join("\n");
    expect(fromOdcs.files!.get(module)!.split("\n")[0]).toContain("contracts/billing/invoice_lines_raw.odcs.yaml");
    expect(body(fromOdcs.files!.get(module)!)).toBe(body(fromV1.files!.get(module)!));
    for (const [file, text] of fromV1.files!) if (file !== module && file.endsWith(".py")) expect(fromOdcs.files!.get(file)).toBe(text);
    const strip = (m: Manifest): unknown => ({
      ...m,
      assets: m.assets.map((a) => ({ ...a, contract: undefined, contract_sha256: undefined })),
      dags: m.dags.map((d) => ({ ...d, contract: undefined, contract_sha256: undefined, contract_git_blob: undefined })),
    });
    expect(strip(fromOdcs.manifest!)).toEqual(strip(fromV1.manifest!));
  });
});

describe("import odcs", () => {
  it("writes our YAML with a comment on each orchestration field and on each one still to fill in", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-odcs-"));
    fs.writeFileSync(
      path.join(root, "report.odcs.yaml"),
      "apiVersion: v3.1.0\nkind: DataContract\nid: sales.report\nversion: 1.0.0\nstatus: draft\ndomain: sales\nschema:\n  - name: report\n    properties: [{name: day, logicalType: date}]\n",
    );
    const r = importOdcs(defaultLayout(root), ["report.odcs.yaml"], "contracts");
    const text = r.files.get("contracts/sales/report.yaml")!;
    expect(text).toMatch(/^# Imported from report\.odcs\.yaml \(ODCS v3\.1\.0\)/);
    expect(text).toContain("# TO FILL IN: owner: MISSING, required.");
    expect(text).toContain("# TO FILL IN: producer: MISSING, required.");
    expect(text).toContain("# TO FILL IN: trigger: none in the ODCS document");
    // The written file is validated: its errors are located in it, at the fields to fill in.
    expect(r.diagnostics.map((d) => `${d.location?.file} ${d.code} ${d.message}`)).toEqual([
      'contracts/sales/report.yaml CA3003 missing required field "owner" in the document',
      'contracts/sales/report.yaml CA3003 missing required field "producer" in the document',
    ]);
    const parsed = YAML.parse(text) as Record<string, unknown>;
    expect(parsed).toMatchObject({ apiVersion: "contract-assets/v1", kind: "TransformContract", id: "sales.report", domain: "sales", datasets: [{ name: "report", schema: { version: 1, properties: [{ name: "day", logicalType: "date" }] } }] });
  });

  it("gives a document whose id is a UUID the id derived from its domain and name, and the file <domain>/<name>.yaml", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-odcs-"));
    fs.writeFileSync(
      path.join(root, "quantum.odcs.yaml"),
      "apiVersion: v3.1.0\nkind: DataContract\nid: 53581432-6c55-4ba2-a65f-72344a91553a\nname: My Quantum\nversion: 1.0.0\nstatus: draft\ndomain: Seller\nschema:\n  - name: tbl\n    properties: [{name: day, logicalType: date}]\n",
    );
    const r = importOdcs(defaultLayout(root), ["quantum.odcs.yaml"], "contracts");
    expect([...r.files.keys()]).toEqual(["contracts/seller/my_quantum.yaml"]);
    expect(YAML.parse(r.files.get("contracts/seller/my_quantum.yaml")!)).toMatchObject({ id: "seller.my_quantum", domain: "Seller" });
    // No id diagnostic: the derived id is valid (the domain's case is the schema's own finding).
    expect(r.diagnostics.filter((d) => d.code === "CA3005" && d.message.includes('"id"'))).toEqual([]);
    fs.rmSync(root, { recursive: true, force: true });
  });

  it.skipIf(!HAVE_OFFICIAL)("imports every official example: a valid id from its domain and name, else a located error and a comment saying what to fill in", () => {
    const examples = fs.readdirSync(path.join(SHARED_ODCS, "examples")).filter((f) => f.endsWith(".yaml")).sort();
    expect(examples.length).toBeGreaterThan(10);
    for (const example of examples) {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-odcs-"));
      fs.copyFileSync(path.join(SHARED_ODCS, "examples", example), path.join(root, example));
      const odcs = YAML.parse(fs.readFileSync(path.join(root, example), "utf8")) as { domain?: string; name?: string; dataProduct?: string };
      const r = importOdcs(defaultLayout(root), [example], "contracts");
      const [[target, text]] = [...r.files.entries()] as [[string, string]];
      const contract = YAML.parse(text) as { id: string };
      const errors = r.diagnostics.filter((d) => d.severity === "error");
      // Every error is located in the file written or the ODCS document, at a line.
      for (const d of errors) expect([target, example], `${example}: ${d.code} ${d.message}`).toContain(d.location?.file);
      for (const d of errors) expect(d.location?.line, `${example}: ${d.code}`).toBeGreaterThan(0);
      if (odcs.domain !== undefined && (odcs.name ?? odcs.dataProduct) !== undefined) {
        expect(contract.id, example).toMatch(/^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/);
        expect(target, example).toBe(`contracts/${contract.id.replace(".", "/")}.yaml`);
        expect(errors.filter((d) => d.message.includes('"id"')), example).toEqual([]);
      } else {
        // Nothing to derive the id from: the fields to fill in are named in the file and in an error.
        expect(text, example).toContain("# TO FILL IN: domain: MISSING, required.");
        expect(errors.map((d) => d.message).join("\n"), example).toContain('missing required field "domain"');
        if (!/^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$/.test(contract.id)) expect(text, example).toContain("# TO FILL IN: id: not a contract id of ours.");
      }
      // ODCS has no producer, so every example has at least that to fill in, said in both places.
      expect(text, example).toContain("# TO FILL IN: producer: MISSING, required.");
      expect(errors.map((d) => d.message), example).toContain('missing required field "producer" in the document');
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("never overwrites a contract file that holds other text, unless forced (CA3606), and takes one that holds the same text as unchanged", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-odcs-"));
    const odcs = "apiVersion: v3.1.0\nkind: DataContract\nid: sales.report\nversion: 1.0.0\nstatus: draft\ndomain: sales\nschema:\n  - name: report\n    properties: [{name: day, logicalType: date}]\n";
    fs.writeFileSync(path.join(root, "report.odcs.yaml"), odcs);
    const target = path.join(root, "contracts/sales/report.yaml");
    fs.mkdirSync(path.dirname(target), { recursive: true });
    const handWritten = "# hand-written, with comments the import would lose\napiVersion: contract-assets/v1\nkind: TransformContract\nid: sales.report\n";
    fs.writeFileSync(target, handWritten);
    const refused = importOdcs(defaultLayout(root), ["report.odcs.yaml"], "contracts", { write: true });
    expect(refused.diagnostics.map((d) => [d.code, d.severity, d.location?.file, d.location?.line, d.message])).toEqual([
      ["CA3606", "error", "report.odcs.yaml", 3, '"contracts/sales/report.yaml" exists with other content (perhaps the contract this document was exported from); it is not overwritten: pass --force to replace it, or --out another folder'],
    ]);
    expect(refused.files.size).toBe(0);
    expect(fs.readFileSync(target, "utf8")).toBe(handWritten);
    const forced = importOdcs(defaultLayout(root), ["report.odcs.yaml"], "contracts", { write: true, force: true });
    expect(forced.diagnostics.map((d) => d.code)).toEqual(["CA3003", "CA3003"]);
    expect(forced.written?.written).toEqual(["contracts/sales/report.yaml"]);
    const imported = fs.readFileSync(target, "utf8");
    expect(imported).toMatch(/^# Imported from report\.odcs\.yaml/);
    // Its own text again: no refusal, nothing written.
    const again = importOdcs(defaultLayout(root), ["report.odcs.yaml"], "contracts", { write: true });
    expect(again.diagnostics.map((d) => d.code)).toEqual(["CA3003", "CA3003"]);
    expect(again.written?.unchanged).toEqual(["contracts/sales/report.yaml"]);
    expect(fs.readFileSync(target, "utf8")).toBe(imported);
  });

  it.skipIf(!HAVE_OFFICIAL)("reads every example of the standard, with located diagnostics and no internal error", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-odcs-"));
    const examples = fs.readdirSync(path.join(SHARED_ODCS, "examples")).filter((f) => f.endsWith(".yaml"));
    for (const f of examples) fs.copyFileSync(path.join(SHARED_ODCS, "examples", f), path.join(root, f));
    const r = importOdcs(defaultLayout(root), examples, "out");
    expect(r.diagnostics.every((d) => d.location !== undefined && d.location.line >= 1)).toBe(true);
    // Each id imports once; all_full-example carries quality rules the runtime runs.
    expect(r.files.size).toBeGreaterThan(0);
    const full = [...r.files.values()].find((t) => t.includes("Imported from all_full-example.odcs.yaml"))!;
    expect(full).toContain("metric: nullValues");
    expect(r.diagnostics.some((d) => d.code === "CA3604" && d.location?.file === "all_full-example.odcs.yaml")).toBe(true);
  });
});
