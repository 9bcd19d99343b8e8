import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { parseDurationSeconds } from "../../support/duration.js";
import { sqsQueueUrlProblem } from "../../support/sqsQueue.js";
import type { LinkRule } from "./rule.js";

/**
 * An event-driven ingestion (`trigger: {queue: ...}`, issue 36, ADR 0034) is one Airflow 3.2 runs
 * as meant: `queue` is an SQS queue URL (CA4622) on an ingestion contract of mode `load` (CA4620)
 * whose source is an `s3://` location (CA4625), not an extract's dataset (CA4624); it stands alone
 * in `trigger` and beside no triggering upstream (CA4621); the contract is not partitioned (CA4623:
 * a watcher's event carries no partition key, so a partitioned DAG would never run); `conn_id` and
 * `poll_interval` come only with `queue` (CA4626), the interval a whole number of seconds (CA3022).
 * Why: the provider accepts each of these at parse time and the DAG then never runs, or runs on
 * messages that name objects it does not read; only link knows whether a source is an extract's.
 */
export const QueueTriggerRule: LinkRule = {
  name: "QueueTriggerRule",
  check(state, context) {
    for (const linked of state.contracts) {
      const contract = linked.contract;
      const trigger = contract.trigger;
      if (trigger === undefined || trigger === "manual") continue;
      const locate = linked.located.source.locate;
      if (trigger.queue === undefined) {
        for (const field of ["conn_id", "poll_interval"] as const) {
          if (trigger[field] !== undefined) context.report(createDiagnostic(Diagnostics.QueueFieldWithoutQueue, { field }, locate(["trigger", field])));
        }
        continue;
      }
      const at = locate(["trigger", "queue"]);
      if (contract.kind !== "IngestionContract" || contract.mode !== "load") {
        const what = contract.kind === "IngestionContract" ? `an ingestion contract of mode ${contract.mode}` : "a transform contract";
        context.report(createDiagnostic(Diagnostics.QueueTriggerNotLoad, { what }, at));
        continue;
      }
      const problem = sqsQueueUrlProblem(trigger.queue);
      if (problem) context.report(createDiagnostic(Diagnostics.QueueUrlMalformed, { url: trigger.queue, detail: problem }, at));
      for (const field of ["cron", "schedule_ref", "assets"] as const) {
        if (trigger[field] !== undefined) {
          context.report(
            createDiagnostic(Diagnostics.QueueTriggerNotAlone, { other: `trigger.${field}` }, locate(["trigger", field]), {
              related: [{ message: "the queue is named here", location: at }],
            }),
          );
        }
      }
      (contract.upstreams ?? []).forEach((u, i) => {
        if (u.trigger === false) return;
        context.report(
          createDiagnostic(Diagnostics.QueueTriggerNotAlone, { other: `the triggering upstream ${JSON.stringify(u.asset)}` }, locate(["upstreams", i, "asset"]), {
            hint: "read it with trigger: false",
            related: [{ message: "the queue is named here", location: at }],
          }),
        );
      });
      if (contract.partitioning) {
        context.report(
          createDiagnostic(Diagnostics.QueueTriggerPartitioned, {}, at, { related: [{ message: "partitioned here", location: locate(["partitioning"]) }] }),
        );
      }
      if (linked.manifestSource) {
        context.report(createDiagnostic(Diagnostics.QueueTriggerOnManifestSource, { extract: linked.manifestSource.contract }, at));
      } else if (!/^s3:\/\//i.test(contract.source.uri)) {
        context.report(createDiagnostic(Diagnostics.QueueSourceNotS3, { uri: contract.source.uri }, locate(["source", "uri"]), { related: [{ message: "the queue is named here", location: at }] }));
      }
      if (trigger.poll_interval !== undefined) {
        const seconds = parseDurationSeconds(trigger.poll_interval);
        if (seconds === undefined) {
          context.report(createDiagnostic(Diagnostics.InvalidDuration, { value: trigger.poll_interval }, locate(["trigger", "poll_interval"])));
        } else if (!Number.isInteger(seconds)) {
          context.report(
            createDiagnostic(
              Diagnostics.SchemaViolation,
              { field: "trigger.poll_interval", detail: "must be a whole number of seconds (the SQS trigger's waiter_delay is an integer)" },
              locate(["trigger", "poll_interval"]),
            ),
          );
        }
      }
    }
  },
};
