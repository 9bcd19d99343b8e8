import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CHANGE_RULES } from "../../compiler/diff/changeRules.js";
import { diffManifests } from "../../compiler/diff/diffManifests.js";
import type { Manifest } from "../../compiler/manifest/buildManifest.js";
import { cli, copyBundledProject, REPO } from "./helpers.js";

const CASES = path.join(REPO, "test", "cases");

function caseReports(): string[] {
  return fs
    .readdirSync(CASES)
    .map((n) => path.join(CASES, n, "expected", "changes.json"))
    .filter((p) => fs.existsSync(p))
    .map((p) => fs.readFileSync(p, "utf8"));
}

describe("diff", () => {
  it("has rules as data: unique SCREAMING_SNAKE ids, a one-sentence purpose, a severity", () => {
    const ids = CHANGE_RULES.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const r of CHANGE_RULES) {
      expect(r.id).toMatch(/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/);
      expect(r.purpose).toMatch(/^[A-Z].*\.$/);
      expect(["breaking", "dangerous", "safe"]).toContain(r.severity);
      expect(["breaking", "non-breaking", "metadata-only"]).toContain(r.category);
      expect(["asset", "consumer", "contract"]).toContain(r.about);
    }
  });

  it("lists every change rule in ARCHITECTURE.md with its side, severity and category", () => {
    const doc = fs.readFileSync(path.join(REPO, "ARCHITECTURE.md"), "utf8");
    for (const r of CHANGE_RULES) {
      expect(doc, r.id).toContain(`| \`${r.id}\` | ${r.about} | ${r.severity} | ${r.category}${r.additive ? " (additive)" : ""} | ${r.purpose} |`);
    }
  });

  it("has a golden case for every change rule", () => {
    const reports = caseReports().join("\n");
    const missing = CHANGE_RULES.map((r) => r.id).filter((id) => !reports.includes(`"rule": "${id}"`));
    expect(missing).toEqual([]);
  });

  it("gives the same report whatever the order of assets and DAGs in either manifest", () => {
    const previous = JSON.parse(fs.readFileSync(path.join(REPO, "generated", "manifest.json"), "utf8")) as Manifest;
    const current: Manifest = JSON.parse(JSON.stringify(previous)) as Manifest;
    // A few real changes to report.
    current.assets = current.assets.filter((a) => a.name !== "revrec.close_summary");
    current.assets[0]!.uri = "s3://moved/elsewhere";
    current.assets[1]!.extra = { ...current.assets[1]!.extra, owner: "someone-else" };
    const expected = diffManifests(previous, current);
    expect(expected.changes.length).toBeGreaterThan(2);
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const shuffle = <T>(xs: T[]): T[] => {
          const out = [...xs];
          let s = seed;
          for (let i = out.length - 1; i > 0; i--) {
            s = (s * 1103515245 + 12345) & 0x7fffffff;
            const j = s % (i + 1);
            [out[i], out[j]] = [out[j]!, out[i]!];
          }
          return out;
        };
        const p = { ...previous, assets: shuffle(previous.assets), dags: shuffle(previous.dags), edges: shuffle(previous.edges) };
        const c = { ...current, assets: shuffle(current.assets), dags: shuffle(current.dags), edges: shuffle(current.edges) };
        expect(diffManifests(p, c)).toEqual(expected);
      }),
      { numRuns: 25, seed: 1 },
    );
  });

  it("diff --against reads the manifest at a Git ref of a real repository", () => {
    const root = copyBundledProject();
    const git = (...args: string[]): string =>
      execFileSync("git", ["-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgsign=false", ...args], { cwd: root, encoding: "utf8" });
    git("init", "-q", "-b", "main");
    expect(cli(["compile", "--root", root]).status).toBe(0);
    git("add", "-A");
    git("commit", "-qm", "baseline");
    // The working tree drops a contract that a consumer still reads.
    fs.rmSync(path.join(root, "contracts", "finance", "contracts_curated.yaml"));
    const text = cli(["diff", "--against", "HEAD", "--root", root]);
    expect(text.status).toBe(1);
    expect(text.stdout).toMatch(/breaking +CONSUMER_UPSTREAM_REMOVED +"finance\.contracts_curated" is removed but "finance\.billings_by_contract", "revrec\.monthly" still read it/);
    const json = JSON.parse(cli(["diff", "--against", "HEAD", "--format", "json", "--root", root]).stdout) as { diff: { summary: Record<string, number> } };
    expect(json.diff.summary.breaking).toBe(1);
    const github = cli(["diff", "--against", "HEAD", "--format", "github", "--root", root]).stdout;
    expect(github).toMatch(/^::error file=contracts\/finance\/billings_by_contract\.yaml,line=\d+,col=\d+,title=CONSUMER_UPSTREAM_REMOVED::/m);
    // Nothing was written, and the committed manifest still equals the working one.
    expect(git("status", "--porcelain")).toBe(" D contracts/finance/contracts_curated.yaml\n");
    const unknown = cli(["diff", "--against", "no-such-ref", "--root", root]);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toMatch(/error CA7002: cannot read the previous manifest "no-such-ref:generated\/manifest\.json"/);
  });

  it("does not call the assets of a contract that fails validation removed", () => {
    const root = copyBundledProject();
    expect(cli(["compile", "--root", root]).status).toBe(0);
    const file = path.join(root, "contracts", "finance", "billings_by_contract.yaml");
    fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace(/^owner: .*$/m, "owner: [unclosed"));
    const r = cli(["compile", "--diff", "--root", root]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/billings_by_contract\.yaml:\d+:\d+: error CA2001/);
    expect(r.stderr).not.toContain("CA7001");
    expect(r.stdout).not.toContain("billings_by_contract\" is removed");
  });

  it("compile fails at the version line on a breaking change under the same major, and writes nothing", () => {
    const root = copyBundledProject();
    expect(cli(["compile", "--root", root]).status).toBe(0);
    const before = fs.readFileSync(path.join(root, "generated", "manifest.json"), "utf8");
    const file = path.join(root, "contracts", "finance", "billings_by_contract.yaml");
    // Drop the property and the producer's own rule on it. The consumer revrec.monthly has rules on
    // a contract_id column too, but of its own dataset: they do not read the upstream's property;
    // its pin of schema version 1 does.
    const edited = fs
      .readFileSync(file, "utf8")
      .replace(/\n\s+- \{name: contract_id, logicalType: string[^\n]*/, "")
      .replace(/\n\s+- \{metric: nullValues, column: contract_id[^\n]*/, "");
    fs.writeFileSync(file, edited);
    // billings_by_contract is a dbt model: its declared columns must follow the contract (CA4408)
    const dbtManifest = path.join(root, "dbt", "finance", "manifest.json");
    const parsed = JSON.parse(fs.readFileSync(dbtManifest, "utf8"));
    delete parsed.nodes["model.finance_models.billings_by_contract"].columns.contract_id;
    fs.writeFileSync(dbtManifest, JSON.stringify(parsed));
    const r = cli(["compile", "--diff", "--root", root]);
    expect(r.stderr).toMatch(/contracts\/finance\/billings_by_contract\.yaml:4:10: error CA7701: the contract "finance\.billings_by_contract" makes a breaking change under version 1\.2\.0 \(was 1\.2\.0\): PROPERTY_REMOVED: the property "contract_id" of "finance\.billings_by_contract" is removed; a breaking change needs a major version \(2\.0\.0\)/);
    expect(r.stderr).toMatch(/contracts\/revrec\/monthly\.yaml:21:13: error CA7001: breaking change CONSUMER_PINNED_SCHEMA_CHANGED: the schema of "finance\.billings_by_contract" changed under version 1 \("contract_id" removed\) but "revrec\.monthly" pins that version/);
    expect(r.stdout).not.toContain("CONSUMER_RULE_NAMES_REMOVED_PROPERTY");
    expect(r.status).toBe(1);
    expect(fs.readFileSync(path.join(root, "generated", "manifest.json"), "utf8")).toBe(before);
    // A major version and a new schema version the consumer pins acknowledge it: the compile goes
    // through and says so.
    fs.writeFileSync(file, edited.replace(/^version: "1\.2\.0"$/m, 'version: "2.0.0"').replace(/^(    schema:\n      version:) 1$/m, "$1 2"));
    const monthly = path.join(root, "contracts", "revrec", "monthly.yaml");
    fs.writeFileSync(monthly, fs.readFileSync(monthly, "utf8").replace("{asset: finance.billings_by_contract, schema_version: 1}", "{asset: finance.billings_by_contract, schema_version: 2}"));
    const acknowledged = cli(["compile", "--diff", "--root", root]);
    expect(acknowledged.status).toBe(0);
    expect(acknowledged.stdout).toMatch(/^dangerous VERSION_BREAKING_ACKNOWLEDGED +the contract "finance\.billings_by_contract" makes a breaking change, acknowledged by the major version 2\.0\.0 \(was 1\.2\.0\)/m);
  });
});
