import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { SourceLocation } from "../../diagnostics/diagnostic.js";
import type { NodePath } from "../../parse/parseDocument.js";
import { maskSecrets } from "../../support/secrets.js";
import { airflowRefusal, MAX_ASSET_TEXT, postgresCorrection, queryCredential, uriScheme } from "../../support/uri.js";
import type { DocumentRule, RuleContext } from "./rule.js";

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * Every Asset URI is non-empty, not blank, ASCII, at most 1500 characters, free of user info, of
 * credentials in its query string (CA3049: a signed URL's `sig=`, `X-Amz-Signature=`, a `token=`,
 * `isQueryCredential`) and of unresolved placeholders, has a scheme, and does not use the
 * reserved `airflow` scheme.
 *
 * Why: Airflow rejects some of these only when the DAG is parsed or stored, silently drops user
 * info (leaking the credential into the file and the logs), keeps a query string as part of the
 * Asset URI (so a signature would be in the manifest, the DAG module, the ODCS export and
 * Airflow's database), and stores non-ASCII URIs differently per database backend. Both
 * credential messages carry the URI masked (`maskSecrets`).
 */
export function checkUri(uri: string, path: NodePath, context: RuleContext): void {
  // Located only for a finding: every URI of a project is checked, and nearly all pass.
  const at = (): SourceLocation => context.source.locate(path);
  const report = context.report;
  if (uri === "") return report(createDiagnostic(Diagnostics.UriEmpty, {}, at()));
  if (uri.trim() === "") return report(createDiagnostic(Diagnostics.UriBlank, {}, at()));
  // Printable ASCII, the common case, needs no array of its characters.
  const nonAscii = PRINTABLE_ASCII.test(uri) ? -1 : [...uri].findIndex((c) => c.codePointAt(0)! > 0x7e || c.codePointAt(0)! < 0x20);
  if (nonAscii >= 0) {
    const c = [...uri][nonAscii]!;
    const code = c.codePointAt(0)!;
    const shown = code < 0x20 || code === 0x7f ? `U+${code.toString(16).toUpperCase().padStart(4, "0")}` : `"${c}" (U+${code.toString(16).toUpperCase().padStart(4, "0")})`;
    return report(createDiagnostic(Diagnostics.UriNonAscii, { character: shown, index: nonAscii }, at(), { hint: "percent-encode it" }));
  }
  if (uri.length > MAX_ASSET_TEXT) return report(createDiagnostic(Diagnostics.UriTooLong, { length: uri.length }, at()));
  const placeholder = /\{\{.*?\}\}|\$\{[^}]*\}|\{\{|\$\{/.exec(uri);
  if (placeholder) return report(createDiagnostic(Diagnostics.UriPlaceholder, { placeholder: placeholder[0] }, at()));
  if (/\s/.test(uri)) {
    return report(createDiagnostic(Diagnostics.UriWhitespace, { uri }, at(), { hint: "percent-encode spaces as %20" }));
  }
  const scheme = uriScheme(uri);
  if (scheme === undefined) return report(createDiagnostic(Diagnostics.UriMalformed, { uri }, at()));
  if (scheme === "airflow") return report(createDiagnostic(Diagnostics.UriReservedScheme, { scheme }, at()));
  // User info is anything before an "@" in the authority; a password may hold "?" or "#".
  const authority = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/]*)/.exec(uri)?.[1] ?? "";
  if (authority.includes("@")) {
    report(
      createDiagnostic(Diagnostics.UriUserInfo, { uri: maskSecrets(uri) }, at(), {
        hint: "remove the user info and name an Airflow Connection in connection_id instead",
      }),
    );
    return;
  }
  const parameter = queryCredential(uri);
  if (parameter !== undefined) {
    report(
      createDiagnostic(Diagnostics.UriQueryCredential, { uri: maskSecrets(uri), parameter }, at(), {
        hint: "remove it from the uri and keep the credential in the Airflow Connection named by connection_id",
      }),
    );
    return;
  }
  // What Airflow itself refuses when it parses the URI: bad IPv6 brackets, a provider's shape.
  const refusal = airflowRefusal(uri);
  if (!refusal) return;
  // The corrected URI, with a placeholder for each part only the author knows.
  const corrected = postgresCorrection(uri);
  report(createDiagnostic(Diagnostics.UriRefused, { uri, reason: refusal }, at(), corrected !== undefined ? { hint: `write it as ${JSON.stringify(corrected)}${corrected.includes("<") ? ", filling in each <…>" : ""}` } : {}));
}

export const ValidUriRule: DocumentRule = {
  name: "ValidUriRule",
  check(document, context) {
    if (document.kind === "ExternalAssets") {
      document.assets.forEach((a, i) => checkUri(a.uri, ["assets", i, "uri"], context));
      return;
    }
    if (document.kind === "OrchestrationConfig") return;
    document.datasets.forEach((d, i) => {
      if (d.uri !== undefined) checkUri(d.uri, ["datasets", i, "uri"], context);
    });
    if (document.kind === "IngestionContract") checkUri(document.source.uri, ["source", "uri"], context);
  },
};
