import { CronExpressionParser } from "cron-parser";

/** Airflow's cron presets that are real cron schedules (not `@once` or `@continuous`). */
export const CRON_PRESETS = ["@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly", "@annually", "@midnight"];

// Both checks are pure and a project repeats a few expressions and zones thousands of times, so
// each answer is computed once per process (cron-parser and ICU are the cost of the validate stage).
const cronProblems = new Map<string, string | undefined>();
const knownTimezones = new Map<string, boolean>();

/**
 * Checks a cron expression the way Airflow's timetables read it: five fields (minute hour
 * day-of-month month day-of-week) or one of {@link CRON_PRESETS}.
 *
 * @returns undefined when valid, else a short reason.
 */
export function cronProblem(expression: string): string | undefined {
  if (cronProblems.has(expression)) return cronProblems.get(expression);
  const problem = findCronProblem(expression);
  if (cronProblems.size < 10_000) cronProblems.set(expression, problem);
  return problem;
}

function findCronProblem(expression: string): string | undefined {
  const text = expression.trim();
  // The expression is written into the DAG as given; Airflow refuses surrounding spaces in a preset.
  if (text !== expression) return "remove the spaces around the expression";
  if (text.startsWith("@")) return CRON_PRESETS.includes(text) ? undefined : `unknown preset; use one of ${CRON_PRESETS.join(", ")}`;
  const fields = text.split(/\s+/);
  if (fields.length !== 5) return `expected 5 fields (minute hour day month weekday), found ${fields.length}`;
  // Standard cron only: extensions some parsers take (L, W, #, ?, H) are refused by Airflow's croniter.
  const names = /^(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|sun|mon|tue|wed|thu|fri|sat)$/i;
  for (const field of fields) {
    const extension = field.split(/[,/-]/).find((part) => part !== "*" && !/^\d+$/.test(part) && !names.test(part));
    if (extension !== undefined) return `${JSON.stringify(extension)} is not standard cron (digits, names, *, ",", "-" and "/" only)`;
  }
  try {
    CronExpressionParser.parse(text, { tz: "UTC" });
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * The canonical name of a time zone as this runtime's ICU data knows it (the name itself when it is
 * in ICU's list), or undefined when ICU knows no zone by that name (in any case).
 */
export function canonicalTimezone(name: string): string | undefined {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name)) return undefined;
  try {
    const resolved = new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
    return CANONICAL.has(name) ? name : resolved;
  } catch {
    return undefined;
  }
}

const CANONICAL = new Set([...Intl.supportedValuesOf("timeZone"), "UTC", "Etc/UTC", "GMT", "Etc/GMT"]);

/**
 * Whether a time zone name is one Airflow's time-zone library reads: known to ICU and spelt as IANA
 * spells it (ICU also takes "europe/berlin"; Python's zoneinfo does not). ICU's own list is CLDR's
 * and lacks some current IANA names (Asia/Kolkata), so a name outside it is accepted when every
 * segment starts with a capital letter, as IANA names do.
 */
export function isKnownTimezone(name: string): boolean {
  const known = knownTimezones.get(name);
  if (known !== undefined) return known;
  const answer = canonicalTimezone(name) !== undefined && (CANONICAL.has(name) || name.split("/").every((segment) => /^[A-Z]/.test(segment)));
  if (knownTimezones.size < 10_000) knownTimezones.set(name, answer);
  return answer;
}

/** Airflow's presets as the cron expressions they stand for (airflow.timetables._cron). */
const PRESET_EXPRESSIONS: Record<string, string> = {
  "@hourly": "0 * * * *",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@weekly": "0 0 * * 0",
  "@monthly": "0 0 1 * *",
  "@quarterly": "0 0 1 */3 *",
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
};

const cronGaps = new Map<string, number | undefined>();

/**
 * The longest time between two consecutive fires of a valid cron expression in a time zone, in
 * seconds, measured over the eight years from 2026-01-01 (every calendar pattern: leap days,
 * weekdays on month days, DST changes) or the first 5,000 fires, whichever ends first (enough for every daily and weekly pattern of a frequent cron). Pure and
 * deterministic: the window is fixed, never "now".
 *
 * @returns the gap, or undefined when the expression does not parse or fires fewer than twice.
 */
export function maxCronGapSeconds(expression: string, timezone: string): number | undefined {
  const key = `${expression}\u0000${timezone}`;
  if (cronGaps.has(key)) return cronGaps.get(key);
  let gap: number | undefined;
  try {
    const start = Date.UTC(2026, 0, 1);
    const end = Date.UTC(2034, 0, 1);
    const interval = CronExpressionParser.parse(PRESET_EXPRESSIONS[expression] ?? expression, { tz: timezone, currentDate: new Date(start - 1) });
    let previous: number | undefined;
    for (let n = 0; n < 5_000; n++) {
      const at = interval.next().getTime();
      if (previous !== undefined) gap = Math.max(gap ?? 0, (at - previous) / 1000);
      if (at > end) break;
      previous = at;
    }
  } catch {
    gap = undefined;
  }
  if (cronGaps.size < 10_000) cronGaps.set(key, gap);
  return gap;
}
