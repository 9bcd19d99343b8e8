import { distance } from "fastest-levenshtein";
import { compareStrings } from "./compare.js";

/**
 * The closest candidate to a misspelt word, for did-you-mean hints.
 *
 * Returns undefined when nothing is close enough: at most a third of the word's length (at least
 * one, at most four) edits, so a hint is a likely typo, never a random neighbour. Ties are broken by
 * code-unit order so the hint is deterministic.
 */
export function suggest(word: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.min(4, Math.max(1, Math.floor(word.length / 3)));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = distance(word.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance || (d === bestDistance && best !== undefined && compareStrings(candidate, best) < 0)) {
      best = candidate;
      bestDistance = d;
    }
  }
  return bestDistance <= limit ? best : undefined;
}

/**
 * Words authors use for a trigger tree's two operators, normalised (lower case, without `_`, `-`
 * and spaces): Python's `&`/`|`, logic's `and`/`or`, JSON Schema's `allOf`/`anyOf`/`oneOf`.
 * By edit distance `and` is nearest to `any` and `or` to neither, so a spelling hint would say the
 * opposite of what the author meant; these say it by meaning.
 */
const CONDITION_OPERATOR_MEANINGS: Readonly<Record<string, "all" | "any">> = {
  and: "all",
  allof: "all",
  every: "all",
  both: "all",
  "&": "all",
  "&&": "all",
  or: "any",
  anyof: "any",
  oneof: "any",
  some: "any",
  either: "any",
  "|": "any",
  "||": "any",
};

/**
 * The operator a word means where a trigger tree's operator (`all` or `any`) is expected, when it
 * is a known synonym ({@link CONDITION_OPERATOR_MEANINGS}: `and`, `AND`, `all_of`, `&` → `all`;
 * `or`, `anyOf`, `|` → `any`); undefined otherwise, and whenever the candidates are not exactly
 * those two operators.
 */
export function operatorMeant(word: string, candidates: readonly string[]): "all" | "any" | undefined {
  if (!(candidates.length === 2 && candidates.includes("all") && candidates.includes("any"))) return undefined;
  return CONDITION_OPERATOR_MEANINGS[word.toLowerCase().replace(/[\s_-]/g, "")];
}

/**
 * A did-you-mean hint for an unknown field or value: by meaning for a trigger tree's operator
 * ({@link operatorMeant}), else the closest spelling ({@link suggest}: `ALL`, `alll` → `all`).
 */
export function didYouMean(word: string, candidates: readonly string[]): string | undefined {
  const meant = operatorMeant(word, candidates);
  if (meant) return `did you mean "${meant}"? A trigger tree writes "and" as "all" (every member has new events) and "or" as "any" (one of them has)`;
  const guess = suggest(word, candidates);
  return guess === undefined ? undefined : `did you mean "${guess}"?`;
}
