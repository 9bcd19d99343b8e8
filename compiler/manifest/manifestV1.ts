import type { DagPlan, DatasetSchema, Manifest, ManifestAsset, QualityRule, RuntimeDataset } from "../model/manifest.js";
import { runtimeQuality } from "../plan/planDags.js";

/** A `dags[].runtime.datasets[]` entry as manifestVersion 1 wrote it: the asset's uri and schema, and the rules the audit runs, repeated. */
export interface RuntimeDatasetV1 extends RuntimeDataset {
  uri: string | null;
  schema: DatasetSchema;
  quality: QualityRule[];
}

/** A manifest of manifestVersion 1 (`compiler/schemas/manifest/v1.schema.json`): version 2's shape but for the runtime datasets. */
export type ManifestV1 = Omit<Manifest, "manifestVersion" | "dags"> & {
  manifestVersion: 1;
  dags: Array<Omit<DagPlan, "runtime"> & { runtime: Omit<DagPlan["runtime"], "datasets"> & { datasets: RuntimeDatasetV1[] } }>;
};

/**
 * A manifest of version 1 as version 2 holds the same project (ADR 0017f): each runtime dataset
 * keeps `name`, `asset`, `layer` and `physical` and drops what its asset holds (`uri`, `schema`)
 * or what is derived from it (`quality`). The diff reads an upgraded project's committed v1
 * manifest through this, so it compares like with like. The input is not changed.
 */
export function upgradeFromV1(v1: ManifestV1): Manifest {
  return {
    ...v1,
    manifestVersion: 2,
    dags: v1.dags.map((dag) => ({
      ...dag,
      runtime: {
        ...dag.runtime,
        datasets: dag.runtime.datasets.map(({ uri: _uri, schema: _schema, quality: _quality, ...kept }) => kept),
      },
    })) as DagPlan[],
  };
}

/**
 * A manifest of version 2 in the shape version 1 wrote it: each runtime dataset with its asset's
 * `uri` and `schema` and the rules the audit runs (`runtimeQuality`). The bench measures the size
 * of this against version 2's (issue 16: "measured against the same manifest as manifestVersion
 * 1 wrote it"), and `test/unit/manifestV1.test.ts` checks it gives the v1 golden manifests back.
 * The input is not changed.
 *
 * @throws Error when a runtime dataset names an asset the manifest does not hold (a broken manifest).
 */
export function expandToV1(manifest: Manifest): ManifestV1 {
  const assets = new Map<string, ManifestAsset>(manifest.assets.map((a) => [a.name, a]));
  return {
    ...manifest,
    manifestVersion: 1,
    dags: manifest.dags.map((dag) => ({
      ...dag,
      runtime: {
        ...dag.runtime,
        datasets: dag.runtime.datasets.map((d) => {
          const asset = assets.get(d.asset);
          if (!asset?.schema) throw new Error(`manifest: dag ${dag.dag_id} produces ${d.asset}, which assets[] does not hold with a schema`);
          return { ...d, uri: asset.uri, schema: asset.schema, quality: runtimeQuality(asset, dag.runtime.freshness) };
        }),
      },
    })),
  };
}
