import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { suggest } from "../../support/suggest.js";
import type { DocumentRule } from "./rule.js";

/** Logical types whose maximum is a point in data time. */
const DATA_TIME_TYPES = new Set(["timestamp", "date"]);

/**
 * A freshness policy can be kept: `freshness.column` is a `timestamp` or `date` property of the
 * contract's datasets; a `logical_date` deadline is asked only of a DAG that is not asset-triggered;
 * an external asset with a policy names who publishes its events. Why: the audit measures
 * `now − max(column)` (a text column has no age); Airflow 3.2 creates a DeadlineAlert's deadline
 * only when its reference has a value, and asset-triggered runs have no logical date
 * (`SchedulerJobRunner` creates them with `logical_date=None`), so such a deadline is silently never
 * created; and an external asset's events come only from outside Airflow (`POST
 * /api/v2/assets/events`), so a policy on an asset nobody publishes is always `unknown`.
 */
export const FreshnessPolicyRule: DocumentRule = {
  name: "FreshnessPolicyRule",
  check(document, context) {
    if (document.kind === "OrchestrationConfig") return;
    if (document.kind === "ExternalAssets") {
      document.assets.forEach((asset, i) => {
        if (asset.freshness && asset.published_by === undefined) {
          context.report(createDiagnostic(Diagnostics.ExternalFreshnessUnpublished, { name: asset.name }, context.source.locate(["assets", i, "freshness"], "key")));
        }
      });
      return;
    }
    const freshness = document.freshness;
    if (!freshness) return;
    if (freshness.column !== undefined) {
      const column = freshness.column;
      const holders = document.datasets.flatMap((d) => d.schema.properties.filter((p) => p.name === column).map((p) => ({ dataset: d.name, property: p })));
      if (holders.length === 0) {
        const known = [...new Set(document.datasets.flatMap((d) => d.schema.properties.map((p) => p.name)))];
        const guess = suggest(column, known);
        context.report(
          createDiagnostic(Diagnostics.FreshnessColumnUnknown, { column }, context.source.locate(["freshness", "column"]), guess ? { hint: `did you mean "${guess}"?` } : {}),
        );
      }
      for (const { dataset, property } of holders) {
        if (!DATA_TIME_TYPES.has(property.logicalType)) {
          context.report(
            createDiagnostic(Diagnostics.FreshnessColumnType, { column, dataset, logicalType: property.logicalType }, context.source.locate(["freshness", "column"])),
          );
        }
      }
    }
    if (freshness.deadline_reference === "logical_date") {
      // A queue contract runs on its source's watcher events: asset-triggered too (ADR 0034).
      const queued = typeof document.trigger === "object" && document.trigger.queue !== undefined;
      const assetTriggered = queued || ((document.upstreams ?? []).some((u) => u.trigger !== false) && document.trigger !== "manual");
      if (assetTriggered) {
        context.report(
          createDiagnostic(Diagnostics.LogicalDateDeadlineOnAssets, {}, context.source.locate(["freshness", "deadline_reference"]), {
            hint: 'write "deadline_reference: queued_at" (the default for asset-triggered DAGs)',
          }),
        );
      }
    }
  },
};
