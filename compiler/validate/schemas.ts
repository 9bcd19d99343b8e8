import { readPackageFile } from "../support/package-root.js";
import AjvModule, { type ErrorObject, type ValidateFunction } from "ajv";

/**
 * The versioned JSON Schemas of the contract format (compiler/schemas/v1), compiled once with ajv.
 * `x-expected` is our own annotation: the words a pattern error shows instead of the regex.
 */
// Schemas are read from the sources (compiler/schemas), also when running from dist/.
const Ajv = AjvModule as unknown as typeof AjvModule.default;

/** A document kind with a schema; `DataContract` is an ODCS v3 document, checked before it is read (docs/odcs.md). */
export type SchemaKind = "IngestionContract" | "TransformContract" | "ExternalAssets" | "OrchestrationConfig" | "DataContract";

const FILES: Record<SchemaKind, string> = {
  IngestionContract: "ingestion-contract",
  TransformContract: "transform-contract",
  ExternalAssets: "external-assets",
  OrchestrationConfig: "orchestration-config",
  DataContract: "odcs-contract",
};

let ajv: InstanceType<typeof Ajv> | undefined;
const compiled = new Map<SchemaKind, ValidateFunction>();

/** The package files of every schema a validator is compiled from (POSIX, package-relative): what the cache's fingerprint covers. */
export const SCHEMA_FILES: readonly string[] = ["common", ...Object.values(FILES)].map((name) => `compiler/schemas/v1/${name}.schema.json`);

function schemaJson(name: string): object {
  return JSON.parse(readPackageFile(`compiler/schemas/v1/${name}.schema.json`)) as object;
}

/**
 * The ajv validator of one document kind, compiled on first use of that kind, then cached: a
 * compile whose documents all come with their verdict from the incremental cache but one (an
 * edited contract) compiles one schema, not five.
 */
export function validatorFor(kind: SchemaKind): ValidateFunction {
  let validate = compiled.get(kind);
  if (!validate) {
    if (!ajv) {
      ajv = new Ajv({ allErrors: true, verbose: true, strict: true, discriminator: true, allowUnionTypes: true });
      ajv.addKeyword({ keyword: "x-expected", schemaType: "string" });
      ajv.addSchema(schemaJson("common"));
    }
    validate = ajv.compile(schemaJson(FILES[kind]));
    compiled.set(kind, validate);
  }
  return validate;
}

export type { ErrorObject };
