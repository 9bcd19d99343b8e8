import Ajv2020Module, { type ValidateFunction } from "ajv/dist/2020.js";
import { MANIFEST_VERSION, type Manifest } from "../model/manifest.js";
import { readPackageFile } from "../support/package-root.js";

const Ajv2020 = Ajv2020Module as unknown as typeof Ajv2020Module.default;

/** Project-relative path of the manifest JSON Schema of each `manifestVersion` this compiler knows. */
/**
 * Version 2 is what this compiler writes; version 1 is read as a previous state (an upgraded
 * project's committed manifest, ADR 0017f).
 */
export const MANIFEST_SCHEMA_FILES: Readonly<Record<number, string>> = {
  1: "compiler/schemas/manifest/v1.schema.json",
  2: "compiler/schemas/manifest/v2.schema.json",
};

const compiled = new Map<number, ValidateFunction>();

/** The manifest JSON Schema of `version` (default: the one this compiler writes; the object, read from the sources). */
export function manifestSchema(version: number = MANIFEST_VERSION): Record<string, unknown> {
  return JSON.parse(readPackageFile(MANIFEST_SCHEMA_FILES[version]!)) as Record<string, unknown>;
}

/**
 * Checks a parsed manifest against the manifest schema of `version` (`compiler/schemas/manifest/v<N>.schema.json`;
 * ajv, JSON Schema 2020-12). Returns the manifest, or the first problem as `<JSON pointer>: <message>` (the path of
 * the offending field, like the runtime's check names it) with that `pointer`. A version-1
 * manifest is returned as it is (the caller upgrades it, `manifest/manifestV1.ts`).
 */
export function checkManifest(
  value: unknown,
  version: number = MANIFEST_VERSION,
): { manifest: Manifest; problem?: undefined; pointer?: undefined } | { manifest?: undefined; problem: string; pointer: string } {
  let check = compiled.get(version);
  if (!check) {
    check = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true }).compile(manifestSchema(version));
    compiled.set(version, check);
  }
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
