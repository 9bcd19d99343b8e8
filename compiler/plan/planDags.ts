import type { StageResult } from "../diagnostics/diagnostic.js";
import type { OrchestrationConfig } from "../link/config.js";
import { DEFAULT_LAYER, type AssetDeclaration, type LinkedContract, type LinkedProject } from "../link/linkProject.js";
import type { AssetCondition, Contract, Dataset, QualityRule } from "../model/contract.js";
import { compareStrings } from "../support/compare.js";
import { parseDurationSeconds } from "../support/duration.js";
import { implicitQualityRules } from "./implicitQualityRules.js";

/** An asset condition as the manifest and the templates carry it. */
export type ConditionNode = { asset: string } | { all: ConditionNode[] } | { any: ConditionNode[] };

/** When a DAG runs: on asset events, on a cron in a time zone, both (either fires), or manually. */
export interface SchedulePlan {
  assets: ConditionNode | null;
  cron: { expression: string; timezone: string } | null;
}

export interface TaskPlan {
  task_id: "produce" | "audit" | "publish";
  inlets: string[];
  outlets: string[];
  upstream_task_ids: string[];
}

/** The run settings as Airflow default_args, durations in seconds. */
export interface DefaultArgsPlan {
  owner: string;
  retries?: number;
  retry_delay_seconds?: number;
  execution_timeout_seconds?: number;
  pool?: string;
}

/** One DAG to render: a pure description, no Python in it. */
export interface DagPlan {
  dag_id: string;
  contract: string;
  contract_sha256: string;
  contract_git_blob: string;
  contract_version: string;
  status: "active" | "deprecated";
  owner: string;
  description: string;
  tags: string[];
  schedule: SchedulePlan;
  inlets: string[];
  outlets: string[];
  tasks: TaskPlan[];
  default_args: DefaultArgsPlan;
  /** What the runtime needs at task time (contract_runtime reads it from the manifest). */
  runtime: Record<string, unknown>;
}

function toNode(condition: AssetCondition): ConditionNode {
  if (typeof condition === "string") return { asset: condition };
  if ("all" in condition) return { all: condition.all.map(toNode) };
  return { any: condition.any.map(toNode) };
}

/** The asset condition of a contract's trigger (DESIGN §3.5): default `all` of triggering upstreams. */
export function conditionOf(contract: Contract, triggering: readonly string[]): ConditionNode | null {
  if (triggering.length === 0 || contract.trigger === "manual") return null;
  const spec = contract.trigger?.assets ?? "all";
  if (typeof spec === "string") {
    if (triggering.length === 1) return { asset: triggering[0]! };
    const leaves = triggering.map((asset) => ({ asset }));
    return spec === "all" ? { all: leaves } : { any: leaves };
  }
  return toNode(spec);
}

/**
 * The assertion name of each quality rule: its own `name`, else `<metric>_<column>` (`rowCount`,
 * `sql_<n>` for SQL rules), made unique within the dataset by a position suffix.
 */
export function qualityNames(rules: readonly QualityRule[]): string[] {
  const names = rules.map((q, i) => q.name ?? (q.type === "sql" ? `sql_${i + 1}` : [q.metric, q.column].filter(Boolean).join("_")));
  return names.map((n, i) => (names.indexOf(n) !== i || (rules[i]!.name === undefined && rules.some((r) => r.name === n)) ? `${n}_${i + 1}` : n));
}

/**
 * A dataset's quality rules as the runtime evaluates them: the author's rules (named, severity
 * defaulted to `error`), then the implicit rules of its key constraints (`implicitQualityRules`).
 * An implicit rule whose name an author rule already has gets a position suffix.
 */
function qualityOf(d: Dataset): Array<Record<string, unknown>> {
  const authored = d.quality ?? [];
  const implicit = implicitQualityRules(d);
  const names = qualityNames([...authored, ...implicit]);
  return [
    ...authored.map((q, i) => ({ ...q, name: names[i]!, severity: q.severity ?? "error" })),
    ...implicit.map((q, i) => ({ ...q, name: names[authored.length + i]! })),
  ];
}

function runtimeOf(
  c: LinkedContract,
  assets: ReadonlyMap<string, AssetDeclaration>,
  sqlFiles: ReadonlyMap<string, string>,
  config: OrchestrationConfig,
): Record<string, unknown> {
  const contract = c.contract;
  const runtime: Record<string, unknown> = {
    kind: contract.kind,
    domain: contract.domain,
    on_failure: contract.on_failure ?? "block_publish",
    datasets: contract.datasets.map((d) => ({
      name: d.name,
      asset: `${contract.domain}.${d.name}`,
      uri: assets.get(`${contract.domain}.${d.name}`)?.uri ?? null,
      layer: d.layer ?? DEFAULT_LAYER[contract.kind],
      schema: d.schema,
      quality: qualityOf(d),
      ...(d.physical ? { physical: d.physical } : {}),
    })),
    upstreams: c.upstreams.map((u) => ({
      asset: u.asset,
      trigger: u.trigger,
      ...(u.schemaVersion !== undefined ? { schema_version: u.schemaVersion } : {}),
      ...(u.require !== undefined ? { require: u.require } : {}),
    })),
  };
  if (contract.kind === "TransformContract") {
    // The SQL text travels in the manifest: workers share no project files (DESIGN §5.4).
    const p = contract.producer;
    if (p.type === "sql") runtime.producer = { ...p, sql: sqlFiles.get(p.path) ?? "" };
    else if (p.type === "command") {
      // The shim's argument list and environment come from the orchestration config (DESIGN §3.6).
      const family = config.producers.get(p.family);
      runtime.producer = { ...p, command: [...(family?.command ?? []), ...(p.args ?? [])], env: family?.env ?? {} };
    } else runtime.producer = p;
  } else {
    runtime.producer = { type: "load" };
    runtime.source = contract.source;
    runtime.mode = contract.mode;
    if (contract.incremental) runtime.incremental = contract.incremental;
    if (contract.on_schema_drift) runtime.on_schema_drift = contract.on_schema_drift;
    const sample = config.sampleData.get(contract.source.name);
    if (sample !== undefined) runtime.sample_data = sample;
  }
  if (contract.processing) runtime.processing = contract.processing;
  if (contract.freshness) runtime.freshness = contract.freshness;
  if (c.runSettings.warehouse_conn_id) runtime.warehouse_conn_id = c.runSettings.warehouse_conn_id;
  return runtime;
}

/**
 * The plan stage: one DAG per active or deprecated contract (draft and retired get none), in
 * dag_id order. Tasks are write-audit-publish: `produce` (inlets: everything read), `audit`,
 * `publish` (the only task with outlets, DESIGN §5.2).
 */
export function planDags(project: LinkedProject): StageResult<DagPlan[]> {
  const plans: DagPlan[] = [];
  for (const c of project.contracts) {
    if (c.status !== "active" && c.status !== "deprecated") continue;
    const contract = c.contract;
    const triggering = c.upstreams.filter((u) => u.trigger).map((u) => u.asset);
    // Sort for determinism: inlets are a set to Airflow.
    const inlets = [...new Set([...c.upstreams.map((u) => u.asset), ...(c.sourceAsset ? [c.sourceAsset] : [])])].sort(compareStrings);
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
        assets: conditionOf(contract, triggering),
        cron: c.timetable ? { expression: c.timetable.cron, timezone: c.timetable.timezone } : null,
      },
      inlets,
      outlets,
      tasks: [
        { task_id: "produce", inlets, outlets: [], upstream_task_ids: [] },
        { task_id: "audit", inlets: [], outlets: [], upstream_task_ids: ["produce"] },
        { task_id: "publish", inlets: [], outlets, upstream_task_ids: ["audit"] },
      ],
      default_args: defaultArgs,
      runtime: runtimeOf(c, project.assets, project.producerFiles, project.config),
    });
  }
  // Sort for determinism.
  plans.sort((a, b) => compareStrings(a.dag_id, b.dag_id));
  return { value: plans, diagnostics: [] };
}
