/**
 * Query parameters that carry a credential (ADR 0027): a name that, percent-decoded, lower-cased
 * and without "-", "_" and ".", is one of these. Sources: Azure Storage SAS (`sig`, "Create a
 * service SAS"), AWS Signature Version 2 query authentication (`AWSAccessKeyId`, `Signature`),
 * Google Cloud Storage V2 signed URLs (`GoogleAccessId`, `Signature`), and `pwd` (ODBC-style
 * connection strings). The runtime masks the same names (contract_runtime/lineage/redact.py,
 * `_QUERY_CREDENTIAL_NAMES`).
 */
export const QUERY_CREDENTIAL_NAMES: readonly string[] = ["sig", "awsaccesskeyid", "googleaccessid", "pwd"];

/**
 * Query parameters whose folded name (as for `QUERY_CREDENTIAL_NAMES`) contains one of these carry
 * a credential: AWS Signature Version 4 (`X-Amz-Signature`, `X-Amz-Credential`,
 * `X-Amz-Security-Token`), Google Cloud Storage V4 signed URLs (`X-Goog-Signature`,
 * `X-Goog-Credential`), OAuth 2.0 bearer tokens in a query (RFC 6750 §2.3 `access_token`; also
 * `token`, `id_token`, `refresh_token`), `password`/`passwd`/`passphrase`, `secret`
 * (`client_secret`), and API keys (`api_key`, `apikey`, `x-api-key`). The runtime's list is the
 * same (redact.py, `_QUERY_CREDENTIAL_PARTS`).
 */
export const QUERY_CREDENTIAL_PARTS: readonly string[] = [
  "password",
  "passwd",
  "passphrase",
  "secret",
  "signature",
  "credential",
  "token",
  "apikey",
];

/**
 * A Google API key (`AIza` and 35 characters of `[0-9A-Za-z_-]`), the one value that makes a
 * parameter named plain `key` a credential: `key` alone also names an object key or a lookup
 * value in many HTTP APIs and Asset URIs, so its name does not decide (ADR 0027).
 */
const GOOGLE_API_KEY = /^AIza[0-9A-Za-z_-]{35}$/;

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, " "));
  } catch {
    return name;
  }
}

/**
 * Whether the query parameter `name=value` carries a credential (the lists above, case-insensitive;
 * `key` only with a Google API key's shape). A blank value carries nothing.
 *
 * @param name The parameter name as written, percent-escapes and all (`X%2DAmz%2DSignature`).
 * @param value The value as written.
 */
export function isQueryCredential(name: string, value: string): boolean {
  if (value === "") return false;
  const folded = decodeName(name).toLowerCase().replace(/[-_.]/g, "");
  if (QUERY_CREDENTIAL_NAMES.includes(folded)) return true;
  if (QUERY_CREDENTIAL_PARTS.some((part) => folded.includes(part))) return true;
  return folded === "key" && GOOGLE_API_KEY.test(decodeName(value));
}

// ?name=value or &name=value anywhere in a text; the value ends where a URI, a quoted string (YAML
// or JSON) or a flow collection would. Linear: each class excludes the character that ends it.
const QUERY_PAIR = /([?&])([^=&#\s"'<>\\]+)=([^&#\s"'<>\\,;)\]}]*)/g;

/**
 * Masks credentials in any text the compiler prints or writes.
 *
 * A URI's user-info (`scheme://user:password@host`) is replaced by `***`, and so is the value of
 * every query parameter that carries a credential (`isQueryCredential`: `…?sv=2022&sig=***`), so a
 * secret that slipped into a contract never reaches a terminal, a CI log or a JSON report (DESIGN
 * §3.6). The formatters apply it to every line they emit, message and source excerpt alike.
 */
export function maskSecrets(text: string): string {
  // Anchored on "://" so the scan is linear in the text; the user info runs to the last "@" before
  // the next "/" or line end, so a password holding "@", quotes, spaces, "?" or "#" is masked whole.
  const masked = text.replace(/:\/\/[^/\n]*@/g, "://***@");
  if (!masked.includes("=")) return masked;
  return masked.replace(QUERY_PAIR, (pair: string, lead: string, name: string, value: string) =>
    isQueryCredential(name, value) ? `${lead}${name}=***` : pair,
  );
}
