import type { SourceLocation } from "../diagnostics/diagnostic.js";
import { poolFor, runSettingsFor, type OrchestrationConfig } from "./config.js";
import { extractProducing } from "./assetTable.js";
import { resolveDeadline } from "./freshness.js";
import type { AssetDeclaration, AssetTable, LinkedContract, ResolvedUpstream } from "./model.js";

/**
 * Resolution, second half of link: for each accepted contract of the table, its outlets (the
 * Assets it declared and the table kept), its upstreams in author order, its timetable (a cron,
 * or a `schedule_ref` found in the config, with the contract's timezone winning), its run settings
 * (defaults, then domain overrides, then contract overrides; the pool of a contract on a DuckDB
 * file is `poolFor`'s), its content hashes and the
 * DeadlineAlert of `freshness.expected_runtime` (`resolveDeadline`).
 *
 * Pure and total: a reference that does not resolve is left unresolved (no timetable, an upstream
 * naming an absent Asset) for the link rules to report.
 */
export function resolveContracts(table: AssetTable, config: OrchestrationConfig): LinkedContract[] {
  return table.contracts.map((located) => {
    const c = located.document;
    const entry: LinkedContract = {
      located,
      contract: c,
      status: c.status ?? "active",
      // Hashed where the file was parsed (a worker thread, for a large project).
      sha256: located.source.hashes.sha256,
      gitBlob: located.source.hashes.gitBlob,
      outlets: c.datasets.map((d) => table.assets.get(`${c.domain}.${d.name}`)).filter((a): a is AssetDeclaration => a?.producer === c.id),
      upstreams: (c.upstreams ?? []).map((u, i) => {
        // Located when first read (a link rule reporting it): most upstreams never are.
        let location: SourceLocation | undefined;
        const resolved: ResolvedUpstream = {
          asset: u.asset,
          trigger: u.trigger !== false,
          get location() {
            return (location ??= located.source.locate(["upstreams", i, "asset"]));
          },
        };
        if (u.schema_version !== undefined) resolved.schemaVersion = u.schema_version;
        if (u.require !== undefined) resolved.require = u.require;
        return resolved;
      }),
      runSettings: runSettingsFor(config, c.id, c.domain),
    };
    // A contract on a DuckDB file runs in the one-slot pool (ADR 0030).
    const pool = poolFor(config, c.id, c.domain, entry.runSettings);
    if (pool === undefined) delete entry.runSettings.pool;
    else entry.runSettings.pool = pool;
    if (c.kind === "IngestionContract") {
      const extract = c.mode === "load" ? extractProducing(table, c.source.name) : undefined;
      const landing = extract?.document.landing;
      if (extract && landing) {
        entry.manifestSource = {
          contract: extract.document.id,
          uri: landing.uri,
          ...(landing.connection_id !== undefined ? { connection_id: landing.connection_id } : {}),
          sampleData: config.sampleData.has(extract.document.source.name),
        };
        // The manifest dataset's Asset event is what a load of it waits for: an upstream, not an external source.
        entry.upstreams.push({ asset: c.source.name, trigger: true, location: located.source.locate(["source", "name"]) });
      } else entry.sourceAsset = c.source.name;
    }
    if (c.trigger !== undefined && c.trigger !== "manual") {
      if (c.trigger.cron !== undefined) entry.timetable = { cron: c.trigger.cron, timezone: c.trigger.timezone ?? "UTC" };
      else if (c.trigger.schedule_ref !== undefined) {
        const named = config.schedules.get(c.trigger.schedule_ref);
        if (named) entry.timetable = { cron: named.cron, timezone: c.trigger.timezone ?? named.timezone };
      }
    }
    const deadline = resolveDeadline(entry, config);
    if (deadline) entry.deadline = deadline;
    return entry;
  });
}
