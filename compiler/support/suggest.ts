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
