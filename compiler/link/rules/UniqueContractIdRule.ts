import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { LinkRule } from "./rule.js";

/**
 * No two contracts share an id. Why: the id is the dag_id, and Airflow keeps one DAG per dag_id,
 * the last file parsed winning, so one of the two would vanish without an error.
 */
export const UniqueContractIdRule: LinkRule = {
  name: "UniqueContractIdRule",
  check(state, context) {
    for (const { located, first } of state.table.duplicateIds) {
      context.report(
        createDiagnostic(Diagnostics.DuplicateContractId, { id: located.document.id }, located.source.locate(["id"]), {
          related: [{ message: "first declared here", location: first.source.locate(["id"]) }],
        }),
      );
    }
  },
};
