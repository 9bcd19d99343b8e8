import { DUCKDB_POOL, writesDuckdbFile } from "../link/config.js";
import { notifierPlan } from "../link/freshness.js";
import type { LinkedProject } from "../link/linkProject.js";
import type { FreshnessMonitorPlan, MonitoredAsset } from "../model/manifest.js";
import { compareStrings } from "../support/compare.js";
import { parseDurationSeconds } from "../support/duration.js";

export type { FreshnessMonitorPlan, MonitoredAsset } from "../model/manifest.js";

/**
 * The monitor of every asset with a freshness policy that has events to watch: datasets of active
 * or deprecated contracts, and external assets someone publishes (`published_by`). Null when there
 * is none, so a project without freshness gets no monitor module. A dataset of a partitioned
 * contract carries its grain (`partition_grain`), so freshness is measured by its partitions.
 */
export function planFreshnessMonitor(project: LinkedProject): FreshnessMonitorPlan | null {
  const assets: MonitoredAsset[] = [];
  const grainOf = new Map(project.contracts.flatMap((c) => (c.contract.partitioning ? [[c.contract.id, c.contract.partitioning.grain] as const] : [])));
  for (const a of project.assets.values()) {
    const policy = a.extra.freshness as { max_age: string; degrade_after?: string } | undefined;
    if (!policy) continue;
    if (!a.external && a.status !== "active" && a.status !== "deprecated") continue;
    const publishedBy = a.external ? (a.publishedBy ?? null) : null;
    if (a.external && publishedBy === null) continue;
    assets.push({
      name: a.name,
      uri: a.uri,
      producer: a.external ? null : (a.producer ?? null),
      published_by: publishedBy,
      max_age: policy.max_age,
      max_age_seconds: parseDurationSeconds(policy.max_age) ?? 0,
      degrade_after: policy.degrade_after ?? null,
      degrade_after_seconds: policy.degrade_after !== undefined ? (parseDurationSeconds(policy.degrade_after) ?? null) : null,
      // A dataset of a partitioned contract: every dataset of the contract is written per partition (ADR 0028).
      ...(!a.external && a.producer && grainOf.has(a.producer) ? { partition_grain: grainOf.get(a.producer)! } : {}),
    });
  }
  if (assets.length === 0) return null;
  // Sort for determinism.
  assets.sort((x, y) => compareStrings(x.name, y.name));
  const monitor = project.config.freshnessMonitor;
  return {
    dag_id: monitor.dagId,
    schedule: { cron: { expression: monitor.cron, timezone: monitor.timezone } },
    notifier: notifierPlan(project.config, monitor.notifier) ?? null,
    warehouse_conn_id: project.config.defaults.warehouse_conn_id ?? null,
    // Its states are written to that warehouse: on a DuckDB file, one writer at a time (ADR 0030).
    ...(writesDuckdbFile(project.config, project.config.defaults) ? { pool: DUCKDB_POOL } : {}),
    assets,
  };
}
