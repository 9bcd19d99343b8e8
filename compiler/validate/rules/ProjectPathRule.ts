import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { staysInside } from "../../support/paths.js";
import type { DocumentRule } from "./rule.js";

/**
 * A producer's SQL file is a relative path inside the project. Why: the runtime reads it on a
 * worker; a path that climbs out of the project reads whatever that machine has (DESIGN §3.2).
 */
export const ProjectPathRule: DocumentRule = {
  name: "ProjectPathRule",
  check(document, context) {
    if (document.kind !== "TransformContract" || document.producer.type !== "sql") return;
    if (!staysInside(document.producer.path)) {
      context.report(createDiagnostic(Diagnostics.PathOutsideProject, { path: document.producer.path }, context.source.locate(["producer", "path"])));
    }
  },
};
