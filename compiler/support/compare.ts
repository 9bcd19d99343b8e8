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

