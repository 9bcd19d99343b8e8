/**
 * ISO-8601 durations as used by contracts and the orchestration config (`PT26H`, `P1DT2H30M`,
 * `P2W`). Years and months are refused: their length in seconds depends on the calendar, and the
 * values become Python `timedelta`s and freshness ages that must mean one exact span.
 *
 * @returns the duration in whole or fractional seconds, or undefined when the text is not a
 *   duration of that form (or is zero).
 */
export function parseDurationSeconds(text: string): number | undefined {
  const m = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(text);
  if (!m || text === "P" || text.endsWith("T")) return undefined;
  const [, w, d, h, min, s] = m;
  const seconds =
    Number(w ?? 0) * 604800 + Number(d ?? 0) * 86400 + Number(h ?? 0) * 3600 + Number(min ?? 0) * 60 + Number(s ?? 0);
  return seconds > 0 && Number.isFinite(seconds) ? seconds : undefined;
}
