import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { DocumentRule } from "./rule.js";

/**
 * An ingestion contract's fields fit its `mode`: `extract` names exactly one of `source.table` and
 * `source.query`, a `landing` location and `source.format: parquet` (the landing format); `load`
 * names none of `source.table`, `source.query` and `landing`. Why: the runtime of each mode reads
 * only its own fields (DESIGN §3.2), so a field of the other mode would be accepted and ignored.
 */
export const IngestionModeShapeRule: DocumentRule = {
  name: "IngestionModeShapeRule",
  check(document, context) {
    if (document.kind !== "IngestionContract") return;
    const report = (problem: string, path: (string | number)[]) =>
      context.report(createDiagnostic(Diagnostics.ExtractShape, { problem }, context.source.locate(path)));
    const source = document.source;
    if (document.mode === "extract") {
      if (source.table === undefined && source.query === undefined) report('needs "source.table" or "source.query"', ["source"]);
      if (source.table !== undefined && source.query !== undefined) report('takes "source.table" or "source.query", not both', ["source", "query"]);
      if (document.landing === undefined) report('needs "landing: {uri, connection_id}" for its Parquet files and manifest', ["mode"]);
      if (source.format !== "parquet") report('lands Parquet files: write "source.format: parquet"', ["source", "format"]);
      return;
    }
    const misplaced: Array<[string, (string | number)[]]> = [];
    if (source.table !== undefined) misplaced.push(["source.table", ["source", "table"]]);
    if (source.query !== undefined) misplaced.push(["source.query", ["source", "query"]]);
    if (document.landing !== undefined) misplaced.push(["landing", ["landing"]]);
    for (const [field, path] of misplaced) {
      context.report(createDiagnostic(Diagnostics.LoadShape, { field }, context.source.locate(path, "key")));
    }
  },
};
