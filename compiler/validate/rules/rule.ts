import type { Diagnostic } from "../../diagnostics/diagnostic.js";
import type { AnyDocument } from "../../model/contract.js";
import type { ParsedDocument } from "../../parse/parseDocument.js";

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

/**
 * Calls `visit` with every string of a parsed document (a JSON-like value: objects, arrays,
 * scalars), depth first in key order, and its path from `value`. The path is one array the walk
 * pushes to and pops from: a visitor that keeps it (for a diagnostic's location) copies it. Walks
 * at most as deep as the document nests (NestingDepthRule bounds that before any rule runs).
 */
export function forEachString(value: unknown, visit: (text: string, path: ReadonlyArray<string | number>) => void): void {
  const path: Array<string | number> = [];
  const walk = (node: unknown): void => {
    if (typeof node === "string") visit(node, path);
    else if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        path.push(i);
        walk(node[i]);
        path.pop();
      }
    } else if (node !== null && typeof node === "object") {
      for (const key of Object.keys(node)) {
        path.push(key);
        walk((node as Record<string, unknown>)[key]);
        path.pop();
      }
    }
  };
  walk(value);
}
