import Handlebars from "handlebars";
import { listPackageFiles, readPackageFile } from "../support/package-root.js";
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

/**
 * One word for a POSIX shell (sh, bash, zsh), as typed: a word of only `[A-Za-z0-9_./:,+@%=-]`
 * as it is; any other in single quotes, each `'` written `'\''` (nothing is special inside single
 * quotes, so spaces, `$`, `` ` ``, `"`, `\`, `*`, `;`, `&`, `~` and newlines stay themselves); a
 * word starting with `-` gets `./` in front when it is a relative path, so `cd` does not read it as
 * an option.
 *
 * @param word Any text, e.g. a folder name; empty gives `''`.
 * @returns The word quoted so that the shell gives back exactly `word`.
 */
export function shellQuote(word: string, options: { path?: boolean } = {}): string {
  const text = options.path && word.startsWith("-") ? `./${word}` : word;
  if (/^[A-Za-z0-9_./:,+@%=-]+$/.test(text)) return text;
  return `'${text.replace(/'/g, "'\\''")}'`;
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

/**
 * The files of a new contracts repository, by path relative to it (POSIX), in path order.
 *
 * @param name The repository's npm package name (see `packageNameOf`).
 * @returns path → text; pure apart from reading the templates (package files).
 */
export function scaffoldFiles(name: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const template of listPackageFiles(INIT_TEMPLATES)) {
    const text = readPackageFile(`${INIT_TEMPLATES}/${template}`);
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
