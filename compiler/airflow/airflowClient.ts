/**
 * A small client for the Airflow 3 REST API (`/api/v2`), over Node's global `fetch`.
 *
 * It answers which Assets a running Airflow holds (and which are active), which runs of a DAG it
 * has per partition key, and it starts a DAG run for a partition key (`backfill --run`, the only
 * request that writes).
 * Facts it relies on, checked against apache-airflow-core 3.2.2 (source and a running api-server):
 *
 * - `GET /api/v2/version` needs no authentication; it identifies an Airflow 3 API server.
 * - Authentication: a JWT as `Authorization: Bearer <token>`. The default SimpleAuthManager hands
 *   one out at `POST <base>/auth/token` for `{"username", "password"}` (201, `{"access_token"}`);
 *   its users come from `[core] simple_auth_manager_users` and its passwords file. A viewer may
 *   read assets. (Other auth managers: pass a token.)
 * - `GET /api/v2/assets` lists assets; `only_active` defaults to **true** (only assets with a row in
 *   `asset_active`); `only_active=false` lists every asset row. Airflow never deletes an asset row:
 *   an asset that no DAG references any more (schedule, task inlet or outlet) loses its
 *   `asset_active` row (the scheduler's `_update_asset_orphanage`, every
 *   `[scheduler] parsing_cleanup_interval` seconds), so "orphaned" = listed with
 *   `only_active=false` but not with `only_active=true`. The response has no "active" field.
 * - `limit` is silently capped at `[api] maximum_page_limit` (100 by default), so paging advances by
 *   the number of rows received, never by the limit asked for.
 * - `GET /api/v2/dags/{dag_id}/dagRuns` lists a DAG's runs (`dag_runs[]`, `total_entries`), each
 *   with `run_id`, `state` and `partition_key` (null for an unpartitioned run); `POST` to the same
 *   path with `{"logical_date": null, "partition_key": KEY}` starts a manual run for that key
 *   (`TriggerDAGRunPostBody`; `logical_date` must be present, null is allowed), answering the run.
 *
 * Errors are {@link AirflowApiError}s whose message names the method, the URL (never credentials)
 * and the HTTP status or the network cause.
 */
import { compareStrings } from "../support/compare.js";

/** One asset as the REST API returns it, reduced to what the stale report needs. */
export interface AirflowAsset {
  id: number;
  name: string;
  uri: string;
  group: string;
  /** `extra` as Airflow returns it (values of sensitive-looking keys are redacted by Airflow). */
  extra: Record<string, unknown>;
  /** dag_ids whose schedule names this asset, sorted and unique. */
  scheduledDags: string[];
  /** dag_ids with a task that lists this asset as an outlet, sorted and unique. */
  producingDags: string[];
  /** dag_ids with a task that lists this asset as an inlet, sorted and unique. */
  consumingDags: string[];
}

/** What an Airflow holds: its version and every asset, split by activeness. */
export interface AirflowAssetState {
  /** `version` from `GET /api/v2/version`. */
  airflowVersion: string;
  /** Assets with a row in `asset_active`, sorted by name then uri. */
  active: AirflowAsset[];
  /** Assets Airflow still has a row for but no longer holds as active, sorted by name then uri. */
  orphaned: AirflowAsset[];
}

/** Credentials: a ready token, or a username and password exchanged at `/auth/token`. */
export type AirflowAuth = { token: string } | { username: string; password: string } | undefined;

export interface AirflowClientOptions {
  /** Where the API server answers, like `http://localhost:8080`; a trailing `/api/v2` is accepted. */
  baseUrl: string;
  auth?: AirflowAuth;
  /** Time allowed for each request, body included, in milliseconds (default 10 000). */
  timeoutMs?: number;
  /** Rows asked for per page (default 100, Airflow's default `maximum_page_limit`). */
  pageSize?: number;
  /** For tests: a fetch implementation. */
  fetch?: typeof globalThis.fetch;
}

export type AirflowErrorKind = "usage" | "network" | "timeout" | "http" | "protocol";

/** A failed call to Airflow. `message` never contains a password or a token. */
export class AirflowApiError extends Error {
  constructor(
    message: string,
    readonly kind: AirflowErrorKind,
    readonly url: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = "AirflowApiError";
  }
}

export const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_PAGE_SIZE = 100;
/** Guards against a server that ignores `offset`: no deployment has a million assets. */
const MAX_PAGES = 10_000;
/** Longest response body quoted in an error message. */
const MAX_QUOTED_BODY = 300;

/**
 * Checks and normalises the base URL: http or https, no user info (credentials belong in the
 * environment, not in a URL that ends up in logs), no query or fragment, no trailing `/` or
 * `/api/v2`. Throws an {@link AirflowApiError} of kind `usage`.
 */
export function normaliseBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new AirflowApiError(`--airflow-url ${JSON.stringify(redactUrl(raw))} is not a URL (expected e.g. http://localhost:8080)`, "usage", redactUrl(raw));
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new AirflowApiError(`--airflow-url must be an http or https URL, not ${url.protocol}`, "usage", redactUrl(raw));
  }
  if (url.username || url.password) {
    throw new AirflowApiError(
      "--airflow-url must not contain credentials; use AIRFLOW_TOKEN (or --token), or AIRFLOW_USERNAME and AIRFLOW_PASSWORD",
      "usage",
      redactUrl(raw),
    );
  }
  if (url.search || url.hash) {
    throw new AirflowApiError("--airflow-url must not have a query or a fragment", "usage", redactUrl(raw));
  }
  const path = url.pathname.replace(/\/+$/, "").replace(/\/api\/v2$/, "");
  return `${url.origin}${path}`;
}

/** A URL as it may appear in a message: user info replaced by `***`. */
export function redactUrl(raw: string): string {
  return raw.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#@]*@/, "$1***@");
}

interface Json {
  [key: string]: unknown;
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The `detail` of an Airflow/FastAPI error body, else the start of the body. */
function errorDetail(body: string): string {
  let detail: unknown = undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    if (isObject(parsed)) detail = parsed.detail;
  } catch {
    // not JSON: quote the text
  }
  const text =
    typeof detail === "string"
      ? detail
      : Array.isArray(detail)
        ? detail.map((d) => (isObject(d) && typeof d.msg === "string" ? d.msg : JSON.stringify(d))).join("; ")
        : body.trim();
  const flat = text.replace(/\s+/g, " ");
  return flat.length > MAX_QUOTED_BODY ? `${flat.slice(0, MAX_QUOTED_BODY)}…` : flat;
}

function causeOf(error: unknown): string {
  const cause = error instanceof Error ? (error as Error & { cause?: unknown }).cause : undefined;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return code ? `${code} (${cause.message})` : cause.message;
  }
  return error instanceof Error ? error.message : String(error);
}

function sortedUnique(values: Iterable<string>): string[] {
  // Sort for determinism.
  return [...new Set(values)].sort(compareStrings);
}

function dagIdsOf(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return sortedUnique(value.flatMap((r) => (isObject(r) && typeof r.dag_id === "string" ? [r.dag_id] : [])));
}

/** One DAG run as the REST API returns it, reduced to what `backfill` needs. */
export interface AirflowDagRun {
  runId: string;
  state: string;
  partitionKey: string | null;
}

function toDagRun(value: unknown): AirflowDagRun | undefined {
  if (!isObject(value) || typeof value.dag_run_id !== "string" || typeof value.state !== "string") return undefined;
  return { runId: value.dag_run_id, state: value.state, partitionKey: typeof value.partition_key === "string" ? value.partition_key : null };
}

/** One entry of `assets[]`, checked; undefined when it lacks an id, a name or a uri. */
function toAsset(value: unknown): AirflowAsset | undefined {
  if (!isObject(value) || typeof value.id !== "number" || typeof value.name !== "string" || typeof value.uri !== "string") return undefined;
  return {
    id: value.id,
    name: value.name,
    uri: value.uri,
    group: typeof value.group === "string" ? value.group : "",
    extra: isObject(value.extra) ? value.extra : {},
    scheduledDags: dagIdsOf(value.scheduled_dags),
    producingDags: dagIdsOf(value.producing_tasks),
    consumingDags: dagIdsOf(value.consuming_tasks),
  };
}

function byNameThenUri(a: AirflowAsset, b: AirflowAsset): number {
  return compareStrings(a.name, b.name) || compareStrings(a.uri, b.uri) || a.id - b.id;
}

/** A read-only Airflow 3 REST API client; one instance logs in at most once. */
export class AirflowClient {
  readonly baseUrl: string;
  private readonly auth: AirflowAuth;
  private readonly timeoutMs: number;
  private readonly pageSize: number;
  private readonly fetchImpl: typeof globalThis.fetch;
  private token: string | undefined;

  constructor(options: AirflowClientOptions) {
    this.baseUrl = normaliseBaseUrl(options.baseUrl);
    this.auth = options.auth;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isFinite(this.timeoutMs) || this.timeoutMs <= 0) {
      throw new AirflowApiError(`the timeout must be a positive number of milliseconds, not ${String(options.timeoutMs)}`, "usage", this.baseUrl);
    }
    this.pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    if (this.auth && "token" in this.auth) this.token = this.auth.token;
  }

  /**
   * One request with a timeout over the whole exchange (headers and body). Returns the parsed
   * JSON body of a 2xx answer; anything else is an {@link AirflowApiError}.
   */
  private async request(method: "GET" | "POST", path: string, init: { body?: string; authenticated: boolean }): Promise<unknown> {
    const url = `${this.baseUrl}${path}`;
    const headers: Record<string, string> = { accept: "application/json" };
    if (init.body !== undefined) headers["content-type"] = "application/json";
    if (init.authenticated && this.token !== undefined) headers.authorization = `Bearer ${this.token}`;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    const what = `${method} ${url}`;
    try {
      let response: Response;
      let text: string;
      try {
        response = await this.fetchImpl(url, { method, headers, body: init.body, signal: controller.signal, redirect: "follow" });
        text = await response.text();
      } catch (error) {
        if (controller.signal.aborted) throw new AirflowApiError(`${what}: no answer within ${this.timeoutMs} ms`, "timeout", url);
        throw new AirflowApiError(`${what}: cannot connect: ${causeOf(error)}`, "network", url);
      }
      if (!response.ok) {
        const detail = errorDetail(text);
        const hint =
          response.status === 401
            ? path === "/auth/token"
              ? " (check AIRFLOW_USERNAME and AIRFLOW_PASSWORD)"
              : this.auth === undefined
                ? " (set AIRFLOW_TOKEN or --token, or AIRFLOW_USERNAME and AIRFLOW_PASSWORD)"
                : " (the token was refused: expired, or signed with another secret?)"
            : response.status === 403
              ? method === "POST"
                ? " (the user may not trigger DAG runs)"
                : " (the user may not read assets)"
              : response.status === 404 && path.startsWith("/api/v2/")
                ? " (no Airflow 3 REST API at this URL; Airflow 2 serves /api/v1, which is not supported)"
                : "";
        throw new AirflowApiError(
          `${what}: HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}${detail ? `: ${detail}` : ""}${hint}`,
          "http",
          url,
          response.status,
        );
      }
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new AirflowApiError(`${what}: the answer is not JSON: ${errorDetail(text)}`, "protocol", url, response.status);
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** `GET /api/v2/version` (no authentication needed): the Airflow version string. */
  async version(): Promise<string> {
    const body = await this.request("GET", "/api/v2/version", { authenticated: false });
    if (!isObject(body) || typeof body.version !== "string") {
      throw new AirflowApiError(`GET ${this.baseUrl}/api/v2/version: not an Airflow 3 version answer`, "protocol", `${this.baseUrl}/api/v2/version`);
    }
    return body.version;
  }

  /** Exchanges username and password for a token at `/auth/token`, once; no-op otherwise. */
  async login(): Promise<void> {
    if (this.token !== undefined || !this.auth || !("username" in this.auth)) return;
    const body = await this.request("POST", "/auth/token", {
      body: JSON.stringify({ username: this.auth.username, password: this.auth.password }),
      authenticated: false,
    });
    if (!isObject(body) || typeof body.access_token !== "string" || body.access_token === "") {
      throw new AirflowApiError(`POST ${this.baseUrl}/auth/token: the answer has no access_token`, "protocol", `${this.baseUrl}/auth/token`);
    }
    this.token = body.access_token;
  }

  /**
   * Every asset, page by page (`order_by=id`, `offset` advanced by the rows received), either only
   * the active ones or all of them. Rows are deduplicated by id, so an asset created while paging
   * cannot appear twice.
   */
  async listAssets(options: { onlyActive: boolean }): Promise<AirflowAsset[]> {
    await this.login();
    const seen = new Map<number, AirflowAsset>();
    let offset = 0;
    for (let page = 0; page < MAX_PAGES; page++) {
      const query = `limit=${this.pageSize}&offset=${offset}&order_by=id&only_active=${options.onlyActive ? "true" : "false"}`;
      const path = `/api/v2/assets?${query}`;
      const body = await this.request("GET", path, { authenticated: true });
      if (!isObject(body) || !Array.isArray(body.assets) || typeof body.total_entries !== "number") {
        throw new AirflowApiError(`GET ${this.baseUrl}${path}: not an asset collection (assets[], total_entries)`, "protocol", `${this.baseUrl}${path}`);
      }
      let fresh = 0;
      for (const raw of body.assets) {
        const asset = toAsset(raw);
        if (!asset) throw new AirflowApiError(`GET ${this.baseUrl}${path}: an asset without id, name or uri`, "protocol", `${this.baseUrl}${path}`);
        if (!seen.has(asset.id)) fresh++;
        seen.set(asset.id, asset);
      }
      offset += body.assets.length;
      // Sort for determinism.
      if (body.assets.length === 0 || offset >= body.total_entries) return [...seen.values()].sort(byNameThenUri);
      if (fresh === 0) {
        throw new AirflowApiError(`GET ${this.baseUrl}${path}: paging does not advance (the server ignores offset)`, "protocol", `${this.baseUrl}${path}`);
      }
    }
    throw new AirflowApiError(`GET ${this.baseUrl}/api/v2/assets: more than ${MAX_PAGES} pages`, "protocol", `${this.baseUrl}/api/v2/assets`);
  }

  /**
   * The latest Asset event of one asset (`GET /api/v2/assets/events?asset_id=…&order_by=-timestamp
   * &limit=1`): its timestamp (ISO 8601 as Airflow writes it) and where it came from, or undefined
   * when the asset has none.
   */
  async latestAssetEvent(assetId: number): Promise<{ timestamp: string; sourceDagId: string | null; fromRestApi: boolean } | undefined> {
    await this.login();
    const path = `/api/v2/assets/events?asset_id=${assetId}&order_by=-timestamp&limit=1`;
    const body = await this.request("GET", path, { authenticated: true });
    if (!isObject(body) || !Array.isArray(body.asset_events)) {
      throw new AirflowApiError(`GET ${this.baseUrl}${path}: not an asset event collection (asset_events[])`, "protocol", `${this.baseUrl}${path}`);
    }
    const event: unknown = body.asset_events[0];
    if (event === undefined) return undefined;
    if (!isObject(event) || typeof event.timestamp !== "string") {
      throw new AirflowApiError(`GET ${this.baseUrl}${path}: an asset event without a timestamp`, "protocol", `${this.baseUrl}${path}`);
    }
    const extra = isObject(event.extra) ? event.extra : {};
    return { timestamp: event.timestamp, sourceDagId: typeof event.source_dag_id === "string" ? event.source_dag_id : null, fromRestApi: extra.from_rest_api === true };
  }

  /**
   * The `partition_key` of every Asset event of one asset (`GET /api/v2/assets/events?asset_id=…
   * &order_by=timestamp`, paged by `offset`, deduplicated by event id; 3.2 refuses `order_by=id`
   * there), null for an event without one.
   * Airflow 3.2 writes a partitioned DAG run's key on the events its tasks' outlets make
   * (`TaskInstance.register_asset_changes_in_db`), and the body's on a `POST
   * /api/v2/assets/events`.
   */
  async assetEventPartitionKeys(assetId: number): Promise<(string | null)[]> {
    await this.login();
    const seen = new Map<number, string | null>();
    let offset = 0;
    const base = `/api/v2/assets/events?asset_id=${assetId}&order_by=timestamp`;
    for (let page = 0; page < MAX_PAGES; page++) {
      const path = `${base}&limit=${this.pageSize}&offset=${offset}`;
      const body = await this.request("GET", path, { authenticated: true });
      if (!isObject(body) || !Array.isArray(body.asset_events) || typeof body.total_entries !== "number") {
        throw new AirflowApiError(`GET ${this.baseUrl}${path}: not an asset event collection (asset_events[], total_entries)`, "protocol", `${this.baseUrl}${path}`);
      }
      let fresh = 0;
      for (const event of body.asset_events) {
        if (!isObject(event) || typeof event.id !== "number") {
          throw new AirflowApiError(`GET ${this.baseUrl}${path}: an asset event without an id`, "protocol", `${this.baseUrl}${path}`);
        }
        if (!seen.has(event.id)) fresh++;
        seen.set(event.id, typeof event.partition_key === "string" ? event.partition_key : null);
      }
      offset += body.asset_events.length;
      if (body.asset_events.length === 0 || offset >= body.total_entries) return [...seen.values()];
      if (fresh === 0) {
        throw new AirflowApiError(`GET ${this.baseUrl}${path}: paging does not advance (the server ignores offset)`, "protocol", `${this.baseUrl}${path}`);
      }
    }
    throw new AirflowApiError(`GET ${this.baseUrl}${base}: more than ${MAX_PAGES} pages`, "protocol", `${this.baseUrl}${base}`);
  }

  /**
   * Every run of a DAG (`GET /api/v2/dags/{dag_id}/dagRuns`, paged by `offset`, `order_by=id`):
   * its run_id, state and partition key (null for an unpartitioned run), deduplicated by run_id.
   */
  async listDagRuns(dagId: string): Promise<AirflowDagRun[]> {
    await this.login();
    const seen = new Map<string, AirflowDagRun>();
    let offset = 0;
    const base = `/api/v2/dags/${encodeURIComponent(dagId)}/dagRuns`;
    for (let page = 0; page < MAX_PAGES; page++) {
      const path = `${base}?limit=${this.pageSize}&offset=${offset}&order_by=id`;
      const body = await this.request("GET", path, { authenticated: true });
      if (!isObject(body) || !Array.isArray(body.dag_runs) || typeof body.total_entries !== "number") {
        throw new AirflowApiError(`GET ${this.baseUrl}${path}: not a DAG run collection (dag_runs[], total_entries)`, "protocol", `${this.baseUrl}${path}`);
      }
      for (const raw of body.dag_runs) {
        const run = toDagRun(raw);
        if (!run) throw new AirflowApiError(`GET ${this.baseUrl}${path}: a DAG run without run_id or state`, "protocol", `${this.baseUrl}${path}`);
        seen.set(run.runId, run);
      }
      offset += body.dag_runs.length;
      if (body.dag_runs.length === 0 || offset >= body.total_entries) return [...seen.values()];
    }
    throw new AirflowApiError(`GET ${this.baseUrl}${base}: more than ${MAX_PAGES} pages`, "protocol", `${this.baseUrl}${base}`);
  }

  /** Starts a manual run of a DAG for one partition key (`POST /api/v2/dags/{dag_id}/dagRuns`). */
  async triggerPartition(dagId: string, partitionKey: string, note: string): Promise<AirflowDagRun> {
    await this.login();
    const path = `/api/v2/dags/${encodeURIComponent(dagId)}/dagRuns`;
    const body = await this.request("POST", path, { body: JSON.stringify({ logical_date: null, partition_key: partitionKey, note }), authenticated: true });
    const run = toDagRun(body);
    if (!run) throw new AirflowApiError(`POST ${this.baseUrl}${path}: the answer is not a DAG run`, "protocol", `${this.baseUrl}${path}`);
    return run;
  }

  /**
   * The version and every asset, split into active and orphaned. Two listings (all, then only
   * active); an asset whose state changes between them is reported in its later state.
   */
  async assetState(): Promise<AirflowAssetState> {
    const airflowVersion = await this.version();
    const all = await this.listAssets({ onlyActive: false });
    const active = await this.listAssets({ onlyActive: true });
    const activeIds = new Set(active.map((a) => a.id));
    return { airflowVersion, active, orphaned: all.filter((a) => !activeIds.has(a.id)) };
  }
}
