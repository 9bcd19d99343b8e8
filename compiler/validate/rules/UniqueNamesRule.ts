import { createDiagnostic, Diagnostics, type DiagnosticEntry } from "../../diagnostics/catalogue.js";
import type { NodePath } from "../../parse/parseDocument.js";
import type { DocumentRule, RuleContext } from "./rule.js";

function reportRepeats(
  names: Array<string | undefined>,
  pathOf: (i: number) => NodePath,
  entry: DiagnosticEntry,
  argName: string,
  context: RuleContext,
  foldCase = false,
): void {
  const first = new Map<string, number>();
  names.forEach((name, i) => {
    if (name === undefined) return;
    const key = foldCase ? name.toLowerCase() : name;
    const seen = first.get(key);
    if (seen === undefined) {
      first.set(key, i);
      return;
    }
    context.report(
      createDiagnostic(entry, { [argName]: name } as never, context.source.locate(pathOf(i)), {
        related: [{ message: "first declared here", location: context.source.locate(pathOf(seen)) }],
      }),
    );
  });
}

/**
 * Within one contract, dataset names, property names of a dataset, quality rule names of a dataset
 * and upstream assets are unique. Why: each becomes a key (an Asset, a column, an assertion, an
 * inlet) and a repeat would silently shadow the first.
 */
export const UniqueNamesRule: DocumentRule = {
  name: "UniqueNamesRule",
  check(document, context) {
    if (document.kind === "OrchestrationConfig") return;
    if (document.kind === "ExternalAssets") {
      reportRepeats(document.assets.map((a) => a.name), (i) => ["assets", i, "name"], Diagnostics.DuplicateAssetName, "name", context);
      return;
    }
    reportRepeats(document.datasets.map((d) => d.name), (i) => ["datasets", i, "name"], Diagnostics.DuplicateDataset, "dataset", context);
    document.datasets.forEach((d, di) => {
      reportRepeats(
        d.schema.properties.map((p) => p.name),
        (i) => ["datasets", di, "schema", "properties", i, "name"],
        Diagnostics.DuplicateProperty,
        "property",
        context,
        // Warehouses fold unquoted column names: "a" and "A" are one column.
        true,
      );
      reportRepeats(
        (d.quality ?? []).map((q) => q.name),
        (i) => ["datasets", di, "quality", i, "name"],
        Diagnostics.DuplicateQualityName,
        "name",
        context,
      );
    });
    reportRepeats((document.upstreams ?? []).map((u) => u.asset), (i) => ["upstreams", i, "asset"], Diagnostics.DuplicateUpstream, "asset", context);
    if (document.kind === "IngestionContract") {
      (document.upstreams ?? []).forEach((u, k) => {
        if (u.asset === document.source.name) {
          context.report(createDiagnostic(Diagnostics.SourceAsUpstream, { name: u.asset }, context.source.locate(["upstreams", k, "asset"])));
        }
      });
      const i = document.datasets.findIndex((d) => `${document.domain}.${d.name}` === document.source.name);
      if (i >= 0) context.report(createDiagnostic(Diagnostics.SourceNameClash, { name: document.source.name }, context.source.locate(["source", "name"])));
    }
  },
};
