import { runAirflowCommand, type AirflowCommandOptions } from "./airflowCommand.js";
import { buildFreshnessReport, formatFreshnessJson, formatFreshnessText, freshnessExitCode, type LatestEvent } from "./freshnessReport.js";

/** Options of `freshness`; `now` is a test hook (default the clock). */
export type FreshnessCommandOptions = AirflowCommandOptions & { now?: () => Date };

/**
 * `contract-assets freshness --airflow-url URL`: the freshness state of every asset the manifest's
 * monitor watches, computed from the running Airflow's REST API (assets paged by `GET
 * /api/v2/assets`, then each one's latest event, and every event's partition key for a partitioned
 * asset), as text or JSON on stdout. Exit 0 when nothing is
 * stale, 1 when an asset is stale or degraded, 2 on a usage, manifest or connection error. Only
 * reads.
 */
export async function runFreshnessCommand(options: FreshnessCommandOptions): Promise<number> {
  return runAirflowCommand("freshness", options, async (manifest, client, out) => {
    const version = await client.version();
    const assets = await client.listAssets({ onlyActive: false });
    const latest = new Map<number, LatestEvent | undefined>();
    const partitionKeys = new Map<number, (string | null)[]>();
    const watched = new Map((manifest.freshness_monitor?.assets ?? []).map((a) => [`${a.name}\u0000${a.uri}`, a] as const));
    for (const asset of assets) {
      const policy = watched.get(`${asset.name}\u0000${asset.uri}`);
      if (!policy) continue;
      latest.set(asset.id, await client.latestAssetEvent(asset.id));
      if (policy.partition_grain !== undefined) partitionKeys.set(asset.id, await client.assetEventPartitionKeys(asset.id));
    }
    const report = buildFreshnessReport(manifest, assets, latest, { url: client.baseUrl, version, now: (options.now ?? (() => new Date()))() }, partitionKeys);
    out(options.format === "json" ? formatFreshnessJson(report) : formatFreshnessText(report));
    return freshnessExitCode(report);
  });
}
