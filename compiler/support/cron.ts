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
  if (text.startsWith("@")) return CRON_PRESETS.includes(text) ? undefined : `unknown preset; use one of ${CRON_PRESETS.join(", ")}`;
  const fields = text.split(/\s+/);
  if (fields.length !== 5) return `expected 5 fields (minute hour day month weekday), found ${fields.length}`;
  try {
    CronExpressionParser.parse(text, { tz: "UTC" });
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** Whether an IANA time zone name is known to this runtime's ICU data (aliases included). */
export function isKnownTimezone(name: string): boolean {
  const known = knownTimezones.get(name);
  if (known !== undefined) return known;
  const answer = checkTimezone(name);
  if (knownTimezones.size < 10_000) knownTimezones.set(name, answer);
  return answer;
}

function checkTimezone(name: string): boolean {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name)) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}
