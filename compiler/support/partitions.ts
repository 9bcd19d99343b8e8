/**
 * Partition grains, their keys and the partition mappers that align them: one table, keyed by the
 * pinned Airflow version, read by validation (which grains may feed which), by the plan (which
 * mapper a consumer's `PartitionedAssetTimetable` gets per upstream), by the backfill command (which
 * keys a range holds) and checked against the installed Task SDK by
 * `test/python/test_partition_mappers.py`.
 *
 * Source of the rules: the pinned apache-airflow 3.2.2, `airflow/partition_mappers/temporal.py`
 * (`StartOf*Mapper.to_downstream`: `strptime(key, input_format)`, made aware in the mapper's
 * timezone, truncated to the period start, `strftime(output_format)`; `StartOfQuarterMapper` then
 * substitutes `{quarter}`) and `airflow/timetables/trigger.py` (`CronPartitionTimetable`: the key is
 * `strftime(key_format)` of the partition date, the run date moved `run_offset` cron fires).
 * Keys are UTC: every timetable and mapper is generated with `timezone="UTC"`.
 */

/** The grains a contract may partition by, finest first. */
export const GRAINS = ["hour", "day", "week", "month", "quarter", "year"] as const;
export type Grain = (typeof GRAINS)[number];

/** The Airflow version the table below was read from (`requirements.lock`). */
export const PARTITION_TABLE_AIRFLOW_VERSION = "3.2.2";

/**
 * Each grain's key, as the strftime pattern Airflow writes it with. A week is its ISO week
 * (`2026-W49`), a quarter `2026-Q4` (the `{quarter}` of `StartOfQuarterMapper`'s format).
 */
export const KEY_FORMATS: Readonly<Record<Grain, string>> = {
  hour: "%Y-%m-%dT%H",
  day: "%Y-%m-%d",
  week: "%G-W%V",
  month: "%Y-%m",
  quarter: "%Y-Q{quarter}",
  year: "%Y",
};

/**
 * The pattern a mapper parses an upstream key of this grain with (`strptime`), or undefined where
 * 3.2's strptime cannot read the key back: an ISO week needs a weekday directive. A quarter key
 * `2026-Q4` parses with `%Y-Q%m` as the year (the quarter's digit read as a month, 1–4), which is
 * all a year mapper keeps.
 */
export const KEY_INPUT_FORMATS: Readonly<Record<Grain, string | undefined>> = {
  hour: "%Y-%m-%dT%H",
  day: "%Y-%m-%d",
  week: undefined,
  month: "%Y-%m",
  quarter: "%Y-Q%m",
  year: "%Y",
};

/** The shortest period of a grain, in seconds (a month of 28 days, a quarter of 89, a year of 365). */
export const GRAIN_MIN_SECONDS: Readonly<Record<Grain, number>> = {
  hour: 3600,
  day: 86400,
  week: 7 * 86400,
  month: 28 * 86400,
  quarter: 89 * 86400,
  year: 365 * 86400,
};

/** A mapper a consumer's `PartitionedAssetTimetable` applies to one upstream's keys. */
export interface MapperPlan {
  /** The Task SDK class (`airflow.sdk.<mapper>`). */
  mapper: "IdentityMapper" | "StartOfDayMapper" | "StartOfWeekMapper" | "StartOfMonthMapper" | "StartOfQuarterMapper" | "StartOfYearMapper";
  /** strptime pattern of the upstream key; absent for `IdentityMapper`. */
  input_format?: string;
  /** strftime pattern of the consumer key; absent for `IdentityMapper`. */
  output_format?: string;
}

const START_OF: Readonly<Partial<Record<Grain, MapperPlan["mapper"]>>> = {
  day: "StartOfDayMapper",
  week: "StartOfWeekMapper",
  month: "StartOfMonthMapper",
  quarter: "StartOfQuarterMapper",
  year: "StartOfYearMapper",
};

/** Why an upstream grain cannot feed a consumer grain on the pinned Airflow. */
export type MapperRefusal = "coarser-upstream" | "misaligned";

/**
 * The mapper from an upstream's grain to its consumer's, by the table for
 * `PARTITION_TABLE_AIRFLOW_VERSION`: identity for equal grains; the start-of-period mapper of the
 * consumer's grain from a finer one. Refused: a coarser upstream (no mapper splits a key), a week
 * into a month, quarter or year (a week can span two of them), and an ISO-week key as a mapper's
 * input (3.2's strptime cannot read it).
 */
export function mapperFor(upstream: Grain, consumer: Grain): MapperPlan | MapperRefusal {
  if (upstream === consumer) return { mapper: "IdentityMapper" };
  if (GRAINS.indexOf(upstream) > GRAINS.indexOf(consumer)) return "coarser-upstream";
  // A week can span two months, quarters or years; it is also the one key 3.2's strptime cannot read.
  if (upstream === "week") return "misaligned";
  return { mapper: START_OF[consumer]!, input_format: KEY_INPUT_FORMATS[upstream]!, output_format: KEY_FORMATS[consumer] };
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** The UTC start of the period of `grain` holding instant `t` (ms since the epoch). */
export function periodStart(grain: Grain, t: number): number {
  const d = new Date(t);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  switch (grain) {
    case "hour":
      return Math.floor(t / HOUR_MS) * HOUR_MS;
    case "day":
      return Math.floor(t / DAY_MS) * DAY_MS;
    case "week": {
      const day = Math.floor(t / DAY_MS) * DAY_MS;
      const weekday = (new Date(day).getUTCDay() + 6) % 7; // Monday 0
      return day - weekday * DAY_MS;
    }
    case "month":
      return Date.UTC(y, m, 1);
    case "quarter":
      return Date.UTC(y, m - (m % 3), 1);
    case "year":
      return Date.UTC(y, 0, 1);
  }
}

/** The start of the period after the one starting at `start`. */
export function nextPeriodStart(grain: Grain, start: number): number {
  const d = new Date(start);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  switch (grain) {
    case "hour":
      return start + HOUR_MS;
    case "day":
      return start + DAY_MS;
    case "week":
      return start + 7 * DAY_MS;
    case "month":
      return Date.UTC(y, m + 1, 1);
    case "quarter":
      return Date.UTC(y, m + 3, 1);
    case "year":
      return Date.UTC(y + 1, 0, 1);
  }
}

const pad = (n: number, width = 2): string => String(n).padStart(width, "0");

/** ISO 8601 week-numbering year and week of a UTC instant. */
function isoWeek(t: number): { year: number; week: number } {
  const day = Math.floor(t / DAY_MS) * DAY_MS;
  const weekday = (new Date(day).getUTCDay() + 6) % 7;
  const thursday = new Date(day + (3 - weekday) * DAY_MS);
  const year = thursday.getUTCFullYear();
  const week = 1 + Math.floor((thursday.getTime() - Date.UTC(year, 0, 1)) / (7 * DAY_MS));
  return { year, week };
}

/** The key of the period of `grain` holding `t`, as Airflow formats it (`KEY_FORMATS`). */
export function partitionKey(grain: Grain, t: number): string {
  const d = new Date(periodStart(grain, t));
  const y = pad(d.getUTCFullYear(), 4);
  const m = pad(d.getUTCMonth() + 1);
  switch (grain) {
    case "hour":
      return `${y}-${m}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}`;
    case "day":
      return `${y}-${m}-${pad(d.getUTCDate())}`;
    case "week": {
      const w = isoWeek(d.getTime());
      return `${pad(w.year, 4)}-W${pad(w.week)}`;
    }
    case "month":
      return `${y}-${m}`;
    case "quarter":
      return `${y}-Q${Math.floor(d.getUTCMonth() / 3) + 1}`;
    case "year":
      return y;
  }
}

const KEY_PATTERNS: Readonly<Record<Grain, RegExp>> = {
  hour: /^(\d{4})-(\d{2})-(\d{2})T(\d{2})$/,
  day: /^(\d{4})-(\d{2})-(\d{2})$/,
  week: /^(\d{4})-W(\d{2})$/,
  month: /^(\d{4})-(\d{2})$/,
  quarter: /^(\d{4})-Q([1-4])$/,
  year: /^(\d{4})$/,
};

/**
 * The UTC [start, end) of a key of `grain` (ms since the epoch), or undefined when the key is not
 * one Airflow writes for that grain (`partitionKey(grain, start) === key` must hold).
 */
export function partitionBounds(grain: Grain, key: string): { start: number; end: number } | undefined {
  const match = KEY_PATTERNS[grain].exec(key);
  if (!match) return undefined;
  const [a, b, c, h] = match.slice(1).map(Number) as [number, number?, number?, number?];
  let start: number;
  switch (grain) {
    case "hour":
      start = Date.UTC(a, b! - 1, c!, h!);
      break;
    case "day":
      start = Date.UTC(a, b! - 1, c!);
      break;
    case "week": {
      const jan4 = Date.UTC(a, 0, 4);
      start = periodStart("week", jan4) + (b! - 1) * 7 * DAY_MS;
      break;
    }
    case "month":
      start = Date.UTC(a, b! - 1, 1);
      break;
    case "quarter":
      start = Date.UTC(a, (b! - 1) * 3, 1);
      break;
    case "year":
      start = Date.UTC(a, 0, 1);
      break;
  }
  if (partitionKey(grain, start) !== key) return undefined;
  return { start, end: nextPeriodStart(grain, start) };
}

/** Every key of `grain` whose period overlaps [from, to), in order; at most `limit` (default 100,000). */
export function keysInRange(grain: Grain, from: number, to: number, limit = 100_000): string[] {
  const keys: string[] = [];
  for (let t = periodStart(grain, from); t < to && keys.length < limit; t = nextPeriodStart(grain, t)) {
    keys.push(partitionKey(grain, t));
  }
  return keys;
}

/** The placeholder a partitioned ingestion's `source.uri` may hold: the run's key (runtime `producers/load.py`). */
export const PARTITION_PLACEHOLDER = "{partition}";

/**
 * The Asset URI of a source location that may hold {@link PARTITION_PLACEHOLDER}: the folder the
 * placeholder stands in, without its trailing `/` as Airflow normalises it
 * (`s3://exports/views/{partition}.csv` is the Asset `s3://exports/views`), since one Asset stands
 * for every partition's objects and a URI with a brace is not a valid Airflow Asset URI (RFC 3986
 * does not allow `{`). A location without the placeholder is returned as it is.
 */
export function sourceAssetUri(location: string): string {
  const at = location.indexOf(PARTITION_PLACEHOLDER);
  if (at < 0) return location;
  return location.slice(0, location.lastIndexOf("/", at));
}
