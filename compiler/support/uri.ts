import { isQueryCredential } from "./secrets.js";

/**
 * Asset URI rules and Airflow's URI normalisation (DESIGN §3.3).
 *
 * Airflow normalises an Asset URI before storing it (`_sanitize_uri` in
 * airflow/sdk/definitions/asset/__init__.py, 3.2): the scheme is lower-cased, a password's user
 * info is dropped, trailing "/" are stripped from the path (an empty path becomes "/"), the query
 * is parsed with `parse_qsl` (blank values dropped, percent-escapes decoded), sorted and re-encoded
 * with `urlencode`, the fragment is dropped, and a provider's normaliser may rewrite the rest (the
 * postgres provider adds the default port 5432, names the scheme `postgres` and fills an empty
 * schema with `default`). `x-` schemes are returned untouched. Two URIs that normalise to the same
 * text are one Asset to Airflow, which keeps one active and fails the other at run time; the
 * compiler compares normalised URIs to catch that first. test/python/test_uri_normalisation.py
 * checks this function against the installed Airflow.
 */
export function normaliseUri(uri: string): string {
  const parts = splitUri(uri);
  if (!parts || (parts.scheme === "" && parts.netloc === undefined)) return uri;
  const scheme = parts.scheme.toLowerCase();
  if (scheme.startsWith("x-")) return uri;
  let netloc = parts.netloc ?? "";
  const at = netloc.lastIndexOf("@");
  if (at >= 0 && netloc.slice(0, at).includes(":")) netloc = netloc.slice(at + 1);
  let path = parts.path.replace(/\/+$/, "") || "/";
  const query = parts.query ? urlencode(parseQsl(parts.query).sort(comparePairs)) : "";
  let normalisedScheme = scheme;
  if (scheme === "postgres" || scheme === "postgresql") {
    const shaped = postgresShape(netloc, path);
    if (typeof shaped !== "string") {
      normalisedScheme = "postgres";
      netloc = shaped.netloc;
      path = shaped.path;
    }
  }
  return `${normalisedScheme}://${netloc}${path}${query ? `?${query}` : ""}`;
}

/** The parts of a URI the way Python's `urllib.parse.urlsplit` cuts them. */
export interface UriParts {
  scheme: string;
  /** Undefined when the URI has no `//` authority part. */
  netloc: string | undefined;
  path: string;
  query: string;
  fragment: string;
}

/** `urllib.parse.urlsplit`, for the URIs contracts use; undefined when Python would raise. */
export function splitUri(uri: string): UriParts | undefined {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):(.*)$/s.exec(uri);
  const scheme = m ? m[1]! : "";
  let rest = m ? m[2]! : uri;
  let fragment = "";
  const hash = rest.indexOf("#");
  if (hash >= 0) {
    fragment = rest.slice(hash + 1);
    rest = rest.slice(0, hash);
  }
  let query = "";
  const q = rest.indexOf("?");
  if (q >= 0) {
    query = rest.slice(q + 1);
    rest = rest.slice(0, q);
  }
  let netloc: string | undefined;
  if (rest.startsWith("//")) {
    const end = rest.indexOf("/", 2);
    netloc = end >= 0 ? rest.slice(2, end) : rest.slice(2);
    rest = end >= 0 ? rest.slice(end) : "";
    // Python refuses unbalanced or invalid IPv6 brackets in the host.
    if ((netloc.includes("[") || netloc.includes("]")) && !/^(?:[^@]*@)?\[[0-9A-Fa-f:.]+\](?::\d*)?$/.test(netloc)) return undefined;
  }
  return { scheme, netloc, path: rest, query, fragment };
}

/**
 * The postgres provider's shape: a host, a port that is a number (default 5432), and a path of
 * exactly database, schema and table (an empty schema is `default`). A string when refused.
 */
export function postgresShape(netloc: string, path: string): { netloc: string; path: string } | string {
  const host = netloc.replace(/^.*@/, "");
  if (host === "" || host === ":") return "a postgres URI needs a host";
  const port = /:(\d*)$/.exec(host);
  if (port && port[1] === "") return "a postgres URI needs a host";
  if (!port && host.includes(":") && !host.endsWith("]")) return "the port of a postgres URI must be a number";
  const parts = path.split("/");
  if (parts.length !== 4) return "a postgres URI is postgres://host:port/database/schema/table";
  if (parts[2] === "") parts[2] = "default";
  return { netloc: port ? netloc : `${netloc.replace(/:$/, "")}:5432`, path: parts.join("/") };
}

type Pair = [string, string];

function comparePairs(a: Pair, b: Pair): number {
  // Python compares strings by code point.
  const byPoint = (x: string, y: string): number => {
    const xs = [...x];
    const ys = [...y];
    for (let i = 0; i < Math.min(xs.length, ys.length); i++) {
      const d = xs[i]!.codePointAt(0)! - ys[i]!.codePointAt(0)!;
      if (d !== 0) return d;
    }
    return xs.length - ys.length;
  };
  return byPoint(a[0], b[0]) || byPoint(a[1], b[1]);
}

function unquotePlus(text: string): string {
  const bytes: number[] = [];
  const out: string[] = [];
  const flush = (): void => {
    if (bytes.length) out.push(Buffer.from(bytes).toString("utf8"));
    bytes.length = 0;
  };
  const s = text.replace(/\+/g, " ");
  for (let i = 0; i < s.length; i++) {
    if (s[i] === "%" && /^[0-9A-Fa-f]{2}$/.test(s.slice(i + 1, i + 3))) {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      flush();
      out.push(s[i]!);
    }
  }
  flush();
  return out.join("");
}

/** `urllib.parse.parse_qsl(query)`: `&`-separated, blank values dropped, `+` and `%XX` decoded. */
export function parseQsl(query: string): Pair[] {
  const pairs: Pair[] = [];
  for (const field of query.split("&")) {
    if (field === "") continue;
    const eq = field.indexOf("=");
    if (eq < 0) continue;
    const value = field.slice(eq + 1);
    if (value === "") continue;
    pairs.push([unquotePlus(field.slice(0, eq)), unquotePlus(value)]);
  }
  return pairs;
}

/** `urllib.parse.urlencode(pairs)`: `quote_plus` of each name and value. */
export function urlencode(pairs: readonly Pair[]): string {
  const quotePlus = (text: string): string =>
    [...Buffer.from(text, "utf8")]
      .map((b) => {
        const c = String.fromCharCode(b);
        if (/[A-Za-z0-9_.\-~]/.test(c)) return c;
        if (c === " ") return "+";
        return `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
      })
      .join("");
  return pairs.map(([k, v]) => `${quotePlus(k)}=${quotePlus(v)}`).join("&");
}

/**
 * Why Airflow would refuse a URI when it parses it (invalid IPv6 brackets, a provider's shape), or
 * undefined when it accepts it. Schemes `airflow` and user info are separate rules.
 */
export function airflowRefusal(uri: string): string | undefined {
  const parts = splitUri(uri);
  if (!parts) return "the host has invalid IPv6 brackets";
  const scheme = parts.scheme.toLowerCase();
  if (scheme === "postgres" || scheme === "postgresql") {
    const shaped = postgresShape(parts.netloc ?? "", parts.path.replace(/\/+$/, "") || "/");
    if (typeof shaped === "string") return shaped;
  }
  return undefined;
}

/**
 * The URI a postgres Asset URI that Airflow refuses (`airflowRefusal`) should have been, in the
 * provider's shape `postgres://host:port/database/schema/table`: what the author wrote kept in
 * place, the default port 5432 added, and each part that is missing or unusable written as a
 * placeholder to fill in (`<host>`, `<port>`, `<database>`, `<schema>`, `<table>`). Written path
 * segments are taken as the last ones (`postgres://db/schema/table` →
 * `postgres://db:5432/<database>/schema/table`); more than three give the placeholders only.
 * Undefined for another scheme, or a URI Airflow accepts.
 */
export function postgresCorrection(uri: string): string | undefined {
  const parts = splitUri(uri);
  if (!parts) return undefined;
  const scheme = parts.scheme.toLowerCase();
  if ((scheme !== "postgres" && scheme !== "postgresql") || airflowRefusal(uri) === undefined) return undefined;
  const m = /^(\[[^\]]*\]|[^:]*)(?::(.*))?$/.exec((parts.netloc ?? "").replace(/^.*@/, ""));
  const host = m?.[1] || "<host>";
  const port = m?.[2] === undefined || m[2] === "" ? "5432" : /^\d+$/.test(m[2]) ? m[2] : "<port>";
  const segments = parts.path.split("/").filter((x) => x !== "");
  const names = ["<database>", "<schema>", "<table>"];
  const path = segments.length <= 3 ? [...names.slice(0, 3 - segments.length), ...segments] : names;
  return `${scheme}://${host}:${port}/${path.join("/")}`;
}

/** The scheme of a URI, lower-cased, or undefined when it has none. */
export function uriScheme(uri: string): string | undefined {
  return /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(uri)?.[1]?.toLowerCase();
}

/** Airflow's limit on an Asset name and URI, in characters. */
export const MAX_ASSET_TEXT = 1500;

/**
 * The first query parameter of a URI that carries a credential (`isQueryCredential`: a signed
 * URL's signature, a token, a password, an API key), as written, or undefined. The query is
 * where Python's `urlsplit` finds it (after the first `?`, before `#`), cut at `&` as
 * `parse_qsl` cuts it.
 */
export function queryCredential(uri: string): string | undefined {
  const q = uri.indexOf("?");
  if (q < 0) return undefined;
  const hash = uri.indexOf("#");
  if (hash >= 0 && hash < q) return undefined;
  const query = uri.slice(q + 1, hash >= 0 ? hash : undefined);
  for (const field of query.split("&")) {
    const eq = field.indexOf("=");
    if (eq > 0 && isQueryCredential(field.slice(0, eq), field.slice(eq + 1))) return field.slice(0, eq);
  }
  return undefined;
}
