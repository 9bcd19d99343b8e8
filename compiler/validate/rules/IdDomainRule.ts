import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { DocumentRule } from "./rule.js";

/**
 * A contract's id is `<domain>.<name>` with its own domain. Why: the id is the dag_id and names
 * the module folder, while the domain names the Asset group and the lineage namespace; if they
 * disagree, one product shows up under two domains (DESIGN §3.1).
 */
export const IdDomainRule: DocumentRule = {
  name: "IdDomainRule",
  check(document, context) {
    if (document.kind === "OrchestrationConfig" || document.kind === "ExternalAssets") return;
    if (document.id.split(".")[0] !== document.domain) {
      context.report(createDiagnostic(Diagnostics.IdDomainMismatch, { id: document.id, domain: document.domain }, context.source.locate(["id"])));
    }
  },
};
