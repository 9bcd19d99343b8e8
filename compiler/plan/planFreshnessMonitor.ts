import type { NotifierPlan } from "../link/freshness.js";
import { notifierPlan } from "../link/freshness.js";
import type { LinkedProject } from "../link/linkProject.js";
import { compareStrings } from "../support/compare.js";
import { parseDurationSeconds } from "../support/duration.js";

/** One asset the monitor watches: its identity and policy, durations also in seconds. */
export interface MonitoredAsset {
  name: string;
  uri: string;
  /** The producing dag_id; null for an external asset (its events come from `published_by`). */
  producer: string | null;
  published_by: string | null;
  max_age: string;
  max_age_seconds: number;
  degrade_after: string | null;
  degrade_after_seconds: number | null;
}

/** The generated freshness monitor DAG (DESIGN §5.5), as the manifest carries it. */
export interface FreshnessMonitorPlan {
  dag_id: string;
  schedule: { cron: { expression: string; timezone: string } };
  /** The notifier alerts go through; null when the config names none (states are still kept). */
  notifier: NotifierPlan | null;
  /** Where the states are kept: the config's default warehouse connection (null: the default). */
  warehouse_conn_id: string | null;
  assets: MonitoredAsset[];
}

/**
 * The monitor of every asset with a freshness policy that has events to watch: datasets of active
 * or deprecated contracts, and external assets someone publishes (`published_by`). Null when there
 * is none, so a project without freshness gets no monitor module.
 */
export function planFreshnessMonitor(project: LinkedProject): FreshnessMonitorPlan | null {
  const assets: MonitoredAsset[] = [];
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
    assets,
  };
}
