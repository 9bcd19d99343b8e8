import { compareStrings } from "./compare.js";
import { normaliseUri } from "./uri.js";

/**
 * Probable renames: an asset that disappeared and one that appeared which are most likely the same
 * dataset under a new name, found the way people rename (ARCHITECTURE.md, "Diff"; ADR 0015).
 *
 * A pair is a probable rename when
 * - both are produced by the same contract and their schemas match: the schema similarity (below)
 *   is at least `RENAME_SIMILARITY_THRESHOLD`; the URI may be the same, follow the name (a URI made
 *   by the `uri_template`, where only the name segment changed) or be another one; or
 * - they have the same URI after Airflow's normalisation, whatever their contracts (the one rule
 *   before this module, kept for renames that move a dataset to another contract).
 *
 * Each asset takes part in at most one pair. Removed assets are matched in name order; each takes
 * its best candidate: same URI, then a URI that follows the name, then the higher similarity, then
 * the smaller name. It is a hint, never an assumption: the diff still reports the removal and the
 * addition, and consumers still break until they follow.
 */
export interface RenameCandidate {
  /** Asset name, `<domain>.<dataset>`. */
  name: string;
  uri: string;
  /** The producing contract's id; null for an external asset. */
  contractId: string | null;
  /** The dataset's schema properties (name and ODCS logicalType); empty for externals. */
  properties: ReadonlyArray<{ name: string; logicalType?: string }>;
}

/** How the two URIs relate: equal after normalisation, equal once the name is substituted, or neither. */
export type RenameUriEvidence = "same" | "follows_name" | "different";

export interface ProbableRename {
  from: string;
  to: string;
  /** Both are declared by the one contract `contractId`. */
  sameContract: boolean;
  /** Schema similarity in [0, 1], rounded to two decimals. */
  similarity: number;
  /** Properties in both schemas with the same name and logicalType, and in either schema. */
  matching: number;
  total: number;
  uri: RenameUriEvidence;
}

/**
 * The least schema similarity for a same-contract pair to be a probable rename: at least four in
 * five of the properties of either schema are in both with the same name and type (one property
 * added to four, or one of five retyped, still matches; two of four changed does not).
 */
export const RENAME_SIMILARITY_THRESHOLD = 0.8;

const keyOf = (p: { name: string; logicalType?: string }): string => `${p.name}\u0000${p.logicalType ?? ""}`;

/**
 * Jaccard similarity of two schemas over `(property name, logicalType)` pairs: the pairs in both
 * over the pairs in either. Two empty schemas are identical (1). Output: `{similarity, matching,
 * total}`.
 */
export function schemaSimilarity(
  a: ReadonlyArray<{ name: string; logicalType?: string }>,
  b: ReadonlyArray<{ name: string; logicalType?: string }>,
): { similarity: number; matching: number; total: number } {
  const left = new Set(a.map(keyOf));
  const right = new Set(b.map(keyOf));
  const matching = [...left].filter((k) => right.has(k)).length;
  const total = new Set([...left, ...right]).size;
  return { similarity: total === 0 ? 1 : Math.round((matching / total) * 100) / 100, matching, total };
}

/** The dataset part of an asset name (`sales.orders_daily` → `orders_daily`). */
const datasetOf = (name: string): string => name.slice(name.lastIndexOf(".") + 1);

function uriEvidence(from: RenameCandidate, to: RenameCandidate): RenameUriEvidence {
  if (normaliseUri(from.uri) === normaliseUri(to.uri)) return "same";
  // A templated URI carries the name: substituting the new name into the old URI gives the new one.
  const oldName = datasetOf(from.name);
  const newName = datasetOf(to.name);
  if (oldName !== "" && from.uri.includes(oldName) && from.uri.split(oldName).join(newName) === to.uri) return "follows_name";
  return "different";
}

const URI_RANK: Record<RenameUriEvidence, number> = { same: 0, follows_name: 1, different: 2 };

/** The evidence for one pair, or undefined when the pair is not a probable rename. */
export function renameEvidence(from: RenameCandidate, to: RenameCandidate): ProbableRename | undefined {
  const uri = uriEvidence(from, to);
  const sameContract = from.contractId !== null && from.contractId === to.contractId;
  const { similarity, matching, total } = schemaSimilarity(from.properties, to.properties);
  if (uri !== "same" && !(sameContract && similarity >= RENAME_SIMILARITY_THRESHOLD)) return undefined;
  return { from: from.name, to: to.name, sameContract, similarity, matching, total, uri };
}

/**
 * Pairs removed with added assets (see the module comment). Input order does not matter; the
 * output is sorted by the removed name.
 */
export function matchProbableRenames(removed: readonly RenameCandidate[], added: readonly RenameCandidate[]): ProbableRename[] {
  const taken = new Set<string>();
  const out: ProbableRename[] = [];
  // Sort for determinism.
  const candidates = [...added].sort((x, y) => compareStrings(x.name, y.name));
  for (const from of [...removed].sort((x, y) => compareStrings(x.name, y.name))) {
    const best = candidates
      .filter((to) => !taken.has(to.name))
      .map((to) => renameEvidence(from, to))
      .filter((e): e is ProbableRename => e !== undefined)
      .sort((x, y) => URI_RANK[x.uri] - URI_RANK[y.uri] || y.similarity - x.similarity || compareStrings(x.to, y.to))[0];
    if (!best) continue;
    taken.add(best.to);
    out.push(best);
  }
  return out;
}

/** The evidence in words: `same contract "sales.orders_daily", schema 3/3 properties match (1.00), same URI`. */
export function describeRenameEvidence(rename: ProbableRename, contractId: string | null): string {
  const parts: string[] = [];
  if (rename.sameContract && contractId) parts.push(`same contract ${JSON.stringify(contractId)}`);
  parts.push(`schema ${rename.matching}/${rename.total} properties match (${rename.similarity.toFixed(2)})`);
  parts.push(rename.uri === "same" ? "same URI" : rename.uri === "follows_name" ? "URI follows the name" : "other URI");
  return parts.join(", ");
}
