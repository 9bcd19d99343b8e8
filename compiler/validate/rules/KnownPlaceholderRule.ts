import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { Contract } from "../../model/contract.js";
import type { DocumentRule } from "./rule.js";

/**
 * The query of a `type: sql` quality rule holds no placeholder but `{dataset}`: no `${dataset}`,
 * `{{ dataset }}`, `{property}`, ODCS-style `{object}`, and no stray brace outside a string
 * literal. Why: the runtime replaces exactly `{dataset}` and sends the rest to the database, so
 * any other template text compiles, then fails the audit at run time (or, in a `warning` rule,
 * quietly measures nothing); it is caught here with its location instead.
 */
export const KnownPlaceholderRule: DocumentRule = {
  name: "KnownPlaceholderRule",
  check(document, context) {
    if (document.kind !== "TransformContract" && document.kind !== "IngestionContract") return;
    (document as Contract).datasets.forEach((dataset, d) => {
      (dataset.quality ?? []).forEach((rule, r) => {
        if (rule.type !== "sql" || typeof rule.query !== "string") return;
        const found = unknownPlaceholder(rule.query);
        if (found !== undefined) {
          context.report(
            createDiagnostic(Diagnostics.QualitySqlUnknownPlaceholder, { placeholder: found }, context.source.locate(["datasets", d, "quality", r, "query"]), {
              hint: 'write "{dataset}" for the table under audit; other names are columns of it',
            }),
          );
        }
      });
    });
  },
};

/** The first template-like text of a SQL query that is not `{dataset}`, outside string literals. */
export function unknownPlaceholder(query: string): string | undefined {
  // Single-quoted literals and double-quoted identifiers may hold braces (JSON text, odd names).
  const code = query.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"/g, (m) => " ".repeat(m.length));
  const pattern = /\$\{[^}]*\}?|\{\{[^}]*\}?\}?|\{[^{}]*\}|[{}]/g;
  for (const m of code.matchAll(pattern)) {
    if (m[0] === "{dataset}") continue;
    return query.slice(m.index!, m.index! + m[0].length);
  }
  return undefined;
}
