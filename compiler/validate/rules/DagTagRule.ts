import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { DocumentRule } from "./rule.js";

/** Airflow's limit on one DAG tag, in characters (`DagTag.name` is a 100-character column). */
export const MAX_TAG_LENGTH = 100;

/**
 * Every tag fits Airflow's 100-character limit. Why: Airflow raises at DAG creation for a longer
 * tag, which hides the whole DAG behind an import error.
 */
export const DagTagRule: DocumentRule = {
  name: "DagTagRule",
  check(document, context) {
    if (document.kind === "OrchestrationConfig" || document.kind === "ExternalAssets") return;
    (document.tags ?? []).forEach((tag, i) => {
      // Python counts code points, not UTF-16 units.
      const length = [...tag].length;
      if (length > MAX_TAG_LENGTH) {
        context.report(createDiagnostic(Diagnostics.TagTooLong, { tag: [...tag].slice(0, 40).join("") + "...", length }, context.source.locate(["tags", i])));
      }
    });
  },
};
