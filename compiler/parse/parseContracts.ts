import { Composer, isAlias, isCollection, isMap, isPair, isScalar, isSeq, LineCounter, Parser, type CST, type Document, type Node, type Scalar, type YAMLMap, type YAMLSeq } from "yaml";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, SourceLocation, StageResult } from "../diagnostics/diagnostic.js";
import type { SourceFile } from "../discover/discoverProject.js";
import { contentHashes, type ContentHashes } from "../support/hash.js";
import { defaultWorkerCount, parseAll } from "./parallelParse.js";
import { lookupParseCache, storeParsedFile, type ParseCache } from "./parseCache.js";

/** Aliases a document may expand before it is rejected as an expansion bomb (CA2005). */
export const MAX_ALIAS_COUNT = 100;

/** A JSON-pointer-like path into a document: map keys and sequence indexes. */
export type NodePath = ReadonlyArray<string | number>;

/** One parsed YAML document with what is needed to point back into its text. */
export interface ParsedDocument {
  file: SourceFile;
  /** The file's content hashes (provenance), computed where it was parsed. */
  hashes: ContentHashes;
  /** The plain JSON value of the document (YAML 1.2 core schema). */
  value: unknown;
  /** Finds the location of a node (or of its key) by path; falls back to the nearest parent. */
  locate: (path: NodePath, part?: "value" | "key") => SourceLocation;
  /**
   * Names a path for messages in the author's terms; absent for documents read as they are. A
   * document translated from another format (ODCS) names the path of the file the author wrote.
   */
  describe?: (path: NodePath) => string;
  /**
   * The source text of the number at a path when it is not what the number prints back as
   * (`JSON.stringify`): `1.10` (the number 1.1), `1.0` (1), `0x1F` (31); undefined for any other
   * node, and for a number written as it prints. Taken from the YAML library's own source of the
   * scalar token, never from re-reading the line.
   */
  numberAsWritten?: (path: NodePath) => string | undefined;
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

/**
 * The deepest a document's collections may nest (CA2015): the root mapping is level 1, each
 * mapping or list inside a collection one more (a `key: value` item of a flow list is a mapping of
 * its own, as YAML reads it), an alias as deep as what it stands for. A contract nests about 8
 * levels; an `extra` or a trigger tree, 32 at most below its field (CA3047). Checked on the
 * composed document before `toJS` (ADR 0019), so no stage, thread or structured clone walks a
 * deeper value, and a deeper document is the same error in every thread, whatever its stack.
 */
export const MAX_DOCUMENT_DEPTH = 64;

/**
 * Before the YAML library composes a document (which recurses, a few calls a level), its token
 * tree (built without recursion) may nest at most this deep: 4 × {@link MAX_DOCUMENT_DEPTH}, within
 * what a thread's stack composes (the main thread's about 1 MB: some 800 levels). A token tree
 * deeper is CA2015 at once, its syntax errors unread; one within is composed, its syntax errors
 * reported, and then held to {@link MAX_DOCUMENT_DEPTH} exactly.
 */
const MAX_TOKEN_DEPTH = 4 * MAX_DOCUMENT_DEPTH;

/**
 * Of the token streams' documents: how deep their collection tokens nest (at most `limit` + 1),
 * the offset of the first collection token (in text order) deeper than `limit`, and whether any
 * collection holds an alias. Iterative: one flat stack of token, depth pairs. A `key: value` item
 * of a flow list is no token of its own, so the document can nest up to twice as deep as this.
 */
function depthOfTokens(tokens: readonly CST.Token[], limit: number): { depth: number; tooDeep?: number; aliases: boolean } {
  const stack: Array<CST.Token | number> = [];
  for (const token of tokens) if (token.type === "document" && token.value) stack.push(token.value, 1);
  let deepest = 0;
  let tooDeep: number | undefined;
  let aliases = false;
  while (stack.length > 0) {
    const depth = stack.pop() as number;
    const token = stack.pop() as CST.Token;
    const type = token.type;
    if (type === "alias") aliases = true;
    if (type !== "block-map" && type !== "block-seq" && type !== "flow-collection") continue;
    if (depth > deepest) deepest = depth;
    if (depth > limit) {
      if (tooDeep === undefined || token.offset < tooDeep) tooDeep = token.offset;
      continue;
    }
    for (const item of token.items) {
      if (item.key) stack.push(item.key, depth + 1);
      if (item.value) stack.push(item.value, depth + 1);
    }
  }
  return tooDeep === undefined ? { depth: deepest, aliases } : { depth: deepest, tooDeep, aliases };
}

/**
 * The first node (in text order) of `doc`'s contents deeper than `limit` levels (an alias as deep
 * as its anchor's collection), with `cycle` when it is an alias inside its own anchor (a value
 * that holds itself, without end; the library's `toJS` builds it), or undefined. Visited in text
 * order, so an alias's anchor is the last one of its name before it (YAML 1.2 §3.2.2.2, as the
 * library resolves it) and its depth is known unless the alias is inside it. The recursion stops
 * below `limit` + 1 levels.
 */
function firstTooDeep(doc: Document, limit: number): { node: Node; cycle: boolean } | undefined {
  const anchors = new Map<string, unknown>();
  const depths = new Map<unknown, number>();
  let found: { node: Node; cycle: boolean } | undefined;
  const depthOf = (node: unknown, level: number): number => {
    if (found) return 0;
    if (isAlias(node)) {
      const target = anchors.get(node.source);
      if (!isCollection(target)) return 0;
      const depth = depths.get(target);
      if (depth === undefined) found = { node, cycle: true };
      else if (level - 1 + depth > limit) found = { node, cycle: false };
      return depth ?? 0;
    }
    const anchor = (node as { anchor?: string } | null)?.anchor;
    if (anchor) anchors.set(anchor, node);
    if (!isCollection(node)) return 0;
    if (level > limit) {
      found = { node: node as Node, cycle: false };
      return 0;
    }
    let deepest = 0;
    for (const item of node.items) {
      if (isPair(item)) deepest = Math.max(deepest, depthOf(item.key, level + 1), depthOf(item.value, level + 1));
      else deepest = Math.max(deepest, depthOf(item, level + 1));
    }
    depths.set(node, deepest + 1);
    return deepest + 1;
  };
  depthOf(doc.contents, 1);
  return found;
}

function nodeLabel(node: unknown): string {
  if (isMap(node)) return "a mapping";
  if (isSeq(node)) return "a list";
  if (isScalar(node)) return node.value === null ? "null" : `a ${typeof node.value}`;
  return "nothing";
}

/**
 * What `locate` keeps of one document, in place of the YAML node tree (many times the size of the
 * text; keeping every document's tree alive until the last stage made the parse stage of a large
 * project spend much of its time in the garbage collector). Flat arrays and one string, so a
 * structured clone (a worker's message, the cache) copies a few buffers instead of a tree of small
 * objects, and `locate` walks them as they are.
 */
export interface LocatorIndex {
  /**
   * Per collection, 4 numbers: 1 for a mapping or 0 for a sequence; its item count; the offset of
   * its items' ranges in `ranges`; the index of its first item in `items`. Collection 0 is the root.
   */
  nodes: Int32Array;
  /**
   * Per item, 3 numbers: the collection its value is (an alias stands for its target), or -1; for a
   * mapping's item the start of its key in `keyText` and the key's length (-1 when the key is not a
   * scalar), else -1 and -1.
   */
  items: Int32Array;
  /** Every mapping key, `String(key.value)`, one after the other. */
  keyText: string;
  /**
   * Source ranges: per mapping item key start, key end, value start, value end; per sequence item
   * start and end; -1 when absent.
   */
  ranges: Int32Array;
}

/** A node the parse stage refuses: a value JSON cannot carry, a key that is not a string, a tag. */
type NonJsonScalar = { node: Node; kind: "nonJson" | "unsafe" | "key" | "tag"; detail?: string };

/** The YAML 1.2 core schema's tags; anything else (`!!binary`, `!!python/object`, `!custom`) is refused. */
const CORE_TAGS = new Set(["str", "int", "float", "bool", "null", "map", "seq"].map((t) => `tag:yaml.org,2002:${t}`));

function checkTag(node: Node, out: NonJsonScalar[]): void {
  if (node.tag !== undefined && !CORE_TAGS.has(node.tag)) out.push({ node, kind: "tag", detail: node.tag.replace(/^tag:yaml\.org,2002:/, "!!") });
}

/** Map keys are plain strings: `1:` and `"1":` would otherwise collapse, `~:` becomes "null", `__proto__` vanishes. */
function checkKey(key: unknown, out: NonJsonScalar[]): void {
  if (isScalar(key) && typeof key.value === "string" && key.value !== "__proto__") return;
  if (key && typeof key === "object" && "range" in key) {
    const shown = isScalar(key) ? String(key.source ?? key.value) : "a collection";
    out.push({ node: key as Node, kind: "key", detail: shown });
  }
}

/**
 * Scalars JSON cannot carry exactly: `.nan` and `.inf`, and integer literals beyond ±2^53 (a
 * float literal such as `1.5e+288` is fine: it is read as the float it says).
 */
function checkNonJson(node: Scalar, out: NonJsonScalar[], reprinted: Scalar[]): void {
  checkTag(node, out);
  if (typeof node.value !== "number") return;
  if (Number.isFinite(node.value) && typeof node.source === "string" && node.source !== JSON.stringify(node.value)) reprinted.push(node);
  if (!Number.isFinite(node.value)) out.push({ node, kind: "nonJson" });
  else if (/^[-+]?(?:\d+|0x[0-9a-fA-F]+|0o[0-7]+)$/.test(String(node.source ?? "")) && !Number.isSafeInteger(node.value)) {
    out.push({ node, kind: "unsafe" });
  }
}

/**
 * One walk over the document, in document order: builds the {@link LocatorIndex} of the root
 * collection, and collects the scalars JSON cannot carry (every scalar once; aliases are not
 * followed for that).
 */
function indexDocument(doc: Document): { index: LocatorIndex; nonJson: NonJsonScalar[]; reprinted: Scalar[] } {
  const nonJson: NonJsonScalar[] = [];
  const reprinted: Scalar[] = [];
  const table: number[] = [];
  const nodes: number[] = [];
  const items: number[] = [];
  const keys: string[] = [];
  let keyLength = 0;
  const anchored = new Map<unknown, number>();
  const setRange = (at: number, node: unknown): void => {
    const range = (node as Node | null | undefined)?.range;
    table[at] = range ? range[0] : -1;
    table[at + 1] = range ? range[1] : -1;
  };
  // Nodes outside the index (keys that are collections, pairs in a sequence): checked only.
  const scan = (node: unknown): void => {
    if (isScalar(node)) checkNonJson(node, nonJson, reprinted);
    else if (isMap(node) || isSeq(node)) {
      checkTag(node, nonJson);
      for (const item of node.items) {
        if (isMap(node) && isPair(item)) checkKey(item.key, nonJson);
        scan(item);
      }
    }
    else if (isPair(node)) {
      scan(node.key);
      scan(node.value);
    }
  };
  const valueOf = (node: unknown, at: number, check: boolean): number => {
    setRange(at, node);
    if (isAlias(node)) {
      const target = node.resolve(doc);
      return isMap(target) || isSeq(target) ? (anchored.get(target) ?? build(target, false)) : -1;
    }
    if (isMap(node) || isSeq(node)) return build(node, check);
    if (check) scan(node);
    return -1;
  };
  const build = (node: YAMLMap | YAMLSeq, check: boolean): number => {
    const map = isMap(node);
    const stride = map ? 4 : 2;
    const count = node.items.length;
    const self = nodes.length / 4;
    const base = table.length;
    const first = items.length / 3;
    nodes.push(map ? 1 : 0, count, base, first);
    table.length += stride * count;
    items.length += 3 * count;
    if (check) checkTag(node, nonJson);
    if (node.anchor) anchored.set(node, self);
    for (let i = 0; i < count; i++) {
      const item = node.items[i];
      const at = base + stride * i;
      const slot = 3 * (first + i);
      items[slot + 1] = -1;
      items[slot + 2] = -1;
      if (map) {
        const key = isPair(item) ? item.key : undefined;
        if (isScalar(key)) {
          const text = String(key.value);
          items[slot + 1] = keyLength;
          items[slot + 2] = text.length;
          keys.push(text);
          keyLength += text.length;
        }
        if (check) {
          checkKey(key, nonJson);
          scan(key);
        }
        setRange(at, key);
        items[slot] = valueOf(isPair(item) ? item.value : item, at + 2, check);
      } else {
        items[slot] = valueOf(item, at, check);
      }
    }
    return self;
  };
  const contents = doc.contents;
  if (isMap(contents) || isSeq(contents)) build(contents, true);
  else scan(contents);
  return { index: { nodes: Int32Array.from(nodes), items: Int32Array.from(items), keyText: keys.join(""), ranges: Int32Array.from(table) }, nonJson, reprinted };
}

/** Builds the locator for one document from its index (see {@link LocatorIndex}). */
function makeLocator(
  index: LocatorIndex | undefined,
  rootRange: readonly number[] | undefined,
  file: string,
  lines: LineCounter,
): ParsedDocument["locate"] {
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
  const { nodes, items, keyText, ranges } = index ?? { nodes: new Int32Array(0), items: new Int32Array(0), keyText: "", ranges: new Int32Array(0) };
  /** The item of mapping `node` (its first at `first`, `count` of them) whose key is `key`, or -1. */
  const itemWithKey = (first: number, count: number, key: string): number => {
    for (let k = 0; k < count; k++) {
      const slot = 3 * (first + k);
      if (items[slot + 2] === key.length && keyText.startsWith(key, items[slot + 1]!)) return k;
    }
    return -1;
  };

  // The walk keeps the deepest range found as two offsets (`ranges` slot of its start, or -1 for
  // the root's) and makes the one SourceLocation at the end: the link stage asks about 10 per
  // contract, and a location per step was most of their cost and garbage.
  return (path, part = "value") => {
    let node = nodes.length > 0 ? 0 : -1;
    let best = -1;
    const found = (): SourceLocation => (best >= 0 ? at(ranges[best]!, ranges[best + 1]) : rootRange ? at(rootRange[0]!, rootRange[1]) : at(0));
    for (let i = 0; i < path.length; i++) {
      const segment = path[i]!;
      if (node < 0) return found();
      const count = nodes[4 * node + 1]!;
      const base = nodes[4 * node + 2]!;
      const first = nodes[4 * node + 3]!;
      if (nodes[4 * node] === 1) {
        const k = itemWithKey(first, count, String(segment));
        if (k < 0) return found();
        const item = base + 4 * k;
        if (i === path.length - 1 && part === "key") {
          if (ranges[item]! >= 0) best = item;
          return found();
        }
        if (ranges[item + 2]! >= 0) best = item + 2;
        else if (ranges[item]! >= 0) best = item;
        node = items[3 * (first + k)]!;
      } else if (typeof segment === "number") {
        if (!Number.isInteger(segment) || segment < 0 || segment >= count) return found();
        if (ranges[base + 2 * segment]! >= 0) best = base + 2 * segment;
        node = items[3 * (first + segment)]!;
      } else {
        return found();
      }
    }
    return found();
  };
}

/**
 * What parsing one file yields, as plain data: it survives a structured clone (a worker thread's
 * message, `v8.serialize`), so the parse can run in another thread or come from a cache, and
 * {@link toParsedDocument} rebuilds the {@link ParsedDocument} from it. Positions are UTF-16 offsets
 * into the file's text, as the YAML library reports them.
 */
export interface ParsedData {
  /** The parse stage's findings for the file, in the order found. */
  diagnostics: Diagnostic[];
  /** Absent when the file is unusable (an error above says why). */
  document?: {
    /** The plain JSON value of the document. */
    value: unknown;
    /** The locator's index of the root mapping. */
    index: LocatorIndex;
    /** Start and end offset of the root mapping. */
    rootRange: [number, number] | undefined;
    /** Offset of each line's first character (the YAML library's `LineCounter.lineStarts`). */
    lineStarts: number[];
    /** `[line:column of the node, source text]` of each number not written as it prints. */
    written: Array<[string, string]>;
    /** The file's content hashes. */
    hashes: ContentHashes;
  };
}

/**
 * Parses one file as a single YAML 1.2 document (core schema), keeping positions.
 *
 * Diagnostics: CA2001 syntax (tabs, bad indentation, …), CA2002 duplicate keys, CA2003 several
 * documents, CA2004 empty or comment-only, CA2005 alias expansion bombs, CA2009 YAML warnings,
 * CA2010/CA2011 values JSON cannot carry exactly. Returns undefined when the file is unusable.
 */
export function parseDocument(file: SourceFile): StageResult<ParsedDocument | undefined> {
  return toParsedDocument(file, parseData(file));
}

/** The document of {@link ParsedData}, rebuilt for `file` (the file that was parsed); its diagnostics as they are. */
export function toParsedDocument(file: SourceFile, data: ParsedData): StageResult<ParsedDocument | undefined> {
  const d = data.document;
  if (!d) return { value: undefined, diagnostics: data.diagnostics };
  const lines = new LineCounter();
  lines.lineStarts = d.lineStarts;
  const locate = makeLocator(d.index, d.rootRange, file.path, lines);
  const written = new Map(d.written);
  const numberAsWritten = (path: NodePath): string | undefined => {
    if (written.size === 0) return undefined;
    const at = locate(path);
    return written.get(`${at.line}:${at.column}`);
  };
  return { value: { file, hashes: d.hashes, value: d.value, locate, numberAsWritten }, diagnostics: data.diagnostics };
}

/** {@link parseDocument}'s work, kept as plain data (see {@link ParsedData}). */
export function parseData(file: Pick<SourceFile, "path" | "text">): ParsedData {
  const diagnostics: Diagnostic[] = [];
  const lines = new LineCounter();
  // `YAML.parseAllDocuments` in two steps, so the depth is checked between them (CA2015).
  const tokens = Array.from(new Parser(lines.addNewLine).parse(file.text));
  const first = at1(file.path);
  const depth = depthOfTokens(tokens, MAX_TOKEN_DEPTH);
  if (depth.tooDeep !== undefined) {
    const p = lines.linePos(depth.tooDeep);
    diagnostics.push(createDiagnostic(Diagnostics.DocumentTooDeep, { limit: MAX_DOCUMENT_DEPTH }, { file: file.path, line: p.line, column: p.col }));
    return { diagnostics };
  }
  const docs = Array.from(new Composer(YAML_OPTIONS).compose(tokens));
  if (!Array.isArray(docs) || docs.length === 0) {
    // An empty stream: nothing but comments, directives or whitespace.
    diagnostics.push(createDiagnostic(Diagnostics.EmptyDocument, {}, first));
    return { diagnostics };
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
  if (docs.length > 1 || doc.errors.length > 0) return { diagnostics };
  for (const warning of doc.warnings) {
    // An unknown tag is refused as CA2014 below, at its node.
    if (warning.code === "TAG_RESOLVE_FAILED") continue;
    diagnostics.push(createDiagnostic(Diagnostics.YamlWarning, { detail: warning.message.split("\n")[0]! }, positionOf(warning.pos[0])));
  }
  if (doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null && doc.contents.range?.[0] === doc.contents.range?.[1])) {
    diagnostics.push(createDiagnostic(Diagnostics.EmptyDocument, {}, first));
    return { diagnostics };
  }
  // Without an alias, a token tree half as deep as the limit cannot compose deeper than it.
  const deep = depth.aliases || 2 * depth.depth > MAX_DOCUMENT_DEPTH ? firstTooDeep(doc, MAX_DOCUMENT_DEPTH) : undefined;
  if (deep) {
    const hint = deep.cycle ? "the alias is inside the collection its anchor names, so it holds itself without end" : isAlias(deep.node) ? "an alias nests what its anchor holds where it stands" : undefined;
    diagnostics.push(createDiagnostic(Diagnostics.DocumentTooDeep, { limit: MAX_DOCUMENT_DEPTH }, positionOf(deep.node.range?.[0] ?? 0), hint ? { hint } : {}));
    return { diagnostics };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    const message = (error as Error).message;
    const unknownAlias = /^Unresolved alias[^:]*: (.*)$/.exec(message);
    if (unknownAlias) {
      // Point at the alias itself: the first `*name` with no anchor before it.
      const name = unknownAlias[1]!;
      const offset = file.text.search(new RegExp(`\\*${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\w-])`));
      diagnostics.push(createDiagnostic(Diagnostics.YamlSyntax, { detail: `unknown alias "*${name}" (no anchor "&${name}" before it)` }, offset >= 0 ? positionOf(offset) : first));
    } else {
      diagnostics.push(
        createDiagnostic(Diagnostics.AliasLimit, { detail: `more than ${MAX_ALIAS_COUNT} alias expansions` }, first, {
          hint: "write the repeated values out, or use fewer nested aliases",
        }),
      );
    }
    return { diagnostics };
  }
  if (!isMap(doc.contents)) {
    const locate = makeLocator(undefined, (doc.contents as Node | null)?.range ?? undefined, file.path, lines);
    diagnostics.push(createDiagnostic(Diagnostics.NotAMapping, { found: nodeLabel(doc.contents) }, locate([])));
    return { diagnostics };
  }
  // The index, never the node tree, is kept (so the tree is garbage once this returns).
  const { index, nonJson: bad, reprinted } = indexDocument(doc);
  // Numbers whose source text is not their printed value, by where their node starts.
  const written: Array<[string, string]> = [];
  for (const scalar of reprinted) {
    const start = positionOf(scalar.range?.[0] ?? 0);
    written.push([`${start.line}:${start.column}`, String(scalar.source)]);
  }
  for (const b of bad) {
    const at = positionOf(b.node.range?.[0] ?? 0);
    const end = positionOf(b.node.range?.[1] ?? 0);
    if (end.line === at.line && end.column > at.column) Object.assign(at, { endLine: end.line, endColumn: end.column });
    const scalar = b.node as Scalar;
    const shown = String(scalar.source ?? scalar.value);
    diagnostics.push(
      b.kind === "unsafe"
        ? createDiagnostic(Diagnostics.UnsafeInteger, { value: shown }, at, { hint: "quote it to keep it a string" })
        : b.kind === "key"
          ? createDiagnostic(Diagnostics.NonStringKey, { key: b.detail ?? shown }, at, { hint: "write keys as plain words, or quote them" })
          : b.kind === "tag"
            ? createDiagnostic(Diagnostics.UnsupportedTag, { tag: b.detail ?? "" }, at)
            : createDiagnostic(Diagnostics.NonJsonValue, { value: shown }, at),
    );
  }
  if (bad.length > 0) return { diagnostics };
  const rootRange = doc.contents.range ? ([doc.contents.range[0], doc.contents.range[1]] as [number, number]) : undefined;
  return { diagnostics, document: { value, index, rootRange, lineStarts: lines.lineStarts, written, hashes: contentHashes(file.text) } };
}

function at1(file: string): SourceLocation {
  return { file, line: 1, column: 1 };
}

/**
 * The parse stage over many files: each file parsed on its own, so one broken file never hides the
 * problems of another. Output keeps the input order (already sorted by discover), whatever the
 * number of worker threads (`workers`; default {@link defaultWorkerCount}: none for a small
 * project). `onDocument` sees each usable document as soon as it is parsed, in no particular order
 * (the pipeline validates documents while the workers parse the rest). With `cache` (ADR 0017c),
 * a file whose entry is usable is not parsed: its {@link ParsedData} comes from the entry, and the
 * files parsed are recorded in the cache to be written. `onDocument` gets what the entry stored
 * beside the parse (the validate stage's verdict, ADR 0017j; undefined for a file just parsed)
 * and returns what to store beside a file just parsed (undefined: nothing; `NO_CACHE_ENTRY`: no
 * entry at all).
 */
export function parseContracts(
  files: readonly SourceFile[],
  options: { workers?: number; onDocument?: (document: ParsedDocument, stored?: unknown) => unknown; cache?: ParseCache } = {},
): StageResult<ParsedDocument[]> {
  const documents = new Array<StageResult<ParsedDocument | undefined>>(files.length);
  // `stored` is the entry's verdict for a file from the cache, undefined for a file just parsed,
  // whose entry is stored at once with the verdict `onDocument` returns (ADR 0017m).
  const take = (i: number, data: ParsedData, stored?: unknown): void => {
    const result = toParsedDocument(files[i]!, data);
    documents[i] = result;
    const keep = result.value ? options.onDocument?.(result.value, stored ?? undefined) : undefined;
    if (stored === undefined && options.cache) storeParsedFile(files[i]!, data, keep ?? null, options.cache);
  };
  // The cache is looked up before any parse work is shared out, so only the misses are parsed.
  const cached = options.cache ? lookupParseCache(files, options.cache) : undefined;
  const missing = cached ? cached.flatMap((entry, i) => (entry === undefined ? [i] : [])) : undefined;
  cached?.forEach((entry, i) => entry && take(i, entry.data, entry.verdict));
  const toParse = missing ? missing.map((i) => files[i]!) : files;
  parseAll(toParse, options.workers ?? defaultWorkerCount(toParse), { onResult: (k, data) => take(missing ? missing[k]! : k, data) });
  const diagnostics: Diagnostic[] = [];
  const value: ParsedDocument[] = [];
  for (const result of documents) {
    diagnostics.push(...result.diagnostics);
    if (result.value) value.push(result.value);
  }
  return { value, diagnostics };
}
