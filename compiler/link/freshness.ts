import type { DeadlinePlan, NotifierPlan } from "../model/manifest.js";
import type { OrchestrationConfig } from "./config.js";
import type { LinkedContract } from "./model.js";
import { parseDurationSeconds } from "../support/duration.js";

export type { DeadlinePlan, NotifierPlan } from "../model/manifest.js";

/** A notifier of the config by name, as the plan carries it; undefined when unknown. */
export function notifierPlan(config: OrchestrationConfig, name: string | undefined): NotifierPlan | undefined {
  const n = name === undefined ? undefined : config.notifiers.get(name);
  return n && name !== undefined ? { name, class: n.class, kwargs: n.kwargs } : undefined;
}

/** True when Airflow creates runs of the contract's DAG from Asset events (alone or with a cron). */
export function isAssetTriggered(entry: Pick<LinkedContract, "contract" | "upstreams">): boolean {
  const trigger = entry.contract.trigger;
  // A queue contract runs on its source's watcher events (ADR 0034).
  if (typeof trigger === "object" && trigger.queue !== undefined) return true;
  return trigger !== "manual" && entry.upstreams.some((u) => u.trigger);
}

/** The notifier name a contract's deadline uses: its `deadline_notifier`, else the monitor's. */
export function deadlineNotifierName(entry: Pick<LinkedContract, "runSettings">, config: OrchestrationConfig): string | undefined {
  return entry.runSettings.deadline_notifier ?? config.freshnessMonitor.notifier;
}

/**
 * The DeadlineAlert of a resolved contract, or undefined (no `expected_runtime`, or no known
 * notifier: DeadlineNotifierRule and KnownNotifierRule report those). Reference: the one asked for,
 * else `logical_date` for a DAG scheduled by cron only and `queued_at` for every other: an
 * asset-triggered run has no logical date in Airflow 3.2 (CA3503 refuses asking for one).
 */
export function resolveDeadline(entry: Pick<LinkedContract, "contract" | "upstreams" | "runSettings" | "timetable">, config: OrchestrationConfig): DeadlinePlan | undefined {
  const freshness = entry.contract.freshness;
  if (freshness?.expected_runtime === undefined) return undefined;
  const interval = parseDurationSeconds(freshness.expected_runtime);
  const notifier = notifierPlan(config, deadlineNotifierName(entry, config));
  if (interval === undefined || !notifier) return undefined;
  const reference = freshness.deadline_reference ?? (!isAssetTriggered(entry) && entry.timetable ? "logical_date" : "queued_at");
  return { reference, interval_seconds: interval, notifier };
}
