import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { QUALITY_OPERATORS } from "../../model/contract.js";
import type { DocumentRule } from "./rule.js";

const COLUMN_METRICS = new Set(["nullValues", "missingValues", "invalidValues", "duplicateValues"]);

/**
 * Each quality rule is a library metric or a `type: sql` query, with exactly one `mustBe…`
 * operator; column metrics name a declared property; `invalidValues` lists `validValues`; ranges
 * are `[low, high]`; a SQL rule reads the table under audit through `{dataset}`. Why: the audit
 * evaluates rules at run time, and a rule that cannot be evaluated would fail every run (ODCS v3
 * quality section; DESIGN §5.3).
 */
export const QualityRuleShapeRule: DocumentRule = {
  name: "QualityRuleShapeRule",
  check(document, context) {
    if (document.kind === "OrchestrationConfig" || document.kind === "ExternalAssets") return;
    document.datasets.forEach((dataset, di) => {
      const columns = new Set(dataset.schema.properties.map((p) => p.name));
      (dataset.quality ?? []).forEach((rule, ri) => {
        const base = ["datasets", di, "quality", ri];
        // Located only when a finding needs it (most rules have none).
        const at = () => context.source.locate(base);
        const operators = QUALITY_OPERATORS.filter((o) => rule[o] !== undefined);
        if (operators.length !== 1) context.report(createDiagnostic(Diagnostics.QualityOperatorCount, { count: operators.length }, at()));
        for (const o of ["mustBeBetween", "mustNotBeBetween"] as const) {
          const range = rule[o];
          if (range && range[0] > range[1]) context.report(createDiagnostic(Diagnostics.QualityBadRange, { operator: o }, context.source.locate([...base, o])));
        }
        const isSql = rule.type === "sql";
        if (isSql) {
          if (rule.query === undefined) context.report(createDiagnostic(Diagnostics.MissingField, { field: "query", where: `datasets[${di}].quality[${ri}]` }, at()));
          else if (!rule.query.includes("{dataset}")) context.report(createDiagnostic(Diagnostics.QualitySqlPlaceholder, {}, context.source.locate([...base, "query"])));
          if (rule.metric !== undefined) {
            context.report(createDiagnostic(Diagnostics.SchemaViolation, { field: "metric", detail: 'cannot be combined with "type: sql"' }, context.source.locate([...base, "metric"])));
          }
          return;
        }
        if (rule.metric === undefined) {
          context.report(createDiagnostic(Diagnostics.MissingField, { field: "metric", where: `datasets[${di}].quality[${ri}]` }, at(), { hint: 'or write "type: sql" with a "query"' }));
          return;
        }
        if (rule.query !== undefined) {
          context.report(createDiagnostic(Diagnostics.SchemaViolation, { field: "query", detail: 'needs "type: sql"' }, context.source.locate([...base, "query"])));
        }
        if (COLUMN_METRICS.has(rule.metric)) {
          if (rule.column === undefined) context.report(createDiagnostic(Diagnostics.QualityMissingColumn, { metric: rule.metric }, at()));
          else if (!columns.has(rule.column)) {
            context.report(
              createDiagnostic(Diagnostics.QualityUnknownColumn, { column: rule.column, dataset: dataset.name }, context.source.locate([...base, "column"])),
            );
          }
        }
        if (rule.metric === "invalidValues" && rule.validValues === undefined) {
          context.report(createDiagnostic(Diagnostics.QualityMissingValidValues, {}, at()));
        }
      });
    });
  },
};
