import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { maxCronGapSeconds } from "../../support/cron.js";
import { formatDurationSeconds, parseDurationSeconds } from "../../support/duration.js";
import { isAssetTriggered } from "../freshness.js";
import type { LinkRule } from "./rule.js";

/**
 * A DAG scheduled only by cron runs at least as often as its freshness `max_age` allows: the longest
 * gap between two fires of its cron (in its time zone) is not longer than `max_age`; otherwise a
 * warning names both. Why: such a dataset is stale before every long gap ends however well each
 * run goes, so the monitor would alert by design. Asset-triggered DAGs are left alone: their runs
 * follow their upstreams, not the cron.
 */
export const FrequentEnoughCronRule: LinkRule = {
  name: "FrequentEnoughCronRule",
  check(state, context) {
    for (const entry of state.contracts) {
      const freshness = entry.contract.freshness;
      if (!freshness || !entry.timetable || isAssetTriggered(entry) || entry.status === "draft" || entry.status === "retired") continue;
      const maxAge = parseDurationSeconds(freshness.max_age);
      const gap = maxCronGapSeconds(entry.timetable.cron, entry.timetable.timezone);
      if (maxAge === undefined || gap === undefined || gap <= maxAge) continue;
      const trigger = entry.contract.trigger;
      const at = trigger !== undefined && trigger !== "manual" && trigger.cron !== undefined ? ["trigger", "cron"] : ["trigger", "schedule_ref"];
      context.report(
        createDiagnostic(Diagnostics.CronSlowerThanMaxAge, { cron: entry.timetable.cron, gap: formatDurationSeconds(gap), maxAge: freshness.max_age }, entry.located.source.locate(at), {
          related: [{ message: `max_age is ${JSON.stringify(freshness.max_age)} here`, location: entry.located.source.locate(["freshness", "max_age"]) }],
        }),
      );
    }
  },
};
