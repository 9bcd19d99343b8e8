import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { compileProject, type CompileResult } from "../../compiler/pipeline.js";
import { snapshot } from "../unit/helpers.js";

// The diff hides nothing that changes what runs (issue 38): whatever a project edit does, a
// compile that changed a byte of generated/ (the manifest or a DAG module) reports at least one
// change, and an edit of descriptions, tags, the owner or a comment only is reported as
// metadata-only, with no breaking change.

const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "..");

type Doc = Record<string, any>;

/** A small project as data: the orchestration config, the contract documents by path, the SQL files, comments to append. */
interface Project {
  config: Doc;
  contracts: Record<string, Doc>;
  sql: Record<string, string>;
  comments: Record<string, string[]>;
}

function baseProject(): Project {
  const config = YAML.parse(fs.readFileSync(path.join(REPO, "test", "cases", "_base", "orchestration", "airflow", "sources", "config.yaml"), "utf8")) as Doc;
  config.notifiers = { oncall: { class: "airflow.providers.smtp.notifications.smtp.SmtpNotifier", kwargs: { to: "oncall@example.invalid" } } };
  config.freshness_monitor = { cron: "*/15 * * * *", timezone: "UTC", notifier: "oncall" };
  const clean: Doc = {
    apiVersion: "contract-assets/v1",
    kind: "TransformContract",
    id: "sales.orders_clean",
    version: "1.0.0",
    status: "active",
    domain: "sales",
    owner: "team-sales-data",
    description: "Orders without duplicates.",
    tags: ["sales", "curated"],
    producer: { type: "sql", path: "sql/orders_clean.sql", params: { currency: "EUR" } },
    trigger: { cron: "0 3 * * *", timezone: "UTC" },
    freshness: { max_age: "PT26H", degrade_after: "PT48H" },
    datasets: [
      {
        name: "orders_clean",
        description: "One row per order.",
        schema: {
          version: 1,
          properties: [
            { name: "order_id", logicalType: "string", required: true, primaryKey: true },
            { name: "amount", logicalType: "number", required: true, description: "Net amount." },
            { name: "note", logicalType: "string" },
          ],
        },
        quality: [{ name: "order_id_present", metric: "nullValues", column: "order_id", mustBe: 0, severity: "error" }],
      },
    ],
  };
  const report: Doc = {
    apiVersion: "contract-assets/v1",
    kind: "TransformContract",
    id: "sales.orders_report",
    version: "1.0.0",
    status: "active",
    domain: "sales",
    owner: "team-sales-data",
    description: "Orders for the report.",
    tags: ["sales"],
    producer: { type: "sql", path: "sql/orders_report.sql" },
    upstreams: [{ asset: "sales.orders_clean", schema_version: 1 }, { asset: "sales.refunds_feed", trigger: false }],
    datasets: [
      {
        name: "orders_report",
        schema: { version: 1, properties: [{ name: "order_id", logicalType: "string" }, { name: "amount", logicalType: "number" }, { name: "region", logicalType: "string" }] },
        quality: [{ type: "sql", name: "no_negative_amount", query: "select count(*) from {dataset} where amount < 0", mustBe: 0, severity: "warning" }],
      },
    ],
  };
  const external: Doc = {
    apiVersion: "contract-assets/v1",
    kind: "ExternalAssets",
    domain: "sales",
    owner: "team-sales-data",
    assets: [{ name: "sales.refunds_feed", uri: "x-datalake://external/sales/refunds", description: "Refunds from the shop." }],
  };
  const extract: Doc = {
    apiVersion: "contract-assets/v1",
    kind: "IngestionContract",
    id: "shop.orders_extract",
    version: "1.0.0",
    domain: "shop",
    owner: "team-shop",
    description: "Orders extracted from the shop database.",
    tags: ["shop"],
    mode: "extract",
    source: { name: "shop_db.orders", uri: "postgres://shop-db:5432/shop/public/orders", system: "shop", format: "parquet", connection_id: "shop_db", query: "select order_id, amount from public.orders" },
    landing: { uri: "s3://shop-landing/orders", connection_id: "aws_landing", rows_per_file: 100000 },
    on_schema_drift: "abort",
    trigger: { cron: "0 2 * * *" },
    datasets: [{ name: "orders_extract", layer: "landing", schema: { version: 1, properties: [{ name: "order_id", logicalType: "string" }, { name: "amount", logicalType: "number" }] } }],
  };
  const load: Doc = {
    apiVersion: "contract-assets/v1",
    kind: "IngestionContract",
    id: "shop.orders_raw",
    version: "1.0.0",
    domain: "shop",
    owner: "team-shop",
    mode: "load",
    source: { name: "shop.orders_extract", uri: "s3://shop-landing/orders", system: "shop", format: "parquet", connection_id: "aws_landing" },
    incremental: { watermark: "order_id" },
    on_schema_drift: "allow_additive",
    datasets: [{ name: "orders_raw", schema: { version: 1, properties: [{ name: "order_id", logicalType: "string" }, { name: "amount", logicalType: "number" }] } }],
  };
  return {
    config,
    contracts: {
      "contracts/sales/orders_clean.yaml": clean,
      "contracts/sales/orders_report.yaml": report,
      "contracts/sales/external.yaml": external,
      "contracts/shop/orders_extract.yaml": extract,
      "contracts/shop/orders_raw.yaml": load,
    },
    sql: { "sql/orders_clean.sql": "select 1 as order_id\n", "sql/orders_report.sql": "select 1 as order_id\n" },
    comments: {},
  };
}

const roots: string[] = [];
afterAll(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

/** Writes the project's files under `root` (every file, each time: unchanged bytes stay unchanged). */
function writeProject(root: string, p: Project): void {
  const put = (rel: string, text: string): void => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  };
  put("orchestration/airflow/sources/config.yaml", YAML.stringify(p.config, { version: "1.2" }));
  for (const [rel, doc] of Object.entries(p.contracts)) put(rel, YAML.stringify(doc, { version: "1.2" }) + (p.comments[rel] ?? []).map((c) => `# ${c}\n`).join(""));
  for (const [rel, text] of Object.entries(p.sql)) put(rel, text);
}

const compile = (root: string): CompileResult => compileProject(defaultLayout(root), { write: "write" });

const WORDS = ["net", "gross", "daily", "orders", "per region", "late rows", "Umsätze", "EUR"];
const PRODUCED = ["contracts/sales/orders_clean.yaml", "contracts/sales/orders_report.yaml", "contracts/shop/orders_extract.yaml", "contracts/shop/orders_raw.yaml"];

/** Edits that change no data: descriptions, tags, the owner, a comment (the metadata-only ones). */
const METADATA_EDITS = ["contractDescription", "datasetDescription", "propertyDescription", "tags", "owner", "comment"] as const;
/** Edits of what runs or what is read. */
const OTHER_EDITS = [
  "retries", "retryDelay", "executionTimeout", "pool", "warehouse", "override", "cron", "addProperty", "removeProperty", "retype",
  "primaryKey", "qualityThreshold", "maxAge", "sql", "params", "onFailure", "unpin", "require", "namespace", "monitorCron",
  "deprecate", "layer", "rowsPerFile", "sourceQuery", "reorderProperties",
] as const;
type EditKind = (typeof METADATA_EDITS)[number] | (typeof OTHER_EDITS)[number];
interface Edit {
  kind: EditKind;
  pick: number;
  word: string;
  n: number;
}

const edit: fc.Arbitrary<Edit> = fc.record({
  kind: fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...METADATA_EDITS) }, { weight: 3, arbitrary: fc.constantFrom(...OTHER_EDITS) }),
  pick: fc.nat(),
  word: fc.constantFrom(...WORDS),
  n: fc.integer({ min: 0, max: 6 }),
});

const isMetadata = (e: Edit): boolean => (METADATA_EDITS as readonly string[]).includes(e.kind);

/** The next major version (a breaking edit acknowledges itself, so the compile writes). */
function bumpMajor(doc: Doc): void {
  doc.version = `${Number(String(doc.version).split(".")[0]) + 1}.0.0`;
}

/** Applies one edit to the project (in place). */
function apply(p: Project, e: Edit): void {
  const file = PRODUCED[e.pick % PRODUCED.length]!;
  const doc = p.contracts[file]!;
  const dataset = doc.datasets[0] as Doc;
  const properties = dataset.schema.properties as Doc[];
  const property = properties[e.pick % properties.length]!;
  const defaults = p.config.defaults as Doc;
  switch (e.kind) {
    case "contractDescription":
      doc.description = `${doc.description ?? ""} ${e.word}`.trim();
      return;
    case "datasetDescription":
      dataset.description = `${dataset.description ?? ""} ${e.word}`.trim();
      return;
    case "propertyDescription":
      property.description = `${property.description ?? ""} ${e.word}`.trim();
      return;
    case "tags":
      doc.tags = e.n % 2 === 0 ? [...(doc.tags ?? []), `t${e.n}${e.pick % 5}`] : (doc.tags ?? []).slice(1);
      return;
    case "owner":
      doc.owner = `team-${e.word.replace(/[^a-z]/g, "") || "x"}`;
      return;
    case "comment":
      p.comments[file] = [...(p.comments[file] ?? []), e.word];
      return;
    case "retries":
      defaults.retries = e.n;
      return;
    case "retryDelay":
      defaults.retry_delay = `PT${e.n + 1}M`;
      return;
    case "executionTimeout":
      defaults.execution_timeout = `PT${e.n + 1}H`;
      return;
    case "pool":
      defaults.pool = `pool_${e.n}`;
      return;
    case "warehouse":
      defaults.warehouse_conn_id = `warehouse_${e.n}`;
      return;
    case "override":
      p.config.overrides = [...(p.config.overrides ?? []), e.n % 2 === 0 ? { match: { domain: doc.domain }, retries: e.n } : { match: { contract: doc.id }, execution_timeout: `PT${e.n + 1}M` }];
      return;
    case "cron":
      p.contracts["contracts/sales/orders_clean.yaml"]!.trigger = { cron: `0 ${e.n} * * *`, timezone: "UTC" };
      return;
    case "addProperty":
      properties.push({ name: `added_${e.n}_${properties.length}`, logicalType: "string" });
      return;
    case "removeProperty":
      // Not the first (a key, a watermark or a quality rule's column).
      if (properties.length > 2) {
        properties.splice(1 + (e.pick % (properties.length - 1)), 1);
        bumpMajor(doc);
      }
      return;
    case "retype":
      property.logicalType = property.logicalType === "string" ? "integer" : "string";
      bumpMajor(doc);
      return;
    case "primaryKey":
      property.unique = !(property.unique ?? false);
      return;
    case "qualityThreshold": {
      const clean = p.contracts["contracts/sales/orders_clean.yaml"]!.datasets[0] as Doc;
      clean.quality[0].mustBe = e.n;
      return;
    }
    case "maxAge":
      doc.freshness = { max_age: `PT${26 + e.n}H` };
      return;
    case "sql":
      p.sql["sql/orders_report.sql"] = `select ${e.n} as order_id -- ${e.word}\n`;
      return;
    case "params":
      p.contracts["contracts/sales/orders_clean.yaml"]!.producer.params = { currency: e.word.replace(/[^A-Za-z]/g, "") || "USD", n: e.n };
      return;
    case "onFailure":
      doc.on_failure = ["quarantine", "warn", "block_publish"][e.n % 3];
      return;
    case "unpin": {
      const upstream = p.contracts["contracts/sales/orders_report.yaml"]!.upstreams[0] as Doc;
      if (upstream.schema_version === undefined) upstream.schema_version = 1;
      else delete upstream.schema_version;
      return;
    }
    case "require": {
      // `require: passed` (a triggering upstream only): skip a run whose triggering event is not fresh.
      const upstream = p.contracts["contracts/sales/orders_report.yaml"]!.upstreams[0] as Doc;
      if (upstream.require === undefined) upstream.require = "passed";
      else delete upstream.require;
      return;
    }
    case "namespace":
      p.config.lineage = { namespace: `acme_${e.n}` };
      return;
    case "monitorCron":
      p.config.freshness_monitor = { ...p.config.freshness_monitor, cron: `*/${10 + e.n} * * * *` };
      return;
    case "deprecate":
      // The report has no consumer: deprecating it or publishing it again warns nobody.
      p.contracts["contracts/sales/orders_report.yaml"]!.status = p.contracts["contracts/sales/orders_report.yaml"]!.status === "deprecated" ? "active" : "deprecated";
      return;
    case "layer":
      dataset.layer = `layer_${e.n}`;
      return;
    case "rowsPerFile":
      p.contracts["contracts/shop/orders_extract.yaml"]!.landing.rows_per_file = 1000 * (e.n + 1);
      return;
    case "sourceQuery":
      p.contracts["contracts/shop/orders_extract.yaml"]!.source.query = `select order_id, amount from public.orders where amount > ${e.n}`;
      return;
    case "reorderProperties":
      if (properties.length > 1) properties.push(properties.shift()!);
      return;
  }
}

describe("the diff hides nothing that changes what runs", () => {
  it("reports every edit that changed generated/, a metadata-only edit as metadata-only and not breaking", () => {
    const changedKinds = new Set<string>();
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 4 }), (edits) => {
        const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-diff-prop-"));
        roots.push(root);
        const p = baseProject();
        writeProject(root, p);
        const first = compile(root);
        expect(first.diagnostics.filter((d) => d.severity === "error"), "the base project compiles").toEqual([]);
        for (const e of edits) {
          const before = snapshot(path.join(root, "generated"));
          apply(p, e);
          writeProject(root, p);
          const result = compile(root);
          const after = snapshot(path.join(root, "generated"));
          const changed = [...new Set([...before.keys(), ...after.keys()])].filter((f) => before.get(f) !== after.get(f));
          if (changed.length === 0) continue;
          changedKinds.add(e.kind);
          const diff = result.diff!;
          const label = `${JSON.stringify(e)} changed ${changed.join(", ")}`;
          expect(diff.changes.length, label).toBeGreaterThan(0);
          if (isMetadata(e)) {
            expect(diff.changes.filter((c) => c.category !== "metadata-only").map((c) => `${c.rule} ${c.field ?? ""}`), label).toEqual([]);
            expect(diff.summary.breaking, label).toBe(0);
          }
          // The property is named: a dataset's description is the asset record's field (ADR 0031), not the contract's text alone.
          if (e.kind === "datasetDescription") {
            expect(diff.changes.map((c) => `${c.rule} ${c.field ?? ""}`), label).toContain("ASSET_METADATA_CHANGED description");
          }
        }
        fs.rmSync(root, { recursive: true, force: true });
      }),
      { seed: 20261207, numRuns: 100 },
    );
    // The edits reached generated/: every kind of edit changed it at least once.
    expect([...changedKinds].sort()).toEqual([...METADATA_EDITS, ...OTHER_EDITS].sort());
  });
});
