import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import type { SourceLocation } from "../../diagnostics/diagnostic.js";
import { datasetLineageIdentity, normaliseNamespace, type LineageIdentity } from "../lineageIdentity.js";
import type { LinkRule } from "./rule.js";

const VIA: Record<LineageIdentity["via"], string> = { landing: "landing.uri", uri: "uri", physical: "physical" };

/**
 * No two produced datasets have one OpenLineage identity (namespace and name, DESIGN §6.3), as far
 * as the compiler can know it (`datasetLineageIdentity`: an extract's landing, a provider-converted
 * Asset URI, a declared `physical`; namespaces compared normalised, `normaliseNamespace`) among
 * the contracts that have a DAG (active and deprecated: only their runs send events). Why:
 * lineage backends key a dataset by that identity, so two contracts' outputs would merge into one
 * node, each run's schema and row counts overwriting the other's, with nothing failing.
 */
export const UniqueLineageIdentityRule: LinkRule = {
  name: "UniqueLineageIdentityRule",
  check(state, context) {
    const first = new Map<string, { asset: string; contract: string; identity: LineageIdentity; location: () => SourceLocation }>();
    for (const located of state.table.contracts) {
      const c = located.document;
      // A draft or retired contract has no DAG, so no run of it names a dataset in lineage.
      if (c.status === "draft" || c.status === "retired") continue;
      c.datasets.forEach((dataset, i) => {
        const asset = state.table.assets.get(`${c.domain}.${dataset.name}`);
        // A refused dataset (its name or URI clashed) is reported already; it has no identity of its own.
        if (!asset || asset.external || asset.producer !== c.id) return;
        const identity = datasetLineageIdentity(c, dataset, asset.uri);
        if (!identity) return;
        const location = (): SourceLocation =>
          identity.via === "physical" ? located.source.locate(["datasets", i, "physical"]) : identity.via === "landing" ? located.source.locate(["landing", "uri"]) : asset.uriLocation;
        const key = JSON.stringify([normaliseNamespace(identity.namespace), identity.name]);
        const seen = first.get(key);
        if (!seen) {
          first.set(key, { asset: asset.name, contract: c.id, identity, location });
          return;
        }
        // An extract's landing is the contract's: each of its datasets is named by it alike.
        if (seen.contract === c.id && identity.via === "landing" && seen.identity.via === "landing") return;
        context.report(
          createDiagnostic(
            Diagnostics.DuplicateLineageIdentity,
            { asset: asset.name, namespace: identity.namespace, name: identity.name, via: VIA[identity.via], other: seen.asset },
            location(),
            { related: [{ message: `${JSON.stringify(seen.asset)} has the lineage identity ${JSON.stringify(seen.identity.namespace)} ${JSON.stringify(seen.identity.name)} from its ${VIA[seen.identity.via]}`, location: seen.location() }] },
          ),
        );
      });
    }
  },
};
