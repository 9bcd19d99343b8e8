import type { AirflowAsset } from "../airflow/airflowClient.js";
import type { Manifest } from "../manifest/buildManifest.js";
import type { MonitoredAsset } from "../plan/planFreshnessMonitor.js";
import { canonicalJson } from "../support/canonical-json.js";
import { compareStrings } from "../support/compare.js";
import { formatDurationSeconds } from "../support/duration.js";
import { keysInRange, partitionBounds, type Grain } from "../support/partitions.js";

/**
 * A point-in-time freshness state, the monitor's rules (docs/contract-format.md, "Freshness"):
 * `unknown` no Asset event, `fresh` age ≤ max_age, `stale` age > max_age, `degraded` age >
 * degrade_after. `recovered` is a transition the monitor sees between two evaluations; a single
 * reading of Airflow reports it as `fresh`.
 */
export type FreshnessState = "unknown" | "fresh" | "stale" | "degraded";

/** How many missing partition keys an entry lists, oldest first (`contract_runtime.freshness.MISSING_PARTITIONS_LISTED`). */
export const MISSING_PARTITIONS_LISTED = 20;

/**
 * The partitions of a partitioned asset, from the `partition_key` of its Asset events (the same
 * object as the monitor's entry `partitions`, docs/contract-format.md "Freshness").
 */
export interface PartitionFreshness {
  grain: Grain;
  /** The published key whose partition starts first; null when no event has a key of the grain. */
  first: string | null;
  /** The published key whose partition starts last (key order, not event order). */
  newest: string | null;
  /** The end of the newest partition's UTC [start, end), ISO 8601. */
  newest_end: string | null;
  /** Distinct published keys. */
  published: number;
  /** Keys from `first` to `newest` with no event: at most `MISSING_PARTITIONS_LISTED`, oldest first. */
  missing: string[];
  missing_count: number;
  /** Events without a partition key, or with one that is not a key of the grain. */
  ignored_events: number;
}

/**
 * The newest partition's age and the partitions of one partitioned asset, the rule of
 * `contract_runtime.freshness.partition_freshness` (tested against the same vector,
 * `test/fixtures/partition-freshness.json`): age = max(0, now − end of the newest partition), in
 * seconds, null when no event has a key of the grain; missing = the keys of the grain between the
 * first and the newest published key that no event has.
 */
export function partitionFreshness(grain: Grain, keys: Iterable<string | null>, now: Date): { age_seconds: number | null; partitions: PartitionFreshness } {
  const published = new Map<string, { start: number; end: number }>();
  let ignored = 0;
  for (const key of keys) {
    const found = key === null ? undefined : partitionBounds(grain, key);
    if (key === null || found === undefined) ignored++;
    else published.set(key, found);
  }
  const partitions: PartitionFreshness = { grain, first: null, newest: null, newest_end: null, published: published.size, missing: [], missing_count: 0, ignored_events: ignored };
  if (published.size === 0) return { age_seconds: null, partitions };
  let first: [string, { start: number; end: number }] | undefined;
  let newest: [string, { start: number; end: number }] | undefined;
  for (const entry of published) {
    if (first === undefined || entry[1].start < first[1].start) first = entry;
    if (newest === undefined || entry[1].start > newest[1].start) newest = entry;
  }
  const missing = keysInRange(grain, first![1].start, newest![1].end, Number.MAX_SAFE_INTEGER).filter((k) => !published.has(k));
  partitions.first = first![0];
  partitions.newest = newest![0];
  partitions.newest_end = new Date(newest![1].end).toISOString();
  partitions.missing = missing.slice(0, MISSING_PARTITIONS_LISTED);
  partitions.missing_count = missing.length;
  return { age_seconds: Math.max(0, now.getTime() - newest![1].end) / 1000, partitions };
}

/** One asset of the freshness report. */
export interface FreshnessEntry {
  asset: string;
  state: FreshnessState;
  /**
   * Seconds since the latest Asset event; null when there is none. For a partitioned asset,
   * seconds since the end of its newest partition (`partitions`), null when none is published.
   */
  age_seconds: number | null;
  last_event_at: string | null;
  max_age: string;
  degrade_after: string | null;
  /** Who made the latest event: a dag_id, `rest_api` (`POST /api/v2/assets/events`), or null. */
  last_event_source: string | null;
  /** False when Airflow has no asset of that name and URI yet (not parsed): then `unknown`. */
  in_airflow: boolean;
  /** A partitioned asset's partitions (the manifest entry has `partition_grain`); absent otherwise. */
  partitions?: PartitionFreshness;
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
 * assets (matched by name and URI), each one's latest event and, for a partitioned asset, the
 * `partition_key` of each of its events (`partitionKeys`, by Airflow asset id; none read: no
 * partition published), at instant `now`.
 */
export function buildFreshnessReport(
  manifest: Manifest,
  airflowAssets: readonly AirflowAsset[],
  latest: ReadonlyMap<number, LatestEvent | undefined>,
  context: { url: string; version: string; now: Date },
  partitionKeys: ReadonlyMap<number, readonly (string | null)[]> = new Map(),
): FreshnessReport {
  const summary: Record<FreshnessState, number> = { unknown: 0, fresh: 0, stale: 0, degraded: 0 };
  const assets: FreshnessEntry[] = [];
  for (const policy of manifest.freshness_monitor?.assets ?? []) {
    const row = airflowAssets.find((a) => a.name === policy.name && a.uri === policy.uri);
    const event = row ? latest.get(row.id) : undefined;
    let age = event ? Math.max(0, Math.round(context.now.getTime() - Date.parse(event.timestamp)) / 1000) : null;
    let partitions: PartitionFreshness | undefined;
    if (policy.partition_grain !== undefined) {
      ({ age_seconds: age, partitions } = partitionFreshness(policy.partition_grain, (row && partitionKeys.get(row.id)) ?? [], context.now));
    }
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
      ...(partitions ? { partitions } : {}),
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

/** How many partitions to name in the text format; JSON lists up to `MISSING_PARTITIONS_LISTED`. */
const MISSING_PARTITIONS_IN_TEXT = 5;

function missingText(p: PartitionFreshness): string {
  if (p.missing_count === 0) return "none missing";
  const named = p.missing.slice(0, MISSING_PARTITIONS_IN_TEXT);
  const more = p.missing_count - named.length;
  return `${p.missing_count} missing: ${named.join(", ")}${more > 0 ? ` and ${more} more` : ""}`;
}

/**
 * The report for people: one line per asset, worst first, then a summary line. A partitioned
 * asset's line names its newest partition, its end, its age and the missing partitions.
 */
export function formatFreshnessText(report: FreshnessReport): string {
  const rank: Record<FreshnessState, number> = { degraded: 0, stale: 1, unknown: 2, fresh: 3 };
  const rows = [...report.assets].sort((a, b) => rank[a.state] - rank[b.state] || compareStrings(a.asset, b.asset));
  const width = Math.max(0, ...rows.map((r) => r.asset.length));
  const lines = rows.map((r) => {
    const policy = `max_age ${r.max_age}${r.degrade_after ? `, degrade_after ${r.degrade_after}` : ""}`;
    const lastEvent = `last event ${r.last_event_at} by ${r.last_event_source ?? "?"}`;
    const p = r.partitions;
    const age =
      r.age_seconds === null
        ? !r.in_airflow
          ? "not in Airflow yet"
          : p && r.last_event_at !== null
            ? `no ${p.grain} partition published, ${lastEvent}`
            : "never published"
        : p
          ? `newest partition ${p.newest} (${p.grain}, ended ${p.newest_end}), age ${formatDurationSeconds(Math.round(r.age_seconds))}, ${missingText(p)}, ${lastEvent}`
          : `age ${formatDurationSeconds(Math.max(1, Math.round(r.age_seconds)))}, ${lastEvent}`;
    return `${r.state.padEnd(8)}  ${r.asset.padEnd(width)}  ${age} (${policy})`;
  });
  const s = report.summary;
  const gaps = report.assets.filter((a) => (a.partitions?.missing_count ?? 0) > 0).length;
  lines.push(
    `${report.assets.length} assets with a freshness policy in ${report.airflow.url} (Airflow ${report.airflow.version}): ${s.degraded} degraded, ${s.stale} stale, ${s.unknown} unknown, ${s.fresh} fresh` +
      (gaps > 0 ? `; ${gaps} with missing partitions` : ""),
  );
  return `${lines.join("\n")}\n`;
}
