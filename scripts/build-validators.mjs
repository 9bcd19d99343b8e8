// Writes the precompiled JSON Schema validators (ajv standalone code) of every schema set the
// compiler validates with into dist/validators, after `tsc` has built dist/ (`npm run build`,
// `prepare`). A module is used only while its digest matches the installed schemas and ajv
// (compiler/support/schemaValidators.ts, ADR 0017l), so a stale one is never used.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { PRECOMPILED_DIR, standaloneSource } = await import(path.join(root, "dist/compiler/support/schemaValidators.js"));
const { SCHEMA_SETS } = await import(path.join(root, "dist/compiler/validate/schemas.js"));

const dir = path.join(root, ...PRECOMPILED_DIR.split("/"));
fs.mkdirSync(dir, { recursive: true });
const names = new Set(SCHEMA_SETS.map((set) => `${set.name}.cjs`));
// A module of a set that no longer exists is removed, not left to be found.
for (const file of fs.readdirSync(dir)) if (!names.has(file)) fs.rmSync(path.join(dir, file));
for (const set of SCHEMA_SETS) {
  const file = path.join(dir, `${set.name}.cjs`);
  // Written beside and renamed, so a killed build never leaves half a module.
  fs.writeFileSync(`${file}.tmp`, standaloneSource(set));
  fs.renameSync(`${file}.tmp`, file);
}
