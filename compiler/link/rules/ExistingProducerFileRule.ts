import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { LinkRule } from "./rule.js";

/**
 * A `sql` producer's `path` is a file of the project. Why: the SQL is carried into the manifest
 * at compile time, so a missing file would otherwise become a task that fails on every run.
 */
export const ExistingProducerFileRule: LinkRule = {
  name: "ExistingProducerFileRule",
  check(state, context) {
    for (const { contract: c, located } of state.contracts) {
      if (c.kind !== "TransformContract" || c.producer.type !== "sql" || state.context.producerFiles.has(c.producer.path)) continue;
      context.report(createDiagnostic(Diagnostics.ReferencedFileMissing, { path: c.producer.path }, located.source.locate(["producer", "path"])));
    }
  },
};
