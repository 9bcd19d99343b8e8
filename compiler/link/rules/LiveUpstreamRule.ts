import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { LinkRule } from "./rule.js";

/**
 * A contract that runs reads no Asset of a retired producer (error), no draft one unless it is a
 * draft itself (error), and is warned when it reads a deprecated one. Why: a retired producer
 * never updates its Asset again and a draft one is not yet promised, so the consumer would wait on
 * nothing; a deprecated one is going away.
 */
export const LiveUpstreamRule: LinkRule = {
  name: "LiveUpstreamRule",
  check(state, context) {
    for (const linked of state.contracts) {
      if (linked.status === "retired") continue;
      for (const u of linked.upstreams) {
        const target = state.table.assets.get(u.asset);
        if (!target || target.status === "active") continue;
        const entry =
          target.status === "retired" ? Diagnostics.RetiredUpstream
          : target.status === "draft" ? (linked.status !== "draft" ? Diagnostics.DraftUpstream : undefined)
          : target.status === "deprecated" ? Diagnostics.DeprecatedUpstream
          : undefined;
        if (!entry) continue;
        // Made for a finding only: nearly every upstream is active, and its locations are made when read.
        const related = [{ message: `${JSON.stringify(target.name)} is declared here`, location: target.location }];
        context.report(createDiagnostic(entry, { asset: u.asset, contract: target.producer! }, u.location, { related }));
      }
    }
  },
};
