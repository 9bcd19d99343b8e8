import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { LinkRule } from "./rule.js";

/**
 * Each Asset name is declared once across the project, and never both produced and external. Why:
 * Airflow identifies an Asset by name, so two declarations would be one Asset with two owners.
 */
export const UniqueAssetNameRule: LinkRule = {
  name: "UniqueAssetNameRule",
  check(state, context) {
    for (const clash of state.table.clashes) {
      if (clash.kind !== "name") continue;
      const entry = clash.existing.external !== clash.asset.external ? Diagnostics.ExternalProducedClash : Diagnostics.DuplicateAssetName;
      context.report(
        createDiagnostic(entry, { name: clash.asset.name }, clash.asset.location, { related: [{ message: "also declared here", location: clash.existing.location }] }),
      );
    }
  },
};
