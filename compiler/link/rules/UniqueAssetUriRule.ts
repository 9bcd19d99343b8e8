import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { LinkRule } from "./rule.js";

/**
 * No two Assets share a URI after Airflow's normalisation. Why: Airflow 3 refuses a second Asset
 * with an existing URI at DAG parse time, far from the contract that caused it.
 */
export const UniqueAssetUriRule: LinkRule = {
  name: "UniqueAssetUriRule",
  check(state, context) {
    for (const clash of state.table.clashes) {
      if (clash.kind !== "uri") continue;
      const { asset, existing, normalised } = clash;
      context.report(
        createDiagnostic(Diagnostics.DuplicateAssetUri, { uri: asset.uri, normalised, other: existing.name }, asset.uriLocation, {
          related: [{ message: `${JSON.stringify(existing.name)} has the uri ${JSON.stringify(existing.uri)}`, location: existing.uriLocation }],
        }),
      );
    }
  },
};
