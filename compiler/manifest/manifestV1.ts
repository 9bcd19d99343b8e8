import type { Manifest, ManifestAsset, ManifestV1 } from "../model/manifest.js";
import { runtimeQuality } from "../plan/planDags.js";

/**
 * A manifest of version 2 in the shape version 1 wrote it: each runtime dataset with its asset's
 * `uri` and `schema` and the rules the audit runs (`runtimeQuality`). The bench measures the size
 * of this against version 2's (issue 16: "measured against the same manifest as manifestVersion
 * 1 wrote it"), and `test/unit/manifestV1.test.ts` checks it gives the v1 golden manifests back
 * (the reverse, for reading a previous version-1 manifest, is `upgradeFromV1` in `discover/readManifest.ts`).
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
