import { describe, expect, it } from "vitest";
import type { AirflowAsset } from "../../compiler/airflow/airflowClient.js";
import type { Manifest } from "../../compiler/manifest/buildManifest.js";
import { maxCronGapSeconds, zoneOffset, zoneOffsetFromIntl } from "../../compiler/support/cron.js";
import { formatDurationSeconds } from "../../compiler/support/duration.js";
import { buildFreshnessReport, formatFreshnessText, freshnessExitCode, freshnessState } from "../../compiler/report/freshnessReport.js";

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
