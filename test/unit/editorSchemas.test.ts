import fs from "node:fs";
import path from "node:path";
import AjvModule from "ajv";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
// @ts-expect-error: a JavaScript module of the repository's scripts, without types.
import { EDITOR_DIR, buildEditorSchemas } from "../../scripts/editor-schemas.mjs";
import { REPO } from "./helpers.js";

const Ajv = AjvModule as unknown as typeof AjvModule.default;
const build = buildEditorSchemas as (repo?: string) => Map<string, string>;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Every field of a schema: [JSON pointer, the field's schema], except the fields an `if` only tests. */
function fields(node: Json, pointer = ""): Array<[string, { [key: string]: Json }]> {
  if (node === null || typeof node !== "object") return [];
  if (Array.isArray(node)) return node.flatMap((n, i) => fields(n, `${pointer}/${i}`));
  const out: Array<[string, { [key: string]: Json }]> = [];
  for (const [key, value] of Object.entries(node)) {
    if (key === "if") continue;
    if (key === "properties" && value && typeof value === "object" && !Array.isArray(value)) {
      for (const [name, field] of Object.entries(value)) {
        if (field && typeof field === "object" && !Array.isArray(field) && Object.keys(field).some((k) => !["const", "enum", "not"].includes(k))) {
          out.push([`${pointer}/properties/${name}`, field]);
        }
        // A field's own schema, never the map of names as if it were one (a field may be called "properties").
        out.push(...fields(field, `${pointer}/properties/${name}`));
      }
      continue;
    }
    out.push(...fields(value, `${pointer}/${key}`));
  }
  return out;
}

describe("editor JSON Schemas", () => {
  const built = build(REPO);

  it("are committed as scripts/editor-schemas.mjs builds them from the schemas and docs/contract-format.md", () => {
    const committed = fs.readdirSync(path.join(REPO, EDITOR_DIR as string)).map((f) => `${EDITOR_DIR as string}/${f}`).sort();
    expect(committed).toEqual([...built.keys()].sort());
    for (const [file, text] of built) expect(fs.readFileSync(path.join(REPO, file), "utf8"), `${file}: run node scripts/editor-schemas.mjs`).toBe(text);
  });

  it("give every field a description and a markdownDescription", () => {
    let count = 0;
    for (const [file, text] of built) {
      for (const [pointer, field] of fields(JSON.parse(text) as Json)) {
        count++;
        expect(typeof field.description === "string" && field.description.length > 0, `${file}#${pointer} description`).toBe(true);
        expect(typeof field.markdownDescription === "string" && field.markdownDescription.length > 0, `${file}#${pointer} markdownDescription`).toBe(true);
      }
    }
    expect(count).toBeGreaterThan(150);
  });

  it("take each description from the field's row of docs/contract-format.md", () => {
    const transform = JSON.parse(built.get(`${EDITOR_DIR as string}/transform-contract.schema.json`)!) as { properties: Record<string, { description: string }>; definitions: Record<string, { properties: Record<string, { description: string; markdownDescription: string }> }> };
    expect(transform.properties.on_failure!.description).toBe("what an error-severity quality failure does; carried to the runtime — type: block_publish | quarantine | warn; required: no; default: block_publish");
    expect(transform.definitions.qualityRule!.properties.mustBeBetween!.markdownDescription).toContain("none or two: CA3030");
    const doc = fs.readFileSync(path.join(REPO, "docs", "contract-format.md"), "utf8");
    expect(doc).toContain("| `on_failure` | `block_publish` \\| `quarantine` \\| `warn` | no | `block_publish` | what an `error`-severity quality failure does; carried to the runtime |");
  });

  it("accept and refuse what the compiler's schemas accept and refuse", () => {
    const ajv = new Ajv({ allErrors: true, strict: true, discriminator: true, allowUnionTypes: true });
    ajv.addKeyword({ keyword: "x-expected", schemaType: "string" });
    ajv.addKeyword({ keyword: "markdownDescription", schemaType: "string" });
    const validators = new Map([...built].map(([file, text]) => [path.basename(file, ".schema.json"), ajv.compile(JSON.parse(text) as object)]));
    const kinds: Record<string, string> = { IngestionContract: "ingestion-contract", TransformContract: "transform-contract", ExternalAssets: "external-assets", OrchestrationConfig: "orchestration-config" };
    const documents: string[] = [];
    const walk = (d: string): void => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const full = path.join(d, e.name);
        if (e.isDirectory()) walk(full);
        else if (/\.ya?ml(\.hbs)?$/.test(e.name)) documents.push(full);
      }
    };
    for (const folder of ["contracts", "orchestration/airflow/sources", "templates/init"]) walk(path.join(REPO, folder));
    let checked = 0;
    for (const file of documents) {
      const document = parse(fs.readFileSync(file, "utf8").replace("{{schemaPath}}", "x")) as { kind?: string };
      const validate = validators.get(kinds[document.kind ?? ""] ?? "");
      if (!validate) continue;
      checked++;
      expect(validate(document), `${file}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(validate({ ...document, unknown_field: 1 }), file).toBe(false);
    }
    expect(checked).toBeGreaterThanOrEqual(15);
  });
});
