import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { maxCronGapSeconds } from "../../support/cron.js";
import { formatDurationSeconds } from "../../support/duration.js";
import { GRAIN_MIN_SECONDS, mapperFor, PARTITION_PLACEHOLDER, type Grain } from "../../support/partitions.js";
import type { LinkedContract } from "../model.js";
import type { LinkRule } from "./rule.js";

/** Where a contract's cron is written: `trigger.cron`, else its `schedule_ref`. */
function cronPath(linked: LinkedContract): string[] {
  const t = linked.contract.trigger;
  return t !== undefined && t !== "manual" && t.cron !== undefined ? ["trigger", "cron"] : ["trigger", "schedule_ref"];
}

/**
 * A partitioned contract is one Airflow 3.2 can run, and every partitioned Asset event reaches a
 * DAG that can take it (issue 35; ADR 0028; the rules of `airflow/assets/manager.py`
 * `_queue_dagruns` and `_queue_partitioned_dags` in the pinned 3.2.2). Checked, each at the field:
 * the partition column is a date or timestamp property of every dataset (CA4601, CA4602); a cron
 * is in UTC (CA4603), fires at least once per grain (CA4604), is not for a quarter (CA4605) and
 * does not stand beside triggering upstreams (CA4606); a consumer that is not partitioned is not
 * triggered by a partitioned upstream (CA4607: such events never queue it); a partitioned
 * consumer is triggered only by partitioned upstreams (CA4608: an event without a key is dropped)
 * whose grain a mapper of `support/partitions.ts` aligns with its own (CA4609 coarser, CA4610 a
 * week into a coarser grain); an ingestion's `source.uri` holds `{partition}` only when the
 * contract is partitioned (CA4611: no run of another could fill it). Why: Airflow accepts each of
 * these DAGs and never runs it, and says so in no place a user looks.
 */
export const AlignedPartitionsRule: LinkRule = {
  name: "AlignedPartitionsRule",
  check(state, context) {
    const partitioningOf = new Map<string, { column: string; grain: Grain }>();
    for (const linked of state.contracts) {
      const p = linked.contract.partitioning;
      if (p) for (const a of linked.outlets) partitioningOf.set(a.name, p);
    }
    for (const linked of state.contracts) {
      if (linked.status === "retired") continue;
      const p = linked.contract.partitioning;
      const locate = linked.located.source.locate;
      const contract = linked.contract;
      if (!p && contract.kind === "IngestionContract" && contract.source.uri.includes(PARTITION_PLACEHOLDER)) {
        context.report(createDiagnostic(Diagnostics.PartitionPlaceholderUnpartitioned, { field: "source.uri" }, locate(["source", "uri"])));
      }
      if (p) {
        linked.contract.datasets.forEach((d, i) => {
          const property = d.schema?.properties?.findIndex((x) => x.name === p.column) ?? -1;
          const name = `${linked.contract.domain}.${d.name}`;
          if (property < 0) {
            context.report(
              createDiagnostic(Diagnostics.PartitionColumnMissing, { column: p.column, dataset: name }, locate(["partitioning", "column"]), {
                related: [{ message: `the dataset ${JSON.stringify(name)} is declared here`, location: locate(["datasets", i, "name"]) }],
              }),
            );
            return;
          }
          const logicalType = d.schema.properties[property]!.logicalType ?? "untyped";
          if (logicalType !== "date" && logicalType !== "timestamp") {
            context.report(
              createDiagnostic(Diagnostics.PartitionColumnNotTemporal, { column: p.column, dataset: name, logicalType }, locate(["datasets", i, "schema", "properties", property, "logicalType"]), {
                related: [{ message: "partitioned by it here", location: locate(["partitioning", "column"]) }],
              }),
            );
          }
        });
        const triggering = linked.upstreams.filter((u) => u.trigger);
        if (linked.timetable) {
          const at = locate(cronPath(linked));
          if (linked.timetable.timezone !== "UTC") context.report(createDiagnostic(Diagnostics.PartitionCronNotUtc, { timezone: linked.timetable.timezone }, at));
          if (p.grain === "quarter") context.report(createDiagnostic(Diagnostics.PartitionQuarterOnCron, { cron: linked.timetable.cron }, locate(["partitioning", "grain"])));
          const gap = maxCronGapSeconds(linked.timetable.cron, "UTC");
          if (gap !== undefined && gap > GRAIN_MIN_SECONDS[p.grain]) {
            context.report(createDiagnostic(Diagnostics.PartitionCronTooRare, { cron: linked.timetable.cron, gap: formatDurationSeconds(gap), grain: p.grain }, at));
          }
          if (triggering.length > 0) context.report(createDiagnostic(Diagnostics.PartitionCronAndAssets, { cron: linked.timetable.cron }, at));
        }
      }
      for (const u of linked.upstreams) {
        if (!u.trigger) continue;
        const upstream = partitioningOf.get(u.asset);
        const target = state.table.assets.get(u.asset);
        if (!p) {
          if (upstream) context.report(createDiagnostic(Diagnostics.UnpartitionedConsumerOfPartitioned, { upstream: u.asset, grain: upstream.grain }, u.location));
          continue;
        }
        if (!upstream) {
          if (target) context.report(createDiagnostic(Diagnostics.PartitionedConsumerOfUnpartitioned, { upstream: u.asset, what: target.external ? "an external asset" : "not partitioned" }, u.location));
          continue;
        }
        const mapper = mapperFor(upstream.grain, p.grain);
        if (typeof mapper !== "string") continue;
        const args = { upstream: u.asset, upstreamGrain: upstream.grain, grain: p.grain };
        context.report(createDiagnostic(mapper === "coarser-upstream" ? Diagnostics.PartitionCoarserUpstream : Diagnostics.PartitionMisalignedUpstream, args, u.location));
      }
    }
  },
};
