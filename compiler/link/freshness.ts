import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic } from "../diagnostics/diagnostic.js";
import { maxCronGapSeconds } from "../support/cron.js";
import { formatDurationSeconds, parseDurationSeconds } from "../support/duration.js";
import type { OrchestrationConfig } from "./config.js";
import type { LinkedContract } from "./linkProject.js";

/** A resolved notifier: its name in the config, its class path and constructor arguments. */
export interface NotifierPlan {
  name: string;
  class: string;
  kwargs: Record<string, unknown>;
}

/**
 * The DeadlineAlert a contract's `freshness.expected_runtime` compiles to: the Airflow
 * `DeadlineReference` (`queued_at` = `DAGRUN_QUEUED_AT`, `logical_date` = `DAGRUN_LOGICAL_DATE`),
 * the interval in seconds, and the notifier the callback runs.
 */
export interface DeadlinePlan {
  reference: "queued_at" | "logical_date";
  interval_seconds: number;
  notifier: NotifierPlan;
}

/** A notifier of the config by name, as the plan carries it. */
export function notifierPlan(config: OrchestrationConfig, name: string | undefined): NotifierPlan | undefined {
  const n = name === undefined ? undefined : config.notifiers.get(name);
  return n && name !== undefined ? { name, class: n.class, kwargs: n.kwargs } : undefined;
}

/**
 * Resolves each contract's freshness into Airflow terms and reports what Airflow cannot keep.
 *
 * - `expected_runtime` → a {@link DeadlinePlan} on `entry.deadline`. Reference: the one asked for,
 *   else `logical_date` for a DAG scheduled by cron only and `queued_at` for every other (an
 *   asset-triggered run has no logical date; CA3503 refuses asking for one). Notifier: the
 *   contract's `deadline_notifier` run setting, else `freshness_monitor.notifier`; none is CA4502.
 * - A DAG scheduled only by cron whose longest gap between runs exceeds `max_age` is CA4503
 *   (warning): it is stale before each such run however well it runs.
 *
 * Mutates `entry.deadline`; returns the diagnostics.
 */
export function linkFreshness(contracts: LinkedContract[], config: OrchestrationConfig): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  for (const entry of contracts) {
    const freshness = entry.contract.freshness;
    if (!freshness || entry.status === "retired" || entry.status === "draft") continue;
    const source = entry.located.source;
    const assetTriggered = entry.contract.trigger !== "manual" && entry.upstreams.some((u) => u.trigger);
    if (freshness.expected_runtime !== undefined) {
      const interval = parseDurationSeconds(freshness.expected_runtime);
      const name = entry.runSettings.deadline_notifier ?? config.freshnessMonitor.notifier;
      const notifier = notifierPlan(config, name);
      if (name === undefined) diagnostics.push(createDiagnostic(Diagnostics.DeadlineWithoutNotifier, {}, source.locate(["freshness", "expected_runtime"])));
      if (interval !== undefined && notifier) {
        const reference = freshness.deadline_reference ?? (!assetTriggered && entry.timetable ? "logical_date" : "queued_at");
        entry.deadline = { reference, interval_seconds: interval, notifier };
      }
    }
    const maxAge = parseDurationSeconds(freshness.max_age);
    if (entry.timetable && !assetTriggered && maxAge !== undefined) {
      const gap = maxCronGapSeconds(entry.timetable.cron, entry.timetable.timezone);
      if (gap !== undefined && gap > maxAge) {
        const at = entry.contract.trigger !== "manual" && entry.contract.trigger?.cron !== undefined ? ["trigger", "cron"] : ["trigger", "schedule_ref"];
        diagnostics.push(
          createDiagnostic(Diagnostics.CronSlowerThanMaxAge, { cron: entry.timetable.cron, gap: formatDurationSeconds(gap), maxAge: freshness.max_age }, source.locate(at), {
            related: [{ message: `max_age is ${freshness.max_age} here`, location: source.locate(["freshness", "max_age"]) }],
          }),
        );
      }
    }
  }
  return diagnostics;
}
