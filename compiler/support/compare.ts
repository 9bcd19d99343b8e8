/**
 * Code-unit string comparison, the one ordering used for every sort in the compiler.
 *
 * `localeCompare` depends on the ICU data and locale of the machine; this does not, so output is
 * byte-identical everywhere (DESIGN §2.5).
 *
 * @returns negative, zero or positive, like `Array.prototype.sort` expects.
 */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Returns a new array sorted by a string key, stable for equal keys.
 */
export function sortBy<T>(items: readonly T[], key: (item: T) => string): T[] {
  return [...items].sort((x, y) => compareStrings(key(x), key(y)));
}
