import type { Diagnostic } from "../../diagnostics/diagnostic.js";
import type { AnyDocument } from "../../model/contract.js";
import type { ParsedDocument } from "../../parse/parseContracts.js";

/** What a document rule sees: the parsed document (to locate nodes) and a sink for findings. */
export interface RuleContext {
  source: ParsedDocument;
  report: (diagnostic: Diagnostic) => void;
}

/**
 * A semantic rule over one document that has passed its JSON Schema (graphql-js style: one rule
 * per file, named `<Adjective><Subject>Rule`, opening with the rule in one sentence and why).
 */
export interface DocumentRule {
  name: string;
  check: (document: AnyDocument, context: RuleContext) => void;
}
