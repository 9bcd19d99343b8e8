import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { AnyDocument } from "../../model/contract.js";
import { queryCredential } from "../../support/uri.js";
import { describePath } from "../mapSchemaErrors.js";
import { forEachString, type DocumentRule } from "./rule.js";

/** `scheme://user[:password]@…` anywhere in a text. */
const USER_INFO = /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/\s@]*@/;
/** A URI with a query string anywhere in a text, up to where a sentence or a quote ends it. */
const URI_WITH_QUERY = /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s"'<>?]*\?[^\s"'<>]*/g;

/** Whether `path` is a `uri` field that `ValidUriRule` checks itself (CA3015, CA3049). */
function isAssetUri(document: AnyDocument, path: ReadonlyArray<string | number>): boolean {
  if (path[path.length - 1] !== "uri") return false;
  if (document.kind === "ExternalAssets") return path.length === 3 && path[0] === "assets";
  if (document.kind === "OrchestrationConfig") return false;
  return (path.length === 3 && path[0] === "datasets") || (document.kind === "IngestionContract" && path.length === 2 && path[0] === "source");
}

/**
 * No text of a contract or of the orchestration config carries a URI with credentials: user info
 * (`scheme://user:password@…`) or a credential in its query string (a signed URL's `sig=`,
 * `X-Amz-Signature=`, a `token=`: `isQueryCredential`, ADR 0027) — a description, a producer
 * parameter, a shim's command or environment, the `uri_template`, `landing.uri`, `proposals.uri`.
 * Why: everything the compiler reads ends up in the manifest, the generated modules, the ODCS
 * export, lineage facets and CI logs; credentials belong in Airflow Connections (DESIGN §3.6).
 * The Asset URIs `ValidUriRule` checks have their own codes (CA3015, CA3049).
 */
export const CredentialInTextRule: DocumentRule = {
  name: "CredentialInTextRule",
  check(document, context) {
    forEachString(document, (text, path) => {
      // `://` first: most texts have none, and the patterns cannot match without it.
      if (!text.includes("://") || isAssetUri(document, path)) return;
      let what: string | undefined;
      if (USER_INFO.test(text)) what = "user info";
      else if (text.includes("?")) {
        for (const [uri] of text.matchAll(URI_WITH_QUERY)) {
          const parameter = queryCredential(uri);
          if (parameter !== undefined) {
            what = `the credential "${parameter}" in its query string`;
            break;
          }
        }
      }
      if (what !== undefined) {
        context.report(createDiagnostic(Diagnostics.CredentialInText, { field: (context.source.describe ?? describePath)([...path]), what }, context.source.locate([...path])));
      }
    });
  },
};
