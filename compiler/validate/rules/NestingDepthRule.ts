import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { describePath } from "../mapSchemaErrors.js";
import type { DocumentRule } from "./rule.js";

/** Deepest nesting a value may have; CPython's parser refuses about 200 nested brackets. */
export const MAX_NESTING = 32;

function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (value !== null && typeof value === "object") return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

/**
 * Values rendered into Python (an Asset's `extra`, a trigger tree) nest at most 32 levels. Why:
 * CPython refuses a module with too many nested brackets ("too many nested parentheses"), which
 * Airflow reports as an import error that hides the DAG.
 */
export const NestingDepthRule: DocumentRule = {
  name: "NestingDepthRule",
  check(document, context) {
    const check = (value: unknown, path: Array<string | number>): void => {
      const depth = depthOf(value);
      if (depth > MAX_NESTING) context.report(createDiagnostic(Diagnostics.NestedTooDeep, { field: (context.source.describe ?? describePath)(path), depth, limit: MAX_NESTING }, context.source.locate(path)));
    };
    if (document.kind === "OrchestrationConfig") return;
    if (document.kind === "ExternalAssets") {
      document.assets.forEach((a, i) => check(a.extra, ["assets", i, "extra"]));
      return;
    }
    document.datasets.forEach((d, i) => check(d.extra, ["datasets", i, "extra"]));
    if (document.trigger !== undefined && document.trigger !== "manual" && typeof document.trigger.assets === "object") check(document.trigger.assets, ["trigger", "assets"]);
  },
};
