import YAML, { isAlias, isMap, isPair, isScalar, isSeq, LineCounter, visit, type Document, type Node, type Scalar } from "yaml";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, SourceLocation, StageResult } from "../diagnostics/diagnostic.js";
import type { SourceFile } from "../discover/discoverProject.js";

/** Aliases a document may expand before it is rejected as an expansion bomb (CA2005). */
export const MAX_ALIAS_COUNT = 100;

/** A JSON-pointer-like path into a document: map keys and sequence indexes. */
export type NodePath = ReadonlyArray<string | number>;

/** One parsed YAML document with what is needed to point back into its text. */
export interface ParsedDocument {
  file: SourceFile;
  /** The plain JSON value of the document (YAML 1.2 core schema). */
  value: unknown;
  /** Finds the location of a node (or of its key) by path; falls back to the nearest parent. */
  locate: (path: NodePath, part?: "value" | "key") => SourceLocation;
}

const YAML_OPTIONS = {
  version: "1.2",
  schema: "core",
  uniqueKeys: true,
  prettyErrors: false,
  strict: true,
  merge: false,
  intAsBigInt: false,
} as const;

function nodeLabel(node: unknown): string {
  if (isMap(node)) return "a mapping";
  if (isSeq(node)) return "a list";
  if (isScalar(node)) return node.value === null ? "null" : `a ${typeof node.value}`;
  return "nothing";
}

/** Builds the locator for one document. */
function makeLocator(doc: Document, file: string, lines: LineCounter): ParsedDocument["locate"] {
  const at = (offset: number, end?: number): SourceLocation => {
    const start = lines.linePos(offset);
    const location: SourceLocation = { file, line: start.line, column: start.col };
    if (end !== undefined && end > offset) {
      const stop = lines.linePos(end);
      location.endLine = stop.line;
      location.endColumn = stop.col;
    }
    return location;
  };
  const rangeOf = (node: Node | null | undefined): SourceLocation | undefined =>
    node?.range ? at(node.range[0], node.range[1]) : undefined;

  return (path, part = "value") => {
    let node: unknown = doc.contents;
    let best = rangeOf(doc.contents as Node) ?? at(0);
    for (let i = 0; i < path.length; i++) {
      if (isAlias(node)) node = node.resolve(doc);
      const segment = path[i];
      if (isMap(node)) {
        const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(segment));
        if (!pair) return best;
        const last = i === path.length - 1;
        if (last && part === "key") return rangeOf(pair.key as Node) ?? best;
        best = rangeOf(pair.value as Node) ?? rangeOf(pair.key as Node) ?? best;
        node = pair.value;
      } else if (isSeq(node) && typeof segment === "number") {
        const item = node.items[segment];
        if (!item) return best;
        best = rangeOf(item as Node) ?? best;
        node = item;
      } else {
        return best;
      }
    }
    return best;
  };
}

/**
 * Scalars JSON cannot carry exactly: `.nan` and `.inf`, and integer literals beyond ±2^53 (a
 * float literal such as `1.5e+288` is fine: it is read as the float it says).
 */
function findNonJson(doc: Document): Array<{ node: Scalar; unsafe: boolean }> {
  const out: Array<{ node: Scalar; unsafe: boolean }> = [];
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value !== "number") return;
      if (!Number.isFinite(node.value)) out.push({ node, unsafe: false });
      else if (/^[-+]?(?:\d+|0x[0-9a-fA-F]+|0o[0-7]+)$/.test(String(node.source ?? "")) && !Number.isSafeInteger(node.value)) {
        out.push({ node, unsafe: true });
      }
    },
  });
  return out;
}

/**
 * Parses one file as a single YAML 1.2 document (core schema), keeping positions.
 *
 * Diagnostics: CA2001 syntax (tabs, bad indentation, …), CA2002 duplicate keys, CA2003 several
 * documents, CA2004 empty or comment-only, CA2005 alias expansion bombs, CA2009 YAML warnings,
 * CA2010/CA2011 values JSON cannot carry exactly. Returns undefined when the file is unusable.
 */
export function parseDocument(file: SourceFile): StageResult<ParsedDocument | undefined> {
  const diagnostics: Diagnostic[] = [];
  const lines = new LineCounter();
  const docs = YAML.parseAllDocuments(file.text, { ...YAML_OPTIONS, lineCounter: lines });
  const first = at1(file.path);
  if (!Array.isArray(docs) || docs.length === 0) {
    // An empty stream: nothing but comments, directives or whitespace.
    diagnostics.push(createDiagnostic(Diagnostics.EmptyDocument, {}, first));
    return { value: undefined, diagnostics };
  }
  const positionOf = (offset: number): SourceLocation => {
    const p = lines.linePos(offset);
    return { file: file.path, line: p.line, column: p.col };
  };
  if (docs.length > 1) {
    const second = docs[1]!;
    diagnostics.push(
      createDiagnostic(Diagnostics.MultipleDocuments, { count: docs.length }, positionOf(second.range[0])),
    );
  }
  const doc = docs[0]!;
  let lastLine = 0;
  for (const error of doc.errors) {
    const location = positionOf(error.pos[0]);
    // Later errors on the same line are almost always cascades of the first.
    if (location.line === lastLine) continue;
    lastLine = location.line;
    const detail = error.message.split("\n")[0]!.replace(/ at line \d+, column \d+.*$/, "");
    if (error.code === "DUPLICATE_KEY") {
      const rest = file.text.slice(error.pos[0]).split(/\r?\n/)[0]!;
      const key = (/^\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^:#]*?)\s*:/.exec(rest)?.[1] ?? rest).trim().replace(/^["']|["']$/g, "") || "?";
      diagnostics.push(createDiagnostic(Diagnostics.DuplicateKey, { key }, location));
    } else {
      const hint =
        error.code === "TAB_AS_INDENT" ? "YAML indents with spaces only; replace the tab characters" : undefined;
      diagnostics.push(createDiagnostic(Diagnostics.YamlSyntax, { detail }, location, hint ? { hint } : {}));
    }
  }
  if (docs.length > 1 || doc.errors.length > 0) return { value: undefined, diagnostics };
  for (const warning of doc.warnings) {
    diagnostics.push(createDiagnostic(Diagnostics.YamlWarning, { detail: warning.message.split("\n")[0]! }, positionOf(warning.pos[0])));
  }
  if (doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null && doc.contents.range?.[0] === doc.contents.range?.[1])) {
    diagnostics.push(createDiagnostic(Diagnostics.EmptyDocument, {}, first));
    return { value: undefined, diagnostics };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    diagnostics.push(
      createDiagnostic(Diagnostics.AliasLimit, { detail: `more than ${MAX_ALIAS_COUNT} alias expansions` }, first, {
        hint: "write the repeated values out, or use fewer nested aliases",
      }),
    );
    void error;
    return { value: undefined, diagnostics };
  }
  const locate = makeLocator(doc, file.path, lines);
  if (!isMap(doc.contents)) {
    diagnostics.push(createDiagnostic(Diagnostics.NotAMapping, { found: nodeLabel(doc.contents) }, locate([])));
    return { value: undefined, diagnostics };
  }
  const bad = findNonJson(doc);
  for (const b of bad) {
    const at = positionOf(b.node.range?.[0] ?? 0);
    const end = positionOf(b.node.range?.[1] ?? 0);
    if (end.line === at.line && end.column > at.column) Object.assign(at, { endLine: end.line, endColumn: end.column });
    const shown = String(b.node.source ?? b.node.value);
    diagnostics.push(
      b.unsafe
        ? createDiagnostic(Diagnostics.UnsafeInteger, { value: shown }, at, { hint: "quote it to keep it a string" })
        : createDiagnostic(Diagnostics.NonJsonValue, { value: shown }, at),
    );
  }
  if (bad.length > 0) return { value: undefined, diagnostics };
  return { value: { file, value, locate }, diagnostics };
}

function at1(file: string): SourceLocation {
  return { file, line: 1, column: 1 };
}

/**
 * The parse stage over many files: each file parsed on its own, so one broken file never hides the
 * problems of another. Output keeps the input order (already sorted by discover).
 */
export function parseContracts(files: readonly SourceFile[]): StageResult<ParsedDocument[]> {
  const diagnostics: Diagnostic[] = [];
  const value: ParsedDocument[] = [];
  for (const file of files) {
    const result = parseDocument(file);
    diagnostics.push(...result.diagnostics);
    if (result.value) value.push(result.value);
  }
  return { value, diagnostics };
}
