import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { checkManifest, manifestSchema } from "../../compiler/discover/manifestSchema.js";
import { parseManifest } from "../../compiler/discover/readManifest.js";
import { LOGICAL_TYPES } from "../../compiler/model/manifest.js";
import { RUNTIME_PRODUCER_TYPES } from "../../compiler/validate/rules/ImplementedProducerRule.js";
import { REPO } from "./helpers.js";

type Schema = Record<string, unknown>;
const schema = manifestSchema() as { $defs: Record<string, Schema> };
const defs = schema.$defs;

/** Every manifest the suite holds: each golden case's expected and previous state, and the bundled one. */
/** Whether a case pins its output folder's manifest as damaged (CA1101 on it): kept as it was, never valid. */
function pinnedDamaged(caseDir: string): boolean {
  const diagnostics = path.join(caseDir, "expected", "diagnostics.txt");
  return fs.existsSync(diagnostics) && /^generated\/manifest\.json:\d+:\d+: error CA1101:/m.test(fs.readFileSync(diagnostics, "utf8"));
}

function manifests(which: "valid" | "damaged" = "valid"): string[] {
  const out = which === "valid" ? [path.join(REPO, "generated", "manifest.json")] : [];
  const cases = path.join(REPO, "test", "cases");
  for (const c of fs.readdirSync(cases)) {
    if (pinnedDamaged(path.join(cases, c)) !== (which === "damaged")) continue;
    for (const side of ["expected", "previous"]) {
      const file = path.join(cases, c, side, "generated", "manifest.json");
      if (fs.existsSync(file) && fs.statSync(file).isFile()) out.push(file);
    }
  }
  return out;
}

/** A `$defs` entry's properties and required names, following `allOf` references. */
function shapeOf(name: string): { properties: Set<string>; required: Set<string> } {
  const def = defs[name]!;
  const properties = new Set(Object.keys((def.properties as Schema | undefined) ?? {}));
  const required = new Set((def.required as string[] | undefined) ?? []);
  for (const part of (def.allOf as Schema[] | undefined) ?? []) {
    const ref = part.$ref as string | undefined;
    if (!ref) continue;
    const inner = shapeOf(ref.replace("#/$defs/", ""));
    inner.properties.forEach((p) => properties.add(p));
    inner.required.forEach((p) => required.add(p));
  }
  return { properties, required };
}

function enumOf(node: unknown): unknown[] {
  return (node as { enum: unknown[] }).enum;
}

describe("manifest schema", () => {
  it("accepts every golden manifest and the bundled one", () => {
    const files = manifests();
    expect(files.length).toBeGreaterThan(30);
    // Each against the schema of its version (a case may keep a version-1 previous state, ADR 0017f).
    for (const file of files) {
      const value = JSON.parse(fs.readFileSync(file, "utf8")) as { manifestVersion: number };
      expect(checkManifest(value, value.manifestVersion).problem, path.relative(REPO, file)).toBeUndefined();
    }
    expect(files.filter((f) => (JSON.parse(fs.readFileSync(f, "utf8")) as { manifestVersion: number }).manifestVersion === 2).length).toBeGreaterThan(30);
  });

  it("refuses the damaged previous manifests the CA1101 cases keep as they were", () => {
    const files = manifests("damaged");
    expect(files.length).toBeGreaterThanOrEqual(3);
    for (const file of files) expect(parseManifest(fs.readFileSync(file, "utf8")).problem, path.relative(REPO, file)).toBeDefined();
  });

  it("names the offending field of a damaged manifest by its path", () => {
    const bundled = JSON.parse(fs.readFileSync(path.join(REPO, "generated", "manifest.json"), "utf8")) as {
      assets: Array<{ name: string; quality: Array<Record<string, unknown>>; schema: { properties: Array<Record<string, unknown>> } | null }>;
      dags: Array<{ runtime: { producer: { type: string }; datasets: Array<Record<string, unknown> & { asset: string }> } }>;
    };
    const i = bundled.dags.findIndex((d) => d.runtime.producer.type === "sql");
    const dag = bundled.dags[i]!;
    // A dataset's schema and authored rules are its asset's (manifestVersion 2, ADR 0017f).
    const k = bundled.assets.findIndex((a) => a.name === dag.runtime.datasets[0]!.asset);
    const asset = bundled.assets[k]!;
    delete asset.quality[0]!.severity;
    expect(checkManifest(bundled).problem).toBe(`/assets/${k}/quality/0: must have required property 'severity'`);
    asset.quality[0]!.severity = "error";
    asset.schema!.properties[0]!.physicalType = "text; drop table x";
    expect(checkManifest(bundled).problem).toMatch(new RegExp(`^/assets/${k}/schema/properties/0/physicalType: must match pattern`));
    delete asset.schema!.properties[0]!.physicalType;
    // What version 1 repeated there is refused.
    dag.runtime.datasets[0]!.schema = asset.schema;
    expect(checkManifest(bundled).problem).toBe(`/dags/${i}/runtime/datasets/0: must NOT have additional properties ("schema")`);
    delete dag.runtime.datasets[0]!.schema;
    (dag.runtime as Record<string, unknown>).surprise = 1;
    expect(checkManifest(bundled).problem).toBe(`/dags/${i}/runtime: must NOT have unevaluated properties ("surprise")`);
    dag.runtime.producer.type = "spark";
    expect(checkManifest(bundled).problem).toMatch(new RegExp(`^/dags/${i}/runtime/producer/type: must be equal to one of the allowed values`));
  });

  it("is followed by the TypeScript types of compiler/model/manifest.ts, field by field", () => {
    const file = path.join(REPO, "compiler", "model", "manifest.ts");
    const program = ts.createProgram([file], { strict: true, noLib: true, types: [], noResolve: true });
    const checker = program.getTypeChecker();
    const source = program.getSourceFile(file)!;
    const exported = new Map(checker.getExportsOfModule(checker.getSymbolAtLocation(source)!).map((s) => [s.name, s]));
    const objectDefs = Object.entries(defs).filter(([n, d]) => d.type === "object" && d.properties && n !== "DagRuntime").map(([n]) => n);
    const missing = objectDefs.filter((n) => !exported.has(n));
    expect(missing, "schema $defs without a TypeScript type").toEqual([]);
    for (const name of objectDefs) {
      const type = checker.getDeclaredTypeOfSymbol(exported.get(name)!);
      const props = checker.getPropertiesOfType(type);
      const { properties, required } = shapeOf(name);
      expect(new Set(props.map((p) => p.name)), `${name}: fields`).toEqual(properties);
      const optional = new Set(props.filter((p) => (p.flags & ts.SymbolFlags.Optional) !== 0).map((p) => p.name));
      expect(new Set([...properties].filter((p) => !required.has(p))), `${name}: optional fields`).toEqual(optional);
    }
    // The union: one TypeScript member per producer type of the schema.
    const union = checker.getDeclaredTypeOfSymbol(exported.get("DagRuntime")!) as ts.UnionType;
    const variants = union.types.map((t) => {
      const producer = checker.getTypeOfSymbolAtLocation(t.getProperty("producer")!, source);
      return checker.typeToString(checker.getTypeOfSymbolAtLocation(producer.getProperty("type")!, source));
    });
    const producerTypes = enumOf((defs.DagRuntime!.properties as { producer: { properties: { type: unknown } } }).producer.properties.type) as string[];
    expect(variants.map((v) => JSON.parse(v) as string).sort()).toEqual([...producerTypes].sort());
  });

  it("pins what the compiler accepts to what the manifest carries (the runtime side: test_manifest_schema.py)", () => {
    const contract = JSON.parse(fs.readFileSync(path.join(REPO, "compiler", "schemas", "v1", "transform-contract.schema.json"), "utf8")) as { properties: { producer: { properties: { type: unknown } } } };
    const common = JSON.parse(fs.readFileSync(path.join(REPO, "compiler", "schemas", "v1", "common.schema.json"), "utf8")) as {
      definitions: { property: { properties: { logicalType: unknown; physicalType: { pattern: string } } } };
    };
    const manifestProducers = enumOf((defs.DagRuntime!.properties as { producer: { properties: { type: unknown } } }).producer.properties.type) as string[];
    // Producer types: the contract schema's, less those ImplementedProducerRule refuses, plus the ingestion modes.
    const accepted = (enumOf(contract.properties.producer.properties.type) as string[]).filter((t) => RUNTIME_PRODUCER_TYPES.includes(t));
    const ingestion = JSON.parse(fs.readFileSync(path.join(REPO, "compiler", "schemas", "v1", "ingestion-contract.schema.json"), "utf8")) as { properties: { mode: unknown } };
    expect([...accepted, ...(enumOf(ingestion.properties.mode) as string[])].sort()).toEqual([...manifestProducers].sort());
    expect(enumOf(common.definitions.property.properties.logicalType)).toEqual(enumOf(defs.LogicalType));
    expect([...LOGICAL_TYPES]).toEqual(enumOf(defs.LogicalType));
    expect(common.definitions.property.properties.physicalType.pattern).toBe((defs.Property!.properties as { physicalType: { pattern: string } }).physicalType.pattern);
  });
});
