import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { DocumentRule } from "./rule.js";

/** Keys of an Asset's `extra` that the compiler computes (DESIGN §3.3). */
export const COMPUTED_EXTRA_KEYS = ["contract_id", "contract_version", "external", "freshness", "layer", "owner", "schema_version"];

/**
 * A dataset's own `extra` does not set a key the compiler computes. Why: the computed keys must be
 * identical wherever the Asset is rendered, and a hand-set value would silently be overwritten.
 */
export const ReservedExtraKeyRule: DocumentRule = {
  name: "ReservedExtraKeyRule",
  check(document, context) {
    const check = (extra: Record<string, unknown> | undefined, path: Array<string | number>): void => {
      for (const key of Object.keys(extra ?? {})) {
        if (COMPUTED_EXTRA_KEYS.includes(key)) context.report(createDiagnostic(Diagnostics.ReservedExtraKey, { key }, context.source.locate([...path, key], "key")));
      }
    };
    if (document.kind === "OrchestrationConfig") return;
    if (document.kind === "ExternalAssets") document.assets.forEach((a, i) => check(a.extra, ["assets", i, "extra"]));
    else document.datasets.forEach((d, i) => check(d.extra, ["datasets", i, "extra"]));
  },
};
