import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { suggest } from "../../support/suggest.js";
import type { LinkRule } from "./rule.js";

/**
 * Every notifier the config names (`freshness_monitor.notifier`, `deadline_notifier` in `defaults`
 * or an override) is declared under `notifiers`, in any config file. Why: an unknown name would
 * leave the monitor's transitions and missed deadlines without anyone told. Skipped while a config
 * file is broken, since its notifiers are then unknown.
 */
export const KnownNotifierRule: LinkRule = {
  name: "KnownNotifierRule",
  check(state, context) {
    if (state.context.configBroken) return;
    for (const { name, location } of state.config.notifierReferences) {
      if (state.config.notifiers.has(name)) continue;
      const guess = suggest(name, state.config.notifiers.keys());
      context.report(createDiagnostic(Diagnostics.UnknownNotifier, { name }, location, guess ? { hint: `did you mean "${guess}"?` } : {}));
    }
  },
};
