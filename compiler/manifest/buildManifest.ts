import type { StageResult } from "../diagnostics/diagnostic.js";
import type { AssetGraph } from "../graph/buildGraph.js";
import type { LinkedProject } from "../link/linkProject.js";
import type { DagPlan, FreshnessMonitorPlan, Manifest, ManifestAsset } from "../model/manifest.js";
import { manifestQuality, partitioningPlan } from "../plan/planDags.js";
import { canonicalJsonAscii } from "../support/canonical-json.js";
import { compareStrings } from "../support/compare.js";
import { normaliseUri } from "../support/uri.js";
import { COMPILER_NAME, COMPILER_VERSION } from "../version.js";
import type { ManifestRecordTexts } from "./recordCache.js";

import { MANIFEST_VERSION } from "../model/manifest.js";

export { MANIFEST_VERSION } from "../model/manifest.js";

export type { Manifest, ManifestAsset } from "../model/manifest.js";

/**
 * The manifest stage: the canonical, sorted record of assets, edges and DAGs (DESIGN §4), which is
 * also the previous state the next diff reads. Output: the object and its canonical JSON text
 * (`canonicalJsonAscii`). `records`: the texts of unchanged records, known from the last compile's
 * manifest (`recordCache.ts`, ADR 0017p); the text is the same with or without it. Each Asset
 * record made of a producer's dataset is told to it (`madeOf`: the file, the dataset's index and
 * the three values made of the dataset, ADR 0017t).
 */
export function buildManifest(
  project: LinkedProject,
  graph: AssetGraph,
  dags: DagPlan[],
  freshnessMonitor: FreshnessMonitorPlan | null = null,
  records?: ManifestRecordTexts,
): StageResult<{ manifest: Manifest; text: string }> {
  const byId = new Map(project.contracts.map((c) => [c.contract.id, c]));
  const assets: ManifestAsset[] = [];
  for (const a of project.assets.values()) {
    const producer = a.producer ? byId.get(a.producer) : undefined;
    const datasetIndex = producer ? producer.contract.datasets.findIndex((d) => `${producer.contract.domain}.${d.name}` === a.name) : -1;
    const dataset = datasetIndex >= 0 ? producer!.contract.datasets[datasetIndex] : undefined;
    const airflowUri = normaliseUri(a.uri);
    const record: ManifestAsset = {
      name: a.name,
      uri: a.uri,
      ...(airflowUri !== a.uri ? { airflow_uri: airflowUri } : {}),
      ...(dataset && producer!.contract.partitioning ? { partitioning: partitioningPlan(producer!.contract.partitioning) } : {}),
      ...(dataset?.description !== undefined ? { description: dataset.description } : {}),
      group: a.group,
      extra: a.extra,
      external: a.external,
      status: a.status,
      producer: a.producer && (a.status === "active" || a.status === "deprecated") ? a.producer : null,
      contract: a.declaredIn,
      contract_sha256: producer?.sha256 ?? null,
      schema: dataset ? { version: dataset.schema.version, properties: dataset.schema.properties } : null,
      // The same assertion names the runtime reports, so the diff keys rules like lineage does.
      quality: manifestQuality(dataset?.quality ?? []),
      // Sort for determinism.
      renamed_from: [...(dataset?.renamed_from ?? [])].sort(compareStrings),
      ...(a.external && project.config.sampleData.has(a.name) ? { sample_data: project.config.sampleData.get(a.name)! } : {}),
      ...(a.watchers ? { watchers: a.watchers } : {}),
    };
    if (records && dataset) records.madeOf(record, { path: producer!.located.source.file.path, dataset: datasetIndex, schema: record.schema!, quality: record.quality, renamedFrom: record.renamed_from });
    assets.push(record);
  }
  // Sort for determinism.
  assets.sort((x, y) => compareStrings(x.name, y.name));
  const manifest: Manifest = {
    manifestVersion: MANIFEST_VERSION,
    compiler: { name: COMPILER_NAME, version: COMPILER_VERSION },
    lineage: { namespace: project.config.lineageNamespace },
    assets,
    edges: graph.edges,
    dags,
    ...(freshnessMonitor ? { freshness_monitor: freshnessMonitor } : {}),
  };
  return { value: { manifest, text: canonicalJsonAscii(manifest as unknown as Record<string, unknown>, records) }, diagnostics: [] };
}
