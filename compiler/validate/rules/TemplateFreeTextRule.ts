import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { describePath } from "../mapSchemaErrors.js";
import type { DocumentRule } from "./rule.js";

/**
 * A template variable: `${NAME}` (shell, `${NAME:-default}` too) or `{{ name }}` / `{{ var.value.x
 * | filter }}` (Jinja as Airflow and dbt use it). Braces around anything else (`{{ '\u0000' }}`,
 * JSON text) are data, not a reference someone expects to be filled.
 */
const PLACEHOLDER = /\$\{\s*[A-Za-z_][\w.]*(?:\s*:?[-=?+][^}]*)?\s*\}|\{\{\s*[A-Za-z_][\w.]*\s*(?:\|[^}]*)?\}\}/;

/**
 * No `${…}` or `{{…}}` placeholder in a text that reaches Airflow or lineage as written: a
 * dataset's `physical` identity, an `extra` value (contract datasets and `ExternalAssets`), and
 * every `description`. Why: the compiler renders these as literals and the runtime sends them as
 * they are; nothing ever fills a template, so `physical: {name: "${env}.orders"}` would name a
 * lineage dataset `${env}.orders` and `extra` would publish the braces. URIs have their own rule
 * (CA3016), quality queries theirs (CA3801).
 */
export const TemplateFreeTextRule: DocumentRule = {
  name: "TemplateFreeTextRule",
  check(document, context) {
    const walk = (value: unknown, path: Array<string | number>, reaches: boolean): void => {
      if (typeof value === "string") {
        const found = reaches ? PLACEHOLDER.exec(value) : null;
        if (found) {
          context.report(
            createDiagnostic(Diagnostics.TemplateInLineageText, { field: describePath(path), placeholder: found[0] }, context.source.locate(path)),
          );
        }
      } else if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, i], reaches));
      else if (value !== null && typeof value === "object") {
        for (const [k, v] of Object.entries(value)) walk(v, [...path, k], reaches || k === "physical" || k === "extra" || k === "description");
      }
    };
    walk(document, [], false);
  },
};
