import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { LinkRule } from "./rule.js";

/**
 * A `mode: load` contract without a `trigger` has one from its source: the source must then be an
 * extract contract's dataset, whose manifest Asset event triggers the load (DESIGN §3.2). Why: any
 * other source is external and sends no event, so the DAG would never run (CA3025, reported here
 * because only link knows what the source is).
 */
export const TriggeredLoadRule: LinkRule = {
  name: "TriggeredLoadRule",
  check(state, context) {
    for (const c of state.contracts) {
      const document = c.contract;
      if (document.kind !== "IngestionContract" || document.mode !== "load" || document.trigger !== undefined) continue;
      if (c.manifestSource !== undefined || (document.upstreams ?? []).some((u) => u.trigger !== false)) continue;
      // The source's own document failed validation: that error is the one to fix.
      if (state.context.unresolvedNames.has(document.source.name)) continue;
      context.report(createDiagnostic(Diagnostics.NoTrigger, {}, c.located.source.locate(["id"]), { hint: "a load is triggered without a trigger only when its source is an extract contract's dataset" }));
    }
  },
};
