#!/usr/bin/env node
// The editor JSON Schemas (ADR 0018): compiler/schemas/editor/v1/<kind>.schema.json.
//
//   node scripts/editor-schemas.mjs           write them
//   node scripts/editor-schemas.mjs --check   exit 1 when a committed file differs (test/unit/editorSchemas.test.ts)
//
// Each is the compiler's schema of one document kind (compiler/schemas/v1) made self-contained for
// the YAML language server (the `urn:` references to common.schema.json become local
// `#/definitions/...`; the language server cannot resolve a urn), with a `description` and a
// `markdownDescription` on every field, taken from the field tables of docs/contract-format.md:
// that page is the one source, and a field without a row there fails the build. The compiler
// validates with compiler/schemas/v1 as before; these files only add documentation.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DOC = "docs/contract-format.md";
export const EDITOR_DIR = "compiler/schemas/editor/v1";
const COMMON_ID = "urn:contract-assets:v1:common";

/** Kinds with an editor schema: source file, and where each part of a document is documented. */
const KINDS = {
  "ingestion-contract": { contexts: "contract" },
  "transform-contract": { contexts: "contract" },
  "external-assets": { contexts: "external" },
  "orchestration-config": { contexts: "config" },
};

/**
 * Where the fields under a path prefix are documented: [prefix, heading, table index under it].
 * The longest matching prefix wins; the row's key is the rest of the path, after the optional
 * fourth element (the prefix kept in the table's keys).
 */
const CONTEXTS = {
  contract: [
    ["", "Contract fields (IngestionContract and TransformContract)", 0],
    ...["source", "landing", "incremental", "mode", "on_schema_drift"].map((field) => [field, "IngestionContract: `source`", 0, field]),
    ["producer.", "TransformContract: `producer`", 0],
    ["datasets[].", "`datasets[]`", 0],
    ["datasets[].schema.properties[].", "`datasets[]`", 1],
    ["datasets[].quality[].", "Quality rules", 0],
    ["upstreams[].", "`upstreams[]`", 0],
    ["freshness.", "Freshness", 0],
    ["processing.", "processing and PII", 0],
    ["trigger.", "Triggers", 1],
    ["partitioning.", "Partitions", 0],
  ],
  external: [
    ["", "ExternalAssets", 0],
    ["assets[].freshness.", "Freshness", 0],
  ],
  config: [
    ["", "OrchestrationConfig", 0],
    ["defaults.", "OrchestrationConfig", 1],
    ["overrides[].", "OrchestrationConfig", 1],
    ["overrides[].match", "OrchestrationConfig", 0, "overrides[]."],
  ],
};

/** Quality-rule operators share one row of the quality table. */
const OPERATOR = /^must(Not)?Be/;

function cells(line) {
  // Split a Markdown table row on unescaped pipes.
  const out = [];
  let cell = "";
  for (let i = 1; i < line.length; i++) {
    const c = line[i];
    if (c === "\\" && line[i + 1] === "|") {
      cell += "|";
      i++;
    } else if (c === "|") {
      out.push(cell.trim());
      cell = "";
    } else cell += c;
  }
  return out;
}

/** The field tables of the doc: heading → tables → {header, rows: key → cells}. */
export function readFieldTables(text) {
  const sections = new Map();
  let heading = "";
  let table;
  for (const line of text.split("\n")) {
    const h = /^#{1,6} (.*)$/.exec(line);
    if (h) {
      heading = h[1];
      table = undefined;
      continue;
    }
    if (!line.startsWith("|")) {
      table = undefined;
      continue;
    }
    const row = cells(line);
    if (!table) {
      table = { header: row, rows: new Map() };
      if (!sections.has(heading)) sections.set(heading, []);
      sections.get(heading).push(table);
      continue;
    }
    if (row.every((c) => /^-+$/.test(c))) continue;
    // "`required`, `primaryKey`, `unique`": one row, several fields.
    const keys = [...row[0].matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    for (const key of keys.length > 0 ? keys : [row[0]]) table.rows.set(key.replace(/<[^>]+>/g, "<name>"), { cells: row, heading });
  }
  return sections;
}

function plain(markdown) {
  return markdown.replace(/\[([^\]]+)\]\([^)]+\)/g, "$1").replace(/`/g, "").replace(/\*\*/g, "");
}

/** The description pair of one documented row. */
function describe(row, header) {
  const meaning = row.cells[row.cells.length - 1] ?? "";
  const facts = [];
  for (let i = 1; i < row.cells.length - 1; i++) {
    if (row.cells[i] !== "") facts.push(`${header[i]}: ${row.cells[i]}`);
  }
  // Links inside the page mean nothing in a hover: their text stays.
  const lead = [meaning, facts.join("; ")].filter((p) => p !== "").join(" — ").replace(/\[([^\]]+)\]\(#[^)]*\)/g, "$1");
  return {
    description: plain(lead),
    markdownDescription: `${lead}\n\n${DOC}, section "${row.heading}"`,
  };
}

function tableOf(sections, heading, index) {
  for (const [name, tables] of sections) if (name.startsWith(heading) && tables[index]) return tables[index];
  throw new Error(`${DOC}: no table ${index} under a heading "${heading}"`);
}

/** The documented row of a field path (`datasets[].schema.version`), or undefined. */
function rowFor(sections, contexts, fieldPath) {
  const context = contexts
    .filter(([prefix]) => fieldPath.startsWith(prefix))
    .sort((a, b) => b[0].length - a[0].length)[0];
  const [prefix, heading, index, keep] = context;
  const table = tableOf(sections, heading, index);
  let key = (keep ?? "") + fieldPath.slice(prefix.length);
  if (heading === "Quality rules" && OPERATOR.test(key)) key = "operator";
  // A field without a row of its own is described by the nearest documented parent; a mapping
  // documented only through its fields (`lineage.namespace`) by its first documented field.
  const exact = key;
  for (;;) {
    const row = table.rows.get(key);
    if (row) return { row, header: table.header };
    const cut = Math.max(key.lastIndexOf("."), key.lastIndexOf("[]"));
    if (cut <= 0) break;
    key = key.slice(0, cut);
  }
  for (const [name, row] of table.rows) if (name.startsWith(`${exact}.`) || name.startsWith(`${exact}[]`)) return { row, header: table.header };
  return undefined;
}

function inline(node) {
  if (Array.isArray(node)) return node.map(inline);
  if (node === null || typeof node !== "object") return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    out[k] = k === "$ref" && typeof v === "string" && v.startsWith(`${COMMON_ID}#`) ? v.slice(COMMON_ID.length) : inline(v);
  }
  return out;
}

/** Drops the definitions the schema never references (common.schema.json has every kind's). */
function prune(schema) {
  const used = new Set();
  const visit = (node) => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== "object") return;
    for (const [k, v] of Object.entries(node)) {
      if (k === "definitions" && node === schema) continue;
      if (k === "$ref" && typeof v === "string" && v.startsWith("#/definitions/")) {
        const name = v.slice("#/definitions/".length).split("/")[0];
        if (!used.has(name)) {
          used.add(name);
          visit(schema.definitions[name]);
        }
      } else visit(v);
    }
  };
  visit(schema);
  // Sort for determinism.
  schema.definitions = Object.fromEntries(Object.keys(schema.definitions).filter((n) => used.has(n)).sort().map((n) => [n, schema.definitions[n]]));
}

function resolve(root, ref) {
  let node = root;
  for (const part of ref.replace(/^#\//, "").split("/")) node = node[part];
  return node;
}

/**
 * Adds the descriptions to every property reachable from `node` (following local references,
 * each definition once per path), in place. Returns the field paths that have no documentation.
 */
function annotate(root, node, fieldPath, sections, contexts, missing, seen) {
  if (!node || typeof node !== "object") return;
  if (typeof node.$ref === "string") {
    if (!seen.has(node.$ref)) annotate(root, resolve(root, node.$ref), fieldPath, sections, contexts, missing, new Set([...seen, node.$ref]));
  }
  for (const key of ["allOf", "anyOf", "oneOf"]) for (const sub of node[key] ?? []) annotate(root, sub, fieldPath, sections, contexts, missing, seen);
  for (const key of ["then", "else", "if"]) if (node[key]) annotate(root, node[key], fieldPath, sections, contexts, missing, seen);
  if (node.items && typeof node.items === "object" && !Array.isArray(node.items)) annotate(root, node.items, `${fieldPath}[]`, sections, contexts, missing, seen);
  if (node.additionalProperties && typeof node.additionalProperties === "object") annotate(root, node.additionalProperties, `${fieldPath}.<name>`, sections, contexts, missing, seen);
  for (const [name, sub] of Object.entries(node.properties ?? {})) {
    const child = fieldPath === "" ? name : `${fieldPath}.${name}`;
    // An `if` branch only names fields to test them; the field itself is documented where it is declared.
    if (sub && typeof sub === "object" && Object.keys(sub).some((k) => k !== "const" && k !== "enum" && k !== "not")) {
      const found = rowFor(sections, contexts, child);
      if (!found) missing.push(child);
      else Object.assign(sub, describe(found.row, found.header));
    }
    annotate(root, sub, child, sections, contexts, missing, seen);
  }
}

/**
 * The editor schemas, by path relative to the repository: canonical JSON text.
 * Throws when a field has no row in docs/contract-format.md (name the fields).
 */
export function buildEditorSchemas(repo = REPO) {
  const sections = readFieldTables(fs.readFileSync(path.join(repo, DOC), "utf8"));
  const common = JSON.parse(fs.readFileSync(path.join(repo, "compiler/schemas/v1/common.schema.json"), "utf8"));
  const out = new Map();
  const missing = [];
  for (const [kind, { contexts }] of Object.entries(KINDS)) {
    const source = JSON.parse(fs.readFileSync(path.join(repo, `compiler/schemas/v1/${kind}.schema.json`), "utf8"));
    const schema = inline({ ...source, definitions: { ...common.definitions, ...(source.definitions ?? {}) } });
    schema.$id = `${kind}.schema.json`;
    prune(schema);
    const lost = [];
    annotate(schema, schema, "", sections, CONTEXTS[contexts], lost, new Set());
    missing.push(...lost.map((f) => `${kind}: ${f}`));
    out.set(`${EDITOR_DIR}/${kind}.schema.json`, JSON.stringify(schema, null, 2) + "\n");
  }
  if (missing.length > 0) throw new Error(`fields without a row in ${DOC}:\n  ${[...new Set(missing)].join("\n  ")}`);
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes("--check");
  let stale = 0;
  for (const [file, text] of buildEditorSchemas()) {
    const full = path.join(REPO, file);
    const current = fs.existsSync(full) ? fs.readFileSync(full, "utf8") : undefined;
    if (current === text) continue;
    if (check) {
      process.stderr.write(`${file} is stale: run "node scripts/editor-schemas.mjs"\n`);
      stale++;
    } else {
      fs.mkdirSync(path.dirname(full), { recursive: true });
      fs.writeFileSync(full, text);
      process.stdout.write(`wrote ${file}\n`);
    }
  }
  process.exitCode = stale > 0 ? 1 : 0;
}
