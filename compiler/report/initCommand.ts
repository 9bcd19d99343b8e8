import fs from "node:fs";
import path from "node:path";
import Handlebars from "handlebars";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic } from "../diagnostics/diagnostic.js";
import { packageRoot } from "../support/package-root.js";
import { COMPILER_NAME, COMPILER_VERSION } from "../version.js";

/**
 * `contract-assets init [DIR]`: a new contracts repository (ADR 0018). The files come from
 * `templates/init/` of the compiler's package: a `.hbs` file is rendered with handlebars and loses
 * the suffix, every other file is copied as it is. Two names are stored without their leading dot
 * because npm leaves `.gitignore` out of a packed tarball: `gitignore` and `github/` become
 * `.gitignore` and `.github/`. `package.json` is written from code (canonical JSON, the compiler
 * pinned to this version).
 */
export const INIT_TEMPLATES = "templates/init";

/**
 * Where each contract's `yaml-language-server` modeline finds its JSON Schema, from the repository
 * root: the editor schemas, self-contained and described from docs/contract-format.md
 * (`scripts/editor-schemas.mjs`).
 */
export const SCHEMA_FOLDER = `node_modules/${COMPILER_NAME}/compiler/schemas/editor/v1`;

/** The runtime release that runs what this compiler writes: the same MAJOR.MINOR (docs/deploy.md). */
export function runtimeRequirement(version: string = COMPILER_VERSION): string {
  const [major, minor] = version.split(".");
  return `${major}.${minor}.0`;
}

/** An npm package name from a folder name: lower case, `[a-z0-9._-]`, never empty. */
export function packageNameOf(folder: string): string {
  const name = folder.toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[._-]+|-+$/g, "");
  return name === "" ? "data-contracts" : name;
}

function targetOf(templatePath: string): string {
  const renamed = templatePath.replace(/^gitignore$/, ".gitignore").replace(/^github\//, ".github/");
  return renamed.endsWith(".hbs") ? renamed.slice(0, -".hbs".length) : renamed;
}

function templateFiles(dir: string, prefix = ""): string[] {
  const out: string[] = [];
  // Sort for determinism: the files are written and reported in this order.
  const entries = fs.readdirSync(path.join(dir, prefix), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const relative = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) out.push(...templateFiles(dir, relative));
    else out.push(relative);
  }
  return out;
}

/**
 * The files of a new contracts repository, by path relative to it (POSIX), in path order.
 *
 * @param name The repository's npm package name (see `packageNameOf`).
 * @returns path → text; pure apart from reading the templates.
 */
export function scaffoldFiles(name: string): Map<string, string> {
  const dir = path.join(packageRoot(), INIT_TEMPLATES);
  const files = new Map<string, string>();
  for (const template of templateFiles(dir)) {
    const text = fs.readFileSync(path.join(dir, template), "utf8");
    const target = targetOf(template);
    // The modeline's path is relative to the contract file, as the YAML language server reads it.
    const depth = target.split("/").length - 1;
    const context = {
      name,
      version: COMPILER_VERSION,
      runtimeVersion: runtimeRequirement(),
      schemaPath: `${"../".repeat(depth)}${SCHEMA_FOLDER}`,
    };
    files.set(target, template.endsWith(".hbs") ? Handlebars.compile(text, { noEscape: true, strict: true })(context) : text);
  }
  const manifest = {
    name,
    private: true,
    description: "Data contracts compiled by contract-assets into Apache Airflow Assets and DAG modules.",
    engines: { node: ">=20" },
    scripts: { compile: "contract-assets compile", check: "contract-assets compile --check", diff: "contract-assets compile --diff" },
    devDependencies: { [COMPILER_NAME]: COMPILER_VERSION },
  };
  files.set("package.json", JSON.stringify(manifest, null, 2) + "\n");
  // Sort for determinism.
  return new Map([...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export interface InitResult {
  /** Paths written, relative to the target folder; empty when anything was refused. */
  written: string[];
  /** CA9901 for every file that exists already (then nothing is written). */
  diagnostics: Diagnostic[];
}

/**
 * Writes a new contracts repository into `target` (created when missing). Every file is checked
 * first: when any of them exists (a file, a folder or a link), nothing is written and each is
 * reported as CA9901, with its path relative to `shown` (the folder as the user named it).
 *
 * @param target Absolute path of the folder.
 * @param shown The folder as given on the command line, prefixed to reported paths ("" for the root).
 */
export function initProject(target: string, shown: string): InitResult {
  const files = scaffoldFiles(packageNameOf(path.basename(target)));
  const display = (relative: string): string => (shown === "" || shown === "." ? relative : `${shown.replace(/\/+$/, "")}/${relative}`);
  const diagnostics: Diagnostic[] = [];
  for (const relative of files.keys()) {
    let exists = false;
    try {
      fs.lstatSync(path.join(target, relative));
      exists = true;
    } catch {
      // Absent: to be written.
    }
    if (exists) diagnostics.push(createDiagnostic(Diagnostics.InitWouldOverwrite, {}, { file: display(relative), line: 1, column: 1 }));
  }
  if (diagnostics.length > 0) return { written: [], diagnostics };
  const written: string[] = [];
  for (const [relative, text] of files) {
    const full = path.join(target, relative);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    // "wx": a file that appeared since the check is still never overwritten.
    fs.writeFileSync(full, text, { flag: "wx" });
    written.push(display(relative));
  }
  return { written, diagnostics };
}
