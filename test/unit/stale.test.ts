import { describe, expect, it } from "vitest";
import type { AirflowAsset, AirflowAssetState } from "../../compiler/airflow/airflowClient.js";
import {
  compareWithAirflow,
  expectedAssetNames,
  formatStaleJson,
  formatStaleText,
  staleExitCode,
  type StaleManifestView,
} from "../../compiler/report/staleAssets.js";

const URL = "http://127.0.0.1:8080";

/** A manifest: two produced assets (a.one, a.two; a.two scheduled on a.one), one external source. */
function manifest(overrides: Partial<StaleManifestView> = {}): StaleManifestView {
  return {
    assets: [
      { name: "a.one", uri: "x-lake://raw/a/one", status: "active", renamed_from: [] },
      { name: "a.two", uri: "x-lake://curated/a/two", status: "active", renamed_from: ["a.two_old"] },
      { name: "src.export", uri: "s3://bucket/export", status: "active", renamed_from: [] },
    ],
    dags: [
      { dag_id: "a.one", inlets: ["src.export"], outlets: ["a.one"], schedule: { assets: null } },
      { dag_id: "a.two", inlets: ["a.one"], outlets: ["a.two"], schedule: { assets: { asset: "a.one" } } },
    ],
    ...overrides,
  };
}

let nextId = 1;
function asset(name: string, uri: string, more: Partial<AirflowAsset> = {}): AirflowAsset {
  return {
    id: nextId++,
    name,
    uri,
    group: name.split(".")[0]!,
    extra: { contract_id: name },
    scheduledDags: [],
    producingDags: [],
    consumingDags: [],
    ...more,
  };
}

/** Airflow holding exactly the manifest's assets, all active. */
function inSync(): AirflowAsset[] {
  return [
    asset("a.one", "x-lake://raw/a/one", { producingDags: ["a.one"], consumingDags: ["a.two"], scheduledDags: ["a.two"] }),
    asset("a.two", "x-lake://curated/a/two", { producingDags: ["a.two"] }),
    asset("src.export", "s3://bucket/export", { extra: { external: true, owner: "t" }, consumingDags: ["a.one"] }),
  ];
}

function state(active: AirflowAsset[], orphaned: AirflowAsset[] = []): AirflowAssetState {
  return { airflowVersion: "3.2.2", active, orphaned };
}

describe("expectedAssetNames", () => {
  it("collects inlets, outlets, task lineage and schedule leaves of every DAG", () => {
    const m = manifest({
      dags: [
        {
          dag_id: "d",
          inlets: ["i"],
          outlets: ["o"],
          schedule: { assets: { all: [{ asset: "s1" }, { any: [{ asset: "s2" }, { asset: "i" }] }] } },
          tasks: [{ inlets: ["t_in"], outlets: ["t_out"] }],
        },
      ],
    });
    expect([...expectedAssetNames(m)].sort()).toEqual(["i", "o", "s1", "s2", "t_in", "t_out"]);
  });

  it("does not expect assets no DAG uses (draft, retired, unused)", () => {
    const m = manifest();
    m.assets.push({ name: "a.draft", uri: "x-lake://curated/a/draft", status: "draft", renamed_from: [] });
    expect(expectedAssetNames(m).has("a.draft")).toBe(false);
  });
});

describe("compareWithAirflow", () => {
  it("reports nothing when Airflow holds exactly the declared assets", () => {
    const report = compareWithAirflow(manifest(), state(inSync()), URL);
    expect(report.stale).toEqual([]);
    expect(report.orphaned).toEqual([]);
    expect(report.missing).toEqual([]);
    expect(report.foreign).toEqual([]);
    expect(report.summary).toEqual({ expected: 3, in_sync: 3, stale: 0, orphaned: 0, missing: 0, foreign: 0 });
    expect(staleExitCode(report)).toBe(0);
  });

  it("compares URIs after Airflow's normalisation", () => {
    const m = manifest();
    m.assets[2] = { name: "src.export", uri: "S3://bucket/export/#frag", status: "active", renamed_from: [] };
    const report = compareWithAirflow(m, state(inSync()), URL);
    expect(report.summary.in_sync).toBe(3);
    expect(report.stale).toEqual([]);
  });

  it("lists an active asset the manifest no longer has as stale (removed), with the DAGs that hold it", () => {
    const held = asset("a.gone", "x-lake://curated/a/gone", { producingDags: ["a.gone"], consumingDags: ["a.two"] });
    const report = compareWithAirflow(manifest(), state([...inSync(), held]), URL);
    expect(report.stale).toEqual([
      {
        name: "a.gone",
        uri: "x-lake://curated/a/gone",
        reason: "removed",
        renamed_to: null,
        manifest_uri: null,
        manifest_status: null,
        dags: ["a.gone", "a.two"],
        dags_not_in_manifest: ["a.gone"],
      },
    ]);
    expect(staleExitCode(report)).toBe(1);
  });

  it("names the new asset of a rename declared with renamed_from", () => {
    const report = compareWithAirflow(manifest(), state([...inSync(), asset("a.two_old", "x-lake://curated/a/two_old")]), URL);
    expect(report.stale.map((e) => [e.name, e.reason, e.renamed_to])).toEqual([["a.two_old", "renamed", "a.two"]]);
  });

  it("lists a declared name held with another URI as stale (uri_changed) and the new row as missing", () => {
    const active = inSync().filter((a) => a.name !== "a.two");
    active.push(asset("a.two", "x-lake://reporting/a/two", { producingDags: ["a.two"] }));
    const waiting = asset("a.two", "x-lake://curated/a/two");
    const report = compareWithAirflow(manifest(), state(active, [waiting]), URL);
    expect(report.stale.map((e) => [e.name, e.uri, e.reason, e.manifest_uri])).toEqual([
      ["a.two", "x-lake://reporting/a/two", "uri_changed", "x-lake://curated/a/two"],
    ]);
    expect(report.missing).toEqual([{ name: "a.two", uri: "x-lake://curated/a/two", airflow: "inactive" }]);
    expect(report.summary).toMatchObject({ expected: 3, in_sync: 2, stale: 1, missing: 1 });
  });

  it("lists an orphaned old-URI row of a declared name as orphaned (uri_changed)", () => {
    const report = compareWithAirflow(manifest(), state(inSync(), [asset("a.two", "x-lake://reporting/a/two")]), URL);
    expect(report.orphaned.map((e) => [e.name, e.reason])).toEqual([["a.two", "uri_changed"]]);
    expect(staleExitCode(report)).toBe(0);
  });

  it("lists an active asset of a retired or draft contract as stale (not_deployed)", () => {
    const m = manifest();
    m.assets.push({ name: "a.retired", uri: "x-lake://curated/a/retired", status: "retired", renamed_from: [] });
    const report = compareWithAirflow(m, state([...inSync(), asset("a.retired", "x-lake://curated/a/retired")]), URL);
    expect(report.stale.map((e) => [e.name, e.reason, e.manifest_status])).toEqual([["a.retired", "not_deployed", "retired"]]);
  });

  it("lists assets Airflow has orphaned as orphaned: removal complete, exit 0", () => {
    const orphaned = [asset("a.gone", "x-lake://curated/a/gone"), asset("a.two_old", "x-lake://curated/a/two_old")];
    const report = compareWithAirflow(manifest(), state(inSync(), orphaned), URL);
    expect(report.orphaned.map((e) => [e.name, e.reason])).toEqual([
      ["a.gone", "removed"],
      ["a.two_old", "renamed"],
    ]);
    expect(report.stale).toEqual([]);
    expect(staleExitCode(report)).toBe(0);
  });

  it("keeps assets compiled elsewhere out of stale (foreign), active or not", () => {
    const other = asset("s3://other/bucket", "s3://other/bucket", { extra: {}, consumingDags: ["handwritten"] });
    const gone = asset("legacy", "file:///legacy", { extra: { owner: "x" } });
    const report = compareWithAirflow(manifest(), state([...inSync(), other], [gone]), URL);
    expect(report.foreign).toEqual([
      { name: "legacy", uri: "file:///legacy", active: false },
      { name: "s3://other/bucket", uri: "s3://other/bucket", active: true },
    ]);
    expect(report.stale).toEqual([]);
    expect(staleExitCode(report)).toBe(0);
  });

  it("treats an asset marked external: true by the compiler as its own", () => {
    const report = compareWithAirflow(manifest(), state([...inSync(), asset("old.source", "s3://old", { extra: { external: true } })]), URL);
    expect(report.stale.map((e) => [e.name, e.reason])).toEqual([["old.source", "removed"]]);
  });

  it("lists declared assets Airflow does not know yet as missing (unknown)", () => {
    const report = compareWithAirflow(manifest(), state(inSync().filter((a) => a.name !== "a.two")), URL);
    expect(report.missing).toEqual([{ name: "a.two", uri: "x-lake://curated/a/two", airflow: "unknown" }]);
    expect(staleExitCode(report)).toBe(0);
  });

  it("gives the same JSON for any input order, with sorted keys", () => {
    const active = [...inSync(), asset("z.gone", "x-lake://z"), asset("b.gone", "x-lake://b"), asset("m.gone", "x-lake://m2"), asset("m.gone", "x-lake://m1")];
    const orphaned = [asset("y.old", "x-lake://y"), asset("c.old", "x-lake://c")];
    const m = manifest();
    const shuffled: StaleManifestView = { assets: [...m.assets].reverse(), dags: [...m.dags].reverse() };
    const one = formatStaleJson(compareWithAirflow(m, state(active, orphaned), URL));
    const two = formatStaleJson(compareWithAirflow(shuffled, state([...active].reverse(), [...orphaned].reverse()), URL));
    expect(two).toBe(one);
    const parsed = JSON.parse(one) as { stale: Array<{ name: string; uri: string }>; orphaned: Array<{ name: string }> };
    expect(parsed.stale.map((e) => `${e.name} ${e.uri}`)).toEqual(["b.gone x-lake://b", "m.gone x-lake://m1", "m.gone x-lake://m2", "z.gone x-lake://z"]);
    expect(parsed.orphaned.map((e) => e.name)).toEqual(["c.old", "y.old"]);
    expect(Object.keys(JSON.parse(one) as object)).toEqual(["airflow", "foreign", "missing", "orphaned", "reportVersion", "stale", "summary"]);
    expect(one.endsWith("}\n")).toBe(true);
  });
});

describe("formatStaleText", () => {
  it("prints one sorted line per asset and a summary", () => {
    const active = [...inSync().filter((a) => a.name !== "a.two"), asset("a.gone", "x-lake://g", { consumingDags: ["a.gone_consumer"] }), asset("a.free", "x-lake://f")];
    const report = compareWithAirflow(manifest(), state(active, [asset("a.two_old", "x-lake://o")]), URL);
    expect(formatStaleText(report)).toBe(
      [
        "stale     a.free  x-lake://f  removed from the manifest; no DAG references it: the scheduler orphans it within [scheduler] parsing_cleanup_interval",
        "stale     a.gone  x-lake://g  removed from the manifest; still referenced by DAG a.gone_consumer, which the manifest no longer has (airflow dags delete a.gone_consumer ends that)",
        "orphaned  a.two_old  x-lake://o  renamed to a.two; removal complete",
        "missing   a.two  x-lake://curated/a/two  not yet known to Airflow (its DAG is not parsed yet)",
        "2 stale, 1 orphaned, 1 missing, 0 foreign; 2 of 3 expected assets active in Airflow 3.2.2 at http://127.0.0.1:8080",
        "",
      ].join("\n"),
    );
  });

  it("masks URI credentials", () => {
    const report = compareWithAirflow(manifest(), state([...inSync(), asset("a.gone", "s3://user:secret@bucket/key")]), "http://admin:pw@host");
    const text = formatStaleText(report);
    const json = formatStaleJson(report);
    for (const out of [text, json]) {
      expect(out).not.toContain("secret");
      expect(out).not.toContain(":pw@");
      expect(out).toContain("s3://***@bucket/key");
    }
  });
});
