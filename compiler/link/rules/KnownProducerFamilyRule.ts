import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { suggest } from "../../support/suggest.js";
import type { LinkRule } from "./rule.js";

/**
 * A `command` producer's `family` is a producer family of the orchestration config. Why: the
 * family holds the argument list the task runs; without it the task could only fail at run time.
 * Skipped while a config file is broken, since its families are then unknown.
 */
export const KnownProducerFamilyRule: LinkRule = {
  name: "KnownProducerFamilyRule",
  check(state, context) {
    if (state.context.configBroken) return;
    for (const { contract: c, located } of state.contracts) {
      if (c.kind !== "TransformContract" || c.producer.type !== "command" || state.config.producers.has(c.producer.family)) continue;
      const guess = suggest(c.producer.family, state.config.producers.keys());
      context.report(
        createDiagnostic(Diagnostics.UnknownProducerFamily, { family: c.producer.family }, located.source.locate(["producer", "family"]), guess ? { hint: `did you mean "${guess}"?` } : {}),
      );
    }
  },
};
