import type { Contract } from "../model/contract.js";
import type { AssetWatcherPlan } from "../model/manifest.js";
import { parseDurationSeconds } from "../support/duration.js";

/** The SQS trigger's `waiter_delay` default (`providers/amazon/aws/triggers/sqs.py`), seconds. */
export const DEFAULT_POLL_INTERVAL_SECONDS = 60;

/** The AWS provider's default Connection id, used when neither `trigger.conn_id` nor `source.connection_id` is set. */
export const DEFAULT_AWS_CONN_ID = "aws_default";

/**
 * The AssetWatcher of an event-driven ingestion (`trigger.queue`, issue 36, ADR 0034), or undefined
 * for any other contract. The Connection is `trigger.conn_id`, else the source's `connection_id`
 * (one AWS Connection usually reads the bucket and its notification queue), else `aws_default`.
 * Total: a `poll_interval` that is no duration gives the default here; `QueueTriggerRule` reports it.
 */
export function queueWatcherOf(contract: Contract): AssetWatcherPlan | undefined {
  const trigger = contract.trigger;
  if (contract.kind !== "IngestionContract" || trigger === undefined || trigger === "manual" || trigger.queue === undefined) return undefined;
  const seconds = trigger.poll_interval === undefined ? undefined : parseDurationSeconds(trigger.poll_interval);
  return {
    name: `${contract.id}.queue`,
    scheme: "sqs",
    queue: trigger.queue,
    conn_id: trigger.conn_id ?? contract.source.connection_id ?? DEFAULT_AWS_CONN_ID,
    poll_interval_seconds: seconds === undefined ? DEFAULT_POLL_INTERVAL_SECONDS : Math.max(1, Math.round(seconds)),
  };
}
