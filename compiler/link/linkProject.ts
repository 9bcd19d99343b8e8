import type { Diagnostic, StageResult } from "../diagnostics/diagnostic.js";
import type { ValidatedProject } from "../validate/validateDocuments.js";
import { buildAssetTable } from "./assetTable.js";
import { mergeConfigs } from "./config.js";
import { resolveDbtProducers } from "./dbtProject.js";
import type { LinkContext, LinkedProject } from "./model.js";
import { resolveContracts } from "./resolveContracts.js";
import { LINK_RULES } from "./rules/index.js";

export { DEFAULT_LAYER } from "./assetTable.js";
export type { AssetDeclaration, LinkContext, LinkedContract, LinkedProject, ResolvedUpstream } from "./model.js";

/**
 * The link stage, in three steps: merge the orchestration config (`mergeConfigs`), build the asset
 * table (`buildAssetTable`: contract ids, Asset names and URIs, what clashed), resolve each
 * contract (`resolveContracts`: outlets, upstreams, timetable, run settings; `resolveDbtProducers`:
 * each dbt producer against its project, once for the rule and plan), then run every
 * cross-document rule of `link/rules/` over the result. The first steps decide; only the rules
 * report.
 *
 * Diagnostics: CA1007, CA4001–CA4022.
 */
export function linkProject(validated: ValidatedProject, context: LinkContext): StageResult<LinkedProject> {
  const { config, conflicts } = mergeConfigs(validated.configs);
  const table = buildAssetTable(validated, config);
  const contracts = resolveContracts(table, config);
  resolveDbtProducers(contracts, context.producerFiles);
  const diagnostics: Diagnostic[] = [];
  const state = { config, configConflicts: conflicts, table, contracts, context };
  for (const rule of LINK_RULES) rule.check(state, { report: (d) => diagnostics.push(d) });
  return { value: { config, producerFiles: context.producerFiles, refused: table.refused, contracts, assets: table.assets }, diagnostics };
}
