import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { REPO } from "./helpers.js";

/**
 * The compiler as a user outside this repository gets it (issue 17, ADR 0018): `npm pack`, the
 * tarball installed into fresh folders under the system's temporary folder (no access to this
 * repository's node_modules), `init`, `compile`, and the steps of the CI workflow that `init`
 * writes, run in a temporary git repository with a base branch.
 *
 * npm installs from its cache first and asks the registry only for what the cache lacks
 * (`--prefer-offline`: package documents are not cached by `npm ci`, so a fully offline install
 * cannot resolve the dependency ranges). The tarball packs `dist/` as the build left it
 * (`npm test` runs `tsc` before vitest); `--ignore-scripts` keeps `npm pack` from rebuilding
 * `dist/` under the other suites that run the bin at the same time.
 */

const VERSION = (JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string }).version;
const NPM = process.platform === "win32" ? "npm.cmd" : "npm";

let work: string;
let tarball: string;
let packed: string[];

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(command, args, { cwd, encoding: "utf8", env: { ...process.env, NO_COLOR: "1", ...env } });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

function npmInstall(cwd: string, ...args: string[]): void {
  const r = run(NPM, ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", ...args], cwd);
  if (r.status !== 0) throw new Error(`npm install failed in ${cwd}:\n${r.stderr}`);
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "commit.gpgsign=false", ...args], { cwd, encoding: "utf8" });
}

/** The bin of the package installed in `project`. */
function bin(project: string, args: string[], cwd = project): { status: number; stdout: string; stderr: string } {
  return run(process.execPath, [path.join(project, "node_modules", "contract-assets", "bin", "contract-assets.js"), ...args], cwd);
}

function treeOf(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, e.name);
      if (e.name === "node_modules" || e.name === ".git") continue;
      if (e.isDirectory()) walk(full);
      else out.set(path.relative(dir, full).split(path.sep).join("/"), fs.readFileSync(full, "utf8"));
    }
  };
  walk(dir);
  return out;
}

beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), "ca-adoption-"));
  const r = run(NPM, ["pack", "--ignore-scripts", "--json", "--pack-destination", work], REPO);
  if (r.status !== 0) throw new Error(`npm pack failed:\n${r.stderr}`);
  const report = JSON.parse(r.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarball = path.join(work, report[0]!.filename);
  packed = report[0]!.files.map((f) => f.path).sort();
}, 120_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
}, 60_000);

describe("the compiler as an npm package", () => {
  it("packs the built compiler, its JSON Schemas and templates, and nothing of the sources or tests", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as Record<string, unknown>;
    expect(pkg.private).toBeUndefined();
    expect(pkg.bin).toEqual({ "contract-assets": "bin/contract-assets.js" });
    expect(packed).toContain("dist/compiler/cli.js");
    // The precompiled JSON Schema validators (ADR 0017l), so the installed compiler does not compile schemas.
    for (const set of ["contracts", "manifest-v1", "manifest-v2"]) expect(packed).toContain(`dist/validators/${set}.cjs`);
    expect(packed).toContain("bin/contract-assets.js");
    for (const schema of fs.readdirSync(path.join(REPO, "compiler", "schemas", "v1"))) expect(packed).toContain(`compiler/schemas/v1/${schema}`);
    expect(packed).toContain("compiler/schemas/manifest/v1.schema.json");
    expect(packed).toContain("templates/dag_module.py.hbs");
    expect(packed).toContain("templates/init/gitignore");
    // The documents the package's own files point at: the contract format, ODCS (an imported file's header), deployment (init's requirements.txt).
    for (const doc of ["contract-format.md", "odcs.md", "deploy.md"]) expect(packed).toContain(`docs/${doc}`);
    expect(packed.filter((f) => f.endsWith(".ts") || f.startsWith("test/") || f.startsWith("orchestration/") || f.endsWith(".map"))).toEqual([]);
  });

  it("installs into an empty folder without dev dependencies and compiles a contract there", () => {
    const project = path.join(work, "empty");
    fs.mkdirSync(project);
    npmInstall(project, tarball);
    const installed = fs.readdirSync(path.join(project, "node_modules"));
    expect(installed).toContain("contract-assets");
    for (const dev of ["typescript", "vitest", "vite", "fast-check", "@types"]) expect(installed).not.toContain(dev);
    const version = run(path.join(project, "node_modules", ".bin", "contract-assets"), ["--version"], project);
    expect(version.stdout.trim()).toBe(VERSION);
    // One contract of the bundled corpus, on a cron of its own (no orchestration config here).
    const text = fs.readFileSync(path.join(REPO, "contracts", "crm", "accounts_raw.yaml"), "utf8");
    expect(text).toContain("trigger: {schedule_ref: nightly}");
    fs.mkdirSync(path.join(project, "contracts", "crm"), { recursive: true });
    fs.writeFileSync(path.join(project, "contracts", "crm", "accounts_raw.yaml"), text.replace("trigger: {schedule_ref: nightly}", 'trigger: {cron: "0 2 * * *"}'));
    const compiled = bin(project, ["compile"]);
    // No config, so no warehouse_conn_id: the embedded DuckDB file, its one-slot pool and pools.json (ADR 0030).
    expect(compiled.stderr).toContain("0 error(s), 1 warning(s)\ncompiled 1 DAGs and 2 assets: 4 written");
    expect(compiled.status).toBe(0);
    const manifest = JSON.parse(fs.readFileSync(path.join(project, "generated", "manifest.json"), "utf8")) as { compiler: { version: string }; dags: Array<{ dag_id: string }> };
    expect(manifest.compiler.version).toBe(VERSION);
    expect(manifest.dags.map((d) => d.dag_id)).toEqual(["crm.accounts_raw"]);
    const module = fs.readFileSync(path.join(project, "generated", "dags", "crm", "accounts_raw.py"), "utf8");
    expect(module).toContain(`# Generated by contract-assets ${VERSION} from contracts/crm/accounts_raw.yaml.`);
    expect(module).toContain('"pool": "contract_assets_duckdb"');
    expect(Object.keys(JSON.parse(fs.readFileSync(path.join(project, "generated", "pools.json"), "utf8")) as object)).toEqual(["contract_assets_duckdb"]);
  }, 120_000);
});

describe("contract-assets init, then the CI workflow it writes", () => {
  let repo: string;

  beforeAll(() => {
    // `npx contract-assets@<version> init data-contracts` as a user would run it, from the tarball.
    const installer = path.join(work, "installer");
    fs.mkdirSync(installer);
    npmInstall(installer, tarball);
    const r = bin(installer, ["init", "data-contracts"], work);
    if (r.status !== 0) throw new Error(`init failed:\n${r.stderr}`);
    repo = path.join(work, "data-contracts");
  }, 120_000);

  it("writes a repository that pins the compiler and whose contracts name the shipped JSON Schemas", () => {
    const files = treeOf(repo);
    expect([...files.keys()].sort()).toEqual([
      ".github/workflows/contract-assets.yml",
      ".gitignore",
      "README.md",
      "contracts/sales/orders_daily.yaml",
      "contracts/sales/orders_raw.yaml",
      "orchestration/airflow/sources/config.yaml",
      "orchestration/sample_data/shop/orders.csv",
      "package.json",
      "requirements.txt",
      "sql/sales/orders_daily.sql",
    ]);
    const pkg = JSON.parse(files.get("package.json")!) as { name: string; devDependencies: Record<string, string> };
    expect(pkg.name).toBe("data-contracts");
    expect(pkg.devDependencies).toEqual({ "contract-assets": VERSION });
    const [major, minor] = VERSION.split(".");
    expect(files.get("requirements.txt")).toContain(`contract-runtime~=${major}.${minor}.0`);
    // Installed as package.json pins it (here: the tarball, since the version is not published).
    npmInstall(repo, "--no-save", tarball);
    for (const [file, schema] of [
      ["contracts/sales/orders_raw.yaml", "ingestion-contract"],
      ["contracts/sales/orders_daily.yaml", "transform-contract"],
      ["orchestration/airflow/sources/config.yaml", "orchestration-config"],
    ] as const) {
      const first = files.get(file)!.split("\n")[0]!;
      const match = /^# yaml-language-server: \$schema=(\S+)$/.exec(first);
      expect(match, first).not.toBeNull();
      const target = path.resolve(path.dirname(path.join(repo, file)), match![1]!);
      expect(path.relative(repo, target).split(path.sep).join("/")).toBe(`node_modules/contract-assets/compiler/schemas/editor/v1/${schema}.schema.json`);
      const shipped = JSON.parse(fs.readFileSync(target, "utf8")) as { properties: Record<string, { markdownDescription?: string }> };
      expect(shipped.properties.apiVersion?.markdownDescription).toContain("any other value: CA2008");
    }
  }, 120_000);

  it("compiles, and refuses a second init naming the file it would overwrite", () => {
    const compiled = bin(repo, ["compile"]);
    expect(compiled.status, compiled.stderr).toBe(0);
    // The init config names no warehouse Connection: the DuckDB pool's pools.json is the fifth file (ADR 0030).
    expect(compiled.stderr).toBe("compiled 2 DAGs and 3 assets: 5 written, 0 deleted, 0 unchanged\n");
    expect(fs.existsSync(path.join(repo, "generated", "pools.json"))).toBe(true);
    const before = treeOf(repo);
    const again = bin(repo, ["init"]);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain('package.json:1:1: error CA9901: the file exists already; init overwrites no file, so nothing was written');
    expect(treeOf(repo)).toEqual(before);
    // Only one file in the way: still nothing written.
    const partial = path.join(work, "partial");
    fs.mkdirSync(path.join(partial, "sql", "sales"), { recursive: true });
    fs.writeFileSync(path.join(partial, "sql", "sales", "orders_daily.sql"), "select 1\n");
    const refused = bin(repo, ["init", partial]);
    expect(refused.status).toBe(1);
    expect(refused.stderr.trim().split("\n")).toEqual([
      `${partial}/sql/sales/orders_daily.sql:1:1: error CA9901: the file exists already; init overwrites no file, so nothing was written`,
      "1 error(s), 0 warning(s)",
    ]);
    expect([...treeOf(partial).keys()]).toEqual(["sql/sales/orders_daily.sql"]);
  }, 120_000);

  it("runs the workflow's check and diff steps on a pull request branch", () => {
    const workflow = parse(fs.readFileSync(path.join(repo, ".github", "workflows", "contract-assets.yml"), "utf8")) as {
      jobs: Record<string, { steps: Array<{ name?: string; run?: string }> }>;
    };
    const steps = Object.values(workflow.jobs)[0]!.steps;
    const script = (name: string): string => {
      const step = steps.find((s) => s.name === name);
      expect(step?.run, name).toBeDefined();
      // Runs as GitHub runs it (bash -e); a step with an expression would need Actions to expand it.
      expect(step!.run).not.toContain("${{");
      return step!.run!;
    };
    const checkStep = script("Generated files are up to date");
    const diffStep = script("What this change does to the asset graph");
    const origin = path.join(work, "origin.git");
    execFileSync("git", ["init", "-q", "--bare", "-b", "main", origin]);
    git(repo, "init", "-q", "-b", "main");
    git(repo, "add", "-A");
    git(repo, "commit", "-qm", "contracts from init");
    git(repo, "remote", "add", "origin", origin);
    git(repo, "push", "-q", "origin", "main");
    git(repo, "fetch", "-q", "origin");
    git(repo, "checkout", "-q", "-b", "add-channel");

    const step = (body: string): { status: number; stdout: string; stderr: string; output: string; summary: string } => {
      const output = path.join(work, "github-output");
      const summary = path.join(work, "github-summary");
      fs.writeFileSync(output, "");
      fs.writeFileSync(summary, "");
      const r = run("bash", ["-e", "-c", body], repo, { GITHUB_BASE_REF: "main", GITHUB_OUTPUT: output, GITHUB_STEP_SUMMARY: summary, PATH: `${path.join(repo, "node_modules", ".bin")}${path.delimiter}${process.env.PATH}` });
      return { ...r, output: fs.readFileSync(output, "utf8"), summary: fs.readFileSync(summary, "utf8") };
    };

    // An additive change with its minor bump, but generated/ not recompiled: the check fails.
    const contract = path.join(repo, "contracts", "sales", "orders_raw.yaml");
    const original = fs.readFileSync(contract, "utf8");
    const added = original
      .replace('version: "1.0.0"', 'version: "1.1.0"')
      .replace("        - {name: currency, logicalType: string, required: true}\n", "        - {name: currency, logicalType: string, required: true}\n        - {name: channel, logicalType: string}\n");
    expect(added).not.toBe(original);
    fs.writeFileSync(contract, added);
    const stale = step(checkStep);
    expect(stale.status).toBe(1);
    expect(stale.stdout).toMatch(/^::error file=generated\/manifest\.json,line=1,col=1,title=CA9001::/m);

    // Recompiled and committed: the check passes and the diff reports the added property, no failure.
    expect(bin(repo, ["compile"]).status).toBe(0);
    git(repo, "add", "-A");
    git(repo, "commit", "-qm", "orders_raw: channel");
    expect(step(checkStep).status).toBe(0);
    const additive = step(diffStep);
    expect(additive.output).toBe("status=0\n");
    expect(additive.summary).toContain("### contract-assets diff against `main`");
    expect(additive.summary).toContain('safe      PROPERTY_ADDED   the property "channel" is added to "sales.orders_raw"');
    expect(fs.readFileSync(path.join(repo, "report.md"), "utf8")).toBe(additive.summary);

    // A rename the consumer does not follow: an error annotation at the consumer's upstream line.
    fs.writeFileSync(contract, added.replace('version: "1.1.0"', 'version: "2.0.0"').replace("  - name: orders_raw\n", "  - name: orders_landed\n"));
    fs.rmSync(path.join(repo, "report.md"));
    const breaking = step(diffStep);
    expect(breaking.output).toBe("status=1\n");
    const consumer = fs.readFileSync(path.join(repo, "contracts", "sales", "orders_daily.yaml"), "utf8").split("\n");
    const line = consumer.findIndex((l) => l.includes("{asset: sales.orders_raw}")) + 1;
    expect(line).toBeGreaterThan(1);
    expect(breaking.stdout).toMatch(new RegExp(`^::error file=contracts/sales/orders_daily\\.yaml,line=${line},col=\\d+,title=CA\\d{4}::`, "m"));
  }, 180_000);
});
