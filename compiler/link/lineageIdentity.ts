import type { Contract, Dataset } from "../model/contract.js";
import { splitUri } from "../support/uri.js";

/**
 * A produced dataset's OpenLineage identity as the runtime names it (DESIGN §6.3,
 * `contract_runtime/lineage/identity.py`), where the compiler can know it:
 *
 * 0. an extract's output: its `landing.uri` (`uri_identity`, as publish names the files it wrote);
 * 1. an Asset URI the Airflow OpenLineage provider converts (`postgres`, `postgresql`, `file`,
 *    `s3`, `gs`): the provider's naming (`equivalent_asset_dataset`), before any `physical`;
 * 2. the declared `physical: {namespace, name}`;
 * 3. otherwise the warehouse table: its namespace is the warehouse Connection's (`lineage_warehouse`),
 *    known only at run time, so the compiler derives none (undefined).
 *
 * `via` says which of them gave the identity, for the message and its location.
 */
export interface LineageIdentity {
  namespace: string;
  name: string;
  via: "landing" | "uri" | "physical";
}

/** OpenLineage default ports of SQL schemes (`identity._DEFAULT_PORTS`). */
const DEFAULT_PORTS: Readonly<Record<string, number>> = { postgres: 5432, mysql: 3306, redshift: 5439, mssql: 1433, trino: 8080, oracle: 1521 };
/** Connection-URI scheme spellings named by their OpenLineage scheme (`identity._SCHEME_ALIASES`). */
const SCHEME_ALIASES: Readonly<Record<string, string>> = {
  postgresql: "postgres",
  "postgresql+psycopg2": "postgres",
  "postgresql+psycopg": "postgres",
  "mysql+pymysql": "mysql",
  "mysql+mysqldb": "mysql",
  "mssql+pyodbc": "mssql",
  sqlserver: "mssql",
};
/** Object stores whose dataset name is the key without a leading `/` (`identity._OBJECT_STORE_SCHEMES`). */
const OBJECT_STORE_SCHEMES: ReadonlySet<string> = new Set(["s3", "s3a", "s3n", "gs", "gcs", "abfss", "wasbs", "az"]);

const withoutUserInfo = (netloc: string): string => netloc.slice(netloc.lastIndexOf("@") + 1);

/** Host and port of a netloc (`[v6]:port` kept bracketed); port undefined when absent or not a number. */
function hostAndPort(netloc: string): { host: string; port: number | undefined } {
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(netloc);
  if (!m) return { host: netloc, port: undefined };
  return { host: m[1]!, port: m[2] ? Number(m[2]) : undefined };
}

/**
 * `identity.equivalent_asset_dataset`: the identity the Airflow OpenLineage provider gives an Asset
 * URI of a scheme it converts; undefined for another scheme or a URI the provider refuses.
 * `postgres://db/analytics/public/orders` → `postgres://db:5432`, `analytics.public.orders`.
 */
export function providerAssetIdentity(uri: string): { namespace: string; name: string } | undefined {
  const parts = splitUri(uri);
  if (!parts) return undefined;
  const scheme = parts.scheme.toLowerCase();
  const path = parts.path.replace(/\/+$/, "") || "/";
  const netloc = withoutUserInfo(parts.netloc ?? "");
  if (scheme === "postgres" || scheme === "postgresql") {
    const host = netloc.replace(/:$/, "");
    if (!host) return undefined;
    const port = /:(\d*)$/.exec(host);
    if (!port && host.includes(":") && !host.endsWith("]")) return undefined;
    const segments = path.split("/");
    if (segments.length !== 4) return undefined;
    const [, database, schema, table] = segments;
    return { namespace: `postgres://${port ? host : `${host}:5432`}`, name: `${database}.${schema || "default"}.${table}` };
  }
  if (scheme === "file") {
    if (path === "/") return { namespace: "file", name: netloc.startsWith("/") ? netloc : `/${netloc}` };
    return { namespace: netloc ? `file://${netloc}` : "file", name: path };
  }
  if (scheme === "s3" || scheme === "gs") {
    if (!netloc) return undefined;
    return { namespace: `${scheme}://${netloc}`, name: path.replace(/^\/+/, "") || "/" };
  }
  return undefined;
}

/**
 * `identity.uri_identity`: the OpenLineage identity of a location URI (`s3://bucket/a/b` →
 * `s3://bucket`, `a/b`); undefined for a logical URI (`x-` scheme, no authority).
 */
export function locationIdentity(uri: string): { namespace: string; name: string } | undefined {
  const parts = splitUri(uri);
  if (!parts) return undefined;
  const netloc = withoutUserInfo(parts.netloc ?? "");
  const lower = parts.scheme.toLowerCase();
  if (lower === "file" && (netloc === "" || netloc === "localhost") && parts.path) return { namespace: "file", name: decodeURIComponent(parts.path) };
  const scheme = SCHEME_ALIASES[lower] ?? lower;
  if (!scheme || scheme.startsWith("x-") || !netloc) return undefined;
  if (DEFAULT_PORTS[scheme] !== undefined) {
    const segments = parts.path.split("/").filter((s) => s !== "");
    return { namespace: normaliseNamespace(`${scheme}://${netloc}`), name: segments.join(".") || "/" };
  }
  const path = parts.path || "/";
  return { namespace: `${scheme}://${netloc}`, name: (OBJECT_STORE_SCHEMES.has(scheme) ? path.replace(/^\/+/, "") : path) || "/" };
}

/**
 * A namespace in the form two emitters naming one place agree on: the scheme lower-cased and
 * named as OpenLineage names it (`postgresql` → `postgres`), user info dropped, the host
 * lower-cased, a SQL scheme's default port spelt out (`sql_warehouse_namespace`), a trailing `/`
 * dropped. `postgresql://WH` and `postgres://wh:5432` are one namespace. A namespace without
 * `://` (`file`, a lineage namespace) is returned as written.
 */
export function normaliseNamespace(namespace: string): string {
  const parts = splitUri(namespace);
  if (!parts || parts.netloc === undefined || parts.scheme === "") return namespace;
  const lower = parts.scheme.toLowerCase();
  const scheme = SCHEME_ALIASES[lower] ?? lower;
  const { host, port } = hostAndPort(withoutUserInfo(parts.netloc));
  const defaultPort = DEFAULT_PORTS[scheme];
  const effective = port ?? defaultPort;
  const path = parts.path.replace(/\/+$/, "");
  return `${scheme}://${host.toLowerCase()}${effective !== undefined ? `:${effective}` : ""}${path}`;
}

/**
 * The lineage identity of `dataset` of `contract` whose Asset URI is `uri` (its `uri`, or the
 * template's expansion), by the runtime's order above; undefined when only the run time can say.
 */
export function datasetLineageIdentity(contract: Contract, dataset: Dataset, uri: string): LineageIdentity | undefined {
  if (contract.kind === "IngestionContract" && contract.mode === "extract" && contract.landing) {
    const landing = locationIdentity(contract.landing.uri.replace(/\/+$/, ""));
    if (landing) return { ...landing, via: "landing" };
  }
  const converted = providerAssetIdentity(uri);
  if (converted) return { ...converted, via: "uri" };
  if (dataset.physical) return { namespace: dataset.physical.namespace, name: dataset.physical.name, via: "physical" };
  return undefined;
}
