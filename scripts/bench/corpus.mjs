#!/usr/bin/env node
// Synthetic contract corpus for the benchmark (npm run bench), deterministic by seed and size.
//
//   node scripts/bench/corpus.mjs --contracts 1000 [--seed 20250101] --out DIR
//
// Writes a project root under DIR: contracts/<domain>/*.yaml (IngestionContract, TransformContract
// and ExternalAssets documents), orchestration/airflow/sources/config.yaml and the SQL files the
// sql producers name. The shape follows a real platform: many domains of uneven size, fan-in 1 to
// 5, a third of the triggers `any` or nested trees, 5 to 50 properties per dataset, quality rules
// and freshness on most datasets, ingestion contracts with sources, ExternalAssets read by
// transforms, schema pins, PII with a legal basis, a few deprecated, draft and retired contracts.
// Every corpus compiles without errors (the bench checks exit 0 at each size).

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** mulberry32: a small, fast, deterministic PRNG. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const DOMAIN_WORDS = [
  "sales", "billing", "crm", "finance", "marketing", "logistics", "inventory", "payroll", "support",
  "risk", "fraud", "pricing", "catalog", "orders", "shipping", "procurement", "treasury", "tax",
  "audit", "hr", "recruiting", "web", "mobile", "ads", "search", "identity", "payments", "lending",
  "claims", "underwriting", "fleet", "energy", "retail", "wholesale", "partners", "legal",
  "compliance", "growth", "product", "research",
];
const REGIONS = ["", "_eu", "_us", "_apac", "_latam", "_uk", "_de", "_jp"];
const NOUNS = [
  "orders", "customers", "invoices", "payments", "refunds", "shipments", "returns", "sessions",
  "events", "accounts", "contracts", "leads", "opportunities", "campaigns", "clicks", "impressions",
  "products", "prices", "stock_levels", "suppliers", "purchase_orders", "employees", "timesheets",
  "tickets", "chats", "claims", "policies", "loans", "transactions", "ledger_entries", "budgets",
  "forecasts", "rates", "devices", "visits", "carts", "subscriptions", "churn", "balances", "fees",
];
const SHAPES = ["daily", "monthly", "by_region", "by_customer", "summary", "snapshot", "enriched", "clean", "scored", "agg"];
const COLUMNS = [
  "id", "customer_id", "account_id", "order_id", "invoice_id", "product_id", "region", "country_code",
  "currency", "amount", "amount_net", "amount_tax", "amount_gross", "quantity", "status", "channel",
  "created_at", "updated_at", "event_date", "event_time", "segment", "category", "score", "is_active",
  "email", "phone", "payload", "tags", "source_system", "batch_id", "line_count", "discount",
  "margin", "cost", "revenue", "period_month", "fiscal_year", "week", "warehouse_id", "carrier",
];
const LOGICAL = ["string", "string", "string", "integer", "number", "number", "date", "timestamp", "boolean", "time", "object", "array"];
const WORDS = [
  "daily", "snapshot", "of", "the", "curated", "records", "joined", "with", "reference", "data",
  "deduplicated", "by", "business", "key", "late", "arriving", "rows", "are", "merged", "into",
  "partition", "used", "for", "reporting", "and", "downstream", "models", "source", "system",
  "export", "net", "amounts", "in", "EUR", "per", "region", "Umsätze", "Kunden", "€", "—",
];
const CRONS = ["0 2 * * *", "30 3 * * *", "0 * * * *", "15 6 * * 1", "0 5 1 * *", "@daily", "@hourly", "*/30 * * * *"];
const ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Europe/London"];
const SCHEDULES = {
  nightly: { cron: "0 2 * * *", timezone: "UTC" },
  hourly: { cron: "5 * * * *", timezone: "UTC" },
  weekly: { cron: "0 4 * * 1", timezone: "Europe/Berlin" },
  monthly_close: { cron: "0 6 3 * *", timezone: "Europe/Berlin" },
};
const FRESHNESS = [["PT2H", "PT6H"], ["PT26H", "PT48H"], ["PT26H", null], ["P8D", "P10D"], ["P32D", "P35D"], ["PT1H", "PT3H"]];
const FAMILIES = ["dbt", "spark_submit"];

/** A JSON string is a valid YAML 1.2 double-quoted scalar. */
const q = (s) => JSON.stringify(s);

/**
 * Builds the corpus in memory: `{files: Map<relativePath, text>, stats}`. Pure: same options,
 * same bytes.
 */
export function buildCorpus({ contracts: n, seed = 20250101 }) {
  if (!Number.isInteger(n) || n < 10) throw new Error("--contracts must be an integer >= 10");
  const rnd = prng(seed ^ Math.imul(n, 2654435761));
  const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
  const pick = (list) => list[Math.floor(rnd() * list.length)];
  const chance = (p) => rnd() < p;
  const shuffle = (list) => {
    const a = [...list];
    for (let i = a.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [a[i], a[j]] = [a[j], a[i]];
    }
    return a;
  };
  const sentence = (lo, hi) => {
    const words = Array.from({ length: int(lo, hi) }, () => pick(WORDS));
    const text = words.join(" ");
    return text.charAt(0).toUpperCase() + text.slice(1) + ".";
  };

  // Domains of uneven size (a Zipf-like weight), about 25 contracts each on average.
  const domainCount = Math.max(4, Math.round(n / 25));
  const domains = [];
  for (let i = 0; domains.length < domainCount; i++) {
    const base = DOMAIN_WORDS[i % DOMAIN_WORDS.length];
    const region = REGIONS[Math.floor(i / DOMAIN_WORDS.length) % REGIONS.length];
    const round = Math.floor(i / (DOMAIN_WORDS.length * REGIONS.length));
    domains.push(`${base}${region}${round > 0 ? `_${round + 1}` : ""}`);
  }
  const weights = domains.map((_, i) => 1 / Math.pow(i + 1, 0.6));
  const totalWeight = weights.reduce((a, b) => a + b, 0);
  const pickDomain = () => {
    let r = rnd() * totalWeight;
    for (let i = 0; i < domains.length; i++) {
      r -= weights[i];
      if (r <= 0) return domains[i];
    }
    return domains[domains.length - 1];
  };

  const files = new Map();
  const dbtModels = new Map();
  const usedNames = new Map(); // domain -> Set of dataset names (and file names)
  const uniqueName = (domain, base) => {
    const used = usedNames.get(domain) ?? new Set(["external_assets"]);
    usedNames.set(domain, used);
    let name = base;
    for (let k = 2; used.has(name); k++) name = `${base}_${k}`;
    used.add(name);
    return name;
  };

  // Assets a later contract may read: {name, version, domain} (produced) and external ones.
  const produced = [];
  const producedByDomain = new Map();
  const externals = [];
  const stats = {
    contracts: n, ingestion: 0, transform: 0, externalAssetFiles: 0, externalAssets: 0, datasets: 0, properties: 0,
    qualityRules: 0, datasetsWithQuality: 0, contractsWithFreshness: 0, domains: domainCount,
    fanIn: { 1: 0, 2: 0, 3: 0, 4: 0, 5: 0 }, triggers: { all: 0, any: 0, nested: 0, asset_or_time: 0, cron: 0, manual: 0 },
    statuses: { active: 0, deprecated: 0, draft: 0, retired: 0 }, sqlFiles: 0,
  };

  // ExternalAssets: about one document per eight domains, 2 to 6 assets each.
  for (let d = 0; d < domains.length; d += 8) {
    const domain = domains[d];
    const count = int(2, 6);
    const lines = ["apiVersion: contract-assets/v1", "kind: ExternalAssets", `domain: ${domain}`, `owner: team-${domain.replace(/_/g, "-")}`];
    lines.push(`description: ${q(sentence(6, 14))}`, "assets:");
    for (let k = 0; k < count; k++) {
      const name = `ext_${domain}.${pick(NOUNS)}_feed_${k + 1}`;
      lines.push(`  - name: ${name}`, `    uri: ${q(`s3://ext-${domain.replace(/_/g, "-")}/feeds/${k + 1}`)}`);
      if (chance(0.5)) lines.push(`    description: ${q(sentence(4, 10))}`);
      if (chance(0.3)) lines.push(`    extra: {vendor: ${q(pick(["acme", "globex", "initech"]))}, sla_hours: ${int(1, 48)}}`);
      externals.push({ name });
    }
    files.set(`contracts/${domain}/external_assets.yaml`, lines.join("\n") + "\n");
    stats.externalAssetFiles++;
    stats.externalAssets += count;
  }

  const seedIngestion = Math.max(6, Math.round(n * 0.05));
  for (let i = 0; i < n; i++) {
    const ingestion = i < seedIngestion || chance(0.15);
    const domain = i < domains.length && i < seedIngestion ? domains[i] : pickDomain();
    const statusRoll = rnd();
    const status = i < seedIngestion ? "active" : statusRoll < 0.01 ? "draft" : statusRoll < 0.015 ? "retired" : statusRoll < 0.035 ? "deprecated" : "active";
    stats.statuses[status]++;
    const datasetCount = ingestion ? 1 : chance(0.85) ? 1 : chance(0.8) ? 2 : 3;
    const datasetNames = [];
    const mainNoun = pick(NOUNS);
    for (let k = 0; k < datasetCount; k++) {
      datasetNames.push(uniqueName(domain, ingestion ? `${mainNoun}_raw` : `${k === 0 ? mainNoun : pick(NOUNS)}_${pick(SHAPES)}`));
    }
    const id = `${domain}.${datasetNames[0]}`;
    const owner = `team-${domain.replace(/_/g, "-")}${chance(0.2) ? "-platform" : ""}`;
    const lines = [
      "apiVersion: contract-assets/v1",
      `kind: ${ingestion ? "IngestionContract" : "TransformContract"}`,
      `id: ${id}`,
      `version: "${int(0, 4)}.${int(0, 12)}.${int(0, 20)}"`,
    ];
    if (status !== "active" || chance(0.5)) lines.push(`status: ${status}`);
    lines.push(`domain: ${domain}`, `owner: ${owner}`);
    if (chance(0.9)) lines.push(`description: >-`, `  ${sentence(8, 20)}`, `  ${sentence(6, 16)}`);
    const tags = shuffle([domain, ingestion ? "raw" : "curated", "tier-" + int(1, 3), pick(["finance", "ops", "ml", "bi", "gdpr"])]).slice(0, int(1, 4));
    lines.push(`tags: [${tags.join(", ")}]`);
    const pii = chance(0.06);
    if (pii) lines.push(`processing: {purpose: ${pick(["customer-billing", "fraud-prevention", "support-quality"])}, legal_basis: ${pick(["contract", "legitimate-interest", "legal-obligation"])}}`);

    // What the contract reads, and when it runs.
    const triggering = [];
    if (ingestion) {
      stats.ingestion++;
      const system = `${domain}_platform`;
      const sourceName = `${system}.${datasetNames[0].replace(/_raw$/, "")}_export_${i}`;
      const mode = pick(["load", "load", "extract"]);
      lines.push(`mode: ${mode}`, "source:", `  name: ${sourceName}`);
      if (mode === "extract") {
        // a database table extracted to Parquet landing files (what issue 10's extract requires)
        const host = `${domain.replace(/_/g, "-")}-db.internal`;
        lines.push(`  uri: ${q(`postgres://${host}:5432/${domain}/public/${datasetNames[0]}_${i}`)}`, `  system: ${system}`);
        lines.push("  format: parquet", `  connection_id: ${domain}_db`, `  table: public.${datasetNames[0]}_${i}`);
        if (chance(0.3)) lines.push(`  schema_version: ${int(1, 3)}`);
        lines.push("landing:", `  uri: ${q(`s3://${domain.replace(/_/g, "-")}-landing/${datasetNames[0]}/${i}`)}`, `  connection_id: aws_${domain}_landing`);
      } else {
        lines.push(`  uri: ${q(`s3://${domain.replace(/_/g, "-")}-exports/${datasetNames[0]}/${i}`)}`, `  system: ${system}`);
        lines.push(`  format: ${pick(["csv", "parquet", "jsonl"])}`);
        if (chance(0.7)) lines.push(`  connection_id: aws_${domain}_exports`);
        if (chance(0.3)) lines.push(`  schema_version: ${int(1, 3)}`);
      }
      if (chance(0.4)) lines.push("incremental: {watermark: updated_at}");
      if (chance(0.3)) lines.push("on_schema_drift: abort");
      if (status === "active" || status === "deprecated") externals.push({ name: sourceName });
      if (chance(0.6)) lines.push(`trigger: {schedule_ref: ${pick(Object.keys(SCHEDULES))}}`);
      else lines.push(`trigger: {cron: ${q(pick(CRONS))}, timezone: ${pick(ZONES)}}`);
      stats.triggers.cron++;
    } else {
      stats.transform++;
      const roll = rnd();
      // About a third `any` or nested; the rest all, asset-or-time, cron only or manual.
      const kind = roll < 0.17 ? "any" : roll < 0.34 ? "nested" : roll < 0.8 ? "all" : roll < 0.9 ? "asset_or_time" : roll < 0.96 ? "cron" : "manual";
      const wantFanIn = int(1, 5);
      const fanIn = kind === "nested" ? Math.max(3, wantFanIn) : kind === "any" ? Math.max(2, wantFanIn) : wantFanIn;
      const local = producedByDomain.get(domain) ?? [];
      const chosen = new Map();
      for (let tries = 0; chosen.size < fanIn && tries < 50; tries++) {
        const r = rnd();
        const from = r < 0.5 && local.length > 0 ? local : r < 0.9 || externals.length === 0 ? produced : externals;
        if (from.length === 0) continue;
        // Prefer recent assets a little, so chains get deep as in a real platform.
        const index = from.length - 1 - Math.floor(Math.pow(rnd(), 1.5) * from.length);
        const asset = from[Math.max(0, index)];
        chosen.set(asset.name, asset);
      }
      const upstreams = [...chosen.values()];
      stats.fanIn[Math.min(5, Math.max(1, upstreams.length))]++;
      lines.push("producer:");
      const ptype = pick(["sql", "sql", "python", "dbt", "command"]);
      if (ptype === "sql") {
        const sqlPath = `sql/${domain}/${datasetNames[0]}.sql`;
        lines.push("  type: sql", `  path: ${sqlPath}`);
        const from = upstreams.length > 0 ? upstreams[0].name : `${domain}.${datasetNames[0]}`;
        files.set(sqlPath, `-- ${id}\nselect *\nfrom ${from.replace(/\./g, "__")}\nwhere 1 = 1\n`);
        stats.sqlFiles++;
      } else if (ptype === "python") {
        lines.push("  type: python", `  entrypoint: ${domain}_jobs.${datasetNames[0]}:run`);
      } else if (ptype === "dbt") {
        lines.push("  type: dbt", `  project: dbt/${domain}`, `  select: ${q(datasetNames.join(" "))}`);
        const models = dbtModels.get(domain) ?? [];
        models.push(...datasetNames);
        dbtModels.set(domain, models);
      } else {
        lines.push("  type: command", `  family: ${pick(FAMILIES)}`, `  args: [--select, ${datasetNames[0]}]`);
      }
      if (chance(0.4)) lines.push(`  params: {lookback_days: ${int(1, 30)}, mode: ${pick(["full", "incremental"])}}`);
      if (upstreams.length > 0) lines.push("upstreams:");
      upstreams.forEach((u, k) => {
        const manualOrCron = kind === "manual" || kind === "cron";
        // Some inlets never schedule the DAG (reference data); at least one triggers otherwise.
        const notTriggering = manualOrCron || (k > 0 && kind === "all" && chance(0.15));
        const pin = u.version !== undefined && chance(0.3) ? `, schema_version: ${u.version}` : "";
        lines.push(`  - {asset: ${u.name}${pin}${notTriggering ? ", trigger: false" : ""}}`);
        if (!notTriggering) triggering.push(u.name);
      });
      if (kind === "manual" || (upstreams.length === 0 && kind !== "cron")) {
        lines.push("trigger: manual");
        stats.triggers.manual++;
      } else if (kind === "cron" || triggering.length === 0) {
        lines.push(chance(0.5) ? `trigger: {schedule_ref: ${pick(Object.keys(SCHEDULES))}}` : `trigger: {cron: ${q(pick(CRONS))}, timezone: ${pick(ZONES)}}`);
        stats.triggers.cron++;
      } else if (kind === "any" && triggering.length >= 2) {
        lines.push("trigger: {assets: any}");
        stats.triggers.any++;
      } else if (kind === "nested" && triggering.length >= 3) {
        lines.push("trigger:", "  assets:");
        lines.push(...treeLines(nestedTree(triggering, pick(["all", "any"]), rnd, shuffle), "    "));
        stats.triggers.nested++;
      } else if (kind === "asset_or_time") {
        lines.push("trigger:", "  assets: all", chance(0.5) ? `  schedule_ref: ${pick(Object.keys(SCHEDULES))}` : `  cron: ${q(pick(CRONS))}`);
        stats.triggers.asset_or_time++;
      } else {
        if (chance(0.2)) lines.push("trigger: {assets: all}");
        stats.triggers.all++;
      }
    }
    if (chance(0.85)) {
      const [maxAge, degrade] = pick(FRESHNESS);
      lines.push(degrade ? `freshness: {max_age: ${maxAge}, degrade_after: ${degrade}}` : `freshness: {max_age: ${maxAge}}`);
      stats.contractsWithFreshness++;
    }
    if (chance(0.5)) lines.push(`on_failure: ${pick(["block_publish", "quarantine", "warn"])}`);

    lines.push("datasets:");
    for (const name of datasetNames) {
      stats.datasets++;
      const version = int(1, 4);
      lines.push(`  - name: ${name}`);
      if (chance(0.5)) lines.push(`    description: ${q(sentence(5, 14))}`);
      if (chance(0.08)) lines.push(`    uri: ${q(`s3://lake-${domain.replace(/_/g, "-")}/${name}/`)}`);
      if (!ingestion && chance(0.2)) lines.push(`    layer: ${pick(["mart", "reference", "feature"])}`);
      if (chance(0.1)) lines.push(`    physical: {namespace: ${q(`postgres://warehouse:5432`)}, name: ${q(`analytics.${domain}.${name}`)}}`);
      if (chance(0.15)) lines.push(`    extra: {tier: ${pick(["gold", "silver", "bronze"])}, cost_center: ${q(`cc-${int(100, 999)}`)}}`);
      // 5 to 50 properties, most between 8 and 25.
      const propertyCount = Math.min(50, Math.max(5, Math.round(5 + Math.pow(rnd(), 1.7) * 45)));
      stats.properties += propertyCount;
      const columns = [];
      const seen = new Set();
      for (let k = 0; k < propertyCount; k++) {
        let column = k === 0 ? "id" : pick(COLUMNS);
        for (let m = 2; seen.has(column); m++) column = `${column.replace(/_\d+$/, "")}_${m}`;
        seen.add(column);
        columns.push({ name: column, type: column === "id" ? "string" : pick(LOGICAL) });
      }
      lines.push("    schema:", `      version: ${version}`, "      properties:");
      columns.forEach((c, k) => {
        const parts = [`name: ${c.name}`, `logicalType: ${c.type}`];
        if (k === 0) parts.push("required: true", "primaryKey: true", "unique: true");
        else if (chance(0.5)) parts.push("required: true");
        if (c.type === "number" && chance(0.5)) parts.push(`physicalType: ${q("decimal(18,2)")}`);
        if (pii && c.name.startsWith("email")) parts.push("classification: pii");
        if (chance(0.2)) parts.push(`description: ${q(sentence(3, 10))}`);
        lines.push(`        - {${parts.join(", ")}}`);
      });
      if (chance(0.8)) {
        stats.datasetsWithQuality++;
        const rules = [`{metric: nullValues, column: id, mustBe: 0, severity: error}`, `{metric: duplicateValues, column: id, mustBe: 0}`];
        const extraRules = int(0, 6);
        for (let k = 0; k < extraRules; k++) {
          const c = columns[int(0, columns.length - 1)];
          const r = rnd();
          if (r < 0.25) rules.push(`{metric: nullValues, column: ${c.name}, mustBeLessOrEqualTo: ${int(0, 5)}, unit: percent, severity: warning}`);
          else if (r < 0.45) rules.push(`{metric: invalidValues, column: ${c.name}, validValues: [${shuffle(["EUR", "USD", "GBP", "CHF", "JPY"]).slice(0, int(1, 4)).join(", ")}], mustBe: 0, severity: ${pick(["error", "warning"])}}`);
          else if (r < 0.6) rules.push(`{metric: missingValues, column: ${c.name}, missingValues: ["", "n/a", null], mustBeLessThan: ${int(1, 100)}}`);
          else if (r < 0.75) rules.push(`{name: sql_check_${k}, type: sql, query: ${q(`select count(*) from {dataset} where ${c.name} is null`)}, mustBe: 0, severity: ${pick(["error", "warning", "info"])}}`);
          else if (r < 0.9) rules.push(`{metric: rowCount, mustBeBetween: [${int(0, 10)}, ${int(1000, 100000000)}], severity: warning}`);
          else rules.push(`{name: range_check_${k}, description: ${q(sentence(3, 8))}, type: sql, query: ${q(`select count(*) from {dataset} where ${c.name} < 0`)}, mustNotBeBetween: [1, 1000000]}`);
        }
        stats.qualityRules += rules.length;
        lines.push("    quality:", ...rules.map((r) => `      - ${r}`));
      }
      if (status === "active" || status === "deprecated") {
        const entry = { name: `${domain}.${name}`, version };
        produced.push(entry);
        if (!producedByDomain.has(domain)) producedByDomain.set(domain, []);
        producedByDomain.get(domain).push(entry);
      }
    }
    files.set(`contracts/${domain}/${datasetNames[0]}.yaml`, lines.join("\n") + "\n");
  }

  // The orchestration config: schedules, defaults, producer shims, a few overrides.
  const config = [
    "apiVersion: contract-assets/v1",
    "kind: OrchestrationConfig",
    `uri_template: "x-datalake://{layer}/{domain}/{name}"`,
    "lineage: {namespace: bench}",
    "schedules:",
    ...Object.entries(SCHEDULES).map(([k, v]) => `  ${k}: {cron: ${q(v.cron)}, timezone: ${v.timezone}}`),
    "defaults: {retries: 2, retry_delay: PT5M, execution_timeout: PT1H, pool: default_pool, warehouse_conn_id: warehouse}",
    "producers:",
    "  dbt: {command: [dbt-warehouse-shim, build, --target, warehouse]}",
    "  spark_submit: {command: [spark-submit, --master, yarn], env: {SPARK_CONF_DIR: /etc/spark}}",
    "overrides:",
    ...domains.filter((_, i) => i % 5 === 0).map((d) => `  - {match: {domain: ${d}}, retries: ${int(0, 4)}, execution_timeout: PT${int(1, 6)}H}`),
  ];
  files.set("orchestration/airflow/sources/config.yaml", config.join("\n") + "\n");
  // Each domain's dbt project: a parsed manifest with one model per dbt dataset (no columns or
  // refs declared, so the compiler's dbt checks find nothing to report).
  for (const [domain, models] of dbtModels) {
    const nodes = Object.fromEntries(
      models.map((name) => [
        `model.${domain}_models.${name}`,
        { unique_id: `model.${domain}_models.${name}`, name, resource_type: "model", package_name: `${domain}_models`, original_file_path: `models/${name}.sql`, config: { materialized: "table", tags: [] }, columns: {}, depends_on: { nodes: [], macros: [] } },
      ]),
    );
    const manifest = { metadata: { dbt_schema_version: "https://schemas.getdbt.com/dbt/manifest/v12.json", project_name: `${domain}_models` }, nodes, sources: {} };
    files.set(`dbt/${domain}/manifest.json`, JSON.stringify(manifest) + "\n");
  }
  return { files, stats };
}

/** A nested all/any tree over `names` (at least 3), two or three levels deep. */
function nestedTree(names, op, rnd, shuffle) {
  const other = op === "all" ? "any" : "all";
  const items = shuffle(names);
  const groups = [];
  while (items.length > 0) {
    const size = Math.min(items.length, 1 + Math.floor(rnd() * 3));
    groups.push(items.splice(0, size));
  }
  if (groups.length === 1) groups.push(groups[0].splice(-1)); // never a tree of one group
  const children = groups.map((g) => (g.length === 1 ? g[0] : { [other]: g }));
  return { [op]: children };
}

function treeLines(tree, indent) {
  const [op, items] = Object.entries(tree)[0];
  const out = [`${indent}${op}:`];
  for (const item of items) {
    if (typeof item === "string") out.push(`${indent}  - ${item}`);
    else {
      const [op2, items2] = Object.entries(item)[0];
      out.push(`${indent}  - ${op2}: [${items2.join(", ")}]`);
    }
  }
  return out;
}

/** Writes the corpus under `root` (which must not exist or be empty); returns its stats. */
export function writeCorpus({ contracts, seed, root }) {
  const { files, stats } = buildCorpus({ contracts, seed });
  let bytes = 0;
  const dirs = new Set();
  for (const [relative, text] of files) {
    const target = path.join(root, relative);
    const dir = path.dirname(target);
    if (!dirs.has(dir)) {
      fs.mkdirSync(dir, { recursive: true });
      dirs.add(dir);
    }
    fs.writeFileSync(target, text);
    bytes += Buffer.byteLength(text);
  }
  return { ...stats, files: files.size, bytes };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const args = process.argv.slice(2);
  const get = (flag) => {
    const i = args.indexOf(flag);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const out = get("--out");
  const contracts = Number(get("--contracts") ?? 100);
  const seed = Number(get("--seed") ?? 20250101);
  if (!out) {
    process.stderr.write("usage: node scripts/bench/corpus.mjs --contracts N [--seed S] --out DIR\n");
    process.exit(2);
  }
  const stats = writeCorpus({ contracts, seed, root: path.resolve(out) });
  process.stdout.write(JSON.stringify(stats, null, 2) + "\n");
}
