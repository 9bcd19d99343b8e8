import { spawnSync } from "node:child_process";
import os from "node:os";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../../compiler/cli.js";
import { stageCase } from "../golden/golden.js";
import { cli, copyBundledProject, mtimes, REPO, snapshot } from "./helpers.js";

describe("contract-assets CLI", () => {
  it("prints its version and help", () => {
    const version = cli(["--version"]);
    expect(version.status).toBe(0);
    expect(version.stdout.trim()).toBe(JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")).version);
    const help = cli(["--help"]);
    expect(help.status).toBe(0);
    for (const command of ["compile", "validate", "graph", "explain"]) expect(help.stdout).toContain(command);
  });

  it("exits 2 on a usage error", () => {
    expect(cli(["compile", "--no-such-flag"]).status).toBe(2);
    expect(cli(["graph", "--format", "svg"]).status).toBe(2);
  });

  it("compiles from any directory with --root, and a second compile rewrites nothing", () => {
    const root = copyBundledProject();
    const first = cli(["compile", "--root", root], "/");
    expect(first.status, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/compiled 16 DAGs and 27 assets: 18 written, 0 deleted, 0 unchanged/);
    const before = mtimes(path.join(root, "generated"));
    const second = cli(["compile"], root);
    expect(second.status).toBe(0);
    expect(second.stderr).toMatch(/0 written, 0 deleted, 18 unchanged/);
    expect(mtimes(path.join(root, "generated"))).toEqual(before);
    // The committed output is exactly what compile writes.
    expect(snapshot(path.join(root, "generated"))).toEqual(snapshot(path.join(REPO, "generated")));
  });

  it("compile --check writes nothing and lists what differs", () => {
    const root = copyBundledProject();
    const missing = cli(["compile", "--check", "--root", root]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('error CA9001: "generated/manifest.json" is missing');
    expect(fs.existsSync(path.join(root, "generated"))).toBe(false);

    expect(cli(["compile", "--root", root]).status).toBe(0);
    expect(cli(["compile", "--check", "--root", root]).status).toBe(0);
    const module = path.join(root, "generated", "dags", "finance", "invoices_curated.py");
    fs.appendFileSync(module, "# hand edit\n");
    const edited = cli(["compile", "--check", "--root", root]);
    expect(edited.status).toBe(1);
    expect(edited.stderr).toContain('"generated/dags/finance/invoices_curated.py" is out of date');
    expect(fs.readFileSync(module, "utf8")).toMatch(/# hand edit\n$/);
  });

  it("on an input error changes nothing in generated/ and exits 1", () => {
    const root = copyBundledProject();
    expect(cli(["compile", "--root", root]).status).toBe(0);
    const before = snapshot(path.join(root, "generated"));
    const times = mtimes(path.join(root, "generated"));
    const file = path.join(root, "contracts", "finance", "invoices_curated.yaml");
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(/^owner: .*$/m, "owner: [broken"));
    fs.writeFileSync(path.join(root, "contracts", "finance", "new.yaml"), "kind: TransformContract\n");
    const r = cli(["compile", "--root", root]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/contracts\/finance\/invoices_curated\.yaml:\d+:\d+: error CA2001/);
    expect(r.stderr).toMatch(/contracts\/finance\/new\.yaml:1:1: error CA3003/);
    expect(snapshot(path.join(root, "generated"))).toEqual(before);
    expect(mtimes(path.join(root, "generated"))).toEqual(times);
  });

  it("deletes generated modules of removed contracts, never hand-written files", () => {
    const root = copyBundledProject();
    expect(cli(["compile", "--root", root]).status).toBe(0);
    const own = path.join(root, "generated", "dags", "notes.py");
    fs.writeFileSync(own, "print('mine')\n");
    fs.rmSync(path.join(root, "contracts", "revrec", "close_summary.yaml"));
    const r = cli(["compile", "--root", root]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/1 deleted/);
    expect(r.stderr).toContain('warning CA9002: "generated/dags/notes.py" has no generated header');
    expect(fs.existsSync(path.join(root, "generated", "dags", "revrec", "close_summary.py"))).toBe(false);
    expect(fs.readFileSync(own, "utf8")).toBe("print('mine')\n");
  });

  it("prints diagnostics as JSON with --format json and masks secrets", () => {
    const root = copyBundledProject();
    const file = path.join(root, "contracts", "billing", "invoices_raw.yaml");
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(/uri: "?s3:\/\/([^"\s,}]+)"?/, 'uri: "s3://loader:hunter2@$1"'));
    const r = cli(["validate", "--format", "json", "--root", root]);
    expect(r.status).toBe(1);
    const body = JSON.parse(r.stdout) as { diagnostics: Array<{ code: string; location: { file: string; line: number; column: number } }>; errors: number };
    expect(body.errors).toBe(1);
    expect(body.diagnostics[0]!.code).toBe("CA3015");
    expect(body.diagnostics[0]!.location.file).toBe("contracts/billing/invoices_raw.yaml");
    expect(r.stdout + r.stderr).not.toContain("hunter2");
    const text = cli(["validate", "--root", root]);
    expect(text.stderr).not.toContain("hunter2");
    expect(fs.existsSync(path.join(root, "generated"))).toBe(false);
  });

  it("explains an asset in words, and suggests a name for a typo", () => {
    const r = cli(["explain", "finance.billings_by_contract"]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("producer: DAG finance.billings_by_contract (active), contract contracts/finance/billings_by_contract.yaml");
    expect(r.stdout).toContain('runs: when ("billing.credit_notes_raw" or "finance.invoices_curated") and "finance.contracts_curated" have new events');
    expect(r.stdout).toMatch(/consumers:\n {4}- revrec\.monthly \(triggered by it;/);
    const typo = cli(["explain", "finance.billings_by_contrac"]);
    expect(typo.status).toBe(1);
    expect(typo.stderr).toContain('did you mean "finance.billings_by_contract"?');
  });

  it("prints the graph as mermaid, dot and json", () => {
    const json = JSON.parse(cli(["graph", "--format", "json"]).stdout) as { nodes: unknown[]; edges: Array<{ from: string; to: string; via: string }> };
    expect(json.nodes).toHaveLength(27);
    expect(json.edges).toContainEqual({ from: "fx.rates_daily", to: "finance.contracts_curated", via: "finance.contracts_curated" });
    expect(cli(["graph"]).stdout).toMatch(/^flowchart LR\n/);
    expect(cli(["graph", "--format", "dot"]).stdout).toMatch(/^digraph assets \{/);
  });

  it("runCli (the golden command cases) prints byte for byte what the bin prints", async () => {
    // A small before/after case with an error: diagnostics, a diff report and failing commands.
    const root = stageCase(path.join(REPO, "test", "cases", "rename-consumer"));
    for (const args of [["validate"], ["diff", "--format", "json"], ["diff", "--format", "github"], ["graph", "--format", "yaml"]]) {
      const bin = cli([...args, "--root", root]);
      const inProcess = await runCli([...args, "--root", root]);
      expect({ exitCode: inProcess.exitCode, stdout: inProcess.stdout, stderr: inProcess.stderr }, args.join(" ")).toEqual({ exitCode: bin.status, stdout: bin.stdout, stderr: bin.stderr });
    }
  });
});

describe("init's next line", () => {
  it("works when pasted into a shell, whatever the folder is called (spaces, quotes, $, ;, a leading -)", async () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), "ca-init-"));
    try {
      for (const name of ["my contracts", "it's \"ours\" $HOME `x`; ls & *", "-n dash"]) {
        const r = await runCli(["init", "--root", base, "--", name]);
        expect(r.exitCode, r.stderr).toBe(0);
        const line = r.stdout.split("\n").find((l) => l.startsWith("next: "))!;
        const cd = /^next: (cd .*?) && npm install /.exec(line);
        expect(cd, line).not.toBeNull();
        // The shell runs the printed `cd` from where the command ran and lands in the new repository.
        const shell = spawnSync("sh", ["-c", `${cd![1]} && pwd -P`], { cwd: process.cwd(), encoding: "utf8" });
        expect(shell.stderr).toBe("");
        expect(shell.stdout.trim()).toBe(fs.realpathSync(path.join(base, name)));
      }
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });
});
