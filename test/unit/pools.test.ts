import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { mergeConfigs, poolFor, runSettingsFor, type OrchestrationConfig } from "../../compiler/link/config.js";
import { compileProject, type CompileResult } from "../../compiler/pipeline.js";
import { isGeneratedPools, renderPools } from "../../compiler/render/renderPools.js";
import { copyBundledProject, temporaryRoots } from "./helpers.js";

/** The one-slot pool of the contracts on a DuckDB file, and generated/pools.json (ADR 0030). */

const CONFIG = path.join("orchestration", "airflow", "sources", "config.yaml");

function config(fields: Partial<OrchestrationConfig>): OrchestrationConfig {
  return { ...mergeConfigs([]).config, ...fields };
}

describe("the DuckDB pool", () => {
  it("is a contract's on a DuckDB file unless an override of its domain or id sets a pool", () => {
    const c = config({
      defaults: { pool: "default_pool" },
      overrides: [
        { match: { domain: "finance" }, pool: "month_end", location: undefined as never },
        { match: { contract: "crm.accounts" }, warehouse_conn_id: "warehouse", location: undefined as never },
      ],
    });
    const pool = (id: string): string | undefined => poolFor(c, id, id.split(".")[0]!, runSettingsFor(c, id, id.split(".")[0]!));
    expect(pool("sales.orders")).toBe("contract_assets_duckdb");
    expect(pool("finance.ledger")).toBe("month_end");
    expect(pool("crm.accounts")).toBe("default_pool");
    // a server warehouse for all: the config's pool, none when it sets none
    const server = config({ defaults: { warehouse_conn_id: "warehouse" } });
    expect(poolFor(server, "sales.orders", "sales", runSettingsFor(server, "sales.orders", "sales"))).toBeUndefined();
    // warehouse.dialect duckdb: every Connection is a DuckDB file
    const duck = config({ defaults: { warehouse_conn_id: "warehouse", pool: "default_pool" }, warehouse: { dialect: "duckdb", location: undefined as never } });
    expect(poolFor(duck, "sales.orders", "sales", runSettingsFor(duck, "sales.orders", "sales"))).toBe("contract_assets_duckdb");
  });

  it("is defined in pools.json in the format `airflow pools import` reads, which write tells from a user's file", () => {
    const text = renderPools(config({ defaults: {} }))!;
    const pools = JSON.parse(text) as Record<string, { slots: number; description: string; include_deferred: boolean }>;
    expect(Object.keys(pools)).toEqual(["contract_assets_duckdb"]);
    expect(pools.contract_assets_duckdb!.slots).toBe(1);
    expect(pools.contract_assets_duckdb!.include_deferred).toBe(false);
    expect(isGeneratedPools(text)).toBe(true);
    expect(renderPools(config({ defaults: { warehouse_conn_id: "warehouse" } }))).toBeUndefined();
    expect(isGeneratedPools('{"etl": {"slots": 4, "description": "ours"}}')).toBe(false);
    expect(isGeneratedPools("{}")).toBe(false);
    expect(isGeneratedPools("not json")).toBe(false);
  });
});

describe("generated/pools.json", () => {
  const { adopt } = temporaryRoots("ca-pools-unused-");
  const compile = (root: string, splice: boolean): CompileResult => compileProject(defaultLayout(root), { write: "write", ...(splice ? { cache: true, splice: true } : {}) });
  const onDuckdb = (root: string): void => {
    const file = path.join(root, CONFIG);
    const text = fs.readFileSync(file, "utf8");
    const next = text.replace("  warehouse_conn_id: warehouse\n", "");
    expect(next).not.toBe(text);
    fs.writeFileSync(file, next);
  };

  it("stays through a splice (ADR 0022), which compiles changed contracts under the same config", async () => {
    const warm = copyBundledProject();
    const cold = copyBundledProject();
    adopt(warm, cold);
    onDuckdb(warm);
    onDuckdb(cold);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    compile(warm, true);
    expect(fs.existsSync(path.join(warm, "generated", "pools.json"))).toBe(true);
    const file = path.join("contracts", "crm", fs.readdirSync(path.join(warm, "contracts", "crm")).filter((f) => f.endsWith(".yaml")).sort()[0]!);
    for (const root of [warm, cold]) fs.appendFileSync(path.join(root, file), "# a comment\n");
    const spliced = compile(warm, true);
    const whole = compile(cold, false);
    expect(spliced.cache?.splice).toMatchObject({ changed: 1 });
    expect(spliced.diagnostics).toEqual(whole.diagnostics);
    expect(fs.readFileSync(path.join(warm, "generated", "pools.json"), "utf8")).toBe(fs.readFileSync(path.join(cold, "generated", "pools.json"), "utf8"));
  });

  it("of the user's is left alone, with a warning (CA9002)", () => {
    const root = copyBundledProject();
    adopt(root);
    compile(root, false);
    const theirs = '{"etl": {"slots": 4, "description": "ours", "include_deferred": false}}\n';
    fs.writeFileSync(path.join(root, "generated", "pools.json"), theirs);
    const result = compile(root, false);
    expect(result.diagnostics.filter((d) => d.code === "CA9002").map((d) => d.message)).toEqual([
      '"generated/pools.json" has no generated header and was left untouched; move hand-written files out of generated/',
    ]);
    expect(fs.readFileSync(path.join(root, "generated", "pools.json"), "utf8")).toBe(theirs);
  });
});
