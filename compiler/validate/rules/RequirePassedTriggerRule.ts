import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { DocumentRule } from "./rule.js";

/**
 * `require: passed` only on a triggering upstream. Why: the runtime checks the quality status of
 * the Asset events that triggered the run (Airflow's `triggering_asset_events`, as the
 * `common.dataquality` gate's `require_quality` does); an upstream marked `trigger: false` never
 * triggers a run, so the requirement would silently check nothing (DESIGN §3.4).
 */
export const RequirePassedTriggerRule: DocumentRule = {
  name: "RequirePassedTriggerRule",
  check(document, context) {
    if (document.kind === "OrchestrationConfig" || document.kind === "ExternalAssets") return;
    (document.upstreams ?? []).forEach((u, i) => {
      if (u.require === "passed" && u.trigger === false) {
        context.report(
          createDiagnostic(Diagnostics.RequireOnReadOnlyUpstream, { asset: u.asset }, context.source.locate(["upstreams", i, "require"]), {
            hint: 'remove "require: passed", or "trigger: false" so the upstream triggers the run',
            related: [{ message: "marked here", location: context.source.locate(["upstreams", i, "trigger"]) }],
          }),
        );
      }
    });
  },
};
