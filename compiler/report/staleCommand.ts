import { AIRFLOW_COMMAND_ERROR, runAirflowCommand, type AirflowCommandOptions } from "./airflowCommand.js";
import { compareWithAirflow, formatStaleJson, formatStaleText, staleExitCode } from "./staleAssets.js";

export { resolveAuth } from "./airflowCommand.js";

/** Exit codes of `stale`: 0 nothing stale, 1 stale assets remain, 2 usage or connection error. */
export const STALE_EXIT_OK = 0;
export const STALE_EXIT_STALE = 1;
export const STALE_EXIT_ERROR = AIRFLOW_COMMAND_ERROR;

export type StaleCommandOptions = AirflowCommandOptions;

/**
 * `contract-assets stale --airflow-url URL`: compares `<root>/generated/manifest.json` with the
 * assets the Airflow at URL holds, writes the report (text or JSON) to stdout and returns the exit
 * code: 0 nothing stale, 1 stale assets remain, 2 usage, manifest or connection error (one line
 * on stderr). Only reads: the manifest and `GET` requests (plus `POST /auth/token` to log in).
 */
export async function runStaleCommand(options: StaleCommandOptions): Promise<number> {
  return runAirflowCommand("stale", options, async (manifest, client, out) => {
    const state = await client.assetState();
    const report = compareWithAirflow(manifest, state, client.baseUrl);
    out(options.format === "json" ? formatStaleJson(report) : formatStaleText(report));
    return staleExitCode(report) === 0 ? STALE_EXIT_OK : STALE_EXIT_STALE;
  });
}
