import type { Diagnostic } from "../../diagnostics/diagnostic.js";
import type { ConfigConflict, OrchestrationConfig } from "../config.js";
import type { AssetTable, LinkContext, LinkedContract } from "../model.js";

/** What a link rule sees: the whole project after the asset table and resolution, read-only. */
export interface LinkState {
  config: OrchestrationConfig;
  configConflicts: readonly ConfigConflict[];
  table: AssetTable;
  contracts: readonly LinkedContract[];
  context: LinkContext;
}

/** Where a link rule reports its findings. */
export interface LinkRuleContext {
  report: (diagnostic: Diagnostic) => void;
}

/**
 * A cross-document rule (graphql-js style: one rule per file, named `<Adjective><Subject>Rule`,
 * opening with the rule in one sentence and why). Rules never change the state: whatever decides
 * what the later stages see (which of two clashing Assets is kept) is the asset table's, and the
 * rule turns the recorded fact into a located diagnostic.
 */
export interface LinkRule {
  name: string;
  check: (state: LinkState, context: LinkRuleContext) => void;
}
