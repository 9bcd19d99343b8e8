import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { LinkRule } from "./rule.js";

/**
 * Every Asset of a `kind: ExternalAssets` document is read by some contract that is not retired
 * (as an upstream, or as an ingestion `source`); one that none reads is a warning (CA4801) at its
 * name. Why: such a declaration reaches no generated module, so Airflow never has the Asset and
 * nothing waits for it — it is usually what is left of a removed consumer, or the other half of a
 * consumer whose upstream names it differently. A draft reader counts (it is on its way); a
 * retired one does not (it reads nothing any more, DESIGN §3.1). Ingestion sources are declared by
 * the contract that reads them. When a contract document failed validation its upstreams are
 * unknown, so nothing is said; nor when a contract file failed to parse.
 */
export const ReadExternalAssetRule: LinkRule = {
  name: "ReadExternalAssetRule",
  check(state, context) {
    if ((state.context.unresolvedIds?.size ?? 0) > 0 || state.context.contractsUnparsed) return;
    const read = new Set<string>();
    for (const linked of state.contracts) {
      if (linked.status === "retired") continue;
      for (const u of linked.upstreams) read.add(u.asset);
      if (linked.sourceAsset !== undefined) read.add(linked.sourceAsset);
    }
    const externalFiles = new Set(state.table.externals.map((e) => e.source.file.path));
    for (const asset of state.table.assets.values()) {
      if (!asset.external || !externalFiles.has(asset.declaredIn) || read.has(asset.name)) continue;
      context.report(
        createDiagnostic(Diagnostics.UnreadExternalAsset, { asset: asset.name }, asset.location, {
          hint: "list it in the upstreams of the contract that reads it, or remove the declaration",
        }),
      );
    }
  },
};
