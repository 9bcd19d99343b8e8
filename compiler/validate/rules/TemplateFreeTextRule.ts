import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { describePath } from "../mapSchemaErrors.js";
import { forEachString, type DocumentRule } from "./rule.js";

/**
 * A template variable: `${NAME}` (shell, `${NAME:-default}` too) or `{{ name }}` / `{{ var.value.x
 * | filter }}` (Jinja as Airflow and dbt use it). Braces around anything else (`{{ '\u0000' }}`,
 * JSON text) are data, not a reference someone expects to be filled.
 */
const PLACEHOLDER = /\$\{\s*[A-Za-z_][\w.]*(?:\s*:?[-=?+][^}]*)?\s*\}|\{\{\s*[A-Za-z_][\w.]*\s*(?:\|[^}]*)?\}\}/;

/** A text below one of these keys (at any depth) reaches Airflow or lineage as written. */
const REACHING_KEYS: ReadonlySet<string | number> = new Set(["physical", "extra", "description", "tags"]);

/**
 * No `${…}` or `{{…}}` placeholder in a text that reaches Airflow or lineage as written: a
 * dataset's `physical` identity, an `extra` value (contract datasets and `ExternalAssets`), every
 * `description`, and every tag (the contract's `tags`, which become the DAG's tags, and each
 * property's `tags`, which reach the manifest and the ODCS export). Why: the compiler renders these as literals and the runtime sends them as
 * they are; nothing ever fills a template, so `physical: {name: "${env}.orders"}` would name a
 * lineage dataset `${env}.orders` and `extra` would publish the braces. URIs have their own rule
 * (CA3016), quality queries theirs (CA3801).
 */
export const TemplateFreeTextRule: DocumentRule = {
  name: "TemplateFreeTextRule",
  check(document, context) {
    forEachString(document, (text, path) => {
      // `${` or `{{` first: most texts have neither, and the pattern cannot match without one.
      if (!text.includes("${") && !text.includes("{{")) return;
      if (!path.some((key) => REACHING_KEYS.has(key))) return;
      const found = PLACEHOLDER.exec(text);
      if (found) {
        context.report(createDiagnostic(Diagnostics.TemplateInLineageText, { field: describePath([...path]), placeholder: found[0] }, context.source.locate([...path])));
      }
    });
  },
};
