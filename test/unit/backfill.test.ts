import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../../compiler/cli.js";
import { parseInstant } from "../../compiler/report/backfillCommand.js";
import { CASES, stageCase } from "../golden/golden.js";

// `backfill` without an Airflow: the keys of a range, as the compiler's partition table formats
// them, and the refusals (issue 35 item 6). Against a running api-server it lists the runs of the
// DAG by partition_key and starts the missing ones (test/python, live stack).

const roots: string[] = [];
afterAll(() => roots.forEach((r) => fs.rmSync(r, { recursive: true, force: true })));

async function compiledChain(): Promise<string> {
  const root = stageCase(path.join(CASES, "partition-chain"));
  roots.push(root);
  const compiled = await runCli(["compile", "--root", root]);
  expect(compiled.exitCode, compiled.stderr).toBe(0);
  return root;
}

describe("backfill", () => {
  it("lists the UTC keys of the asset's grain whose periods overlap [from, to), as a dry run", async () => {
    const root = await compiledChain();
    const hourly = await runCli(["backfill", "web.events_hourly", "--from", "2026-12-07T22:30Z", "--to", "2026-12-08T01:00Z", "--root", root]);
    expect(hourly.exitCode, hourly.stderr).toBe(0);
    expect(hourly.stdout).toBe(
      [
        'web.events_hourly (DAG web.events_hourly, hour partitions by event_time): 3 key(s) in [2026-12-07T22:30Z, 2026-12-08T01:00Z)',
        "  2026-12-07T22  unknown",
        "  2026-12-07T23  unknown",
        "  2026-12-08T00  unknown",
        "dry run: 3 key(s); pass --airflow-url to see which are missing, and --run to start them",
        "",
      ].join("\n"),
    );
    const daily = await runCli(["backfill", "web.events_daily", "--from", "2026-02-27", "--to", "2026-03-02", "--format", "json", "--root", root]);
    expect(daily.exitCode, daily.stderr).toBe(0);
    expect(JSON.parse(daily.stdout).keys.map((k: { key: string }) => k.key)).toEqual(["2026-02-27", "2026-02-28", "2026-03-01"]);
  });

  it("refuses what it cannot fill, with one line that says why", async () => {
    const root = await compiledChain();
    const cases: Array<[string[], RegExp]> = [
      [["web.countries", "--from", "2026-12-01", "--to", "2026-12-02"], /"web.countries" is not partitioned: its contract declares no "partitioning"/],
      [["web.nope", "--from", "2026-12-01", "--to", "2026-12-02"], /no asset "web.nope" in the manifest \(partitioned assets: web.events_by_country, web.events_daily, web.events_hourly\)/],
      [["web.events_daily", "--from", "2026-12-02", "--to", "2026-12-01"], /--to \(2026-12-01\) must be after --from \(2026-12-02\)/],
      [["web.events_daily", "--from", "yesterday", "--to", "2026-12-01"], /--from "yesterday" is not an ISO 8601 date or date-time/],
      [["web.events_daily", "--from", "2026-12-01", "--to", "2026-12-05", "--run"], /--run needs --airflow-url/],
      [["web.events_hourly", "--from", "2026-01-01", "--to", "2027-01-01"], /more than 1000 hour keys/],
    ];
    for (const [args, message] of cases) {
      const out = await runCli(["backfill", ...args, "--root", root]);
      expect(out.exitCode, args.join(" ")).toBe(2);
      expect(out.stderr, args.join(" ")).toMatch(message);
      expect(out.stdout).toBe("");
    }
  });

  it("reads ISO 8601 instants as UTC unless they carry an offset", () => {
    expect(parseInstant("2026-12-07")).toBe(Date.UTC(2026, 11, 7));
    expect(parseInstant("2026-12-07T05")).toBe(Date.UTC(2026, 11, 7, 5));
    expect(parseInstant("2026-12-07T05:30Z")).toBe(Date.UTC(2026, 11, 7, 5, 30));
    expect(parseInstant("2026-12-07T05:30+02:00")).toBe(Date.UTC(2026, 11, 7, 3, 30));
    expect(parseInstant("2026-12-07 05:30")).toBeNaN();
  });
});
