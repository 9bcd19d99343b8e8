/**
 * Asset URI rules and Airflow's URI normalisation (DESIGN §3.3).
 *
 * Airflow normalises an Asset URI before storing it: the scheme is lower-cased, and for schemes it
 * parses it drops a trailing "/", sorts the query and drops the fragment. Two URIs that normalise
 * to the same text are one Asset to Airflow, which keeps one active and fails the other at run
 * time; the compiler compares normalised URIs to catch that first. `x-` schemes are private and
 * kept verbatim. An empty path becomes "/" (Airflow's `_sanitize_uri`).
 */
export function normaliseUri(uri: string): string {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?(?:#.*)?$/s.exec(uri);
  if (!m) return uri;
  const scheme = m[1]!.toLowerCase();
  // Airflow returns x- schemes untouched, not even lower-casing the scheme.
  if (scheme.startsWith("x-")) return uri;
  const authority = m[2]!;
  let path = m[3]!.replace(/\/+$/, "");
  if (path === "") path = "/";
  const query = (m[4] ?? "")
    .split("&")
    .filter((p) => p !== "")
    // Sort for determinism (and to match Airflow, which sorts query parameters).
    .sort()
    .join("&");
  return `${scheme}://${authority}${path}${query ? `?${query}` : ""}`;
}

/** The scheme of a URI, lower-cased, or undefined when it has none. */
export function uriScheme(uri: string): string | undefined {
  return /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(uri)?.[1]?.toLowerCase();
}

/** Airflow's limit on an Asset name and URI, in characters. */
export const MAX_ASSET_TEXT = 1500;
