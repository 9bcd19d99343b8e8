import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { suggest } from "../../support/suggest.js";
import type { LinkRule } from "./rule.js";

/**
 * A config override matches a contract id or a domain that exists. Why: an override that matches
 * nothing is almost always a typo, and its settings would silently not apply. Ids of contracts that
 * failed validation count as known; a domain is not checked while no contract was accepted.
 */
export const KnownOverrideTargetRule: LinkRule = {
  name: "KnownOverrideTargetRule",
  check(state, context) {
    const { ids, contracts } = state.table;
    const domains = new Set(contracts.map((l) => l.document.domain));
    for (const o of state.config.overrides) {
      const byContract = o.match.contract !== undefined;
      const target = o.match.contract ?? o.match.domain!;
      const known = byContract ? ids.has(target) || (state.context.unresolvedIds?.has(target) ?? false) : domains.has(target) || contracts.length === 0;
      if (known) continue;
      const guess = suggest(target, byContract ? ids.keys() : domains);
      context.report(createDiagnostic(Diagnostics.UnknownOverrideTarget, { target }, o.location, guess ? { hint: `did you mean "${guess}"?` } : {}));
    }
  },
};
