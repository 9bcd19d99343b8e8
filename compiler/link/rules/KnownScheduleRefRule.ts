import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { suggest } from "../../support/suggest.js";
import type { LinkRule } from "./rule.js";

/**
 * A trigger's `schedule_ref` names a schedule of the orchestration config. Why: an unknown name
 * would leave the DAG without its timetable, so it would never run on time. Skipped while a config
 * file is broken, since its schedules are then unknown.
 */
export const KnownScheduleRefRule: LinkRule = {
  name: "KnownScheduleRefRule",
  check(state, context) {
    if (state.context.configBroken) return;
    for (const { contract: c, located } of state.contracts) {
      if (c.trigger === undefined || c.trigger === "manual" || c.trigger.cron !== undefined || c.trigger.schedule_ref === undefined) continue;
      const ref = c.trigger.schedule_ref;
      if (state.config.schedules.has(ref)) continue;
      const guess = suggest(ref, state.config.schedules.keys());
      context.report(createDiagnostic(Diagnostics.UnknownScheduleRef, { ref }, located.source.locate(["trigger", "schedule_ref"]), guess ? { hint: `did you mean "${guess}"?` } : {}));
    }
  },
};
