import { AirflowApiError, AirflowClient, type AirflowDagRun } from "../airflow/airflowClient.js";
import type { Manifest } from "../manifest/buildManifest.js";
import { compareStrings } from "../support/compare.js";
import { keysInRange, type Grain } from "../support/partitions.js";
import { AIRFLOW_COMMAND_ERROR, resolveAuth, readOutputManifest } from "./airflowCommand.js";
import { maskSecrets } from "../support/secrets.js";

/** What `contract-assets backfill` takes. */
export interface BackfillOptions {
  root: string;
  /** The asset (`<domain>.<dataset>`) whose partitions to fill. */
  asset: string;
  /** Start of the range: an ISO 8601 date or date-time, UTC unless it carries an offset. */
  from: string;
  /** End of the range, exclusive, in the same form. */
  to: string;
  /** Start the runs (default: a dry run that only lists them). */
  run: boolean;
  /** The Airflow API server; without it the keys are listed with no state. */
  airflowUrl?: string;
  token?: string;
  format: "text" | "json";
  /** At most this many keys in one range (default 1,000): a typo in a year should not start 8,760 runs. */
  maxKeys?: number;
  env?: Readonly<Record<string, string | undefined>>;
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  fetch?: typeof globalThis.fetch;
}

/** A key of the range and what backfill does with it. */
export interface BackfillKey {
  key: string;
  /** The state of the key's newest run in Airflow, `missing` without one, `unknown` without an Airflow URL. */
  state: string;
  /** `start` (missing or failed: a run is, or with --run was, started), `skip` (it has a run that did not fail), `list` (no Airflow to ask). */
  action: "start" | "skip" | "list";
  /** The run started for it (with --run). */
  started?: string;
}

/** Exit codes: 0 done (or nothing to do), 1 a run could not be started, 2 usage, manifest or connection error. */
export const BACKFILL_EXIT_OK = 0;
export const BACKFILL_EXIT_FAILED = 1;

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** An ISO 8601 date or date-time as ms since the epoch, UTC unless it says otherwise; NaN when it is neither. */
export function parseInstant(text: string): number {
  if (DATE_ONLY.test(text)) return Date.parse(`${text}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}(:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:\d{2})?$/.test(text)) return Number.NaN;
  const withMinutes = /T\d{2}$/.test(text) ? `${text}:00` : /T\d{2}(Z|[+-]\d{2}:\d{2})$/.test(text) ? text.replace(/(T\d{2})/, "$1:00") : text;
  return Date.parse(/(Z|[+-]\d{2}:\d{2})$/.test(withMinutes) ? withMinutes : `${withMinutes}Z`);
}

/**
 * The newest run of each partition key (by the order Airflow lists runs: `order_by=id`, so the
 * last one seen is the newest).
 */
function newestRunByKey(runs: readonly AirflowDagRun[]): Map<string, AirflowDagRun> {
  const out = new Map<string, AirflowDagRun>();
  for (const r of runs) if (r.partitionKey !== null) out.set(r.partitionKey, r);
  return out;
}

/**
 * `contract-assets backfill <asset> --from T --to T [--run] [--airflow-url URL]`: the partition
 * keys of a partitioned asset whose periods overlap [from, to) (UTC, the grain of its contract's
 * `partitioning`, keys as `support/partitions.ts` formats them), and, against a running Airflow,
 * the state of each key's newest run of the producing DAG. A key without a run, or whose newest
 * run failed, is to start; with `--run` one manual run per such key is started through the REST API
 * (`partition_key` in the trigger body), in key order, with a progress line per run. A dry run is
 * the default. Airflow 3.2 has no partition backfill of its own (`airflow backfill create` fills
 * logical dates, not partition keys); this is that.
 *
 * @returns the exit code (see {@link BACKFILL_EXIT_OK}); the report goes to stdout, errors to stderr.
 */
export async function runBackfillCommand(options: BackfillOptions): Promise<number> {
  const out = options.stdout ?? ((t: string) => void process.stdout.write(t));
  const err = options.stderr ?? ((t: string) => void process.stderr.write(t));
  const fail = (message: string): number => {
    err(maskSecrets(`contract-assets: backfill: ${message}\n`));
    return AIRFLOW_COMMAND_ERROR;
  };
  const read = readOutputManifest(options.root);
  if (typeof read === "string") return fail(read);
  const manifest: Manifest = read;
  const assets = manifest.assets;
  const asset = assets.find((a) => a.name === options.asset);
  if (!asset) {
    const partitioned = assets.filter((a) => a.partitioning).map((a) => a.name).sort(compareStrings);
    return fail(`no asset ${JSON.stringify(options.asset)} in the manifest${partitioned.length ? ` (partitioned assets: ${partitioned.join(", ")})` : " (it declares no partitioned asset)"}`);
  }
  if (!asset.partitioning) return fail(`${JSON.stringify(asset.name)} is not partitioned: its contract declares no "partitioning", so it has no keys to fill (run its DAG instead)`);
  if (!asset.producer) return fail(`${JSON.stringify(asset.name)} has no DAG that produces it (its contract is ${asset.status})`);
  const grain: Grain = asset.partitioning.grain;
  const from = parseInstant(options.from);
  const to = parseInstant(options.to);
  if (Number.isNaN(from)) return fail(`--from ${JSON.stringify(options.from)} is not an ISO 8601 date or date-time (like 2026-12-01 or 2026-12-01T05:00Z)`);
  if (Number.isNaN(to)) return fail(`--to ${JSON.stringify(options.to)} is not an ISO 8601 date or date-time (like 2026-12-08 or 2026-12-08T00:00Z)`);
  if (to <= from) return fail(`--to (${options.to}) must be after --from (${options.from}); the range is [from, to)`);
  const maxKeys = options.maxKeys ?? 1000;
  const keys = keysInRange(grain, from, to, maxKeys + 1);
  if (keys.length > maxKeys) return fail(`the range holds more than ${maxKeys} ${grain} keys; narrow it or pass --max-keys`);
  const dagId = asset.producer;

  let plan: BackfillKey[];
  let client: AirflowClient | undefined;
  try {
    if (options.airflowUrl) {
      const auth = resolveAuth(options.token, options.env ?? process.env);
      if (typeof auth === "string") return fail(auth);
      client = new AirflowClient({ baseUrl: options.airflowUrl, auth, ...(options.fetch ? { fetch: options.fetch } : {}) });
      const runs = newestRunByKey(await client.listDagRuns(dagId));
      plan = keys.map((key) => {
        const run = runs.get(key);
        const state = run?.state ?? "missing";
        return { key, state, action: state === "missing" || state === "failed" ? "start" : "skip" };
      });
    } else {
      if (options.run) return fail("--run needs --airflow-url: runs are started through the Airflow REST API");
      plan = keys.map((key) => ({ key, state: "unknown", action: "list" }));
    }
    const header = `${asset.name} (DAG ${dagId}, ${grain} partitions by ${asset.partitioning.column}): ${keys.length} key(s) in [${options.from}, ${options.to})`;
    const toStart = plan.filter((k) => k.action === "start");
    if (options.format === "text") {
      out(`${header}\n`);
      for (const k of plan) out(`  ${k.key}  ${k.state}${k.action === "start" ? (options.run ? "  -> starting" : "  -> would start") : ""}\n`);
    }
    let failed = 0;
    if (options.run && client) {
      let n = 0;
      for (const k of toStart) {
        n++;
        try {
          const run = await client.triggerPartition(dagId, k.key, `contract-assets backfill ${options.from}..${options.to}`);
          k.started = run.runId;
          if (options.format === "text") out(`started ${n}/${toStart.length}: ${k.key} as ${run.runId}\n`);
        } catch (error) {
          if (!(error instanceof AirflowApiError)) throw error;
          failed++;
          err(maskSecrets(`contract-assets: backfill: ${k.key}: ${error.message}\n`));
        }
      }
    }
    const summary = options.run
      ? `${toStart.length - failed} run(s) started, ${failed} failed to start, ${plan.length - toStart.length} key(s) skipped`
      : options.airflowUrl
        ? `dry run: ${toStart.length} run(s) would start (missing or failed), ${plan.length - toStart.length} key(s) have a run; pass --run to start them`
        : `dry run: ${plan.length} key(s); pass --airflow-url to see which are missing, and --run to start them`;
    if (options.format === "json") out(`${JSON.stringify({ asset: asset.name, dag_id: dagId, grain, column: asset.partitioning.column, from: options.from, to: options.to, run: options.run, keys: plan, summary }, null, 2)}\n`);
    else out(`${summary}\n`);
    return failed > 0 ? BACKFILL_EXIT_FAILED : BACKFILL_EXIT_OK;
  } catch (error) {
    if (error instanceof AirflowApiError) return fail(error.message);
    throw error;
  }
}
