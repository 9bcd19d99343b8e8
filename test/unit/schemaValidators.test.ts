import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import type { ValidateFunction } from "ajv";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { checkManifest } from "../../compiler/discover/manifestSchema.js";
import { readPackageFile } from "../../compiler/support/package-root.js";
import { acceptPrecompiled, compiledValidators, schemaSetDigest, standaloneSource, type SchemaSet } from "../../compiler/support/schemaValidators.js";
import { CONTRACT_SCHEMAS, SCHEMA_FILES, SCHEMA_SETS } from "../../compiler/validate/schemas.js";
import { REPO } from "./helpers.js";

/** Files below `dir` whose names end with `suffix`, sorted. */
function filesUnder(dir: string, suffix: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: false }) as string[])
    .filter((f) => f.endsWith(suffix))
    .map((f) => path.join(dir, f))
    .sort();
}

// Every contract, config and ODCS document of the golden cases and the repository's own project,
// valid and invalid ones (what the cases are about), as the parse stage hands them over.
const documents: unknown[] = [
  ...fs.readdirSync(path.join(REPO, "test", "cases")).flatMap((c) => filesUnder(path.join(REPO, "test", "cases", c, "input"), ".yaml")),
  ...filesUnder(path.join(REPO, "contracts"), ".yaml"),
  ...filesUnder(path.join(REPO, "orchestration", "airflow", "sources"), ".yaml"),
].flatMap((file) => {
  try {
    return YAML.parseAllDocuments(fs.readFileSync(file, "utf8"), { version: "1.2" }).map((d) => d.toJS() as unknown);
  } catch {
    return [];
  }
});
// Manifests of both versions: written ones and the cases' damaged previous states, but those
// nested too deep for any validator to be given them (`checkManifest` refuses them first, ADR 0019).
const manifests: unknown[] = [...filesUnder(path.join(REPO, "test", "cases"), "manifest.json"), path.join(REPO, "generated", "manifest.json")].flatMap((file) => {
  try {
    const value = JSON.parse(fs.readFileSync(file, "utf8")) as unknown;
    return checkManifest(value).tooDeep ? [] : [value];
  } catch {
    return [];
  }
});

let dir: string;
const precompiled = new Map<string, Record<string, ValidateFunction>>();

beforeAll(() => {
  // Generated as the build generates them, loaded as the package loads them (ajv's run-time
  // helpers resolved from the package's node_modules).
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "ca-validators-"));
  fs.symlinkSync(path.join(REPO, "node_modules"), path.join(dir, "node_modules"));
  for (const set of SCHEMA_SETS) {
    const file = path.join(dir, `${set.name}.cjs`);
    fs.writeFileSync(file, standaloneSource(set));
    const module = createRequire(file)(file) as unknown;
    const accepted = acceptPrecompiled(set, module, schemaSetDigest(set));
    expect(accepted, set.name).toBeDefined();
    precompiled.set(set.name, accepted!);
  }
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** What ajv says of `value`: the verdict and the error objects (verbose ones hold schema, parentSchema and data). */
function verdict(validate: ValidateFunction, value: unknown): { valid: boolean; errors: unknown } {
  const valid = validate(value) as boolean;
  return { valid, errors: validate.errors ?? null };
}

/** `value` with one change at the place `steps` lead to: a value replaced, a key deleted or an unknown key added. */
function mutate(value: unknown, steps: number[], op: "replace" | "delete" | "add", replacement: unknown): unknown {
  const copy = structuredClone(value);
  let holder: unknown = copy;
  for (const step of steps) {
    if (holder === null || typeof holder !== "object") break;
    const keys = Object.keys(holder);
    if (keys.length === 0) break;
    const key = keys[step % keys.length]!;
    const child = (holder as Record<string, unknown>)[key];
    if (child === null || typeof child !== "object" || step % 3 === 0) {
      // An array's or a typed array's (a YAML !!binary) element is replaced, never deleted: a
      // typed array's cannot be (TypeError).
      if (op === "delete" && !Array.isArray(holder) && !ArrayBuffer.isView(holder)) delete (holder as Record<string, unknown>)[key];
      else if (op === "add") (holder as Record<string, unknown>)[Array.isArray(holder) ? String(keys.length) : `x_${key}`] = replacement;
      else (holder as Record<string, unknown>)[key] = replacement;
      return copy;
    }
    holder = child;
  }
  return copy;
}

function compareOn(set: SchemaSet, values: unknown[], runs: number): void {
  const atRunTime = compiledValidators(set);
  const loaded = precompiled.get(set.name)!;
  for (const name of Object.keys(set.validators)) {
    for (const value of values) expect(verdict(loaded[name]!, value), `${set.name} ${name}`).toStrictEqual(verdict(atRunTime(name), value));
  }
  const names = Object.keys(set.validators);
  fc.assert(
    fc.property(
      fc.constantFrom(...names),
      fc.nat(values.length - 1),
      fc.array(fc.nat(), { minLength: 1, maxLength: 6 }),
      fc.constantFrom("replace" as const, "delete" as const, "add" as const),
      fc.jsonValue({ maxDepth: 2 }),
      (name, index, steps, op, replacement) => {
        const value = mutate(values[index], steps, op, replacement);
        expect(verdict(loaded[name]!, value)).toStrictEqual(verdict(atRunTime(name), value));
      },
    ),
    { numRuns: runs },
  );
}

describe("precompiled JSON Schema validators (ajv standalone code, ADR 0017l)", () => {
  it("give the run-time compile's verdicts and error objects on every contract document and on mutations of them", () => {
    expect(documents.length).toBeGreaterThan(200);
    compareOn(CONTRACT_SCHEMAS, documents, 400);
    // Some documents fail (the cases' invalid ones), so errors are compared, not only verdicts.
    const validate = precompiled.get("contracts")!.TransformContract!;
    expect(documents.some((d) => !validate(d) && validate.errors!.some((e) => e.parentSchema !== undefined && e.data !== undefined))).toBe(true);
  });

  it("give the run-time compile's verdicts and error objects on manifests of both versions and on mutations of them", () => {
    expect(manifests.length).toBeGreaterThan(20);
    for (const set of SCHEMA_SETS.filter((s) => s !== CONTRACT_SCHEMAS)) compareOn(set, manifests, 60);
  });

  it("are refused when stale: another schema text, another set, a missing export", () => {
    for (const set of SCHEMA_SETS) {
      const module = precompiled.get(set.name)!;
      const exports = { ...module, digest: schemaSetDigest(set) };
      expect(acceptPrecompiled(set, exports, schemaSetDigest(set))).toBeDefined();
      // One byte more in one schema file: another digest, so the module is not used.
      for (const file of [...set.shared, ...Object.values(set.validators)]) {
        const edited = schemaSetDigest(set, (f) => readPackageFile(f) + (f === file ? " " : ""));
        expect(edited, file).not.toBe(schemaSetDigest(set));
        expect(acceptPrecompiled(set, exports, edited)).toBeUndefined();
      }
      // Other options are another digest too.
      expect(schemaSetDigest({ ...set, options: { ...set.options, allErrors: false } })).not.toBe(schemaSetDigest(set));
      const name = Object.keys(set.validators)[0]!;
      expect(acceptPrecompiled(set, { ...exports, [name]: undefined }, schemaSetDigest(set))).toBeUndefined();
      expect(acceptPrecompiled(set, undefined, schemaSetDigest(set))).toBeUndefined();
    }
    // The incremental cache's fingerprint still covers every contract schema file.
    expect(SCHEMA_FILES).toEqual(["compiler/schemas/v1/common.schema.json", ...Object.values(CONTRACT_SCHEMAS.validators)]);
  });
});
