import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { LinkRule } from "./rule.js";

/**
 * An upstream's `schema_version` pin equals the schema version its producer declares. Why: the pin
 * is the consumer's statement that it has read that version; a producer that moved on may have
 * changed what the consumer relies on, so the consumer's owner reviews the change first.
 */
export const MatchingSchemaVersionRule: LinkRule = {
  name: "MatchingSchemaVersionRule",
  check(state, context) {
    for (const linked of state.contracts) {
      if (linked.status === "retired") continue;
      linked.upstreams.forEach((u, i) => {
        const target = state.table.assets.get(u.asset);
        if (!target || u.schemaVersion === undefined || target.schemaVersion === undefined || u.schemaVersion === target.schemaVersion) return;
        context.report(
          createDiagnostic(
            Diagnostics.SchemaVersionMismatch,
            { asset: u.asset, pinned: u.schemaVersion, actual: target.schemaVersion },
            linked.located.source.locate(["upstreams", i, "schema_version"]),
            {
              related: [{ message: `the schema of ${JSON.stringify(target.name)} is at version ${target.schemaVersion} here`, location: target.schemaVersionLocation ?? target.location }],
              hint: "review the producer's schema change, then update the pin",
            },
          ),
        );
      });
    }
  },
};
