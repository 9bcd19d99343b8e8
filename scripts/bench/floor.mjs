#!/usr/bin/env node
// The floor of a compile: read and YAML-parse the same files the compiler reads, and nothing else.
//
//   node scripts/bench/floor.mjs ROOT
//
// Same discovery (contracts/ and orchestration/airflow/sources/, *.yaml and *.yml, names starting
// with "." skipped), same reader (UTF-8, fatal on bad bytes) and the same YAML options as
// compiler/parse/parseContracts.ts (YAML 1.2, core schema, unique keys, strict, no merge keys),
// through the public `YAML.parse`. Prints one JSON line: files, bytes, documents.

import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";

const YAML_OPTIONS = { version: "1.2", schema: "core", uniqueKeys: true, prettyErrors: false, strict: true, merge: false, intAsBigInt: false };

function listYaml(dir, out) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    if (e.name.startsWith(".")) continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) listYaml(p, out);
    else if (e.isFile() && /\.ya?ml$/i.test(e.name)) out.push(p);
  }
  return out;
}

const root = path.resolve(process.argv[2] ?? ".");
const files = [...listYaml(path.join(root, "contracts"), []), ...listYaml(path.join(root, "orchestration", "airflow", "sources"), [])];
const decoder = new TextDecoder("utf-8", { fatal: true });
let bytes = 0;
let documents = 0;
for (const file of files) {
  const raw = fs.readFileSync(file);
  bytes += raw.length;
  const value = YAML.parse(decoder.decode(raw), YAML_OPTIONS);
  if (value !== null && typeof value === "object") documents++;
}
process.stdout.write(JSON.stringify({ files: files.length, bytes, documents }) + "\n");
