import type { ValidateFunction } from "ajv";
import { MANIFEST_VERSION, type Manifest } from "../model/manifest.js";
import { readPackageFile } from "../support/package-root.js";
import { schemaValidators, type SchemaSet, type Validators } from "../support/schemaValidators.js";

/** Project-relative path of the manifest JSON Schema of each `manifestVersion` this compiler knows. */
/**
 * Version 2 is what this compiler writes; version 1 is read as a previous state (an upgraded
 * project's committed manifest, ADR 0017f).
 */
export const MANIFEST_SCHEMA_FILES: Readonly<Record<number, string>> = {
  1: "compiler/schemas/manifest/v1.schema.json",
  2: "compiler/schemas/manifest/v2.schema.json",
};

/** The manifest schema of each version with its ajv options (JSON Schema 2020-12, every error, strict, union types): one validator, `validate`. */
export const MANIFEST_SCHEMAS: Readonly<Record<number, SchemaSet>> = Object.fromEntries(
  Object.entries(MANIFEST_SCHEMA_FILES).map(([version, file]) => [
    version,
    { name: `manifest-v${version}`, dialect: "2020-12", options: { allErrors: true, strict: true, allowUnionTypes: true }, keywords: [], shared: [], validators: { validate: file } } satisfies SchemaSet,
  ]),
);

const validators = new Map<number, Validators>();

/** The manifest JSON Schema of `version` (default: the one this compiler writes; the object, read from the sources). */
export function manifestSchema(version: number = MANIFEST_VERSION): Record<string, unknown> {
  return JSON.parse(readPackageFile(MANIFEST_SCHEMA_FILES[version]!)) as Record<string, unknown>;
}

/** The validator of the manifest schema of `version`: precompiled at build time when current (`dist/validators/manifest-v<N>.cjs`), else compiled on first use. */
function manifestValidator(version: number): ValidateFunction {
  let of = validators.get(version);
  if (!of) validators.set(version, (of = schemaValidators(MANIFEST_SCHEMAS[version]!)));
  return of("validate");
}

/**
 * The deepest a manifest's objects and arrays may nest (the root object is level 1): twice what a
 * contract document may (64, CA2015, `MAX_DOCUMENT_DEPTH`), so every manifest this compiler writes
 * passes; a deeper one was edited or made by something else, and would overflow the stack of the
 * stages that walk the previous state (ADR 0019).
 */
export const MAX_MANIFEST_DEPTH = 128;

/**
 * Whether an object or array of `value` nests deeper than `limit` (the root is level 1). The
 * recursion stops there, so it is `limit` + 1 calls deep at most. Where it is, the text says
 * (`readManifest.ts`: the place in text order, which `JSON.parse`'s key order is not).
 */
function nestsDeeperThan(value: unknown, limit: number): boolean {
  const visit = (v: unknown, depth: number): boolean => {
    if (v === null || typeof v !== "object") return false;
    if (depth > limit) return true;
    for (const item of Array.isArray(v) ? v : Object.values(v)) if (visit(item, depth + 1)) return true;
    return false;
  };
  return visit(value, 1);
}

/**
 * Checks a parsed manifest against the manifest schema of `version` (`compiler/schemas/manifest/v<N>.schema.json`;
 * ajv, JSON Schema 2020-12). Returns the manifest, or the first problem as `<JSON pointer>: <message>` (the path of
 * the offending field, like the runtime's check names it) with that `pointer`. A version-1
 * manifest is returned as it is (the caller upgrades it, `manifest/manifestV1.ts`). A value
 * nested deeper than {@link MAX_MANIFEST_DEPTH} is refused first, before ajv walks it (`tooDeep`).
 */
export function checkManifest(
  value: unknown,
  version: number = MANIFEST_VERSION,
): { manifest: Manifest; problem?: undefined; pointer?: undefined } | { manifest?: undefined; problem: string; pointer: string; tooDeep?: true } {
  if (nestsDeeperThan(value, MAX_MANIFEST_DEPTH)) return { problem: `nested deeper than ${MAX_MANIFEST_DEPTH} levels, which no manifest this compiler writes is`, pointer: "", tooDeep: true };
  const check = manifestValidator(version);
  if (check(value)) return { manifest: value as Manifest };
  const errors = check.errors ?? [];
  // The deepest error names the field at fault; at one depth, an `if`/`then` error or an
  // unevaluated-properties error is only the echo of the failed branch that the other one names.
  const echo = (keyword: string): number => (keyword === "if" ? 0 : keyword === "unevaluatedProperties" ? 1 : 2);
  const score = (e: (typeof errors)[number]): number => e.instancePath.split("/").length * 3 + echo(e.keyword);
  const best = [...errors].sort((a, b) => score(b) - score(a))[0];
  if (!best) return { problem: "does not match the manifest schema", pointer: "" };
  const detail = best.keyword === "additionalProperties" || best.keyword === "unevaluatedProperties" ? `${best.message} (${JSON.stringify(Object.values(best.params)[0])})` : best.message;
  return { problem: `${best.instancePath || "/"}: ${detail}`, pointer: best.instancePath };
}
