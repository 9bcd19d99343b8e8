import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import YAML from "yaml";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { compileProject } from "../../compiler/pipeline.js";

const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "..");
const CONFIG = fs.readFileSync(path.join(REPO, "test", "cases", "_base", "orchestration", "airflow", "sources", "config.yaml"), "utf8");

/** A project root holding the given contract documents (as YAML) and the base config. */
function project(documents: Record<string, unknown>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-prop-"));
  fs.mkdirSync(path.join(root, "orchestration", "airflow", "sources"), { recursive: true });
  fs.writeFileSync(path.join(root, "orchestration", "airflow", "sources", "config.yaml"), CONFIG);
  for (const [rel, doc] of Object.entries(documents)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), YAML.stringify(doc, { version: "1.2" }));
  }
  return root;
}

// Any Unicode, including control characters, quotes, backslashes and lone surrogates.
const text = fc.string({ unit: "binary", maxLength: 40 });
// Text Airflow stores in text columns may hold anything but NUL (refused with a located error).
const columnText = text.filter((s) => !s.includes("\u0000"));
const tag = fc.string({ unit: "binary", minLength: 0, maxLength: 30 }).filter((s) => !s.includes("\u0000"));
const jsonLeaf = fc.oneof(text, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null));
const extra = fc.dictionary(text.filter((k) => !["contract_id", "contract_version", "external", "freshness", "layer", "owner", "schema_version", "__proto__"].includes(k)), fc.oneof(jsonLeaf, fc.array(jsonLeaf, { maxLength: 3 })), { maxKeys: 4 });

function contract(fields: { description: string; owner: string; tags: string[]; extra: Record<string, unknown> }): Record<string, unknown> {
  return {
    apiVersion: "contract-assets/v1",
    kind: "TransformContract",
    id: "sales.orders_clean",
    version: "1.0.0",
    domain: "sales",
    owner: fields.owner,
    description: fields.description,
    tags: fields.tags,
    producer: { type: "python", entrypoint: "jobs.orders:build" },
    trigger: { cron: "0 3 * * *", timezone: "UTC" },
    datasets: [{ name: "orders_clean", extra: fields.extra, schema: { version: 1, properties: [{ name: "order_id", logicalType: "string", description: fields.description }] } }],
  };
}

/**
 * Reads the values back the way Python sees them: py_compile under LANG=C, then `ast.literal_eval`
 * of the DAG keyword arguments and the Asset extra, printed as ASCII JSON.
 */
const READ_BACK = String.raw`
import ast, json, py_compile, sys
out = []
for path in sys.argv[1:]:
    py_compile.compile(path, doraise=True)
    raw = open(path, "rb").read()
    assert all(b < 128 for b in raw), path
    tree = ast.parse(raw.decode("ascii"))
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("DAG", "Asset"):
            for kw in node.keywords:
                if kw.arg in ("description", "tags", "extra"):
                    found[kw.arg] = ast.literal_eval(kw.value)
                if kw.arg == "default_args":
                    found["owner"] = ast.literal_eval(kw.value.values[0])
    out.append(found)
print(json.dumps(out, ensure_ascii=True))
`;

function readBack(files: string[]): Array<Record<string, unknown>> {
  const stdout = execFileSync("python3", ["-c", READ_BACK, ...files], { env: { ...process.env, LANG: "C", LC_ALL: "C", PYTHONIOENCODING: "ascii" }, encoding: "utf8" });
  return JSON.parse(stdout) as Array<Record<string, unknown>>;
}

describe("code generation cannot be subverted", () => {
  it("free text of any Unicode stays data: ASCII modules that compile under LANG=C and read back equal", () => {
    const samples = fc.sample(fc.record({ description: columnText.filter((s) => s !== ""), owner: columnText.filter((s) => s.trim() !== ""), tags: fc.array(tag, { maxLength: 4 }), extra }), { numRuns: 60, seed: 20261129 });
    const modules: string[] = [];
    const expected: Array<Record<string, unknown>> = [];
    for (const fields of samples) {
      const root = project({ "contracts/sales/orders_clean.yaml": contract(fields) });
      const result = compileProject(defaultLayout(root));
      expect(result.diagnostics.filter((d) => d.severity === "error"), JSON.stringify(fields)).toEqual([]);
      const module = path.join(root, "module.py");
      fs.writeFileSync(module, result.files!.get("generated/dags/sales/orders_clean.py")!);
      modules.push(module);
      // What the YAML parser reads is the truth the module must carry.
      const yamlValue = YAML.parse(fs.readFileSync(path.join(root, "contracts/sales/orders_clean.yaml"), "utf8"), { version: "1.2" }) as ReturnType<typeof contract>;
      const dataset = (yamlValue.datasets as Array<{ extra: Record<string, unknown> }>)[0]!;
      expected.push({ description: yamlValue.description, tags: yamlValue.tags, owner: yamlValue.owner, extraSubset: dataset.extra });
    }
    const actual = readBack(modules);
    actual.forEach((found, i) => {
      const want = expected[i]!;
      expect(found.description).toEqual(want.description);
      expect(found.tags).toEqual(want.tags);
      expect(found.owner).toEqual(want.owner);
      expect(found.extra).toMatchObject(JSON.parse(JSON.stringify(want.extraSubset)) as object);
    });
  });

  it("arbitrary valid contract graphs never crash and compile deterministically", () => {
    const graph = fc.array(fc.record({ reads: fc.array(fc.nat(), { maxLength: 4 }), shape: fc.constantFrom("all", "any", "tree", "cron+assets", "inlet") }), { minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(graph, (nodes) => {
        const docs: Record<string, unknown> = {};
        nodes.forEach((node, i) => {
          const reads = [...new Set(node.reads.filter(() => i > 0).map((r) => r % i))].map((r) => `d${r % 3}.n${r}`);
          const upstreams = reads.map((asset, k) => ({ asset, ...(node.shape === "inlet" && k === 0 ? { trigger: false } : {}) }));
          const triggering = upstreams.filter((u) => !("trigger" in u)).map((u) => u.asset);
          let trigger: unknown = triggering.length ? undefined : { cron: "0 3 * * *", timezone: "UTC" };
          if (triggering.length >= 2 && node.shape === "any") trigger = { assets: "any" };
          if (triggering.length >= 3 && node.shape === "tree") trigger = { assets: { all: [{ any: triggering.slice(0, 2) }, ...triggering.slice(2)] } };
          if (triggering.length >= 1 && node.shape === "cron+assets") trigger = { assets: "all", cron: "0 4 * * *", timezone: "Europe/Berlin" };
          docs[`contracts/d${i % 3}/n${i}.yaml`] = {
            apiVersion: "contract-assets/v1",
            kind: "TransformContract",
            id: `d${i % 3}.n${i}`,
            version: "1.0.0",
            domain: `d${i % 3}`,
            owner: "team",
            producer: { type: "python", entrypoint: "jobs.x:run" },
            ...(upstreams.length ? { upstreams } : {}),
            ...(trigger ? { trigger } : {}),
            datasets: [{ name: `n${i}`, schema: { version: 1, properties: [{ name: "id", logicalType: "integer" }] } }],
          };
        });
        const root = project(docs);
        const first = compileProject(defaultLayout(root));
        expect(first.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
        const second = compileProject(defaultLayout(root), { reorder: (f) => [...f].reverse() });
        expect([...second.files!]).toEqual([...first.files!]);
        expect(first.manifest!.dags).toHaveLength(nodes.length);
      }),
      { numRuns: 40, seed: 7 },
    );
  });
});
