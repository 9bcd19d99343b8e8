import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { LinkRule } from "./rule.js";

/**
 * A single-valued config key (uri_template, lineage, defaults), a schedule, a producer family or a
 * sample-data entry is set in one config file only. Why: with the config split across files, a
 * second setting would silently win or lose depending on file names.
 */
export const UniqueConfigKeyRule: LinkRule = {
  name: "UniqueConfigKeyRule",
  check(state, context) {
    for (const c of state.configConflicts) {
      context.report(createDiagnostic(Diagnostics.ConfigConflict, { key: c.key }, c.location, { related: [{ message: "first set here", location: c.first }] }));
    }
  },
};
