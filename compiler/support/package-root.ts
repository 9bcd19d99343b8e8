import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

let cached: string | undefined;

/**
 * The folder of the compiler's own package.json (found upward from this file), so templates and
 * the version are found both from the TypeScript sources and from the built `dist/`.
 */
export function packageRoot(): string {
  if (cached) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (fs.existsSync(path.join(dir, "package.json")) && fs.existsSync(path.join(dir, "templates"))) return (cached = dir);
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("contract-assets: cannot find the package root");
    dir = parent;
  }
}

/**
 * The text of one of the compiler's own files (a template, a JSON Schema, package.json), by POSIX
 * path relative to the package root. These belong to the compiler, not to the project it compiles,
 * so reading them is not input: this and {@link packageRoot} are the only file reads outside
 * `discover` and `write` (test/unit/architecture.test.ts, ADR 0009b).
 */
export function readPackageFile(relative: string): string {
  return fs.readFileSync(path.join(packageRoot(), ...relative.split("/")), "utf8");
}

/**
 * Every file below one folder of the compiler's package (`templates/init`), as POSIX paths relative
 * to that folder, sorted by code unit. Like {@link readPackageFile}, it reads only the package.
 */
export function listPackageFiles(relative: string): string[] {
  const base = path.join(packageRoot(), ...relative.split("/"));
  const out: string[] = [];
  const walk = (prefix: string): void => {
    for (const entry of fs.readdirSync(path.join(base, ...prefix.split("/").filter(Boolean)), { withFileTypes: true })) {
      const child = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else out.push(child);
    }
  };
  walk("");
  // Sort for determinism (code units, never the locale).
  return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * The `file:` URL of one of the compiler's own files, by POSIX path relative to the package root,
 * when it exists (the compiled parse worker, `dist/compiler/parse/parseWorker.js`, which a test run
 * from the TypeScript sources finds too once `npm run build` has run).
 */
export function packageFileUrl(relative: string): URL | undefined {
  const file = path.join(packageRoot(), ...relative.split("/"));
  return fs.existsSync(file) ? pathToFileURL(file) : undefined;
}

/**
 * The exports of one of the compiler's own CommonJS modules, by POSIX path relative to the package
 * root, when it exists (the precompiled JSON Schema validators of `dist/validators`, which require
 * ajv's run-time helpers from the package's dependencies); undefined when the file is absent.
 */
export function requirePackageFile(relative: string): unknown {
  const file = path.join(packageRoot(), ...relative.split("/"));
  return fs.existsSync(file) ? createRequire(file)(file) : undefined;
}

/** The `version` of one of the compiler's dependencies, from its installed package.json. */
export function dependencyVersion(name: string): string {
  const file = createRequire(import.meta.url).resolve(`${name}/package.json`);
  return (JSON.parse(fs.readFileSync(file, "utf8")) as { version: string }).version;
}

/**
 * One of the compiler's dependencies by module specifier, loaded (CommonJS `require`) when first
 * needed instead of at start-up: ajv, whose compiler a run with current precompiled validators
 * never loads.
 */
export function requireDependency(specifier: string): unknown {
  return createRequire(import.meta.url)(specifier);
}
