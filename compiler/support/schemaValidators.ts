import { createHash } from "node:crypto";
import type { Options, ValidateFunction } from "ajv";
import { dependencyVersion, readPackageFile, requireDependency, requirePackageFile } from "./package-root.js";

type Ajv = InstanceType<typeof import("ajv").default>;
// ajv's compiler and code generator, loaded only when a schema is compiled at run time or at build time.
const ajvClass = (dialect: SchemaSet["dialect"]): typeof import("ajv").default => (requireDependency(dialect === "2020-12" ? "ajv/dist/2020" : "ajv") as { default: typeof import("ajv").default }).default;
const standaloneCode = (): typeof import("ajv/dist/standalone/index.js").default => (requireDependency("ajv/dist/standalone") as { default: typeof import("ajv/dist/standalone/index.js").default }).default;

/**
 * JSON Schemas of the compiler's package checked with one ajv instance: its options, its
 * annotation keywords, the schemas it holds for `$ref`s, and the schemas it validates with, each by
 * an export name. Everything that makes the validators' code is data here, so the digest of a set
 * ({@link schemaSetDigest}) changes whenever the code ajv would generate for it can change.
 */
export interface SchemaSet {
  /** The precompiled module's name: `dist/validators/<name>.cjs` ({@link PRECOMPILED_DIR}). */
  readonly name: string;
  /** `draft-07`: ajv's default class; `2020-12`: `ajv/dist/2020` (JSON Schema 2020-12). */
  readonly dialect: "draft-07" | "2020-12";
  /** ajv options (JSON values only; `code` is ajv's to set). */
  readonly options: Readonly<Options>;
  /** Keywords of our own that only annotate (no validation), with the type of their value. */
  readonly keywords: readonly { readonly keyword: string; readonly schemaType: "string" }[];
  /** Package files (POSIX, package-relative) of the schemas added for `$ref`s (`addSchema`). */
  readonly shared: readonly string[];
  /** Export name → package file of a schema validated with; each schema has an `$id`. */
  readonly validators: Readonly<Record<string, string>>;
}

/** Package-relative folder of the precompiled validators, written by `scripts/build-validators.mjs` (`npm run build`, `prepare`). */
export const PRECOMPILED_DIR = "dist/validators";

/** A validator by export name: precompiled when its module is current, else compiled with ajv on first use. */
export type Validators = (name: string) => ValidateFunction;

/** The package files of a set's schemas, shared ones first (what a cache's fingerprint covers). */
export function schemaSetFiles(set: SchemaSet): string[] {
  return [...set.shared, ...Object.values(set.validators)];
}

/**
 * sha256 (hex) of everything the generated code of `set` depends on: ajv's installed version, the
 * dialect, options and keywords, and each schema file's text (read by `read`, the package files by
 * default). A precompiled module carries the digest it was generated for, and is used only while
 * the digest of the installed schemas and ajv is the same.
 */
export function schemaSetDigest(set: SchemaSet, read: (file: string) => string = readPackageFile): string {
  const inputs = {
    ajv: dependencyVersion("ajv"),
    dialect: set.dialect,
    options: set.options,
    keywords: set.keywords,
    shared: set.shared.map((file) => [file, read(file)]),
    validators: Object.entries(set.validators).map(([name, file]) => [name, file, read(file)]),
  };
  return createHash("sha256").update(JSON.stringify(inputs)).digest("hex");
}

function newAjv(set: SchemaSet, source: boolean, read: (file: string) => string): Ajv {
  const options: Options = source ? { ...set.options, code: { source: true } } : { ...set.options };
  const ajv = new (ajvClass(set.dialect))(options);
  for (const k of set.keywords) ajv.addKeyword({ keyword: k.keyword, schemaType: k.schemaType });
  for (const file of set.shared) ajv.addSchema(JSON.parse(read(file)) as object);
  return ajv;
}

/**
 * The CommonJS module of `set`'s validators, ajv's standalone code (`ajv/dist/standalone`, one
 * export per validator name) followed by `exports.digest`, the {@link schemaSetDigest} it was
 * generated for. Generated at build time; the validators are those `ajv.compile` makes at run time
 * with the same options (ajv documents standalone code as the same validation code, written out).
 */
export function standaloneSource(set: SchemaSet, read: (file: string) => string = readPackageFile): string {
  const ajv = newAjv(set, true, read);
  const refs: Record<string, string> = {};
  for (const [name, file] of Object.entries(set.validators)) {
    const schema = JSON.parse(read(file)) as { $id?: unknown };
    if (typeof schema.$id !== "string") throw new Error(`${file}: a precompiled schema needs an $id`);
    ajv.addSchema(schema as object);
    refs[name] = schema.$id;
  }
  return `${standaloneCode()(ajv, refs)}\nexports.digest = ${JSON.stringify(schemaSetDigest(set, read))};\n`;
}

/**
 * The validators of a precompiled module's `exports` when its digest is `digest` and it exports
 * every validator of `set`; undefined otherwise (a module of other schemas, another ajv, or none):
 * a stale module is never used.
 */
export function acceptPrecompiled(set: SchemaSet, exports: unknown, digest: string): Record<string, ValidateFunction> | undefined {
  if (exports === null || typeof exports !== "object") return undefined;
  const module = exports as Record<string, unknown>;
  if (module.digest !== digest) return undefined;
  const out: Record<string, ValidateFunction> = {};
  for (const name of Object.keys(set.validators)) {
    if (typeof module[name] !== "function") return undefined;
    out[name] = module[name] as ValidateFunction;
  }
  return out;
}

/** A package module's exports, or undefined when it is absent or does not load (a damaged build). */
function loadModule(relative: string): unknown {
  try {
    return requirePackageFile(relative);
  } catch {
    return undefined;
  }
}

/** The validators of `set`, each compiled with ajv on its first use (the run-time path; one ajv instance for the set). */
export function compiledValidators(set: SchemaSet): Validators {
  let ajv: Ajv | undefined;
  const compiled = new Map<string, ValidateFunction>();
  return (name) => {
    let validate = compiled.get(name);
    if (!validate) {
      const file = set.validators[name];
      if (file === undefined) throw new Error(`${set.name}: no validator ${name}`);
      ajv ??= newAjv(set, false, readPackageFile);
      validate = ajv.compile(JSON.parse(readPackageFile(file)) as object);
      compiled.set(name, validate);
    }
    return validate;
  };
}

/**
 * The validators of `set`: from its precompiled module (`dist/validators/<name>.cjs`) when that
 * module is current ({@link acceptPrecompiled}), else {@link compiledValidators}, so a run from the
 * TypeScript sources after a schema edit, or a package built without the module, validates as
 * the schema now says, only slower. Nothing is read until the first call.
 */
export function schemaValidators(set: SchemaSet): Validators {
  let chosen: Validators | undefined;
  return (name) => {
    if (!chosen) {
      const precompiled = acceptPrecompiled(set, loadModule(`${PRECOMPILED_DIR}/${set.name}.cjs`), schemaSetDigest(set));
      chosen = precompiled
        ? (n) => {
            const validate = precompiled[n];
            if (!validate) throw new Error(`${set.name}: no validator ${n}`);
            return validate;
          }
        : compiledValidators(set);
    }
    return chosen(name);
  };
}
