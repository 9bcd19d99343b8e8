import YAML, { isMap, isScalar, type Pair } from "yaml";
import { CONTRACT_PROPERTIES, DATASET_PROPERTIES } from "../model/odcs.js";

/** Top-level keys of a contract in the order the docs and the bundled contracts use. */
const KEY_ORDER = [
  "apiVersion",
  "kind",
  "id",
  "version",
  "status",
  "domain",
  "owner",
  "description",
  "tags",
  "processing",
  "mode",
  "source",
  "incremental",
  "on_schema_drift",
  "landing",
  "producer",
  "upstreams",
  "trigger",
  "freshness",
  "on_failure",
  "datasets",
];

/** What each orchestration field says, written above it in an imported contract. */
const EXPLAINED: Record<string, string> = {
  processing: `GDPR Art. 30 purpose and legal basis (ODCS customProperties "${CONTRACT_PROPERTIES.processingPurpose}", "${CONTRACT_PROPERTIES.legalBasis}").`,
  mode: `how the ingestion runs: load (the runtime loads the source) or extract (ODCS customProperties "${CONTRACT_PROPERTIES.mode}").`,
  source: `the external Asset the rows come from; never schedules the DAG (ODCS customProperties "${CONTRACT_PROPERTIES.source}").`,
  producer: `what builds the datasets in the produce task (ODCS customProperties "${CONTRACT_PROPERTIES.producer}").`,
  upstreams: `the Assets this contract reads, one inlet each; trigger: false makes one an inlet only (ODCS customProperties "${CONTRACT_PROPERTIES.upstreams}").`,
  trigger: `the DAG's schedule: an asset condition, a cron, both, or manual (ODCS customProperties "${CONTRACT_PROPERTIES.trigger}").`,
  freshness: `max_age from the ODCS slaProperties "freshness", degrade_after from customProperties "${CONTRACT_PROPERTIES.freshnessDegradeAfter}".`,
  on_failure: `what a failed error-severity quality rule does: block_publish, quarantine or warn (ODCS customProperties "${CONTRACT_PROPERTIES.onFailure}").`,
  datasets: `one Airflow Asset per ODCS schema object; schema.version, layer, uri, renamed_from, physical and extra come from its customProperties ("${DATASET_PROPERTIES.schemaVersion}", ...).`,
};

/** What to write for an orchestration field the ODCS document does not carry. */
const TO_FILL: Record<string, string> = {
  id: "id: not a contract id of ours. The ODCS id (a UUID in the official examples) is kept; write <domain>.<name> in lower snake case: it becomes the dag_id and names this file (<domain>/<name>.yaml).",
  domain: "domain: MISSING, required. The first part of the id and of every Asset name; set the id to <domain>.<name> too.",
  team: "owner: MISSING, required. The team that owns the DAG and its Assets (ODCS team.name).",
  schema: "datasets: MISSING, required. One per ODCS schema object, each with schema.version and properties.",
  [CONTRACT_PROPERTIES.producer]:
    "producer: MISSING, required. What builds the datasets, one of {type: sql, path: sql/<domain>/<name>.sql}, {type: python, entrypoint: package.module:function}, {type: dbt, project: ..., select: ...}, {type: command, family: ...}.",
  [CONTRACT_PROPERTIES.mode]: "mode: MISSING, required for an ingestion: load or extract.",
  [CONTRACT_PROPERTIES.upstreams]: "upstreams: none in the ODCS document. List the Assets this contract reads, e.g. - {asset: <domain>.<name>}.",
  [CONTRACT_PROPERTIES.trigger]:
    "trigger: none in the ODCS document, so the DAG runs when every triggering upstream has new data; without upstreams write trigger: manual or trigger: {cron: \"0 2 * * *\", timezone: UTC}.",
};

function comment(lines: string[]): string {
  return lines.map((l) => ` ${l}`).join("\n");
}

/**
 * Our contract YAML for a contract read from an ODCS document (`import odcs`): keys in the usual
 * order, a header naming the ODCS file, a comment above each orchestration field saying where it
 * came from, and, above `datasets`, a comment for each orchestration field the ODCS document did not
 * carry and that must still be filled in. Deterministic: the same input gives the same text.
 *
 * Input: the translated contract value (from `readOdcsContract`), the ODCS file's path and
 * `apiVersion`, and the custom property names that were missing.
 */
export function renderContractYaml(contract: Record<string, unknown>, from: { path: string; apiVersion: string }, missing: readonly string[]): string {
  const ordered: Record<string, unknown> = {};
  for (const key of KEY_ORDER) if (contract[key] !== undefined) ordered[key] = contract[key];
  for (const key of Object.keys(contract)) if (!(key in ordered)) ordered[key] = contract[key];
  const doc = new YAML.Document(ordered, { version: "1.2" });
  doc.commentBefore = comment([
    `Imported from ${from.path} (ODCS ${from.apiVersion}) by "contract-assets import odcs".`,
    "Orchestration fields come from the ODCS customProperties (docs/odcs.md); review them, then",
    "keep one of the two files under contracts/ (both would declare the same contract id).",
  ]);
  if (isMap(doc.contents)) {
    for (const pair of doc.contents.items as Array<Pair<unknown, unknown>>) {
      if (!isScalar(pair.key)) continue;
      const key = String(pair.key.value);
      const lines: string[] = [];
      if (key === "datasets") for (const name of missing) if (TO_FILL[name]) lines.push(`TO FILL IN: ${TO_FILL[name]}`);
      if (EXPLAINED[key]) lines.push(`${key}: ${EXPLAINED[key]}`);
      if (lines.length > 0) pair.key.commentBefore = comment(lines);
    }
  }
  return doc.toString({ lineWidth: 0 });
}
