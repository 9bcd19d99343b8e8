import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AirflowApiError, AirflowClient, normaliseBaseUrl } from "../../compiler/airflow/airflowClient.js";
import { runFreshnessCommand } from "../../compiler/report/freshnessCommand.js";
import { runStaleCommand } from "../../compiler/report/staleCommand.js";

/**
 * The client against a fake Airflow 3 API on loopback (node:http): paging under a capped limit,
 * the token flow, errors and timeouts. The real Airflow is exercised by
 * test/python/test_stale_airflow.py.
 */

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  body: string;
}

type Handler = (req: Seen, res: http.ServerResponse) => void;

const servers: http.Server[] = [];
const roots: string[] = [];
afterEach(async () => {
  for (const r of roots.splice(0)) fs.rmSync(r, { recursive: true, force: true });
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(handler: Handler): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const s = { method: req.method ?? "", url: req.url ?? "", authorization: req.headers.authorization, body };
      seen.push(s);
      handler(s, res);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function json(res: http.ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

function apiAsset(id: number, name: string, more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    name,
    uri: `x-lake://${name}`,
    group: "g",
    extra: { contract_id: name },
    scheduled_dags: [],
    producing_tasks: [{ dag_id: name, task_id: "publish" }],
    consuming_tasks: [],
    aliases: [],
    watchers: [],
    ...more,
  };
}

/** A fake Airflow: `all` assets, `activeIds` active, limit capped at `cap`, optional login. */
function fakeAirflow(all: Record<string, unknown>[], activeIds: Set<number>, cap = 2, login?: { user: string; password: string; token: string }): Handler {
  return (req, res) => {
    const u = new URL(req.url, "http://x");
    if (u.pathname === "/api/v2/version") return json(res, 200, { version: "3.2.2", git_version: null });
    if (u.pathname === "/auth/token" && req.method === "POST") {
      const b = JSON.parse(req.body) as { username: string; password: string };
      if (login && b.username === login.user && b.password === login.password) return json(res, 201, { access_token: login.token });
      return json(res, 401, { detail: "Invalid credentials" });
    }
    if (login && req.authorization !== `Bearer ${login.token}`) return json(res, 401, { detail: "Not authenticated" });
    if (u.pathname === "/api/v2/assets") {
      const onlyActive = u.searchParams.get("only_active") !== "false";
      const rows = all.filter((a) => !onlyActive || activeIds.has(a.id as number));
      const limit = Math.min(Number(u.searchParams.get("limit") ?? 50), cap);
      const offset = Number(u.searchParams.get("offset") ?? 0);
      return json(res, 200, { assets: rows.slice(offset, offset + limit), total_entries: rows.length });
    }
    json(res, 404, { detail: "Not Found" });
  };
}

describe("normaliseBaseUrl", () => {
  it("drops a trailing slash and /api/v2, keeps a path prefix", () => {
    expect(normaliseBaseUrl("http://h:8080/")).toBe("http://h:8080");
    expect(normaliseBaseUrl("https://h/airflow/api/v2/")).toBe("https://h/airflow");
  });

  it("refuses credentials, other schemes, queries and non-URLs without echoing a password", () => {
    for (const bad of ["http://admin:hunter2@h:8080", "ftp://h", "http://h?x=1", "not a url"]) {
      let error: unknown;
      try {
        normaliseBaseUrl(bad);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(AirflowApiError);
      expect((error as AirflowApiError).kind).toBe("usage");
      expect((error as Error).message).not.toContain("hunter2");
    }
  });
});

describe("AirflowClient", () => {
  it("pages by rows received when the server caps the limit, and splits active from orphaned", async () => {
    const all = [apiAsset(1, "e"), apiAsset(2, "a"), apiAsset(3, "d"), apiAsset(4, "b"), apiAsset(5, "c")];
    const { url, seen } = await serve(fakeAirflow(all, new Set([1, 3, 5])));
    const state = await new AirflowClient({ baseUrl: url, pageSize: 100 }).assetState();
    expect(state.airflowVersion).toBe("3.2.2");
    expect(state.active.map((a) => a.name)).toEqual(["c", "d", "e"]);
    expect(state.orphaned.map((a) => a.name)).toEqual(["a", "b"]);
    expect(state.active[0]).toEqual({ id: 5, name: "c", uri: "x-lake://c", group: "g", extra: { contract_id: "c" }, scheduledDags: [], producingDags: ["c"], consumingDags: [] });
    const offsets = seen.filter((s) => s.url.includes("only_active=false")).map((s) => new URL(s.url, "http://x").searchParams.get("offset"));
    expect(offsets).toEqual(["0", "2", "4"]);
    expect(seen.every((s) => s.url === "/api/v2/version" || s.url.includes("order_by=id"))).toBe(true);
  });

  it("logs in once at /auth/token and sends the token as a bearer", async () => {
    const login = { user: "viewer", password: "pw-1", token: "tok-1" };
    const { url, seen } = await serve(fakeAirflow([apiAsset(1, "a")], new Set([1]), 2, login));
    const state = await new AirflowClient({ baseUrl: url, auth: { username: "viewer", password: "pw-1" } }).assetState();
    expect(state.active.map((a) => a.name)).toEqual(["a"]);
    const logins = seen.filter((s) => s.url === "/auth/token");
    expect(logins).toHaveLength(1);
    expect(JSON.parse(logins[0]!.body)).toEqual({ username: "viewer", password: "pw-1" });
    expect(seen.filter((s) => s.url.startsWith("/api/v2/assets")).every((s) => s.authorization === "Bearer tok-1")).toBe(true);
    expect(seen.find((s) => s.url === "/api/v2/version")?.authorization).toBeUndefined();
  });

  it("uses a given token without logging in", async () => {
    const login = { user: "u", password: "p", token: "given" };
    const { url, seen } = await serve(fakeAirflow([apiAsset(1, "a")], new Set([1]), 2, login));
    await new AirflowClient({ baseUrl: url, auth: { token: "given" } }).assetState();
    expect(seen.some((s) => s.url === "/auth/token")).toBe(false);
  });

  it("reports HTTP errors with method, URL, status and detail, never the password", async () => {
    const login = { user: "u", password: "right", token: "t" };
    const { url } = await serve(fakeAirflow([], new Set(), 2, login));
    const wrong = new AirflowClient({ baseUrl: url, auth: { username: "u", password: "wrong-secret" } });
    await expect(wrong.assetState()).rejects.toThrow(`POST ${url}/auth/token: HTTP 401 Unauthorized: Invalid credentials (check AIRFLOW_USERNAME and AIRFLOW_PASSWORD)`);
    const anonymous = new AirflowClient({ baseUrl: url });
    const error = (await anonymous.assetState().catch((e: unknown) => e)) as AirflowApiError;
    expect(error).toBeInstanceOf(AirflowApiError);
    expect(error.status).toBe(401);
    expect(error.message).toContain(`GET ${url}/api/v2/assets?limit=100&offset=0&order_by=id&only_active=false: HTTP 401`);
    expect(error.message).toContain("set AIRFLOW_TOKEN");
  });

  it("explains a 404 on /api/v2 as a missing Airflow 3 API", async () => {
    const { url } = await serve((_req, res) => json(res, 404, { detail: "Not Found" }));
    await expect(new AirflowClient({ baseUrl: url }).assetState()).rejects.toThrow(/HTTP 404 Not Found: Not Found \(no Airflow 3 REST API at this URL/);
  });

  it("times out a request that gets no answer", async () => {
    const { url } = await serve(() => undefined);
    const started = Date.now();
    const error = (await new AirflowClient({ baseUrl: url, timeoutMs: 200 }).assetState().catch((e: unknown) => e)) as AirflowApiError;
    expect(error.kind).toBe("timeout");
    expect(error.message).toBe(`GET ${url}/api/v2/version: no answer within 200 ms`);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("reports a refused connection as a network error", async () => {
    const { url } = await serve(() => undefined);
    servers[0]!.closeAllConnections();
    await new Promise((r) => servers.shift()!.close(r));
    const error = (await new AirflowClient({ baseUrl: url }).assetState().catch((e: unknown) => e)) as AirflowApiError;
    expect(error.kind).toBe("network");
    expect(error.message).toMatch(new RegExp(`^GET ${url}/api/v2/version: cannot connect: ECONNREFUSED`));
  });

  it("refuses answers that are not an asset collection, and a server that ignores offset", async () => {
    const notJson = await serve((req, res) => (req.url === "/api/v2/version" ? json(res, 200, { version: "3.2.2" }) : res.end("<html>")));
    await expect(new AirflowClient({ baseUrl: notJson.url }).assetState()).rejects.toThrow(/the answer is not JSON: <html>/);
    const stuck = await serve((req, res) =>
      req.url === "/api/v2/version" ? json(res, 200, { version: "3.2.2" }) : json(res, 200, { assets: [apiAsset(1, "a")], total_entries: 3 }),
    );
    await expect(new AirflowClient({ baseUrl: stuck.url }).assetState()).rejects.toThrow(/paging does not advance/);
  });
});

/** Asset events of asset 1 as `GET /api/v2/assets/events` serves them, limit capped at 2. */
function fakeEvents(events: { id: number; timestamp: string; partition_key: string | null }[]): Handler {
  const assets = fakeAirflow([apiAsset(1, "a")], new Set([1]));
  return (req, res) => {
    const u = new URL(req.url, "http://x");
    if (u.pathname !== "/api/v2/assets/events") return assets(req, res);
    const rows = events
      .filter(() => u.searchParams.get("asset_id") === "1")
      .map((e) => ({ ...e, asset_id: 1, extra: {}, source_dag_id: "a", source_task_id: "publish", source_run_id: `r${e.id}`, source_map_index: -1, created_dagruns: [] }))
      .sort((x, y) => (u.searchParams.get("order_by") === "-timestamp" ? (y.timestamp < x.timestamp ? -1 : 1) : x.id - y.id));
    const limit = Math.min(Number(u.searchParams.get("limit") ?? 50), 2);
    const offset = Number(u.searchParams.get("offset") ?? 0);
    return json(res, 200, { asset_events: rows.slice(offset, offset + limit), total_entries: rows.length });
  };
}

const EVENTS = [
  { id: 1, timestamp: "2026-12-02T01:00:00Z", partition_key: "2026-12-01" },
  { id: 2, timestamp: "2026-12-03T01:00:00Z", partition_key: "2026-12-02" },
  { id: 3, timestamp: "2026-12-05T01:00:00Z", partition_key: "2026-12-04" },
  { id: 4, timestamp: "2026-12-05T02:00:00Z", partition_key: null },
  { id: 5, timestamp: "2026-12-06T01:00:00Z", partition_key: "2026-12-01" },
];

describe("AirflowClient.assetEventPartitionKeys", () => {
  it("reads the partition key of every event of an asset, page by page under a capped limit", async () => {
    const { url, seen } = await serve(fakeEvents(EVENTS));
    const keys = await new AirflowClient({ baseUrl: url, pageSize: 100 }).assetEventPartitionKeys(1);
    expect(keys).toEqual(["2026-12-01", "2026-12-02", "2026-12-04", null, "2026-12-01"]);
    expect(seen.map((s) => new URL(s.url, "http://x").searchParams.get("offset"))).toEqual(["0", "2", "4"]);
    expect(seen.every((s) => s.url.startsWith("/api/v2/assets/events?asset_id=1&order_by=timestamp&"))).toBe(true);
  });

  it("refuses an answer that is not an event collection", async () => {
    const { url } = await serve((req, res) => json(res, 200, { asset_events: [{ timestamp: "x" }], total_entries: 1 }));
    await expect(new AirflowClient({ baseUrl: url }).assetEventPartitionKeys(1)).rejects.toThrow(/an asset event without an id/);
  });
});

describe("runFreshnessCommand", () => {
  it("reports a partitioned asset's newest partition, its age and the missing keys from the REST API", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-freshness-"));
    roots.push(root);
    fs.mkdirSync(path.join(root, "generated"));
    const monitored = { name: "a", uri: "x-lake://a", producer: "a", published_by: null, max_age: "P1D", max_age_seconds: 86400, degrade_after: null, degrade_after_seconds: null, partition_grain: "day" };
    const manifest = {
      manifestVersion: 2,
      compiler: { name: "contract-assets", version: "0.0.0" },
      lineage: { namespace: "test" },
      assets: [],
      edges: [],
      dags: [],
      freshness_monitor: { dag_id: "contract_assets_freshness_monitor", schedule: { cron: { expression: "*/15 * * * *", timezone: "UTC" } }, notifier: null, warehouse_conn_id: null, assets: [monitored] },
    };
    fs.writeFileSync(path.join(root, "generated", "manifest.json"), JSON.stringify(manifest));
    const { url } = await serve(fakeEvents(EVENTS));
    let stdout = "";
    let stderr = "";
    const now = () => new Date("2026-12-06T12:00:00Z");
    const code = await runFreshnessCommand({ root, airflowUrl: url, format: "json", env: {}, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), timeoutMs: 2000, now });
    expect(stderr).toBe("");
    // newest 2026-12-04 ended 2026-12-05T00:00Z, 36 h ago: stale against one day
    expect(code).toBe(1);
    const report = JSON.parse(stdout) as { assets: Record<string, unknown>[] };
    expect(report.assets[0]).toMatchObject({
      asset: "a",
      state: "stale",
      age_seconds: 36 * 3600,
      last_event_at: "2026-12-06T01:00:00.000Z",
      partitions: { grain: "day", first: "2026-12-01", newest: "2026-12-04", newest_end: "2026-12-05T00:00:00.000Z", published: 3, missing: ["2026-12-03"], missing_count: 1, ignored_events: 1 },
    });
  });
});

describe("runStaleCommand", () => {
  function project(manifestText: string | undefined): string {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-stale-"));
    roots.push(root);
    if (manifestText !== undefined) {
      fs.mkdirSync(path.join(root, "generated"), { recursive: true });
      fs.writeFileSync(path.join(root, "generated", "manifest.json"), manifestText);
    }
    return root;
  }
  const MANIFEST = JSON.stringify({
    manifestVersion: 2,
    compiler: { name: "contract-assets", version: "0.0.0" },
    lineage: { namespace: "test" },
    assets: [{ name: "a", uri: "x-lake://a", group: "a", extra: {}, external: false, status: "active", producer: "a", contract: "contracts/a.yaml", contract_sha256: null, schema: null, quality: [], renamed_from: [] }],
    edges: [],
    dags: [
      {
        dag_id: "a",
        contract: "contracts/a.yaml",
        contract_sha256: "0",
        contract_git_blob: "0",
        contract_version: "1.0.0",
        status: "active",
        owner: "o",
        description: "",
        tags: [],
        inlets: [],
        outlets: ["a"],
        schedule: { assets: null, cron: null },
        tasks: [],
        default_args: { owner: "o" },
        runtime: { kind: "TransformContract", domain: "a", on_failure: "block_publish", datasets: [], upstreams: [], producer: { type: "python", entrypoint: "a:b" } },
      },
    ],
  });

  async function run(root: string, airflowUrl: string, env: Record<string, string> = {}, format: "text" | "json" = "json") {
    let stdout = "";
    let stderr = "";
    const code = await runStaleCommand({ root, airflowUrl, format, env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), timeoutMs: 2000 });
    return { code, stdout, stderr };
  }

  it("exits 0 when nothing is stale, 1 when stale assets remain, and prints the report on stdout", async () => {
    const clean = await serve(fakeAirflow([apiAsset(1, "a"), apiAsset(2, "old")], new Set([1])));
    const ok = await run(project(MANIFEST), clean.url);
    expect(ok.code).toBe(0);
    expect(ok.stderr).toBe("");
    expect((JSON.parse(ok.stdout) as { orphaned: Array<{ name: string }> }).orphaned.map((e) => e.name)).toEqual(["old"]);

    const dirty = await serve(fakeAirflow([apiAsset(1, "a"), apiAsset(2, "old")], new Set([1, 2])));
    const stale = await run(project(MANIFEST), dirty.url, {}, "text");
    expect(stale.code).toBe(1);
    expect(stale.stdout.split("\n")[0]).toMatch(/^stale {5}old {2}x-lake:\/\/old {2}removed from the manifest/);
  });

  it("reads credentials from the environment", async () => {
    const login = { user: "u", password: "p", token: "t" };
    const { url } = await serve(fakeAirflow([apiAsset(1, "a")], new Set([1]), 2, login));
    expect((await run(project(MANIFEST), url, { AIRFLOW_USERNAME: "u", AIRFLOW_PASSWORD: "p" })).code).toBe(0);
    expect((await run(project(MANIFEST), url, { AIRFLOW_TOKEN: "t" })).code).toBe(0);
    const half = await run(project(MANIFEST), url, { AIRFLOW_USERNAME: "u" });
    expect(half).toEqual({ code: 2, stdout: "", stderr: "contract-assets: stale: AIRFLOW_USERNAME and AIRFLOW_PASSWORD must be set together\n" });
  });

  it("exits 2 on a missing or unreadable manifest, a manifest of another version, and a connection error", async () => {
    const { url } = await serve(fakeAirflow([], new Set()));
    const missing = await run(project(undefined), url);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^contract-assets: stale: generated\/manifest.json: cannot read the file: ENOENT \(run "contract-assets compile" first\)\n$/);
    const other = await run(project(JSON.stringify({ manifestVersion: 99, assets: [], edges: [], dags: [] })), url);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain("manifestVersion 99 is not 2 (nor 1, which this compiler still reads); compile it again with this compiler");
    const garbage = await run(project("{"), url);
    expect(garbage.code).toBe(2);
    expect(garbage.stderr).toContain("generated/manifest.json: not JSON");
    const refused = await run(project(MANIFEST), "http://127.0.0.1:9");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^contract-assets: stale: GET http:\/\/127\.0\.0\.1:9\/api\/v2\/version: cannot connect/);
    const creds = await run(project(MANIFEST), "http://user:hunter2@127.0.0.1:9");
    expect(creds.code).toBe(2);
    expect(creds.stderr).not.toContain("hunter2");
  });
});
