import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { describePath } from "../mapSchemaErrors.js";
import type { DocumentRule } from "./rule.js";

/**
 * A number in a dataset's or external asset's `extra`, or in `producer.params`, is written as it
 * prints back (CA3803, a warning, at the value): `1.10` is the YAML 1.2 float 1.1 and `1.0` the
 * number 1, so a version or code written unquoted reaches the Asset `extra`, the manifest and the
 * lineage provenance (`step_params`) as another text than the author's. Why these fields: they are
 * free-form (JSON values, no schema type to refuse the number, CA3002 catches it everywhere else)
 * and carried verbatim to Airflow and lineage. Source text and value come from the YAML library's
 * scalar token (`ParsedDocument.numberAsWritten`); any number whose `JSON.stringify` differs from it
 * is reported (`0x1F`, `+5` and `1e3` too).
 */
export const VerbatimNumberRule: DocumentRule = {
  name: "VerbatimNumberRule",
  check(document, context) {
    const asWritten = context.source.numberAsWritten;
    if (!asWritten || document.kind === "OrchestrationConfig") return;
    const describe = context.source.describe ?? describePath;
    const walk = (value: unknown, path: Array<string | number>): void => {
      if (typeof value === "number") {
        const written = asWritten(path);
        if (written === undefined) return;
        const printed = JSON.stringify(value);
        context.report(
          createDiagnostic(Diagnostics.NumberNotAsWritten, { field: describe(path), written, printed }, context.source.locate(path), {
            hint: `quote it ("${written}") if it is text, such as a version or a code; write ${printed} if the number is meant`,
          }),
        );
      } else if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, i]));
      else if (value !== null && typeof value === "object") for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
    };
    if (document.kind === "ExternalAssets") {
      document.assets.forEach((a, i) => walk(a.extra, ["assets", i, "extra"]));
      return;
    }
    document.datasets.forEach((d, i) => walk(d.extra, ["datasets", i, "extra"]));
    if (document.kind === "TransformContract") walk(document.producer.params, ["producer", "params"]);
  },
};
