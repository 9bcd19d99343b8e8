/** Shortest duration accepted, in seconds. */
export const MIN_DURATION_SECONDS = 1;
/** Longest duration accepted, in seconds (ten years of 365 days). */
export const MAX_DURATION_SECONDS = 10 * 365 * 86400;

/**
 * ISO-8601 durations as used by contracts and the orchestration config (`PT26H`, `P1DT2H30M`,
 * `P2W`). Years and months are refused: their length in seconds depends on the calendar, and the
 * values become Python `timedelta`s and freshness ages that must mean one exact span.
 *
 * Bounds: at least one second (Airflow reads a sub-microsecond timedelta as zero, which for a
 * timeout means none) and at most ten years (far below Python's timedelta limit).
 *
 * @returns the duration in seconds (whole or fractional, rounded to milliseconds), or undefined
 *   when the text is not a duration of that form or is outside the bounds.
 */
export function parseDurationSeconds(text: string): number | undefined {
  if (durations.has(text)) return durations.get(text);
  const seconds = readDuration(text);
  if (durations.size < 10_000) durations.set(text, seconds);
  return seconds;
}

// Pure, and a project repeats a few durations thousands of times (link, plan and the freshness
// monitor each read every contract's), so each text is read once per process.
const durations = new Map<string, number | undefined>();

function readDuration(text: string): number | undefined {
  const m = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(text);
  if (!m || text === "P" || text.endsWith("T")) return undefined;
  const [, w, d, h, min, s] = m;
  const seconds =
    Number(w ?? 0) * 604800 + Number(d ?? 0) * 86400 + Number(h ?? 0) * 3600 + Number(min ?? 0) * 60 + Number(s ?? 0);
  const rounded = Math.round(seconds * 1000) / 1000;
  return rounded >= MIN_DURATION_SECONDS && rounded <= MAX_DURATION_SECONDS ? rounded : undefined;
}

/**
 * A number of seconds as an ISO-8601 duration of days, hours, minutes and seconds (`P31D`,
 * `PT1H30M`, `P1DT2H`): the inverse of {@link parseDurationSeconds} for whole seconds, used to
 * name a span in a message. Fractions of a second are rounded to milliseconds.
 */
export function formatDurationSeconds(seconds: number): string {
  let rest = Math.round(seconds * 1000) / 1000;
  const days = Math.floor(rest / 86400);
  rest -= days * 86400;
  const hours = Math.floor(rest / 3600);
  rest -= hours * 3600;
  const minutes = Math.floor(rest / 60);
  rest = Math.round((rest - minutes * 60) * 1000) / 1000;
  const time = `${hours ? `${hours}H` : ""}${minutes ? `${minutes}M` : ""}${rest ? `${rest}S` : ""}`;
  if (!days && !time) return "PT0S";
  return `P${days ? `${days}D` : ""}${time ? `T${time}` : ""}`;
}
