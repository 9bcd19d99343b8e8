import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { deadlineNotifierName } from "../freshness.js";
import type { LinkRule } from "./rule.js";

/**
 * A contract with `freshness.expected_runtime` has a notifier for its DeadlineAlert (its
 * `deadline_notifier` run setting, else `freshness_monitor.notifier`). Why: Airflow's
 * `DeadlineAlert` needs a callback, and a deadline nobody hears of is a stub.
 */
export const DeadlineNotifierRule: LinkRule = {
  name: "DeadlineNotifierRule",
  check(state, context) {
    if (state.context.configBroken) return;
    for (const entry of state.contracts) {
      if (entry.contract.freshness?.expected_runtime === undefined || entry.status === "draft" || entry.status === "retired") continue;
      if (deadlineNotifierName(entry, state.config) !== undefined) continue;
      context.report(createDiagnostic(Diagnostics.DeadlineWithoutNotifier, {}, entry.located.source.locate(["freshness", "expected_runtime"])));
    }
  },
};
