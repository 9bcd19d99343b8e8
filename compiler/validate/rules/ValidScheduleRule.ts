import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { canonicalTimezone, cronProblem, isKnownTimezone } from "../../support/cron.js";
import type { NodePath } from "../../parse/parseDocument.js";
import type { DocumentRule, RuleContext } from "./rule.js";

function checkTimezone(timezone: string, path: NodePath, context: RuleContext): void {
  if (isKnownTimezone(timezone)) return;
  const canonical = canonicalTimezone(timezone);
  context.report(
    createDiagnostic(Diagnostics.InvalidTimezone, { timezone }, context.source.locate(path), canonical ? { hint: `write it as "${canonical}"` } : {}),
  );
}

function checkCron(cron: string, timezone: string | undefined, path: NodePath, context: RuleContext): void {
  const problem = cronProblem(cron);
  if (problem) context.report(createDiagnostic(Diagnostics.InvalidCron, { cron, detail: problem }, context.source.locate([...path, "cron"])));
  if (timezone !== undefined) checkTimezone(timezone, [...path, "timezone"], context);
}

/**
 * Every cron expression is one Airflow's cron timetables accept (five fields or a preset) and every
 * time zone is a known IANA name. Why: Airflow reports both only when the DAG is parsed, as an
 * import error that hides the whole DAG.
 */
export const ValidScheduleRule: DocumentRule = {
  name: "ValidScheduleRule",
  check(document, context) {
    if (document.kind === "OrchestrationConfig") {
      for (const [name, schedule] of Object.entries(document.schedules ?? {})) {
        checkCron(schedule.cron, schedule.timezone, ["schedules", name], context);
      }
      const monitor = document.freshness_monitor;
      if (monitor?.cron !== undefined) checkCron(monitor.cron, monitor.timezone, ["freshness_monitor"], context);
      else if (monitor?.timezone !== undefined) checkTimezone(monitor.timezone, ["freshness_monitor", "timezone"], context);
      return;
    }
    if (document.kind === "ExternalAssets") return;
    const trigger = document.trigger;
    if (trigger === undefined || trigger === "manual") return;
    if (trigger.cron !== undefined) checkCron(trigger.cron, trigger.timezone, ["trigger"], context);
    else if (trigger.timezone !== undefined) {
      checkTimezone(trigger.timezone, ["trigger", "timezone"], context);
      if (trigger.schedule_ref === undefined) {
        context.report(
          createDiagnostic(Diagnostics.SchemaViolation, { field: "trigger.timezone", detail: "is set without trigger.cron" }, context.source.locate(["trigger", "timezone"])),
        );
      }
    }
    if (trigger.cron !== undefined && trigger.schedule_ref !== undefined) {
      context.report(
        createDiagnostic(
          Diagnostics.SchemaViolation,
          { field: "trigger.schedule_ref", detail: "cannot be combined with trigger.cron; choose one" },
          context.source.locate(["trigger", "schedule_ref"]),
        ),
      );
    }
  },
};
