import path from "node:path";
import { AirflowApiError, AirflowClient, type AirflowAuth } from "../airflow/airflowClient.js";
import type { Diagnostic } from "../diagnostics/diagnostic.js";
import { defaultLayout, MAX_MANIFEST_BYTES, readSourceFile } from "../discover/discoverProject.js";
import type { Manifest } from "../manifest/buildManifest.js";
import { parseManifest } from "../discover/readManifest.js";
import { maskSecrets } from "../support/secrets.js";

/** What the commands that read a running Airflow (`stale`, `freshness`) take. */
export interface AirflowCommandOptions {
  /** Project root; the manifest is `<root>/generated/manifest.json`. */
  root: string;
  /** Base URL of the Airflow API server, like `http://localhost:8080`. */
  airflowUrl: string;
  format: "text" | "json";
  /** A bearer token; else `AIRFLOW_TOKEN`, else `AIRFLOW_USERNAME` + `AIRFLOW_PASSWORD`. */
  token?: string;
  /** Per-request timeout in milliseconds (default 10 000). */
  timeoutMs?: number;
  /** For tests: the environment to read credentials from (default `process.env`). */
  env?: Readonly<Record<string, string | undefined>>;
  /** For tests: where the report and the errors go (default the process streams). */
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  /** For tests: a fetch implementation. */
  fetch?: typeof globalThis.fetch;
}

/** Exit code of a usage, manifest or connection error, for every Airflow command. */
export const AIRFLOW_COMMAND_ERROR = 2;

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/** Credentials from the option and the environment; a text when they are incomplete. */
export function resolveAuth(token: string | undefined, env: Readonly<Record<string, string | undefined>>): AirflowAuth | string {
  const t = nonEmpty(token) ?? nonEmpty(env.AIRFLOW_TOKEN);
  if (t !== undefined) return { token: t };
  const username = nonEmpty(env.AIRFLOW_USERNAME);
  const password = nonEmpty(env.AIRFLOW_PASSWORD);
  if (username !== undefined && password !== undefined) return { username, password };
  if (username !== undefined || password !== undefined) return "AIRFLOW_USERNAME and AIRFLOW_PASSWORD must be set together";
  return undefined;
}

/**
 * `<root>/generated/manifest.json`, read and parsed, or the one line that says why it cannot be
 * (missing: run compile first; damaged: the parser's problem).
 */
export function readOutputManifest(root: string): Manifest | string {
  const layout = defaultLayout(root);
  const manifestPath = path.posix.join(layout.outDir, "manifest.json");
  const diagnostics: Diagnostic[] = [];
  const file = readSourceFile(root, manifestPath, diagnostics, MAX_MANIFEST_BYTES);
  if (!file) {
    const reason = diagnostics[0]?.message ?? "cannot be read";
    return `${manifestPath}: ${reason} (run "contract-assets compile" first)`;
  }
  const { manifest, problem } = parseManifest(file.text);
  return manifest ?? `${manifestPath}: ${problem}`;
}

/**
 * Runs one read-only command against a running Airflow: checks the format, reads and parses
 * `<root>/generated/manifest.json`, builds the client from the credentials, then calls `body`.
 * Any usage, manifest or {@link AirflowApiError} ends as one masked line on stderr and exit 2;
 * other errors are bugs and propagate.
 */
export async function runAirflowCommand(
  command: string,
  options: AirflowCommandOptions,
  body: (manifest: Manifest, client: AirflowClient, out: (text: string) => void) => Promise<number>,
): Promise<number> {
  const out = options.stdout ?? ((t: string) => void process.stdout.write(t));
  const err = options.stderr ?? ((t: string) => void process.stderr.write(t));
  const fail = (message: string): number => {
    err(maskSecrets(`contract-assets: ${command}: ${message}\n`));
    return AIRFLOW_COMMAND_ERROR;
  };

  if (options.format !== "text" && options.format !== "json") return fail(`unknown format ${JSON.stringify(options.format)} (text or json)`);

  const manifest = readOutputManifest(options.root);
  if (typeof manifest === "string") return fail(manifest);

  const auth = resolveAuth(options.token, options.env ?? process.env);
  if (typeof auth === "string") return fail(auth);

  try {
    const client = new AirflowClient({
      baseUrl: options.airflowUrl,
      auth,
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    return await body(manifest, client, out);
  } catch (error) {
    if (error instanceof AirflowApiError) return fail(error.message);
    throw error;
  }
}
