import type { AirflowAsset } from "../airflow/airflowClient.js";
import type { Manifest } from "../manifest/buildManifest.js";
import type { MonitoredAsset } from "../plan/planFreshnessMonitor.js";
import { canonicalJson } from "../support/canonical-json.js";
import { compareStrings } from "../support/compare.js";
import { formatDurationSeconds } from "../support/duration.js";

/**
 * A point-in-time freshness state, the monitor's rules (docs/contract-format.md, "Freshness"):
 * `unknown` no Asset event, `fresh` age ≤ max_age, `stale` age > max_age, `degraded` age >
 * degrade_after. `recovered` is a transition the monitor sees between two evaluations; a single
 * reading of Airflow reports it as `fresh`.
 */
export type FreshnessState = "unknown" | "fresh" | "stale" | "degraded";

/** One asset of the freshness report. */
export interface FreshnessEntry {
  asset: string;
  state: FreshnessState;
  /** Seconds since the latest Asset event; null when there is none. */
  age_seconds: number | null;
  last_event_at: string | null;
  max_age: string;
  degrade_after: string | null;
  /** Who made the latest event: a dag_id, `rest_api` (`POST /api/v2/assets/events`), or null. */
  last_event_source: string | null;
  /** False when Airflow has no asset of that name and URI yet (not parsed): then `unknown`. */
  in_airflow: boolean;
}

export interface FreshnessReport {
  reportVersion: 1;
  airflow: { url: string; version: string };
  evaluated_at: string;
  assets: FreshnessEntry[];
  summary: Record<FreshnessState, number>;
}

/** The state of an age under a policy (the same thresholds as `contract_runtime.freshness.classify`). */
export function freshnessState(ageSeconds: number | null, policy: Pick<MonitoredAsset, "max_age_seconds" | "degrade_after_seconds">): FreshnessState {
  if (ageSeconds === null) return "unknown";
  if (policy.degrade_after_seconds !== null && ageSeconds > policy.degrade_after_seconds) return "degraded";
  return ageSeconds > policy.max_age_seconds ? "stale" : "fresh";
}

/** The latest event of an asset as the report needs it. */
export interface LatestEvent {
  timestamp: string;
  sourceDagId: string | null;
  fromRestApi: boolean;
}

/**
 * The report over the manifest's monitored assets (`freshness_monitor.assets`), given Airflow's
 * assets (matched by name and URI) and each one's latest event, at instant `now`.
 */
export function buildFreshnessReport(
  manifest: Manifest,
  airflowAssets: readonly AirflowAsset[],
  latest: ReadonlyMap<number, LatestEvent | undefined>,
  context: { url: string; version: string; now: Date },
): FreshnessReport {
  const summary: Record<FreshnessState, number> = { unknown: 0, fresh: 0, stale: 0, degraded: 0 };
  const assets: FreshnessEntry[] = [];
  for (const policy of manifest.freshness_monitor?.assets ?? []) {
    const row = airflowAssets.find((a) => a.name === policy.name && a.uri === policy.uri);
    const event = row ? latest.get(row.id) : undefined;
    const age = event ? Math.max(0, Math.round(context.now.getTime() - Date.parse(event.timestamp)) / 1000) : null;
    const state = freshnessState(age, policy);
    summary[state]++;
    assets.push({
      asset: policy.name,
      state,
      age_seconds: age,
      last_event_at: event ? new Date(Date.parse(event.timestamp)).toISOString() : null,
      max_age: policy.max_age,
      degrade_after: policy.degrade_after,
      last_event_source: event ? (event.fromRestApi ? "rest_api" : event.sourceDagId) : null,
      in_airflow: row !== undefined,
    });
  }
  // Sort for determinism.
  assets.sort((a, b) => compareStrings(a.asset, b.asset));
  return { reportVersion: 1, airflow: { url: context.url, version: context.version }, evaluated_at: context.now.toISOString(), assets, summary };
}

/** Exit code: 1 when any asset is stale or degraded (beyond its promise), else 0. */
export function freshnessExitCode(report: FreshnessReport): 0 | 1 {
  return report.summary.stale + report.summary.degraded > 0 ? 1 : 0;
}

/** The report as canonical JSON (keys sorted). */
export function formatFreshnessJson(report: FreshnessReport): string {
  return canonicalJson(report);
}

/** The report for people: one line per asset, worst first, then a summary line. */
export function formatFreshnessText(report: FreshnessReport): string {
  const rank: Record<FreshnessState, number> = { degraded: 0, stale: 1, unknown: 2, fresh: 3 };
  const rows = [...report.assets].sort((a, b) => rank[a.state] - rank[b.state] || compareStrings(a.asset, b.asset));
  const width = Math.max(0, ...rows.map((r) => r.asset.length));
  const lines = rows.map((r) => {
    const policy = `max_age ${r.max_age}${r.degrade_after ? `, degrade_after ${r.degrade_after}` : ""}`;
    const age =
      r.age_seconds === null
        ? r.in_airflow
          ? "never published"
          : "not in Airflow yet"
        : `age ${formatDurationSeconds(Math.max(1, Math.round(r.age_seconds)))}, last event ${r.last_event_at} by ${r.last_event_source ?? "?"}`;
    return `${r.state.padEnd(8)}  ${r.asset.padEnd(width)}  ${age} (${policy})`;
  });
  const s = report.summary;
  lines.push(`${report.assets.length} assets with a freshness policy in ${report.airflow.url} (Airflow ${report.airflow.version}): ${s.degraded} degraded, ${s.stale} stale, ${s.unknown} unknown, ${s.fresh} fresh`);
  return `${lines.join("\n")}\n`;
}
