import type { AirflowAsset, AirflowAssetState } from "../airflow/airflowClient.js";
import type { Manifest } from "../manifest/buildManifest.js";
import type { ConditionNode } from "../plan/planDags.js";
import { canonicalJson } from "../support/canonical-json.js";
import { compareStrings } from "../support/compare.js";
import { maskSecrets } from "../support/secrets.js";
import { normaliseUri } from "../support/uri.js";

/**
 * The stale-asset report: what a running Airflow holds, compared with the manifest (pure; the
 * Airflow side comes from `airflow/airflowClient.ts`).
 *
 * "Expected" assets are those the generated DAGs declare to Airflow: every asset a manifest DAG
 * names in its schedule, inlets or outlets. Airflow registers exactly those when it parses the
 * modules; a draft, retired or unused asset of the manifest is not expected. Each Airflow asset row
 * (a name and a URI) lands in one category:
 *
 * - **stale**: active in Airflow, but not expected (removed, renamed, retired) or expected with
 *   another URI. Still to clean up; the command exits 1.
 * - **orphaned**: the same, but Airflow no longer holds it as active. The removal is complete.
 * - **foreign**: not expected and not compiled by contract-assets (its `extra` carries neither
 *   `contract_id` nor `external: true`, and no manifest asset has or had its name): another
 *   project's asset in a shared Airflow. Listed, never stale.
 * Rows of expected assets whose URI matches are in sync and not listed. Expected assets with no
 * active row of the same name and URI are **missing**: Airflow has not (re)parsed their DAG yet,
 * or keeps the row inactive behind an older active row of the same name (informational).
 */

/** Version of the JSON report; bump it when a field changes meaning or disappears. */
export const STALE_REPORT_VERSION = 1;

/** Why an Airflow asset is stale or orphaned. */
export type StaleReason =
  /** No manifest asset has this name. */
  | "removed"
  /** A manifest asset declares it in `renamed_from`. */
  | "renamed"
  /** The manifest has the name with another URI (compared after Airflow's normalisation). */
  | "uri_changed"
  /** The manifest has the name, but no generated DAG uses it (a draft, retired or unused asset). */
  | "not_deployed";

export interface StaleEntry {
  name: string;
  uri: string;
  reason: StaleReason;
  /** For `renamed`: the manifest asset that replaces it. */
  renamed_to: string | null;
  /** For `uri_changed`: the URI the manifest declares. */
  manifest_uri: string | null;
  /** For `not_deployed`: the manifest status of the asset. */
  manifest_status: string | null;
  /** DAGs that still reference the asset in Airflow (schedule, inlet or outlet), sorted. */
  dags: string[];
  /** The subset of `dags` the manifest no longer has: removed DAGs Airflow still keeps. */
  dags_not_in_manifest: string[];
}

export interface MissingEntry {
  name: string;
  /** The URI the manifest declares. */
  uri: string;
  /** `unknown`: Airflow has no row with this name and URI; `inactive`: it has one, not active. */
  airflow: "unknown" | "inactive";
}

export interface ForeignEntry {
  name: string;
  uri: string;
  active: boolean;
}

export interface StaleReport {
  reportVersion: number;
  airflow: { url: string; version: string };
  stale: StaleEntry[];
  orphaned: StaleEntry[];
  missing: MissingEntry[];
  foreign: ForeignEntry[];
  summary: {
    /** Assets the generated DAGs declare (the expected set). */
    expected: number;
    /** Expected assets active in Airflow with the declared URI. */
    in_sync: number;
    stale: number;
    orphaned: number;
    missing: number;
    foreign: number;
  };
}

/** The part of the manifest the report reads. */
export type StaleManifestView = {
  assets: Array<Pick<Manifest["assets"][number], "name" | "uri" | "status"> & { renamed_from?: string[] }>;
  dags: Array<Pick<Manifest["dags"][number], "dag_id" | "inlets" | "outlets"> & {
    schedule?: { assets: ConditionNode | null } | null;
    tasks?: Array<{ inlets?: string[]; outlets?: string[] }>;
  }>;
};

function conditionLeaves(node: ConditionNode | null | undefined, out: Set<string>): void {
  if (!node) return;
  if ("asset" in node) out.add(node.asset);
  else for (const child of "all" in node ? node.all : node.any) conditionLeaves(child, out);
}

/** Names of the assets the manifest's DAGs declare to Airflow: schedules, inlets and outlets. */
export function expectedAssetNames(manifest: StaleManifestView): Set<string> {
  const names = new Set<string>();
  for (const dag of manifest.dags) {
    for (const n of [...dag.inlets, ...dag.outlets]) names.add(n);
    for (const task of dag.tasks ?? []) for (const n of [...(task.inlets ?? []), ...(task.outlets ?? [])]) names.add(n);
    conditionLeaves(dag.schedule?.assets, names);
  }
  return names;
}

/** True when `extra` carries the keys the compiler sets on every asset it declares. */
export function isCompiledAsset(asset: Pick<AirflowAsset, "extra">): boolean {
  return typeof asset.extra.contract_id === "string" || asset.extra.external === true;
}

function byNameThenUri<T extends { name: string; uri: string }>(a: T, b: T): number {
  return compareStrings(a.name, b.name) || compareStrings(a.uri, b.uri);
}

/** Compares the manifest with what Airflow holds; see the module comment for the categories. */
export function compareWithAirflow(manifest: StaleManifestView, airflow: AirflowAssetState, airflowUrl: string): StaleReport {
  const expected = expectedAssetNames(manifest);
  const declared = new Map(manifest.assets.map((a) => [a.name, a]));
  const renamedTo = new Map<string, string>();
  for (const a of manifest.assets) for (const old of a.renamed_from ?? []) if (!renamedTo.has(old)) renamedTo.set(old, a.name);
  const dagIds = new Set(manifest.dags.map((d) => d.dag_id));

  const stale: StaleEntry[] = [];
  const orphaned: StaleEntry[] = [];
  const foreign: ForeignEntry[] = [];
  const inSync = new Set<string>();

  const classify = (asset: AirflowAsset, active: boolean): void => {
    const entry = declared.get(asset.name);
    let reason: StaleReason;
    if (entry && expected.has(asset.name)) {
      if (normaliseUri(asset.uri) === normaliseUri(entry.uri)) {
        if (active) inSync.add(asset.name);
        return;
      }
      reason = "uri_changed";
    } else if (entry) {
      reason = "not_deployed";
    } else if (renamedTo.has(asset.name)) {
      reason = "renamed";
    } else if (!isCompiledAsset(asset)) {
      foreign.push({ name: asset.name, uri: asset.uri, active });
      return;
    } else {
      reason = "removed";
    }
    // Sort for determinism.
    const dags = [...new Set([...asset.scheduledDags, ...asset.producingDags, ...asset.consumingDags])].sort(compareStrings);
    (active ? stale : orphaned).push({
      name: asset.name,
      uri: asset.uri,
      reason,
      renamed_to: reason === "renamed" ? renamedTo.get(asset.name)! : null,
      manifest_uri: reason === "uri_changed" ? entry!.uri : null,
      manifest_status: reason === "not_deployed" ? entry!.status : null,
      dags,
      dags_not_in_manifest: dags.filter((d) => !dagIds.has(d)),
    });
  };
  for (const a of airflow.active) classify(a, true);
  for (const a of airflow.orphaned) classify(a, false);

  const known = new Set(airflow.orphaned.map((a) => `${a.name}\u0000${normaliseUri(a.uri)}`));
  const missing: MissingEntry[] = [];
  for (const name of expected) {
    if (inSync.has(name)) continue;
    const uri = declared.get(name)?.uri ?? name;
    missing.push({ name, uri, airflow: known.has(`${name}\u0000${normaliseUri(uri)}`) ? "inactive" : "unknown" });
  }

  // Sort for determinism.
  stale.sort(byNameThenUri);
  orphaned.sort(byNameThenUri);
  missing.sort(byNameThenUri);
  foreign.sort(byNameThenUri);
  return {
    reportVersion: STALE_REPORT_VERSION,
    airflow: { url: maskSecrets(airflowUrl), version: airflow.airflowVersion },
    stale,
    orphaned,
    missing,
    foreign,
    summary: {
      expected: expected.size,
      in_sync: inSync.size,
      stale: stale.length,
      orphaned: orphaned.length,
      missing: missing.length,
      foreign: foreign.length,
    },
  };
}

/** 0 when nothing is stale, 1 when Airflow still holds stale assets as active. */
export function staleExitCode(report: StaleReport): 0 | 1 {
  return report.stale.length > 0 ? 1 : 0;
}

function describeReason(e: StaleEntry): string {
  switch (e.reason) {
    case "removed":
      return "removed from the manifest";
    case "renamed":
      return `renamed to ${e.renamed_to}`;
    case "uri_changed":
      return `the manifest declares it with uri ${e.manifest_uri}`;
    case "not_deployed":
      return `${e.manifest_status} in the manifest: no generated DAG uses it`;
  }
}

function describeStale(e: StaleEntry): string {
  const parts = [describeReason(e)];
  const current = e.dags.filter((d) => !e.dags_not_in_manifest.includes(d));
  if (e.dags_not_in_manifest.length > 0) {
    const commands = e.dags_not_in_manifest.map((d) => `airflow dags delete ${d}`).join(", ");
    parts.push(`still referenced by DAG ${e.dags_not_in_manifest.join(", ")}, which the manifest no longer has (${commands} ends that)`);
  }
  if (current.length > 0) parts.push(`still referenced by DAG ${current.join(", ")} (not yet re-parsed by Airflow?)`);
  if (e.dags.length === 0) parts.push("no DAG references it: the scheduler orphans it within [scheduler] parsing_cleanup_interval");
  return parts.join("; ");
}

/**
 * The report as text: one line per listed asset (stale, orphaned, missing, foreign; each sorted by
 * name and uri), then a summary line. Every line passes `maskSecrets`.
 */
export function formatStaleText(report: StaleReport): string {
  const lines: string[] = [];
  for (const e of report.stale) lines.push(`stale     ${e.name}  ${e.uri}  ${describeStale(e)}`);
  for (const e of report.orphaned) lines.push(`orphaned  ${e.name}  ${e.uri}  ${describeReason(e)}; removal complete`);
  for (const e of report.missing) {
    lines.push(
      `missing   ${e.name}  ${e.uri}  ${e.airflow === "unknown" ? "not yet known to Airflow (its DAG is not parsed yet)" : "known to Airflow but not active yet (the scheduler activates it once no active asset holds its name or uri)"}`,
    );
  }
  for (const e of report.foreign) lines.push(`foreign   ${e.name}  ${e.uri}  not compiled by contract-assets (${e.active ? "active" : "orphaned"}); ignored`);
  const s = report.summary;
  lines.push(
    `${s.stale} stale, ${s.orphaned} orphaned, ${s.missing} missing, ${s.foreign} foreign; ` +
      `${s.in_sync} of ${s.expected} expected assets active in Airflow ${report.airflow.version} at ${report.airflow.url}`,
  );
  return lines.map(maskSecrets).join("\n") + "\n";
}

/** The report as canonical JSON (sorted keys, arrays sorted as built, final newline), masked. */
export function formatStaleJson(report: StaleReport): string {
  return maskSecrets(canonicalJson(report));
}
