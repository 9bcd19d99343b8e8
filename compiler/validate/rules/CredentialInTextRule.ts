import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { describePath } from "../mapSchemaErrors.js";
import { forEachString, type DocumentRule } from "./rule.js";

/** `scheme://user[:password]@…` anywhere in a text. */
const USER_INFO = /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/\s@]*@/;

/**
 * No text of a contract or of the orchestration config carries a URI with user info (a
 * description, a producer parameter, a shim's command or environment). Why: everything the
 * compiler reads ends up in the manifest, the generated modules, lineage facets and CI logs;
 * credentials belong in Airflow Connections (DESIGN §3.6). `uri` fields have their own rule (CA3015).
 */
export const CredentialInTextRule: DocumentRule = {
  name: "CredentialInTextRule",
  check(document, context) {
    forEachString(document, (text, path) => {
      // `://` first: most texts have none, and the pattern cannot match without it.
      if (text.includes("://") && path[path.length - 1] !== "uri" && USER_INFO.test(text)) {
        context.report(createDiagnostic(Diagnostics.CredentialInText, { field: (context.source.describe ?? describePath)([...path]) }, context.source.locate([...path])));
      }
    });
  },
};
