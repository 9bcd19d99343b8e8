import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { suggest } from "../../support/suggest.js";
import { describeRenameEvidence, matchProbableRenames, type RenameCandidate } from "../../support/renames.js";
import type { AssetDeclaration } from "../model.js";
import type { LinkRule, LinkState } from "./rule.js";

/**
 * Every upstream of a contract that runs (not retired) names an Asset of the project. Why: Airflow
 * accepts any name and creates an orphan Asset that no DAG ever updates, so a typo would leave the
 * consumer waiting forever. Names whose declaration failed validation or clashed are not reported
 * again. The hint says where the Asset went: renamed through `renamed_from`, probably renamed since the
 * previous manifest (same contract and matching schema, or same URI: `support/renames.ts`), a contract id given for a dataset, or the closest name.
 */
export const KnownUpstreamRule: LinkRule = {
  name: "KnownUpstreamRule",
  check(state, context) {
    const hint = unknownHint(state);
    for (const linked of state.contracts) {
      if (linked.status === "retired") continue;
      for (const u of linked.upstreams) {
        if (state.table.assets.has(u.asset) || state.context.unresolvedNames.has(u.asset) || state.table.refused.has(u.asset)) continue;
        context.report(createDiagnostic(Diagnostics.UnknownUpstream, { asset: u.asset }, u.location, { hint: hint(u.asset) }));
      }
    }
  },
};

function unknownHint(state: LinkState): (name: string) => string | undefined {
  const { assets, ids } = state.table;
  // Assets renamed through renamed_from, for consumers that did not follow.
  const renamedTo = new Map<string, string>();
  // Assets the previous state did not have: rename candidates for a consumer of a vanished name.
  const added: RenameCandidate[] = [];
  // The previous state is read at the first unknown name that renamed_from does not explain.
  let previousAssets: ReadonlyMap<string, Omit<RenameCandidate, "name">> | undefined | null = null;
  const previousAssetsOf = (): ReadonlyMap<string, Omit<RenameCandidate, "name">> | undefined => {
    if (previousAssets !== null) return previousAssets;
    previousAssets = state.context.previousAssets?.();
    for (const a of assets.values()) {
      if (previousAssets && !previousAssets.has(a.name)) added.push({ name: a.name, uri: a.uri, contractId: a.producer ?? null, properties: datasetOf(a)?.schema.properties ?? [] });
    }
    return previousAssets;
  };
  const datasetOf = (a: AssetDeclaration) => {
    const producer = a.producer ? ids.get(a.producer) : undefined;
    return producer?.document.datasets.find((d) => `${producer.document.domain}.${d.name}` === a.name);
  };
  // Made at the first unknown name: a project whose upstreams all resolve never needs it.
  let renamesRead = false;
  return (name) => {
    if (!renamesRead) {
      renamesRead = true;
      for (const a of assets.values()) for (const old of datasetOf(a)?.renamed_from ?? []) renamedTo.set(old, a.name);
    }
    const declared = renamedTo.get(name);
    if (declared) return `it was renamed to "${declared}" (renamed_from); update this upstream`;
    const previous = previousAssetsOf()?.get(name);
    if (previous) {
      const [rename] = matchProbableRenames([{ name, ...previous }], added);
      if (rename) return `it looks renamed to "${rename.to}" (${describeRenameEvidence(rename, previous.contractId)}); update this upstream`;
    }
    const produced = [...assets.values()].filter((a) => a.producer === name).map((a) => a.name);
    if (produced.length) return `"${name}" is a contract; read one of its datasets: ${produced.map((p) => `"${p}"`).join(", ")}`;
    const guess = suggest(name, assets.keys());
    return guess ? `did you mean "${guess}"?` : undefined;
  };
}
