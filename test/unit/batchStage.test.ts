import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { BATCH_STAGE_AFTER, startBatchStager } from "../../compiler/write/batchStager.js";
import { openWrite, type WriteOptions } from "../../compiler/write/writeOutputs.js";
import { snapshot, STALLING_THREAD, temporaryRoots, TEST_HEADER, THROWING_THREAD, tree } from "./helpers.js";

// A write's small changed files after its first ones are staged by a thread (ADR 0020). What is
// written and reported, and every failure, are the same as when the calling thread stages them
// all; a thread that cannot start, throws or stalls is done without.

const { root } = temporaryRoots("ca-batch-");
const HEADER = TEST_HEADER;
const THROWS = THROWING_THREAD;
const STALLS = STALLING_THREAD;
/** Staged by the thread from the first file on. */
const EARLY: WriteOptions["batch"] = { after: 0 };
const NONE: WriteOptions["batch"] = { script: null };

/** `count` modules (a few folders, some texts beyond ASCII), as a compile renders them. */
function modules(count: number): Array<[string, string]> {
  return Array.from({ length: count }, (_, i) => [`generated/dags/d${i % 7}/m${String(i).padStart(4, "0")}.py`, `${HEADER}dag_id = "m${i}"  # ${"é€😀".repeat(i % 3)}${"x".repeat(i * 13)}\n`]);
}

/** One write of `files` with `batch`, in a fresh root (`prepare` first); its report, diagnostics and the root. */
function write(files: Array<[string, string]>, batch: WriteOptions["batch"], prepare?: (dir: string) => void) {
  const dir = root();
  prepare?.(dir);
  const w = openWrite(defaultLayout(dir), { check: false, batch });
  for (const [relative, text] of files) w.add(relative, text);
  const result = w.finish();
  return { dir, report: result.value, diagnostics: result.diagnostics.map((d) => [d.code, d.location?.file, d.message]) };
}

const temporaries = (dir: string): string[] => tree(dir).filter((f) => f.includes(".tmp-"));

describe("the write's batch staging thread", () => {
  it("writes the bytes the calling thread writes, and reports the same", () => {
    const files = modules(300);
    const threaded = write(files, EARLY);
    const here = write(files, NONE);
    expect(snapshot(threaded.dir)).toEqual(snapshot(here.dir));
    expect(snapshot(threaded.dir).size).toBe(300);
    for (const [relative, text] of files.slice(0, 5)) expect(fs.readFileSync(path.join(threaded.dir, relative), "utf8")).toBe(text);
    expect(threaded.report).toEqual(here.report);
    expect(threaded.report.written).toHaveLength(300);
    expect(threaded.diagnostics).toEqual([]);
    expect(temporaries(threaded.dir)).toEqual([]);
  });

  it("writes each file it is posted into its new temporary, and gives back none once it counted them all", () => {
    const dir = root();
    const stager = startBatchStager<string>();
    expect(stager).toBeDefined();
    const posted = modules(40).map(([relative, text]) => [path.join(dir, `${relative.replaceAll("/", "_")}.tmp`), text] as const);
    for (const [temp, text] of posted) expect(stager!.post(temp, text, temp)).toBe(true);
    expect(stager!.drain()).toEqual({ left: [] });
    for (const [temp, text] of posted) expect(fs.readFileSync(temp, "utf8")).toBe(text);
    // Drained once: it takes nothing more.
    expect(stager!.post(path.join(dir, "late.tmp"), "late", "late")).toBe(false);
    expect(fs.existsSync(path.join(dir, "late.tmp"))).toBe(false);
  });

  it("gives its first failure with the file's tag, and writes nothing after it", () => {
    const dir = root();
    const stager = startBatchStager<number>()!;
    stager.post(path.join(dir, "a.tmp"), "a", 0);
    stager.post(path.join(dir, `${"n".repeat(300)}.tmp`), "n", 1);
    stager.post(path.join(dir, "b.tmp"), "b", 2);
    expect(stager.drain()).toEqual({ failed: { tag: 1, reason: "ENAMETOOLONG" }, left: [] });
    expect(fs.readdirSync(dir)).toEqual(["a.tmp"]);
  });

  it("gives back, with their texts, the files it did not count when it stalls", () => {
    const dir = root();
    const stager = startBatchStager<number>({ script: STALLS, stallMs: 200 })!;
    stager.post(path.join(dir, "a.tmp"), "a", 0);
    stager.post(path.join(dir, "b.tmp"), "b", 1);
    expect(stager.drain()).toEqual({ left: [{ temp: path.join(dir, "a.tmp"), text: "a", tag: 0 }, { temp: path.join(dir, "b.tmp"), text: "b", tag: 1 }] });
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it("starts only past the write's first BATCH_STAGE_AFTER files, staging those itself", () => {
    // A thread that stalls is waited for: the write takes at least its stall time only when it started one.
    const timed = (count: number, stallMs: number) => {
      const files = modules(count);
      const started = Date.now();
      const run = write(files, { script: STALLS, stallMs });
      expect(snapshot(run.dir)).toEqual(snapshot(write(files, NONE).dir));
      return Date.now() - started;
    };
    expect(timed(BATCH_STAGE_AFTER, 5_000)).toBeLessThan(5_000);
    expect(timed(BATCH_STAGE_AFTER + 1, 300)).toBeGreaterThanOrEqual(300);
  });

  it("says a file it cannot create as the calling thread does (CA9003, the first failing file), with nothing renamed and no temporary left", () => {
    const files = modules(200);
    // Too long for the file system once the temporary's suffix is added (NAME_MAX is 255 bytes).
    files.splice(120, 0, [`generated/dags/${"n".repeat(245)}.py`, `${HEADER}n = 1\n`]);
    files.splice(150, 0, [`generated/dags/${"o".repeat(245)}.py`, `${HEADER}o = 1\n`]);
    const runs = [EARLY, NONE].map((batch) => {
      const run = write(files, batch, (dir) => fs.mkdirSync(path.join(dir, "generated")));
      expect(tree(run.dir)).toEqual(["generated/"]);
      return run;
    });
    expect(runs[1]!.diagnostics).toEqual([["CA9003", files[120]![0], expect.stringContaining("ENAMETOOLONG")]]);
    expect(runs[0]!.diagnostics).toEqual(runs[1]!.diagnostics);
    expect(runs[0]!.report).toEqual(runs[1]!.report);
  });

  it("still says a blocked path offered after the thread's failure, as the calling thread does", () => {
    const files = modules(200);
    files.splice(100, 0, [`generated/dags/${"n".repeat(245)}.py`, `${HEADER}n = 1\n`]);
    // A folder where a later module goes.
    const blocked = files[160]![0];
    const runs = [EARLY, NONE].map((batch) => write(files, batch, (dir) => fs.mkdirSync(path.join(dir, blocked), { recursive: true })));
    expect(runs[1]!.diagnostics.map((d) => d.slice(0, 2))).toEqual([
      ["CA9003", files[100]![0]],
      ["CA9003", blocked],
    ]);
    expect(runs[0]!.diagnostics).toEqual(runs[1]!.diagnostics);
    for (const run of runs) expect(temporaries(run.dir)).toEqual([]);
  });

  for (const [name, script] of [["throws", THROWS], ["stalls", STALLS]] as const) {
    it(`is done without when it ${name}: the same files, no temporary left`, () => {
      // More files than it may hold uncounted: the write waits for it while posting, then gives it up.
      const files = modules(700);
      const started = Date.now();
      const failing = write(files, { after: 0, script, stallMs: 300 });
      // The write waited for the thread it started before it gave it up.
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);
      expect(failing.diagnostics).toEqual([]);
      expect(snapshot(failing.dir)).toEqual(snapshot(write(files, NONE).dir));
      expect(temporaries(failing.dir)).toEqual([]);
    });
  }

  it("removes what it staged when the write is discarded", () => {
    const dir = root();
    const w = openWrite(defaultLayout(dir), { check: false, batch: EARLY });
    for (const [relative, text] of modules(150)) w.add(relative, text);
    w.discard();
    expect(tree(dir)).toEqual([]);
  });

  it("stages nothing with check", () => {
    const dir = root();
    const w = openWrite(defaultLayout(dir), { check: true, batch: EARLY });
    for (const [relative, text] of modules(150)) w.add(relative, text);
    const result = w.finish();
    expect(result.value.written).toHaveLength(150);
    expect(tree(dir)).toEqual([]);
  });
});
