import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { LinkRule } from "./rule.js";

/**
 * An external Asset declared in several places (ExternalAssets entries, ingestion sources) is the
 * same Asset each time: one normalised URI, one group, one extra. Why: Airflow compares all three,
 * so two renderings that differ would be two Assets under one name, changing per parsed file.
 */
export const ConsistentExternalAssetRule: LinkRule = {
  name: "ConsistentExternalAssetRule",
  check(state, context) {
    for (const clash of state.table.clashes) {
      const { asset, existing } = clash;
      if (clash.kind === "externalUri") {
        context.report(
          createDiagnostic(Diagnostics.ConflictingExternal, { name: asset.name, uri: asset.uri, other: existing.uri }, asset.uriLocation, {
            related: [{ message: `declared with ${JSON.stringify(existing.uri)} here`, location: existing.uriLocation }],
          }),
        );
      } else if (clash.kind === "externalDeclaration") {
        context.report(
          createDiagnostic(Diagnostics.ConflictingExternalDeclaration, { name: asset.name, field: clash.field }, asset.location, {
            related: [{ message: "also declared here", location: existing.location }],
          }),
        );
      }
    }
  },
};
