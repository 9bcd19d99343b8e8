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

const NAMES: Record<string, number> = {
  jan: 1, feb: 2, mar: 3, apr: 4, may: 5, jun: 6, jul: 7, aug: 8, sep: 9, oct: 10, nov: 11, dec: 12,
  sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6,
};

/** The values one standard cron field allows (`*`, numbers, names, `a-b`, `/n`, lists). */
function fieldValues(field: string, low: number, high: number): { values: Set<number>; any: boolean } {
  const values = new Set<number>();
  for (const part of field.split(",")) {
    const [range, stepText] = part.split("/") as [string, string | undefined];
    const step = stepText === undefined ? 1 : Number(stepText);
    const value = (t: string): number => NAMES[t.toLowerCase()] ?? Number(t);
    let from = low;
    let to = high;
    if (range !== "*") {
      const [a, b] = range.split("-") as [string, string | undefined];
      from = value(a);
      to = b === undefined ? (stepText === undefined ? from : high) : value(b);
    }
    for (let v = from; v <= to; v += step) values.add(v);
  }
  return { values, any: field.startsWith("*") };
}

const offsetFormatters = new Map<string, Intl.DateTimeFormat>();

/**
 * Milliseconds the zone's wall clock is ahead of UTC at instant `t`, asked of `Intl` (the ICU time
 * zone data Node ships). A function of the minute of `t` only (`Intl` formats whole minutes).
 */
export function zoneOffsetFromIntl(timezone: string, t: number): number {
  if (timezone === "UTC" || timezone === "Etc/UTC") return 0;
  let format = offsetFormatters.get(timezone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", { timeZone: timezone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric" });
    offsetFormatters.set(timezone, format);
  }
  // `format` and a match cost a quarter of `formatToParts` and its part objects (the table below
  // asks about 2,900 times per zone); en-US with h23 prints "M/D/YYYY, HH:MM". Should a runtime
  // print otherwise, the parts are read instead: the answer is the same either way.
  const printed = WALL_CLOCK.exec(format.format(t));
  let wall: number;
  if (printed) {
    wall = Date.UTC(Number(printed[3]), Number(printed[1]) - 1, Number(printed[2]), Number(printed[4]), Number(printed[5]));
  } else {
    const parts = Object.fromEntries(format.formatToParts(new Date(t)).map((p) => [p.type, p.value]));
    wall = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute));
  }
  return wall - Math.floor(t / 60000) * 60000;
}

const WALL_CLOCK = /^(\d{1,2})\/(\d{1,2})\/(\d{4}), (\d{2}):(\d{2})$/;

/** A zone's offsets over the window {@link maxCronGapSeconds} reads: `offsets[i]` from minute `starts[i]` on. */
interface OffsetTable {
  starts: number[];
  offsets: number[];
}

// The cron window (2026-2033) and a margin of more than a day either side for zone offsets.
const TABLE_FROM = Date.UTC(2025, 11, 30);
const TABLE_TO = Date.UTC(2034, 0, 3);
// Offsets are probed every 24 hours, then each change is found to the minute by bisection: exact
// as long as a zone does not change its offset twice within a day. None of the 418 zones of
// Node 20's ICU does in the window (checked by probing every 3 hours: the closest two changes of
// any zone are weeks apart, Casablanca's around Ramadan). Every 6 hours took 4 times the Intl calls.
const PROBE_MS = 24 * 3600000;
const offsetTables = new Map<string, OffsetTable>();

function offsetTable(timezone: string): OffsetTable {
  let table = offsetTables.get(timezone);
  if (table) return table;
  table = { starts: [TABLE_FROM], offsets: [zoneOffsetFromIntl(timezone, TABLE_FROM)] };
  let before = TABLE_FROM;
  for (let t = TABLE_FROM + PROBE_MS; t < TABLE_TO; t += PROBE_MS) {
    const offset = zoneOffsetFromIntl(timezone, t);
    const current = table.offsets[table.offsets.length - 1]!;
    if (offset !== current) {
      let low = before;
      let high = t;
      while (high - low > 60000) {
        const mid = low + Math.floor((high - low) / 120000) * 60000;
        if (zoneOffsetFromIntl(timezone, mid) === current) low = mid;
        else high = mid;
      }
      table.starts.push(high);
      table.offsets.push(offset);
    }
    before = t;
  }
  offsetTables.set(timezone, table);
  return table;
}

/**
 * Milliseconds the zone's wall clock is ahead of UTC at instant `t`: {@link zoneOffsetFromIntl},
 * read from a per-zone table of its changes inside the cron window (one `Intl` call per probe,
 * once per zone, instead of four per matching day and cron expression).
 */
export function zoneOffset(timezone: string, t: number): number {
  if (timezone === "UTC" || timezone === "Etc/UTC") return 0;
  if (t < TABLE_FROM || t >= TABLE_TO) return zoneOffsetFromIntl(timezone, t);
  const { starts, offsets } = offsetTable(timezone);
  const minute = Math.floor(t / 60000) * 60000;
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if (starts[mid]! <= minute) low = mid;
    else high = mid - 1;
  }
  return offsets[low]!;
}

/** The instant of a wall-clock time in a zone (the later reading across a DST change). */
function zonedInstant(timezone: string, wall: number): number {
  const first = wall - zoneOffset(timezone, wall);
  const second = wall - zoneOffset(timezone, first);
  return second;
}

const cronGaps = new Map<string, number | undefined>();

// The local calendar days maxCronGapSeconds reads, 2026-01-01 to 2033-12-31.
const WINDOW_FROM = Date.UTC(2026, 0, 1);
const WINDOW_TO = Date.UTC(2034, 0, 1);
let calendar: { month: Uint8Array; date: Uint8Array; weekday: Uint8Array } | undefined;

/** Month (1-12), day of month and weekday (0 Sunday) of each day of the window, made once per process. */
function windowCalendar(): { month: Uint8Array; date: Uint8Array; weekday: Uint8Array } {
  if (calendar) return calendar;
  const count = (WINDOW_TO - WINDOW_FROM) / 86400000;
  calendar = { month: new Uint8Array(count), date: new Uint8Array(count), weekday: new Uint8Array(count) };
  for (let d = 0; d < count; d++) {
    const date = new Date(WINDOW_FROM + d * 86400000);
    calendar.month[d] = date.getUTCMonth() + 1;
    calendar.date[d] = date.getUTCDate();
    calendar.weekday[d] = date.getUTCDay();
  }
  return calendar;
}

/**
 * The longest time between two consecutive fires of a valid cron expression in a time zone, in
 * seconds, over the local calendar days 2026-01-01 to 2033-12-31 (leap days, weekdays on month
 * days, DST changes between days). Standard cron semantics: when both day-of-month and
 * day-of-week are restricted, a day matching either fires. Pure and deterministic: the window is
 * fixed, never "now". Computed per matching day (first and last fire, the largest gap within a
 * day), so it costs one pass over the days, not one step per fire.
 *
 * @returns the gap, or undefined when the expression does not parse or fires fewer than twice.
 */
export function maxCronGapSeconds(expression: string, timezone: string): number | undefined {
  const key = `${expression}\u0000${timezone}`;
  if (cronGaps.has(key)) return cronGaps.get(key);
  let gap: number | undefined;
  try {
    gap = computeGap(PRESET_EXPRESSIONS[expression] ?? expression, timezone);
  } catch {
    gap = undefined;
  }
  if (cronGaps.size < 10_000) cronGaps.set(key, gap);
  return gap;
}

function computeGap(expression: string, timezone: string): number | undefined {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5 || cronProblem(expression) !== undefined) return undefined;
  const [minutes, hours, days, months, weekdays] = [
    fieldValues(fields[0]!, 0, 59),
    fieldValues(fields[1]!, 0, 23),
    fieldValues(fields[2]!, 1, 31),
    fieldValues(fields[3]!, 1, 12),
    fieldValues(fields[4]!, 0, 7),
  ];
  if (weekdays.values.has(7)) weekdays.values.add(0);
  // Minutes after local midnight at which a matching day fires, in order.
  const times = [...hours.values].flatMap((h) => [...minutes.values].map((m) => h * 60 + m)).sort((a, b) => a - b);
  if (times.length === 0) return undefined;
  let longest = 0;
  for (let i = 1; i < times.length; i++) longest = Math.max(longest, (times[i]! - times[i - 1]!) * 60);
  let previousLast: number | undefined;
  let fires = times.length > 1 ? 0 : -1;
  const calendar = windowCalendar();
  for (let d = 0; d < calendar.month.length; d++) {
    const day = WINDOW_FROM + d * 86400000;
    if (!months.values.has(calendar.month[d]!)) continue;
    const domMatch = days.values.has(calendar.date[d]!);
    const dowMatch = weekdays.values.has(calendar.weekday[d]!);
    const matches = days.any || weekdays.any ? domMatch && dowMatch : domMatch || dowMatch;
    if (!matches) continue;
    const first = zonedInstant(timezone, day + times[0]! * 60000);
    if (previousLast !== undefined) longest = Math.max(longest, (first - previousLast) / 1000);
    previousLast = zonedInstant(timezone, day + times[times.length - 1]! * 60000);
    fires++;
  }
  return fires >= 1 ? longest : undefined;
}
