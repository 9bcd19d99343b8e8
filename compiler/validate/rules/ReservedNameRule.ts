import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { MAX_ASSET_TEXT } from "../../support/uri.js";
import type { DocumentRule } from "./rule.js";

/** Names Airflow reserves for the template context of inlet and outlet events. */
export const RESERVED_NAMES = new Set(["self", "context"]);

/**
 * No dataset, domain or asset-name segment is `self` or `context`, and no asset name exceeds 1500
 * characters. Why: Airflow reserves those words and refuses such Assets when the DAG is parsed.
 */
export const ReservedNameRule: DocumentRule = {
  name: "ReservedNameRule",
  check(document, context) {
    const checkName = (name: string, path: Array<string | number>): void => {
      const at = context.source.locate(path);
      if (name.split(".").some((segment) => RESERVED_NAMES.has(segment))) {
        context.report(createDiagnostic(Diagnostics.NameReserved, { name }, at));
      } else if (name.length > MAX_ASSET_TEXT) {
        context.report(createDiagnostic(Diagnostics.NameTooLong, { name: name.slice(0, 40) + "...", length: name.length }, at));
      }
    };
    if (document.kind === "OrchestrationConfig") return;
    checkName(document.domain, ["domain"]);
    if (document.kind === "ExternalAssets") {
      document.assets.forEach((a, i) => checkName(a.name, ["assets", i, "name"]));
      return;
    }
    const domainLength = document.domain.length + 1;
    document.datasets.forEach((d, i) => {
      if (RESERVED_NAMES.has(d.name)) context.report(createDiagnostic(Diagnostics.NameReserved, { name: d.name }, context.source.locate(["datasets", i, "name"])));
      else if (domainLength + d.name.length > MAX_ASSET_TEXT) checkName(`${document.domain}.${d.name}`, ["datasets", i, "name"]);
    });
    if (document.kind === "IngestionContract") checkName(document.source.name, ["source", "name"]);
  },
};
