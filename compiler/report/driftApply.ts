import { isMap, isScalar, isSeq, parseDocument, type Pair, type YAMLMap, type YAMLSeq } from "yaml";

/** One property of a proposal's dataset schema. */
interface ProposedProperty {
  name: string;
  logicalType: string;
  [key: string]: unknown;
}

/** What `drift apply` reads from a proposal: the contract id and each dataset's proposed schema. */
export interface Proposal {
  id: string;
  datasets: Array<{ name: string; schema: { version: number; properties: ProposedProperty[] } }>;
}

/** The merged contract text and one line per change, in contract order. */
export interface MergeResult {
  text: string;
  changes: string[];
}

/** A text edit on the original contract: replace `[start, end)` by `text`. */
interface Edit {
  start: number;
  end: number;
  text: string;
}

/**
 * Reads a proposal (the YAML the runtime writes on schema drift, `contract_runtime.drift`).
 *
 * @returns The proposal, or a one-sentence problem.
 */
export function parseProposal(text: string): { proposal?: Proposal; problem?: string } {
  let value: unknown;
  try {
    value = parseDocument(text).toJS();
  } catch (error) {
    return { problem: `the proposal is not YAML: ${(error as Error).message}` };
  }
  const doc = value as Partial<Proposal> | null;
  if (!doc || typeof doc !== "object" || typeof doc.id !== "string" || !Array.isArray(doc.datasets)) {
    return { problem: 'the proposal is not a contract document with "id" and "datasets"' };
  }
  for (const ds of doc.datasets) {
    const props = ds?.schema?.properties;
    if (typeof ds?.name !== "string" || typeof ds.schema?.version !== "number" || !Array.isArray(props) || props.some((p) => typeof p?.name !== "string" || typeof p.logicalType !== "string")) {
      return { problem: `the proposal's dataset ${JSON.stringify(ds?.name ?? "?")} has no schema with a version and named, typed properties` };
    }
  }
  return { proposal: doc as Proposal };
}

function lineStart(text: string, offset: number): number {
  return text.lastIndexOf("\n", offset - 1) + 1;
}

function lineEnd(text: string, offset: number): number {
  const end = text.indexOf("\n", offset);
  return end < 0 ? text.length : end + 1;
}

function pairOf(map: YAMLMap, key: string): Pair | undefined {
  return map.items.find((p) => isScalar(p.key) && p.key.value === key) as Pair | undefined;
}

function flowItem(p: ProposedProperty): string {
  const fields = Object.entries(p).map(([k, v]) => `${k}: ${typeof v === "string" ? (/^[A-Za-z0-9_]+$/.test(v) ? v : JSON.stringify(v)) : JSON.stringify(v)}`);
  return `{${fields.join(", ")}}`;
}

/**
 * Merges a proposal's schemas into a contract's text by editing only what changed, so every
 * comment, blank line, quoting and flow or block style of the rest stays as written: each
 * proposed dataset's `schema.version` is replaced, properties the proposal lacks are removed
 * (their lines), a changed `logicalType` is replaced in place (its now stale `physicalType`
 * removed), and new properties are added after the last kept one in the style (flow or block) most of
 * their siblings have.
 * The order of the kept properties is the contract's; new ones follow in the proposal's order.
 *
 * @returns The merged text and the changes, or a problem when the contract's `properties` is not
 *   a block sequence (a flow sequence `[...]` is edited by hand).
 */
export function mergeProposal(text: string, proposal: Proposal): MergeResult & { problem?: string } {
  const doc = parseDocument(text, { keepSourceTokens: true });
  const datasets = doc.get("datasets", true);
  const edits: Edit[] = [];
  const changes: string[] = [];
  if (!isSeq(datasets)) return { text, changes, problem: 'the contract has no "datasets" sequence' };
  for (const proposed of proposal.datasets) {
    const node = (datasets as YAMLSeq).items.find((d) => isMap(d) && d.get("name") === proposed.name) as YAMLMap | undefined;
    if (!node) {
      changes.push(`dataset ${JSON.stringify(proposed.name)} is not in the contract: skipped`);
      continue;
    }
    const schema = node.get("schema", true);
    const version = isMap(schema) ? schema.get("version", true) : undefined;
    const props = isMap(schema) ? schema.get("properties", true) : undefined;
    if (!isMap(schema) || !isScalar(version) || !version.range || !isSeq(props)) {
      return { text, changes, problem: `the dataset ${JSON.stringify(proposed.name)} has no schema with a version and properties` };
    }
    if (props.flow) return { text, changes, problem: `the properties of ${JSON.stringify(proposed.name)} are a flow sequence [...]; merge by hand` };
    if (version.value !== proposed.schema.version) {
      edits.push({ start: version.range[0], end: version.range[1], text: String(proposed.schema.version) });
      changes.push(`${proposed.name}: schema.version ${String(version.value)} -> ${proposed.schema.version}`);
    }
    const wanted = new Map(proposed.schema.properties.map((p) => [p.name, p]));
    const items = props.items.filter(isMap) as YAMLMap[];
    let lastKept: YAMLMap | undefined;
    for (const item of items) {
      const name = String(item.get("name"));
      const range = item.range!;
      const want = wanted.get(name);
      if (!want) {
        edits.push({ start: lineStart(text, range[0]), end: lineEnd(text, Math.max(range[0], range[1] - 1)), text: "" });
        changes.push(`${proposed.name}: removed property ${JSON.stringify(name)}`);
        continue;
      }
      lastKept = item;
      const logical = pairOf(item, "logicalType");
      if (logical && isScalar(logical.value) && logical.value.range && logical.value.value !== want.logicalType) {
        edits.push({ start: logical.value.range[0], end: logical.value.range[1], text: want.logicalType });
        changes.push(`${proposed.name}: property ${JSON.stringify(name)} logicalType ${String(logical.value.value)} -> ${want.logicalType}`);
        const physical = pairOf(item, "physicalType");
        const index = physical ? item.items.indexOf(physical) : -1;
        if (physical && index > 0 && isScalar(physical.value) && physical.value.range) {
          const previous = item.items[index - 1]!.value as { range?: [number, number, number] } | null;
          if (previous?.range) edits.push({ start: previous.range[1], end: physical.value.range[1], text: "" });
        }
      }
    }
    const known = new Set(items.map((i) => String(i.get("name"))));
    const added = proposed.schema.properties.filter((p) => !known.has(p.name));
    if (added.length > 0) {
      const anchor = lastKept ?? items[items.length - 1];
      if (!anchor?.range) return { text, changes, problem: `the dataset ${JSON.stringify(proposed.name)} has no property to add after` };
      const start = lineStart(text, anchor.range[0]);
      const indent = /^\s*/.exec(text.slice(start))![0];
      const at = lineEnd(text, Math.max(anchor.range[0], anchor.range[1] - 1));
      // New items take the style most of their siblings have.
      const flow = items.filter((i) => i.flow).length * 2 >= items.length;
      const lines = added.map((p) =>
        flow
          ? `${indent}- ${flowItem(p)}\n`
          : Object.entries(p)
              .map(([k, v], i) => `${indent}${i === 0 ? "- " : "  "}${k}: ${typeof v === "string" ? v : JSON.stringify(v)}\n`)
              .join(""),
      );
      edits.push({ start: at, end: at, text: lines.join("") });
      for (const p of added) changes.push(`${proposed.name}: added property ${JSON.stringify(p.name)} (${p.logicalType})`);
    }
  }
  // Apply from the end so earlier offsets stay valid.
  let out = text;
  for (const e of [...edits].sort((a, b) => b.start - a.start || b.end - a.end)) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return { text: out, changes };
}

/**
 * Sets a contract's top-level `version` in its text by replacing only that scalar, in the quoting
 * the author used (`"1.3.0"` stays double-quoted), so every comment and the layout stay as written.
 * `drift apply` calls it with the version the diff's version rule asks for (`requiredVersion` in
 * diff/changeRules.ts; the rule is ADR 0015).
 *
 * @returns The new text, or a problem when the contract has no scalar `version` to replace.
 */
export function setContractVersion(text: string, version: string): { text: string; problem?: string } {
  const doc = parseDocument(text, { keepSourceTokens: true });
  const node = doc.get("version", true);
  if (!isScalar(node) || !node.range) return { text, problem: 'the contract has no "version" to set' };
  const quote = node.type === "QUOTE_DOUBLE" ? '"' : node.type === "QUOTE_SINGLE" ? "'" : "";
  return { text: text.slice(0, node.range[0]) + quote + version + quote + text.slice(node.range[1]) };
}
