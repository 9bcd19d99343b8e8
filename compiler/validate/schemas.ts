import type { ErrorObject, ValidateFunction } from "ajv";
import { MANIFEST_SCHEMAS } from "../discover/manifestSchema.js";
import { schemaSetFiles, schemaValidators, type SchemaSet } from "../support/schemaValidators.js";

/**
 * The versioned JSON Schemas of the contract format (compiler/schemas/v1), checked with ajv.
 * `x-expected` is our own annotation: the words a pattern error shows instead of the regex.
 */

/** A document kind with a schema; `DataContract` is an ODCS v3 document, checked before it is read (docs/odcs.md). */
export type SchemaKind = "IngestionContract" | "TransformContract" | "ExternalAssets" | "OrchestrationConfig" | "DataContract";

const FILES: Record<SchemaKind, string> = {
  IngestionContract: "ingestion-contract",
  TransformContract: "transform-contract",
  ExternalAssets: "external-assets",
  OrchestrationConfig: "orchestration-config",
  DataContract: "odcs-contract",
};

/**
 * The contract schemas with their ajv options: every error (`allErrors`) with its schema and data
 * (`verbose`, read by mapSchemaErrors), strict mode, OpenAPI's `discriminator`, union types, and
 * `x-expected`; `common.schema.json` holds the definitions the others `$ref`.
 */
export const CONTRACT_SCHEMAS: SchemaSet = {
  name: "contracts",
  dialect: "draft-07",
  options: { allErrors: true, verbose: true, strict: true, discriminator: true, allowUnionTypes: true },
  keywords: [{ keyword: "x-expected", schemaType: "string" }],
  shared: ["compiler/schemas/v1/common.schema.json"],
  validators: Object.fromEntries(Object.entries(FILES).map(([kind, name]) => [kind, `compiler/schemas/v1/${name}.schema.json`])),
};

/** Every set of schemas the compiler validates with, as `scripts/build-validators.mjs` precompiles them into `dist/validators` (ADR 0017l). */
export const SCHEMA_SETS: readonly SchemaSet[] = [CONTRACT_SCHEMAS, ...Object.values(MANIFEST_SCHEMAS)];

/** The package files of every schema a validator is made from (POSIX, package-relative): what the cache's fingerprint covers. */
export const SCHEMA_FILES: readonly string[] = schemaSetFiles(CONTRACT_SCHEMAS);

const validators = schemaValidators(CONTRACT_SCHEMAS);

/**
 * The ajv validator of one document kind: precompiled at build time (`dist/validators/contracts.cjs`)
 * when that module was generated from the schemas installed now, else compiled on first use of the
 * kind, then cached (a compile whose documents all come with their verdict from the incremental
 * cache but one compiles one schema, not five). Either way the same validation and error objects.
 */
export function validatorFor(kind: SchemaKind): ValidateFunction {
  return validators(kind);
}

export type { ErrorObject };
