import fs from "node:fs";
import { describe, expect, it } from "vitest";
import type { AirflowAsset } from "../../compiler/airflow/airflowClient.js";
import type { Manifest } from "../../compiler/manifest/buildManifest.js";
import { maxCronGapSeconds, zoneOffset, zoneOffsetFromIntl } from "../../compiler/support/cron.js";
import { formatDurationSeconds } from "../../compiler/support/duration.js";
import { buildFreshnessReport, formatFreshnessJson, formatFreshnessText, freshnessExitCode, freshnessState, partitionFreshness, type LatestEvent, type PartitionFreshness } from "../../compiler/report/freshnessReport.js";
import type { Grain } from "../../compiler/support/partitions.js";

/** The point-in-time freshness states (the `freshness` command) and the cron gap behind CA4503. */

const policy = (name: string, maxAge: number, degrade: number | null) => ({
  name,
  uri: `x-lake://${name}`,
  producer: name,
  published_by: null,
  max_age: `PT${maxAge}S`,
  max_age_seconds: maxAge,
  degrade_after: degrade === null ? null : `PT${degrade}S`,
  degrade_after_seconds: degrade,
});

const airflowAsset = (id: number, name: string): AirflowAsset => ({ id, name, uri: `x-lake://${name}`, group: "g", extra: {}, scheduledDags: [], producingDags: [], consumingDags: [] });

describe("freshness report", () => {
  it("classifies ages with the monitor's thresholds", () => {
    const p = { max_age_seconds: 10, degrade_after_seconds: 20 };
    expect([null, 0, 10, 10.5, 20, 20.5].map((age) => freshnessState(age, p))).toEqual(["unknown", "fresh", "fresh", "stale", "stale", "degraded"]);
    expect(freshnessState(1e6, { max_age_seconds: 10, degrade_after_seconds: null })).toBe("stale");
  });

  it("reports every monitored asset and exits 1 when one is stale or degraded", () => {
    const now = new Date("2026-11-02T08:00:30Z");
    const manifest = {
      freshness_monitor: { assets: [policy("a.fresh", 60, 120), policy("a.stale", 10, 60), policy("a.degraded", 5, 10), policy("a.never", 5, null), policy("a.unparsed", 5, null)] },
    } as unknown as Manifest;
    const assets = [airflowAsset(1, "a.fresh"), airflowAsset(2, "a.stale"), airflowAsset(3, "a.degraded"), airflowAsset(4, "a.never")];
    const at = (t: string) => ({ timestamp: t, sourceDagId: "a.dag", fromRestApi: false });
    const latest = new Map([
      [1, at("2026-11-02T08:00:00Z")],
      [2, { timestamp: "2026-11-02T08:00:00+00:00", sourceDagId: null, fromRestApi: true }],
      [3, at("2026-11-02T07:59:00Z")],
      [4, undefined],
    ]);
    const report = buildFreshnessReport(manifest, assets, latest, { url: "http://127.0.0.1:1", version: "3.2.2", now });
    expect(report.assets.map((a) => [a.asset, a.state, a.age_seconds, a.last_event_source, a.in_airflow])).toEqual([
      ["a.degraded", "degraded", 90, "a.dag", true],
      ["a.fresh", "fresh", 30, "a.dag", true],
      ["a.never", "unknown", null, null, true],
      ["a.stale", "stale", 30, "rest_api", true],
      ["a.unparsed", "unknown", null, null, false],
    ]);
    expect(report.summary).toEqual({ unknown: 2, fresh: 1, stale: 1, degraded: 1 });
    expect(freshnessExitCode(report)).toBe(1);
    const text = formatFreshnessText(report);
    expect(text.split("\n")[0]).toBe("degraded  a.degraded  age PT1M30S, last event 2026-11-02T07:59:00.000Z by a.dag (max_age PT5S, degrade_after PT10S)");
    expect(text).toContain("a.unparsed  not in Airflow yet");
    const onlyFresh = buildFreshnessReport({ freshness_monitor: { assets: [policy("a.fresh", 60, 120)] } } as unknown as Manifest, assets, latest, { url: "u", version: "v", now });
    expect(freshnessExitCode(onlyFresh)).toBe(0);
  });
});

/** The shared vector of the partition rule; `contract_runtime.freshness.partition_freshness` is tested with it too. */
const vector = JSON.parse(fs.readFileSync(new URL("../fixtures/partition-freshness.json", import.meta.url), "utf8")) as {
  cases: { name: string; grain: Grain; keys: (string | null)[]; now: string; age_seconds: number | null; partitions: PartitionFreshness }[];
};

describe("partitioned freshness", () => {
  it.each(vector.cases.map((c) => [c.name, c] as const))("follows the shared vector: %s", (_name, c) => {
    const { age_seconds, partitions } = partitionFreshness(c.grain, c.keys, new Date(c.now));
    expect(age_seconds).toBe(c.age_seconds);
    const { newest_end, ...rest } = partitions;
    const { newest_end: expectedEnd, ...expectedRest } = c.partitions;
    expect(rest).toEqual(expectedRest);
    expect(newest_end === null ? null : Date.parse(newest_end)).toBe(expectedEnd === null ? null : Date.parse(expectedEnd));
  });

  it("reports a partitioned asset by its newest partition, names the missing ones, and keeps the state of the age", () => {
    const now = new Date("2026-12-07T06:00:00Z");
    const daily = { ...policy("s.daily", 26 * 3600, 3 * 86400), partition_grain: "day" as const };
    const late = { ...policy("s.late", 26 * 3600, null), partition_grain: "day" as const };
    const keyless = { ...policy("s.keyless", 60, null), partition_grain: "week" as const };
    const manifest = { freshness_monitor: { assets: [daily, late, keyless, policy("s.plain", 60, null)] } } as unknown as Manifest;
    const assets = [airflowAsset(1, "s.daily"), airflowAsset(2, "s.late"), airflowAsset(3, "s.keyless"), airflowAsset(4, "s.plain")];
    // the latest event of s.daily re-ran an old key a minute ago: it is neither the newest partition nor its age
    const event = (t: string) => ({ timestamp: t, sourceDagId: "s.dag", fromRestApi: false });
    const latest = new Map<number, LatestEvent>([
      [1, event("2026-12-07T05:59:00Z")],
      [2, event("2026-12-07T05:00:00Z")],
      [3, { timestamp: "2026-12-06T00:00:00Z", sourceDagId: null, fromRestApi: true }],
      [4, event("2026-12-07T05:59:00Z")],
    ]);
    const days = (from: number, to: number, skip: number[] = []) =>
      Array.from({ length: to - from + 1 }, (_, i) => from + i)
        .filter((d) => !skip.includes(d))
        .map((d) => `2026-11-${String(d).padStart(2, "0")}`);
    const keys = new Map<number, (string | null)[]>([
      [1, ["2026-12-02", "2026-12-03", "2026-12-05", "2026-12-06", "2026-12-02"]],
      [2, [...days(1, 30, [2, 3, 4, 5, 6, 7, 8]), "2026-12-04", null]],
      [3, [null, "2026-12-01"]],
    ]);
    const report = buildFreshnessReport(manifest, assets, latest, { url: "http://127.0.0.1:1", version: "3.2.2", now }, keys);
    const byName = new Map(report.assets.map((a) => [a.asset, a]));
    expect(byName.get("s.daily")).toEqual({
      asset: "s.daily",
      state: "fresh",
      age_seconds: 21600,
      last_event_at: "2026-12-07T05:59:00.000Z",
      max_age: "PT93600S",
      degrade_after: "PT259200S",
      last_event_source: "s.dag",
      in_airflow: true,
      partitions: { grain: "day", first: "2026-12-02", newest: "2026-12-06", newest_end: "2026-12-07T00:00:00.000Z", published: 4, missing: ["2026-12-04"], missing_count: 1, ignored_events: 0 },
    });
    // newest 2026-12-04 ended 2026-12-05T00:00Z, 54 h ago: stale (no degrade_after), with 7 + 3 missing days
    const lateEntry = byName.get("s.late")!;
    expect([lateEntry.state, lateEntry.age_seconds, lateEntry.partitions?.missing_count, lateEntry.partitions?.ignored_events]).toEqual(["stale", 54 * 3600, 10, 1]);
    expect(lateEntry.partitions?.missing).toEqual([...days(2, 8), "2026-12-01", "2026-12-02", "2026-12-03"]);
    // events, but none with a week key: unknown, not stale
    expect([byName.get("s.keyless")!.state, byName.get("s.keyless")!.age_seconds, byName.get("s.keyless")!.partitions?.ignored_events]).toEqual(["unknown", null, 2]);
    expect(byName.get("s.plain")!.partitions).toBeUndefined();
    expect(report.summary).toEqual({ unknown: 1, fresh: 2, stale: 1, degraded: 0 });
    // gaps alone do not fail the command; the stale one does
    expect(freshnessExitCode(report)).toBe(1);

    const lines = formatFreshnessText(report).split("\n");
    expect(lines[0]).toBe(
      "stale     s.late     newest partition 2026-12-04 (day, ended 2026-12-05T00:00:00.000Z), age P2DT6H, 10 missing: 2026-11-02, 2026-11-03, 2026-11-04, 2026-11-05, 2026-11-06 and 5 more, last event 2026-12-07T05:00:00.000Z by s.dag (max_age PT93600S)",
    );
    expect(lines).toContain(
      "fresh     s.daily    newest partition 2026-12-06 (day, ended 2026-12-07T00:00:00.000Z), age PT6H, 1 missing: 2026-12-04, last event 2026-12-07T05:59:00.000Z by s.dag (max_age PT93600S, degrade_after PT259200S)",
    );
    expect(lines).toContain("unknown   s.keyless  no week partition published, last event 2026-12-06T00:00:00.000Z by rest_api (max_age PT60S)");
    expect(lines.at(-2)).toBe("4 assets with a freshness policy in http://127.0.0.1:1 (Airflow 3.2.2): 0 degraded, 1 stale, 1 unknown, 2 fresh; 2 with missing partitions");
    const json = JSON.parse(formatFreshnessJson(report)) as { assets: { asset: string; partitions?: PartitionFreshness }[] };
    expect(json.assets.find((a) => a.asset === "s.late")!.partitions!.newest).toBe("2026-12-04");
    expect(json.assets.find((a) => a.asset === "s.plain")!.partitions).toBeUndefined();

    // without the key listing (an older caller), a partitioned asset has no partition published
    const none = buildFreshnessReport(manifest, assets, latest, { url: "u", version: "v", now });
    expect(none.assets.find((a) => a.asset === "s.daily")!.state).toBe("unknown");
  });
});

describe("cron gaps (CA4503)", () => {
  it("measures the longest gap between fires in the time zone", () => {
    expect(maxCronGapSeconds("*/15 * * * *", "UTC")).toBe(900);
    expect(maxCronGapSeconds("@daily", "UTC")).toBe(86400);
    expect(maxCronGapSeconds("0 6 * * 1", "UTC")).toBe(7 * 86400);
    // a DST change in Berlin makes one week an hour longer
    expect(maxCronGapSeconds("0 6 * * 1", "Europe/Berlin")).toBe(7 * 86400 + 3600);
    // weekdays only: Friday 18:00 to Monday 09:00
    expect(maxCronGapSeconds("0 9-18 * * 1-5", "UTC")).toBe(63 * 3600);
    expect(maxCronGapSeconds("@yearly", "UTC")).toBe(366 * 86400);
  });

  it("reads zone offsets from a table that agrees with Intl every 97 minutes and around each change, to the minute", () => {
    // Zones with DST, negative DST (Dublin), half- and quarter-hour offsets and a half-hour DST
    // step (Lord Howe), a two-hour step (Troll), southern-hemisphere DST and frequent changes
    // (Casablanca), besides the bench corpus's zones. 97 minutes: never in step with the table's probes.
    const zones = ["Europe/Berlin", "Europe/London", "America/New_York", "Asia/Tokyo", "Europe/Dublin", "Asia/Kathmandu", "America/St_Johns", "Australia/Lord_Howe", "Antarctica/Troll", "America/Santiago", "Africa/Casablanca", "Pacific/Chatham"];
    const mismatches: string[] = [];
    const check = (zone: string, t: number): number => {
      const offset = zoneOffsetFromIntl(zone, t);
      if (zoneOffset(zone, t) !== offset) mismatches.push(`${zone} at ${new Date(t).toISOString()}`);
      return offset;
    };
    for (const zone of zones) {
      let changes = 0;
      let previous: number | undefined;
      const step = 97 * 60000;
      for (let t = Date.UTC(2025, 11, 30); t < Date.UTC(2034, 0, 3); t += step) {
        const offset = check(zone, t);
        if (previous !== undefined && offset !== previous) {
          changes++;
          // the change happened within the last step: every minute of it, at its 30th second
          for (let m = t - step; m <= t; m += 60000) check(zone, m + 30000);
        }
        previous = offset;
      }
      if (!["Asia/Tokyo", "Asia/Kathmandu"].includes(zone) && changes < 6) mismatches.push(`${zone}: only ${changes} changes seen`);
    }
    expect(mismatches).toEqual([]);
    // outside the table's window the offset is Intl's
    expect(zoneOffset("Europe/Berlin", Date.UTC(2040, 6, 1))).toBe(2 * 3600000);
  });

  it("reads a zone's offset from Intl's wall clock as Intl's own offset name gives it", () => {
    // longOffset prints "GMT+05:45", "GMT-03:30" or "GMT": a second reading of the same ICU data.
    const named = (zone: string, t: number): number => {
      const name = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" }).formatToParts(t).find((p) => p.type === "timeZoneName")!.value;
      const m = /^GMT(?:([+-])(\d{2}):(\d{2}))?$/.exec(name)!;
      return m[1] === undefined ? 0 : (m[1] === "-" ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) * 60000;
    };
    const zones = ["Europe/Berlin", "America/New_York", "Asia/Kathmandu", "America/St_Johns", "Australia/Lord_Howe", "Pacific/Chatham", "Pacific/Kiritimati", "Etc/GMT+12", "UTC"];
    // Around midnight UTC and local (hour 00, never 24), a DST change, and outside the table's window.
    const instants = [Date.UTC(2026, 0, 1), Date.UTC(2026, 2, 29, 0, 59, 59), Date.UTC(2026, 2, 29, 1), Date.UTC(2026, 9, 25, 0, 30), Date.UTC(2026, 11, 31, 23, 59), Date.UTC(2040, 6, 1, 12)];
    const differing = zones.flatMap((zone) => instants.filter((t) => zoneOffsetFromIntl(zone, t) !== named(zone, t)).map((t) => `${zone} ${new Date(t).toISOString()}`));
    expect(differing).toEqual([]);
    expect(zoneOffsetFromIntl("Asia/Kathmandu", Date.UTC(2026, 5, 1))).toBe((5 * 60 + 45) * 60000);
    expect(zoneOffsetFromIntl("America/St_Johns", Date.UTC(2026, 0, 1))).toBe(-(3 * 60 + 30) * 60000);
  });

  it("names spans as ISO-8601 durations", () => {
    expect([0, 1, 90, 3600, 86400 + 7200, 7 * 86400 + 3600, 1.5].map(formatDurationSeconds)).toEqual(["PT0S", "PT1S", "PT1M30S", "PT1H", "P1DT2H", "P7DT1H", "PT1.5S"]);
  });
});
