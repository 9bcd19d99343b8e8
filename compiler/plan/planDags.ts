import type { StageResult } from "../diagnostics/diagnostic.js";
import type { OrchestrationConfig } from "../link/config.js";
import { dbtManifestPath, dbtPublishers, resolveDbtProducer } from "../link/dbtProject.js";
import { queueWatcherOf } from "../link/queueTrigger.js";
import { DEFAULT_LAYER, type LinkedContract, type LinkedProject } from "../link/linkProject.js";
import { canonicalCondition, conditionNode } from "../model/conditions.js";
import type { Contract, QualityRule } from "../model/contract.js";
import type { ConditionNode, DagPlan, DagRuntime, DefaultArgsPlan, Freshness, ManifestAsset, ManifestSource, PartitioningPlan, PartitionSchedulePlan, QualityRule as ManifestQualityRule, RuntimeCommon, RuntimeDataset } from "../model/manifest.js";
import { compareStrings } from "../support/compare.js";
import { parseDurationSeconds } from "../support/duration.js";
import { KEY_FORMATS, mapperFor, type Grain } from "../support/partitions.js";
import { implicitQualityRules } from "./implicitQualityRules.js";

export type { ConditionNode, DagPlan, DefaultArgsPlan, SchedulePlan, TaskPlan } from "../model/manifest.js";

/**
 * The asset condition of a contract's trigger (DESIGN §3.5): default `all` of triggering upstreams;
 * in canonical order ({@link canonicalCondition}), whatever order the author listed them in.
 */
export function conditionOf(contract: Contract, triggering: readonly string[]): ConditionNode | null {
  if (triggering.length === 0 || contract.trigger === "manual") return null;
  const spec = contract.trigger?.assets ?? "all";
  if (typeof spec === "string") {
    if (triggering.length === 1) return { asset: triggering[0]! };
    return spec === "all" ? { all: canonicalLeaves(triggering) } : { any: canonicalLeaves(triggering) };
  }
  return canonicalCondition(conditionNode(spec));
}

/**
 * `{ asset }` leaves of `names` in the order {@link canonicalCondition} gives the members of a group
 * of leaves, each name once: by the JSON text of the name, compared by code unit. The members'
 * texts there are `{"asset":` + that text + `}`, the same prefix and suffix around each, and one
 * JSON string literal is never a proper prefix of another (its closing quote is its first
 * unescaped quote), so the texts compare as the names' texts do, and are equal when the names are.
 */
function canonicalLeaves(names: readonly string[]): ConditionNode[] {
  const keyed = names.map((asset) => ({ asset, key: JSON.stringify(asset) }));
  // Sort for determinism: the members of an all/any are a set to Airflow.
  keyed.sort((a, b) => compareStrings(a.key, b.key));
  const leaves: ConditionNode[] = [];
  for (let i = 0; i < keyed.length; i++) if (i === 0 || keyed[i]!.key !== keyed[i - 1]!.key) leaves.push({ asset: keyed[i]!.asset });
  return leaves;
}

/**
 * The assertion name of each quality rule: its own `name`, else `<metric>_<column>` (`rowCount`,
 * `sql_<n>` for SQL rules), made unique within the dataset by a position suffix.
 */
export function qualityNames(rules: ReadonlyArray<{ name?: string; type?: string; metric?: string; column?: string }>): string[] {
  // Loops, not `map`/`filter`/`join`/`indexOf` closures: called for each of a project's datasets
  // (45,000 rules in the 10,000-contract benchmark), each with a few rules.
  const count = rules.length;
  const names: string[] = [];
  for (let i = 0; i < count; i++) {
    const q = rules[i]!;
    if (q.name !== undefined && q.name !== null) names.push(q.name);
    else if (q.type === "sql") names.push(`sql_${i + 1}`);
    else {
      // `[metric, column].filter(Boolean).join("_")`: the non-empty ones, joined by "_".
      const { metric, column } = q;
      names.push(metric ? (column ? `${metric}_${column}` : `${metric}`) : column ? `${column}` : "");
    }
  }
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const n = names[i]!;
    // Taken by an earlier rule's name, or (for a rule without its own) by any rule's own name.
    let taken = false;
    for (let j = 0; j < i && !taken; j++) taken = names[j] === n;
    if (!taken && rules[i]!.name === undefined) for (let j = 0; j < count && !taken; j++) taken = rules[j]!.name === n;
    out.push(taken ? `${n}_${i + 1}` : n);
  }
  return out;
}

type DbtPublishers = ReturnType<typeof dbtPublishers>;

/**
 * A dataset's authored quality rules as the manifest's `assets[].quality` carries them: every
 * default decided here (the name of {@link qualityNames}, severity "error"), so no reader supplies one.
 */
export function manifestQuality(rules: readonly QualityRule[]): ManifestQualityRule[] {
  const names = qualityNames(rules);
  const out: ManifestQualityRule[] = [];
  for (let i = 0; i < rules.length; i++) out.push({ ...rules[i]!, name: names[i]!, severity: rules[i]!.severity ?? "error" });
  return out;
}

/**
 * The audit's data-time rules of one dataset (DESIGN §5.5): when `freshness.column` is one of its
 * properties, `now − max(column)` in seconds must be at most `max_age` (severity `warning`: published,
 * degraded) and at most `degrade_after` (severity `error`: gated by `on_failure`).
 */
export function dataTimeRules(freshness: Freshness | undefined, properties: ReadonlyArray<{ name: string }>): ManifestQualityRule[] {
  const f = freshness;
  if (!f?.column || !properties.some((p) => p.name === f.column)) return [];
  const rule = (name: string, duration: string, severity: "warning" | "error"): ManifestQualityRule => ({
    name,
    metric: "freshness",
    column: f.column!,
    unit: "seconds",
    mustBeLessOrEqualTo: parseDurationSeconds(duration)!,
    severity,
    description: `data time: now - max(${f.column}) at most ${duration}`,
  });
  return [rule("freshness_max_age", f.max_age, "warning"), ...(f.degrade_after ? [rule("freshness_degrade_after", f.degrade_after, "error")] : [])];
}

/**
 * The quality rules the audit evaluates for one produced dataset, from what manifestVersion 2
 * stores once (ADR 0017f): the asset's authored rules (`assets[].quality`, named and severity
 * decided), then the implicit rules of its key constraints ({@link implicitQualityRules}; one
 * whose name an authored rule already has gets a position suffix, as {@link qualityNames}
 * decides), then the data-time rules of the DAG's `freshness.column` ({@link dataTimeRules}).
 * The runtime derives the same list (`contract_runtime.quality_rules.runtime_quality`); version 1
 * stored it as `dags[].runtime.datasets[].quality`.
 *
 * @param asset The dataset's `assets[]` entry (`schema` null, as for an external, gives its authored rules only).
 * @param freshness The DAG's `runtime.freshness`.
 */
export function runtimeQuality(asset: Pick<ManifestAsset, "schema" | "quality">, freshness: Freshness | undefined): ManifestQualityRule[] {
  if (!asset.schema) return [...asset.quality];
  const implicit = implicitQualityRules({ schema: asset.schema, quality: asset.quality });
  const names = qualityNames([...asset.quality, ...implicit]);
  return [...asset.quality, ...implicit.map((q, i) => ({ ...q, name: names[asset.quality.length + i]! })), ...dataTimeRules(freshness, asset.schema.properties)];
}

function runtimeOf(
  c: LinkedContract,
  sqlFiles: ReadonlyMap<string, string>,
  config: OrchestrationConfig,
  dbt: () => DbtPublishers,
): DagRuntime {
  const contract = c.contract;
  const datasets: RuntimeDataset[] = contract.datasets.map((d) => ({
    name: d.name,
    asset: `${contract.domain}.${d.name}`,
    // The uri, schema and quality rules are the asset's (`assets[]`, ADR 0017f): not repeated here.
    layer: d.layer ?? DEFAULT_LAYER[contract.kind],
    ...(d.physical ? { physical: d.physical } : {}),
  }));
  const common: Omit<RuntimeCommon, "kind"> = {
    domain: contract.domain,
    on_failure: contract.on_failure ?? "block_publish",
    datasets,
    // Sort for determinism: upstreams are a set (each asset once, CA3036), so their list order
    // must not reach the manifest.
    upstreams: [...c.upstreams].sort((a, b) => compareStrings(a.asset, b.asset)).map((u) => ({
      asset: u.asset,
      trigger: u.trigger,
      ...(u.schemaVersion !== undefined ? { schema_version: u.schemaVersion } : {}),
      ...(u.require !== undefined ? { require: u.require } : {}),
    })),
    ...(contract.processing ? { processing: contract.processing } : {}),
    ...(contract.freshness ? { freshness: contract.freshness } : {}),
    ...(c.runSettings.warehouse_conn_id ? { warehouse_conn_id: c.runSettings.warehouse_conn_id } : {}),
    ...(contract.partitioning ? { partitioning: partitioningPlan(contract.partitioning) } : {}),
  };
  if (contract.kind === "IngestionContract") {
    const sample = config.sampleData.get(contract.source.name);
    const ingestion = {
      ...(contract.on_schema_drift ? { on_schema_drift: contract.on_schema_drift } : {}),
      ...(sample !== undefined ? { sample_data: sample } : {}),
      ...(config.proposals ? { proposals: config.proposals } : {}),
    };
    if (contract.mode === "extract" && contract.landing) {
      return { kind: "IngestionContract", ...common, producer: { type: "extract" }, source: contract.source, mode: "extract", landing: contract.landing, ...ingestion };
    }
    const m = c.manifestSource;
    const watcher = queueWatcherOf(contract);
    // A load of an extract's dataset reads the manifests under that extract's landing (DESIGN §3.2).
    const manifest: ManifestSource | undefined = m
      ? { contract: m.contract, uri: m.uri, ...(m.connection_id !== undefined ? { connection_id: m.connection_id } : {}), ...(m.sampleData ? { local_demo: true as const } : {}) }
      : undefined;
    return {
      kind: "IngestionContract",
      ...common,
      producer: { type: "load" },
      source: manifest ? { ...contract.source, manifest } : contract.source,
      mode: contract.mode,
      ...(contract.incremental ? { incremental: contract.incremental } : {}),
      ...ingestion,
      ...(watcher ? { queue: watcher } : {}),
    };
  }
  const p = contract.producer;
  switch (p.type) {
    // The SQL text travels in the manifest: workers share no project files (DESIGN §5.4).
    case "sql":
      return { kind: "TransformContract", ...common, producer: { ...p, sql: sqlFiles.get(p.path) ?? "" } };
    case "command": {
      // The shim's argument list and environment come from the orchestration config (DESIGN §3.6).
      const family = config.producers.get(p.family);
      return { kind: "TransformContract", ...common, producer: { ...p, command: [...(family?.command ?? []), ...(p.args ?? [])], env: family?.env ?? {} } };
    }
    case "python":
      return { kind: "TransformContract", ...common, producer: p };
    case "dbt": {
      // What the dbt run builds and where its refs resolve, from the committed dbt manifest (ADR 0012).
      // Resolved by link (`resolveDbtProducers`); a project linked otherwise is resolved here.
      const resolved = c.dbt ?? resolveDbtProducer(c, sqlFiles.get(dbtManifestPath(p.project)), dbt().get(p.project) ?? new Map());
      return {
        kind: "TransformContract",
        ...common,
        producer: { ...p, manifest: resolved.manifest, models: resolved.models, seeds: resolved.seeds, upstream_models: resolved.upstreamModels },
      };
    }
  }
}

/** A contract's `partitioning` with its grain's key format (`support/partitions.ts`). */
export function partitioningPlan(p: { column: string; grain: Grain }): PartitioningPlan {
  return { column: p.column, grain: p.grain, key_format: KEY_FORMATS[p.grain] };
}

/**
 * The partitioned timetable of a partitioned contract (ADR 0028): on a cron, `CronPartitionTimetable`
 * with `run_offset` -1 (the key of the period holding the previous fire, the one just ended); on
 * triggering upstreams, `PartitionedAssetTimetable` with each upstream's mapper by `mapperFor`
 * (AlignedPartitionsRule has refused every pair it refuses). Nothing for an unpartitioned or a
 * manual contract.
 */
function partitionSchedule(c: LinkedContract, triggering: readonly string[], grainOf: ReadonlyMap<string, Grain>): { partition?: PartitionSchedulePlan } {
  const p = c.contract.partitioning;
  if (!p || c.contract.trigger === "manual") return {};
  if (c.timetable) return { partition: { timetable: "CronPartitionTimetable", run_offset: -1, key_format: partitioningPlan(p).key_format } };
  if (triggering.length === 0) return {};
  // Sort for determinism.
  const mappers = [...triggering].sort(compareStrings).map((asset) => {
    const m = mapperFor(grainOf.get(asset) ?? p.grain, p.grain);
    return { asset, ...(typeof m === "string" ? { mapper: "IdentityMapper" as const } : m) };
  });
  return { partition: { timetable: "PartitionedAssetTimetable", mappers } };
}

/**
 * The plan stage: one DAG per active or deprecated contract (draft and retired get none), in
 * dag_id order. Tasks are write-audit-publish: `produce` (inlets: everything read), `audit`,
 * `publish` (the only task with outlets, DESIGN §5.2).
 */
export function planDags(project: LinkedProject): StageResult<DagPlan[]> {
  const plans: DagPlan[] = [];
  let publishers: DbtPublishers | undefined;
  const dbt = (): DbtPublishers => (publishers ??= dbtPublishers(project.contracts, project.producerFiles));
  const grainOf = new Map<string, Grain>();
  for (const c of project.contracts) if (c.contract.partitioning) for (const a of c.outlets) grainOf.set(a.name, c.contract.partitioning.grain);
  for (const c of project.contracts) {
    if (c.status !== "active" && c.status !== "deprecated") continue;
    const contract = c.contract;
    const triggering: string[] = [];
    const read = new Set<string>();
    for (const u of c.upstreams) {
      if (u.trigger) triggering.push(u.asset);
      read.add(u.asset);
    }
    if (c.sourceAsset) read.add(c.sourceAsset);
    // Sort for determinism: inlets are a set to Airflow.
    const inlets = [...read].sort(compareStrings);
    const outlets = c.outlets.map((a) => a.name);
    const defaultArgs: DefaultArgsPlan = { owner: contract.owner };
    if (c.runSettings.retries !== undefined) defaultArgs.retries = c.runSettings.retries;
    if (c.runSettings.retry_delay) defaultArgs.retry_delay_seconds = parseDurationSeconds(c.runSettings.retry_delay)!;
    if (c.runSettings.execution_timeout) defaultArgs.execution_timeout_seconds = parseDurationSeconds(c.runSettings.execution_timeout)!;
    if (c.runSettings.pool) defaultArgs.pool = c.runSettings.pool;
    plans.push({
      dag_id: contract.id,
      contract: c.located.source.file.path,
      contract_sha256: c.sha256,
      contract_git_blob: c.gitBlob,
      contract_version: contract.version,
      status: c.status,
      owner: contract.owner,
      description: contract.description ?? "",
      tags: contract.tags ?? [],
      schedule: {
        // An event-driven ingestion runs on its source's Asset events, which its watcher makes (ADR 0034).
        assets: queueWatcherOf(contract) && c.sourceAsset !== undefined ? { asset: c.sourceAsset } : conditionOf(contract, triggering),
        cron: c.timetable ? { expression: c.timetable.cron, timezone: c.timetable.timezone } : null,
        ...partitionSchedule(c, triggering, grainOf),
      },
      inlets,
      outlets,
      tasks: [
        { task_id: "produce", inlets, outlets: [], upstream_task_ids: [] },
        { task_id: "audit", inlets: [], outlets: [], upstream_task_ids: ["produce"] },
        { task_id: "publish", inlets: [], outlets, upstream_task_ids: ["audit"] },
      ],
      default_args: defaultArgs,
      ...(c.deadline ? { deadline: c.deadline } : {}),
      runtime: runtimeOf(c, project.producerFiles, project.config, dbt),
    });
  }
  // Sort for determinism.
  plans.sort((a, b) => compareStrings(a.dag_id, b.dag_id));
  return { value: plans, diagnostics: [] };
}
