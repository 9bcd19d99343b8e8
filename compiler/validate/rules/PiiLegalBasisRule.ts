import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { DocumentRule } from "./rule.js";

/**
 * A contract with a property classified `pii` declares `processing.legal_basis`. Why: GDPR Art. 30
 * asks for the purpose and legal basis of every processing of personal data, and lineage carries
 * them to governance (DESIGN §3.1).
 */
export const PiiLegalBasisRule: DocumentRule = {
  name: "PiiLegalBasisRule",
  check(document, context) {
    if (document.kind === "OrchestrationConfig" || document.kind === "ExternalAssets") return;
    if (document.processing?.legal_basis) return;
    document.datasets.forEach((dataset, i) =>
      dataset.schema.properties.forEach((property, j) => {
        if (property.classification?.toLowerCase() === "pii") {
          context.report(
            createDiagnostic(
              Diagnostics.PiiWithoutLegalBasis,
              { property: `${dataset.name}.${property.name}` },
              context.source.locate(["datasets", i, "schema", "properties", j, "classification"]),
              { hint: 'add "processing: {purpose: …, legal_basis: …}" to the contract' },
            ),
          );
        }
      }),
    );
  },
};
