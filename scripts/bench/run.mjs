#!/usr/bin/env node
// npm run bench: the compiler's figures at 100, 1,000 and 10,000 synthetic contracts (a cold
// compile against the floor, the no-op compile, compile --check and validate against a cold
// compile, the warm edit-one compile, peak memory, the manifest's size, scaling), the generated
// DAG modules in Airflow (DagBag fill against hand-written modules and dag-factory, a real
// airflow dag-processor), the lineage emit hook, the produce/audit/publish operators against a
// bare SQLExecuteQueryOperator, and the dbt producer; each figure with its target (README,
// Performance). Verdicts are given at 10,000 contracts; a run without that size prints n/a.
//
//   node scripts/bench/run.mjs [options]
//     --out FILE            write the results as JSON there (default: a file in the system's
//                           temporary folder, whose path is printed)
//     --sizes 100,1000,...  corpus sizes (default 100,1000,10000; with --quick 100,1000)
//     --seed N              the corpus's seed (default 20250101)
//     --quick               fewer runs of each command, and sizes 100,1000 unless --sizes
//     --profile             a CPU profile of the cold compile at the largest size
//     --no-build            measure dist/ as it is (default: build the sources into the work folder)
//     --skip-airflow        no DagBag fill or dag-processor; --skip-dag-processor: no dag-processor
//     --skip-runtime        no emit hook, operator or dbt figure; --skip-operators, --skip-dbt: not those
//     --skip-live           no live-stack figure (Asset-hop latency and the corpus' wall time on the
//                           LocalExecutor and CeleryExecutor stacks: about 15 minutes)
//     --keep                keep the work folder
//
// Everything runs in a temporary folder (removed at the end unless --keep). Every timed command
// runs in a fresh process. Figures are medians; ratios are ratios of medians of the same run.

import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import fg from "fast-glob";
import { workerCountFor } from "../../dist/compiler/parse/parallelParse.js";
import { writeCorpus } from "./corpus.mjs";
import { formatSummary, summarise } from "./cpuprofile.mjs";
import { writeDagFactory, writeHandWritten } from "./peers.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
let BIN = path.join(REPO, "bin", "contract-assets.js");
const FLOOR = path.join(HERE, "floor.mjs");
const RUSAGE = path.join(HERE, "rusage.mjs");
const PYTHON = path.join(REPO, ".venv", "bin", "python");
const NODE = process.execPath;

// ------------------------------------------------------------------------------------ options

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const option = (name, fallback) => {
  const i = argv.indexOf(name);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : fallback;
};
if (flag("--help") || flag("-h")) {
  const header = fs.readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").slice(1);
  process.stdout.write(header.slice(0, header.findIndex((l) => !l.startsWith("//"))).map((l) => l.replace(/^\/\/ ?/, "")).join("\n") + "\n");
  process.exit(0);
}
{
  // A misspelt option must not run what it meant to skip.
  const known = new Set(["--quick", "--profile", "--no-build", "--skip-airflow", "--skip-dag-processor", "--skip-runtime", "--skip-operators", "--skip-dbt", "--skip-live", "--keep"]);
  const valued = new Set(["--out", "--sizes", "--seed"]);
  for (let i = 0; i < argv.length; i++) {
    if (valued.has(argv[i]) && argv[i + 1] !== undefined) i++;
    else if (!known.has(argv[i])) {
      process.stderr.write(`bench: unknown option ${JSON.stringify(argv[i])} (see --help)\n`);
      process.exit(2);
    }
  }
}
const QUICK = flag("--quick");
const SIZES = option("--sizes", QUICK ? "100,1000" : "100,1000,10000").split(",").map(Number).filter((n) => Number.isInteger(n) && n >= 10).sort((a, b) => a - b);
const SEED = Number(option("--seed", "20250101"));
const RUNS = (n) => (QUICK ? 3 : n >= 10000 ? 3 : 5 + (n <= 100 ? 2 : 0));
const NOOP_RUNS = (n) => (QUICK ? 2 : n >= 10000 ? 3 : 5);
const EDIT_RUNS = (n) => (QUICK ? 2 : n >= 10000 ? 3 : 5);
// The first compile of a clone (empty generated/ and cache), which fills the cache.
const POPULATE_RUNS = (n) => (QUICK ? 1 : 3);
const VERSION_RUNS = QUICK ? 10 : 15;
// Measured DagBag fills per variant (after one unmeasured fill that writes __pycache__); dag-factory
// takes many times longer, so it gets fewer.
const AIRFLOW_ROUNDS = QUICK ? 2 : 5;
const DAGFACTORY_ROUNDS = QUICK ? 2 : 3;
const EMIT_EVENTS = 240;
// Operator overhead rounds: with a one-DAG manifest, and with the AIRFLOW_SIZE corpus's manifest
// (every task reads and checks the whole manifest, so those rounds take far longer).
const OPERATOR_ROUNDS = QUICK ? 3 : 7;
const OPERATOR_CORPUS_ROUNDS = QUICK ? 1 : 3;
const AIRFLOW_SIZE = SIZES.includes(1000) ? 1000 : SIZES.filter((n) => n <= 1000).pop() ?? SIZES[0];
// airflow dag-processor: DAG files per variant, and the interleaved batches they are parsed in
// (one dag-processor process per batch and variant, alternating the order).
const DAG_PROCESSOR_FILES = QUICK ? 100 : 1000;
const DAG_PROCESSOR_BATCHES = QUICK ? 2 : 4;

const TARGETS = {
  compileVsFloor: { max: 1.25, label: "compile of 10,000 within 1.25x the floor (issue 16; issue 6's was 2x)" },
  peakMemory: { max: 1024, label: "peak RSS of every compile command at 10,000 <= 1 GiB (issue 16)" },
  manifestSize: { max: 0.5, label: "manifest at 10,000 at most half the size of the same manifest as manifestVersion 1 wrote it (issue 16)" },
  scaling: { max: 11, label: "scaling time(10,000) / time(1,000) <= 11" },
  noopWrites: { max: 0, label: "no-op recompile writes 0 files" },
  noopVsCold: { max: 1, label: "no-op compile of 10,000 within 1.0x a cold compile" },
  checkVsCold: { max: 1, label: "compile --check of 10,000 within 1.0x a cold compile" },
  validateVsCold: { max: 1, label: "validate of 10,000 within 1.0x a cold compile" },
  editOneVsCold: { max: 0.2, label: "compile after editing one contract of 10,000, warm cache, within 0.2x a cold compile, output identical to a cold compile's (issue 16)" },
  vsHand: { max: 1.2, label: "generated modules import within 1.2x the hand-written ones" },
  vsDagFactory: { min: 3, label: "generated modules import >= 3x faster than dag-factory" },
  dagProcessorVsHand: { max: 1.2, label: "airflow dag-processor parse time of the generated files within 1.2x the hand-written ones" },
  emit: { max: 20, label: "emit overhead <= 20 ms per event" },
  operatorOverhead: { max: 50, label: "produce/audit/publish add <= 50 ms per task over a bare SQLExecuteQueryOperator (same SQL; the corpus's manifest)" },
  operatorOverheadOneDag: { max: 50, label: "produce/audit/publish add <= 50 ms per task over a bare SQLExecuteQueryOperator (same SQL; a one-DAG manifest)" },
};

// ------------------------------------------------------------------------------------ helpers

const started = Date.now();
const out = (line = "") => process.stdout.write(line + "\n");
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const round = (x, d = 3) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : null);
const sec = (ms) => (ms >= 10000 ? `${(ms / 1000).toFixed(1)} s` : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
const mib = (kb) => `${(kb / 1024).toFixed(0)} MiB`;
const x = (r) => (Number.isFinite(r) ? `${r.toFixed(2)}x` : "n/a");
const verdict = (ok) => (ok === undefined ? "n/a " : ok ? "PASS" : "MISS");
const work = fs.mkdtempSync(path.join(os.tmpdir(), "contract-assets-bench-"));

/**
 * Moves `dir` (when it is there) into the work folder's set-aside/ instead of deleting it; the
 * work folder goes at the end. A timed run that creates thousands of files must not follow the
 * deletion of thousands of others: on ext4 without a journal (this bench's VM) each new inode is
 * looked for past every inode of its group deleted in the last 60 s (6 min while the inode table
 * is unwritten: the kernel's `recently_deleted`), which made a cold compile of 10,000 right after
 * `rm -rf generated/` take 1.7-1.9x as long, 8-10 s of it kernel time (ADR 0017y).
 */
let setAsideCount = 0;
function setAside(dir) {
  if (!fs.existsSync(dir)) return;
  const bin = path.join(work, "set-aside");
  fs.mkdirSync(bin, { recursive: true });
  fs.renameSync(dir, path.join(bin, `${setAsideCount++}-${path.basename(dir)}`));
}
const resultsPath = path.resolve(option("--out", path.join(os.tmpdir(), `contract-assets-bench-${new Date().toISOString().replace(/[:.]/g, "-")}.json`)));

function gnuTime() {
  if (!fs.existsSync("/usr/bin/time")) return false;
  const probe = path.join(work, "time-probe.txt");
  const r = spawnSync("/usr/bin/time", ["-v", "-o", probe, "true"], { stdio: "ignore" });
  return r.status === 0 && fs.existsSync(probe) && fs.readFileSync(probe, "utf8").includes("Maximum resident set size");
}
const GNU_TIME = gnuTime();

/**
 * Runs `node script args` in a fresh process and measures it: wall time in this process, peak RSS
 * and CPU time of the child from GNU time (or, without it, from process.resourceUsage() in a
 * wrapper that runs the script in-process).
 */
function measureNode(script, args, options = {}) {
  const usage = path.join(work, "usage.txt");
  fs.rmSync(usage, { force: true });
  const [cmd, cmdArgs] = GNU_TIME ? ["/usr/bin/time", ["-v", "-o", usage, NODE, ...(options.nodeFlags ?? []), script, ...args]] : [NODE, [...(options.nodeFlags ?? []), RUSAGE, usage, script, ...args]];
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, cmdArgs, { cwd: options.cwd ?? REPO, encoding: "utf8", maxBuffer: 512 * 1024 * 1024, env: options.env ?? process.env });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  let rssKb = NaN;
  let cpuS = NaN;
  let sysS = NaN;
  if (fs.existsSync(usage)) {
    const text = fs.readFileSync(usage, "utf8");
    if (GNU_TIME) {
      const num = (label) => Number((new RegExp(`${label}:\\s*([\\d.]+)`).exec(text) ?? [])[1]);
      rssKb = num("Maximum resident set size \\(kbytes\\)");
      sysS = num("System time \\(seconds\\)");
      cpuS = num("User time \\(seconds\\)") + sysS;
    } else {
      const u = JSON.parse(text);
      rssKb = u.maxRssKb;
      sysS = u.systemSeconds;
      cpuS = u.userSeconds + sysS;
    }
  }
  return { wallMs, rssKb, cpuS, sysS, exit: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

function run(cmd, args, options = {}) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { cwd: options.cwd ?? REPO, encoding: "utf8", maxBuffer: 512 * 1024 * 1024, env: options.env ?? process.env });
  return { wallMs: Number(process.hrtime.bigint() - t0) / 1e6, exit: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "", error: r.error };
}

/** Every file under a folder with its inode and modification time in nanoseconds. */
function snapshot(dir) {
  const files = new Map();
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.name === "__pycache__") continue;
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const s = fs.statSync(p, { bigint: true });
        files.set(path.relative(dir, p), `${s.ino}:${s.mtimeNs}`);
      }
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return files;
}
/** Files added, removed, replaced (inode) or modified (mtime) between two snapshots. */
function changedFiles(before, after) {
  const names = [];
  for (const [f, v] of after) if (before.get(f) !== v) names.push(f);
  for (const f of before.keys()) if (!after.has(f)) names.push(f);
  return names;
}

function pythonJson(script, args, env) {
  const r = run(PYTHON, [path.join(HERE, script), ...args], { env });
  const line = r.stdout.split("\n").find((l) => l.startsWith("RESULT "));
  if (!line) throw new Error(`${script} failed (exit ${r.exit}):\n${(r.stderr || r.stdout).split("\n").slice(-15).join("\n")}`);
  return { ...JSON.parse(line.slice("RESULT ".length)), processWallMs: r.wallMs };
}

function die(message) {
  out(`\nbench: ${message}`);
  if (!flag("--keep")) fs.rmSync(work, { recursive: true, force: true });
  process.exit(1);
}

// ------------------------------------------------------------------------------------ machine

function machine() {
  const cpus = os.cpus();
  const py = (code) => {
    if (!fs.existsSync(PYTHON)) return null;
    const r = run(PYTHON, ["-c", code]);
    return r.exit === 0 ? r.stdout.trim() : null;
  };
  const versions = py(
    "import json, platform\nfrom importlib.metadata import version\n" +
      "def v(p):\n    try:\n        return version(p)\n    except Exception:\n        return None\n" +
      "print(json.dumps({'python': platform.python_version(), 'airflow': v('apache-airflow'), 'dag_factory': v('dag-factory'), 'openlineage_python': v('openlineage-python')}))",
  );
  const v = versions ? JSON.parse(versions) : {};
  return {
    cpu: cpus[0]?.model?.trim() ?? "unknown",
    cores: typeof os.availableParallelism === "function" ? os.availableParallelism() : cpus.length,
    memoryGiB: round(os.totalmem() / 2 ** 30, 1),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    python: v.python ?? null,
    airflow: v.airflow ?? null,
    dagFactory: v.dag_factory ?? null,
    openlineagePython: v.openlineage_python ?? null,
    loadAverageAtStart: os.loadavg().map((l) => round(l, 2)),
    measuredWith: GNU_TIME ? "/usr/bin/time -v (peak RSS and CPU of the child)" : "process.resourceUsage() in a wrapper (no GNU time)",
  };
}

// ------------------------------------------------------------------------------------ main

const results = { issue: 6, startedAt: new Date(started).toISOString(), options: { sizes: SIZES, seed: SEED, quick: QUICK }, targets: {} };
// The Python parts need the project venv: build or refresh it as the Python tests do (a fast no-op
// when it is up to date; on a fresh clone it installs the pinned requirements.lock).
let havePython = fs.existsSync(PYTHON);
let pythonEnvProblem = "";
/** Why a Python part is skipped: the first of its flags given, else why there is no Python environment. */
const skipReason = (...flags) => flags.find(flag) ?? (pythonEnvProblem || ".venv missing: npm run setup:python");
if (!(flag("--skip-airflow") && flag("--skip-runtime"))) {
  const env = run("bash", [path.join(REPO, "scripts", "python-env.sh")]);
  results.pythonEnv = { wallMs: round(env.wallMs, 0), exit: env.exit };
  if (env.exit !== 0) pythonEnvProblem = `scripts/python-env.sh exited ${env.exit}: ${(env.stderr || env.stdout).trim().split("\n").slice(-3).join(" / ")}`;
  havePython = env.exit === 0 && fs.existsSync(PYTHON);
}
const m = machine();
results.machine = m;
out(`contract-assets bench${QUICK ? " --quick" : ""}`);
out(`machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB; ${m.os}; Node ${m.node}; Python ${m.python ?? "n/a"}; Airflow ${m.airflow ?? "n/a"}; dag-factory ${m.dagFactory ?? "n/a"}`);
out(`load average at start: ${m.loadAverageAtStart.join(", ")} (figures are medians; other load on the machine shows in them)`);
out(`work folder: ${work}`);

// Build the compiler from the sources into a private package in the work folder, so every run
// measures the same build even when dist/ is rebuilt meanwhile (--no-build: use dist/ as it is).
if (!flag("--no-build")) {
  const pkg = path.join(work, "pkg");
  const tsc = path.join(REPO, "node_modules", "typescript", "bin", "tsc");
  const args = ["-p", path.join(REPO, "tsconfig.json"), "--outDir", path.join(pkg, "dist")];
  const b = fs.existsSync(tsc) ? run(NODE, [tsc, ...args]) : run("npx", ["tsc", ...args]);
  results.build = { wallMs: round(b.wallMs, 0), exit: b.exit };
  out(`build: tsc into the work folder ${sec(b.wallMs)}${b.exit === 0 ? "" : ` (exit ${b.exit}; measuring what it emitted)\n${(b.stdout + b.stderr).split("\n").slice(0, 5).join("\n")}`}`);
  for (const part of ["package.json", "bin", "templates", path.join("compiler", "schemas")]) fs.cpSync(path.join(REPO, part), path.join(pkg, part), { recursive: true });
  fs.symlinkSync(path.join(REPO, "node_modules"), path.join(pkg, "node_modules"), "dir");
  // The precompiled JSON Schema validators, as `npm run build` writes them (ADR 0017l): without
  // them the measured build would compile every schema with ajv at run time.
  fs.cpSync(path.join(REPO, "scripts", "build-validators.mjs"), path.join(pkg, "scripts", "build-validators.mjs"));
  const v = run(NODE, [path.join(pkg, "scripts", "build-validators.mjs")]);
  if (v.exit !== 0) die(`scripts/build-validators.mjs exited ${v.exit}:\n${(v.stdout + v.stderr).split("\n").slice(0, 5).join("\n")}`);
  results.build.validatorsMs = round(v.wallMs, 0);
  out(`build: precompiled validators into the work folder ${sec(v.wallMs)}`);
  BIN = path.join(pkg, "bin", "contract-assets.js");
}
if (!fs.existsSync(path.join(path.dirname(BIN), "..", "dist", "compiler", "cli.js"))) die("dist/compiler/cli.js is missing: run npm ci (or npm run build) first");

// ------------------------------------------------------------------------------------ corpus

out("\n== corpus (scripts/bench/corpus.mjs, seed " + SEED + ")");
results.corpus = {};
for (const n of SIZES) {
  const t0 = Date.now();
  const stats = writeCorpus({ contracts: n, seed: SEED, root: path.join(work, `corpus-${n}`) });
  results.corpus[n] = { ...stats, generateMs: Date.now() - t0 };
  const anyOrNested = stats.triggers.any + stats.triggers.nested;
  const assetTriggered = anyOrNested + stats.triggers.all + stats.triggers.asset_or_time;
  out(
    `${String(n).padStart(6)} contracts: ${stats.ingestion} ingestion, ${stats.transform} transform, ${stats.domains} domains, ` +
      `${stats.externalAssets} ExternalAssets in ${stats.externalAssetFiles} files, ${stats.datasets} datasets, ${stats.properties} properties, ` +
      `${stats.qualityRules} quality rules (${Math.round((100 * stats.datasetsWithQuality) / stats.datasets)}% of datasets), ` +
      `freshness ${Math.round((100 * stats.contractsWithFreshness) / n)}%, asset triggers any/nested ${Math.round((100 * anyOrNested) / assetTriggered)}% (cron ${stats.triggers.cron}, manual ${stats.triggers.manual}), ` +
      `fan-in 1..5 ${Object.values(stats.fanIn).join("/")}, ${(stats.bytes / 2 ** 20).toFixed(1)} MiB in ${stats.files} files`,
  );
}

// ------------------------------------------------------------------------------------ compiler

out("\n== compiler: cold compile (fresh process, empty generated/) against the floor (read + YAML.parse of the same files)");
out(`   ${"size".padStart(6)}  ${"compile".padStart(9)} ${"cpu".padStart(8)} ${"peak RSS".padStart(9)}   ${"floor".padStart(9)} ${"cpu".padStart(8)} ${"peak RSS".padStart(9)}   ratio wall (cpu)  runs`);
results.compile = {};
for (const n of SIZES) {
  const root = path.join(work, `corpus-${n}`);
  const compiles = [];
  const floors = [];
  let summary = "";
  for (let i = 0; i < RUNS(n); i++) {
    setAside(path.join(root, "generated"));
    const c = measureNode(BIN, ["compile", "--no-cache", "--root", root]);
    if (c.exit !== 0) die(`compile of the ${n}-contract corpus exited ${c.exit}:\n${c.stderr.split("\n").slice(-20).join("\n")}`);
    summary = c.stderr.trim().split("\n").pop();
    compiles.push(c);
    const f = measureNode(FLOOR, [root]);
    if (f.exit !== 0) die(`the floor script failed on the ${n}-contract corpus:\n${f.stderr}`);
    floors.push({ ...f, read: JSON.parse(f.stdout) });
  }
  const r = {
    runs: compiles.length,
    compileSummary: summary,
    compileWallMs: round(median(compiles.map((c) => c.wallMs)), 1),
    compileCpuS: round(median(compiles.map((c) => c.cpuS)), 2),
    compileSysS: round(median(compiles.map((c) => c.sysS)), 2),
    compilePeakRssMiB: round(median(compiles.map((c) => c.rssKb)) / 1024, 0),
    floorWallMs: round(median(floors.map((f) => f.wallMs)), 1),
    floorCpuS: round(median(floors.map((f) => f.cpuS)), 2),
    floorPeakRssMiB: round(median(floors.map((f) => f.rssKb)) / 1024, 0),
    floorFiles: floors[0].read.files,
    compileWallRunsMs: compiles.map((c) => round(c.wallMs, 1)),
    floorWallRunsMs: floors.map((f) => round(f.wallMs, 1)),
  };
  r.ratioWall = round(r.compileWallMs / r.floorWallMs, 3);
  r.ratioCpu = round(r.compileCpuS / r.floorCpuS, 3);
  results.compile[n] = r;
  out(
    `   ${String(n).padStart(6)}  ${sec(r.compileWallMs).padStart(9)} ${`${r.compileCpuS.toFixed(2)} s`.padStart(8)} ${mib(r.compilePeakRssMiB * 1024).padStart(9)}   ` +
      `${sec(r.floorWallMs).padStart(9)} ${`${r.floorCpuS.toFixed(2)} s`.padStart(8)} ${mib(r.floorPeakRssMiB * 1024).padStart(9)}   ${x(r.ratioWall).padStart(6)} (${x(r.ratioCpu)})   ${r.runs}`,
  );
  out(`          ${summary}`);
}
const big = SIZES[SIZES.length - 1];
{
  // The same cold compile with its parse in the main thread (ADR 0017e), for what the workers give.
  const root = path.join(work, `corpus-${big}`);
  setAside(path.join(root, "generated"));
  const c = measureNode(BIN, ["compile", "--no-cache", "--workers", "0", "--root", root]);
  if (c.exit !== 0) die(`compile --workers 0 of the ${big}-contract corpus exited ${c.exit}:\n${c.stderr.split("\n").slice(-20).join("\n")}`);
  const r = results.compile[big];
  // What compile chose by default for this corpus's contracts (parseContracts: the files it parses).
  const workers = workerCountFor(fg.sync("contracts/**/*.yaml", { cwd: root }).reduce((sum, f) => sum + fs.readFileSync(path.join(root, f), "utf8").length, 0), m.cores);
  r.inThread = { wallMs: round(c.wallMs, 1), cpuS: round(c.cpuS, 2), ratioWall: round(c.wallMs / r.floorWallMs, 3), workersGain: round(c.wallMs / r.compileWallMs, 3) };
  out(`   ${big}, parse in the main thread (--workers 0, 1 run): ${sec(c.wallMs)} (${c.cpuS.toFixed(2)} s cpu), ${x(r.inThread.ratioWall)} the floor; the default (${workers > 0 ? `${workers} parse workers` : "no worker"}) is ${r.inThread.workersGain >= 1 ? `${x(r.inThread.workersGain)} faster` : `${x(1 / r.inThread.workersGain)} slower`}`);
}
{
  const r = results.compile[big];
  const ok = big >= 10000 ? r.ratioWall <= TARGETS.compileVsFloor.max : undefined;
  results.targets.compileVsFloor = { ...TARGETS.compileVsFloor, size: big, value: r.ratioWall, cpuRatio: r.ratioCpu, pass: ok };
  out(`   compile/floor at ${big}: ${x(r.ratioWall)} wall, ${x(r.ratioCpu)} cpu   target <= ${TARGETS.compileVsFloor.max}x at 10,000   ${verdict(ok)}`);
}
if (results.compile[1000] && results.compile[10000]) {
  const s = results.compile[10000].compileWallMs / results.compile[1000].compileWallMs;
  const sCpu = results.compile[10000].compileCpuS / results.compile[1000].compileCpuS;
  const sFloor = results.compile[10000].floorWallMs / results.compile[1000].floorWallMs;
  results.scaling = { compileWall: round(s), compileCpu: round(sCpu), floorWall: round(sFloor) };
  results.targets.scaling = { ...TARGETS.scaling, value: round(s), pass: s <= TARGETS.scaling.max };
  out(`   scaling time(10,000)/time(1,000): ${s.toFixed(2)} wall, ${sCpu.toFixed(2)} cpu (floor ${sFloor.toFixed(2)})   target <= 11   ${verdict(s <= 11)}`);
} else {
  results.targets.scaling = { ...TARGETS.scaling, value: null, pass: undefined };
  out("   scaling time(10,000)/time(1,000): n/a (needs sizes 1000 and 10000)");
}

out("\n== commands on an up-to-date generated/ against a cold compile, in rounds: cold (empty generated/), no-op compile, compile --check, validate (issue 16)");
out("   (the cold compiles of these rounds are the ratios' denominator: each round's four runs follow each other, so a machine that slows");
out("   or speeds up over minutes changes all four; files written by a no-op = files whose inode or mtime changed)");
results.noop = {};
results.upToDate = {};
let maxWritten = 0;
for (const n of SIZES) {
  const root = path.join(work, `corpus-${n}`);
  const gen = path.join(root, "generated");
  const timed = { cold: [], noop: [], check: [], validate: [] };
  const summaries = {};
  let written = 0;
  const changed = [];
  const timedRun = (name, args, i) => {
    const c = measureNode(BIN, [...args, "--root", root]);
    if (c.exit !== 0) die(`${args.join(" ")} of ${n} (round ${i + 1}) exited ${c.exit}:\n${c.stderr.split("\n").slice(-20).join("\n")}`);
    summaries[name] = c.stderr.trim().split("\n").pop();
    timed[name].push(c);
  };
  for (let i = 0; i < NOOP_RUNS(n); i++) {
    setAside(gen);
    timedRun("cold", ["compile", "--no-cache"], i);
    const before = snapshot(gen);
    timedRun("noop", ["compile", "--no-cache"], i);
    const names = changedFiles(before, snapshot(gen));
    written = Math.max(written, names.length);
    if (names.length > 0) changed.push({ run: i + 1, files: names.slice(0, 10), summary: summaries.noop });
    timedRun("check", ["compile", "--check", "--no-cache"], i);
    timedRun("validate", ["validate", "--no-cache"], i);
  }
  maxWritten = Math.max(maxWritten, written);
  const of = (name) => ({ runs: timed[name].length, wallMs: round(median(timed[name].map((t) => t.wallMs)), 1), cpuS: round(median(timed[name].map((t) => t.cpuS)), 2), sysS: round(median(timed[name].map((t) => t.sysS)), 2), peakRssMiB: round(median(timed[name].map((t) => t.rssKb)) / 1024, 0), summary: summaries[name] });
  results.noop[n] = { ...of("noop"), filesWritten: written, changed };
  const cold = of("cold");
  const r = { cold, check: of("check"), validate: of("validate"), cpu: {} };
  for (const [key, runs] of [["noopVsCold", results.noop[n]], ["checkVsCold", r.check], ["validateVsCold", r.validate]]) {
    r[key] = round(runs.wallMs / cold.wallMs);
    r.cpu[key] = round(runs.cpuS / cold.cpuS);
  }
  results.upToDate[n] = r;
  out(
    `   ${String(n).padStart(6)}  cold ${sec(cold.wallMs).padStart(8)}   no-op ${sec(results.noop[n].wallMs).padStart(8)} (${x(r.noopVsCold)}, cpu ${x(r.cpu.noopVsCold)})   ` +
      `--check ${sec(r.check.wallMs).padStart(8)} (${x(r.checkVsCold)}, cpu ${x(r.cpu.checkVsCold)})   validate ${sec(r.validate.wallMs).padStart(8)} (${x(r.validateVsCold)}, cpu ${x(r.cpu.validateVsCold)})   rounds ${NOOP_RUNS(n)}`,
  );
  out(`          no-op: ${summaries.noop}; files written: ${written}`);
  for (const c of changed) out(`          round ${c.run}: the no-op changed ${c.files.join(", ")} (compiler said: ${c.summary})`);
}
results.targets.noopWrites = { ...TARGETS.noopWrites, value: maxWritten, pass: maxWritten === 0 };
out(`   files written by a no-op recompile: ${maxWritten}   target 0   ${verdict(maxWritten === 0)}`);
for (const [key, name] of [["noopVsCold", "no-op compile"], ["checkVsCold", "compile --check"], ["validateVsCold", "validate"]]) {
  const value = results.upToDate[big][key];
  const ok = big >= 10000 ? value <= TARGETS[key].max : undefined;
  results.targets[key] = { ...TARGETS[key], size: big, value, cpuRatio: results.upToDate[big].cpu[key], pass: ok };
  out(`   ${`${name} / cold at ${big}:`.padEnd(32)} ${x(value)} wall, ${x(results.upToDate[big].cpu[key])} cpu   target <= 1.0x at 10,000   ${verdict(ok)}`);
}
{
  // Peak memory of the cold compile and of each command on an up-to-date generated/ (median RSS of its runs).
  const peaks = { cold: results.compile[big].compilePeakRssMiB, noop: results.noop[big].peakRssMiB, check: results.upToDate[big].check.peakRssMiB, validate: results.upToDate[big].validate.peakRssMiB };
  const value = Math.max(...Object.values(peaks));
  const ok = big >= 10000 ? value <= TARGETS.peakMemory.max : undefined;
  results.targets.peakMemory = { ...TARGETS.peakMemory, size: big, value, peaks, pass: ok };
  out(`   peak RSS at ${big}: ${Object.entries(peaks).map(([k, v]) => `${k} ${v} MiB`).join(", ")}   target <= 1024 MiB at 10,000   ${verdict(ok)}`);
}

out("\n== edit one contract, warm cache (issue 16): compile --cache after changing one description, each run another contract; against the cold compile (--no-cache) above");
results.editOne = {};
/** sha256 of every file under a folder (no __pycache__), by relative path. */
function digests(dir) {
  const out = new Map();
  for (const f of snapshot(dir).keys()) out.set(f, createHash("sha256").update(fs.readFileSync(path.join(dir, f))).digest("hex"));
  return out;
}
for (const n of SIZES) {
  const root = path.join(work, `corpus-${n}`);
  const gen = path.join(root, "generated");
  const cacheDir = path.join(root, ".contract-assets");
  // The first compile of a clone: cold, and writing the cache (each run from an empty generated/
  // and cache; the last run's cache is the warm one below).
  const firsts = [];
  for (let i = 0; i < POPULATE_RUNS(n); i++) {
    setAside(gen);
    setAside(cacheDir);
    const first = measureNode(BIN, ["compile", "--cache", "--root", root]);
    if (first.exit !== 0) die(`compile --cache of ${n} exited ${first.exit}:\n${first.stderr.split("\n").slice(-20).join("\n")}`);
    firsts.push(first);
  }
  // Sort for determinism.
  const contracts = fg.sync("contracts/**/*.yaml", { cwd: root }).sort();
  const times = [];
  let summary = "";
  for (let i = 0; i < EDIT_RUNS(n); i++) {
    const file = path.join(root, contracts[Math.floor(((i + 1) * contracts.length) / (EDIT_RUNS(n) + 1))]);
    const text = fs.readFileSync(file, "utf8");
    const edited = /description: "[^"]*"/.test(text) ? text.replace(/description: "([^"]*)"/, `description: "$1 (edit ${i + 1})"`) : `${text}# edit ${i + 1}\n`;
    fs.writeFileSync(file, edited);
    const c = measureNode(BIN, ["compile", "--cache", "--root", root]);
    if (c.exit !== 0) die(`compile --cache of ${n} after an edit exited ${c.exit}:\n${c.stderr.split("\n").slice(-20).join("\n")}`);
    summary = c.stderr.trim().split("\n").pop();
    times.push(c);
  }
  // The same contracts compiled cold must give the same bytes.
  const warm = digests(gen);
  setAside(gen);
  setAside(cacheDir);
  const cold = run(NODE, [BIN, "compile", "--no-cache", "--root", root]);
  if (cold.exit !== 0) die(`cold compile of ${n} after the edits exited ${cold.exit}`);
  const coldDigests = digests(gen);
  const differing = [...new Set([...warm.keys(), ...coldDigests.keys()])].filter((f) => warm.get(f) !== coldDigests.get(f));
  const r = {
    firstRuns: firsts.length,
    firstWallMs: round(median(firsts.map((t) => t.wallMs)), 1),
    firstCpuS: round(median(firsts.map((t) => t.cpuS)), 2),
    firstPeakRssMiB: round(median(firsts.map((t) => t.rssKb)) / 1024, 0),
    runs: times.length,
    wallMs: round(median(times.map((t) => t.wallMs)), 1),
    cpuS: round(median(times.map((t) => t.cpuS)), 2),
    peakRssMiB: round(median(times.map((t) => t.rssKb)) / 1024, 0),
    summary,
    identical: differing.length === 0,
    differing: differing.slice(0, 10),
  };
  r.vsCold = round(r.wallMs / results.compile[n].compileWallMs);
  r.cpuVsCold = round(r.cpuS / results.compile[n].compileCpuS);
  r.firstVsCold = round(r.firstWallMs / results.compile[n].compileWallMs);
  r.firstCpuVsCold = round(r.firstCpuS / results.compile[n].compileCpuS);
  results.editOne[n] = r;
  out(
    `   ${String(n).padStart(6)}  first compile writing the cache ${sec(r.firstWallMs).padStart(8)} (${x(r.firstVsCold)} cold, cpu ${x(r.firstCpuVsCold)}, peak ${r.firstPeakRssMiB} MiB)   ` +
      `edit one ${sec(r.wallMs).padStart(8)} (${x(r.vsCold)}, cpu ${x(r.cpuVsCold)}, peak ${r.peakRssMiB} MiB)   output as cold: ${r.identical ? "identical" : `DIFFERS (${r.differing.join(", ")})`}`,
  );
}
{
  const r = results.editOne[big];
  const ok = big >= 10000 ? r.identical && r.vsCold <= TARGETS.editOneVsCold.max : undefined;
  results.targets.editOneVsCold = { ...TARGETS.editOneVsCold, size: big, value: r.vsCold, cpuRatio: r.cpuVsCold, identical: r.identical, pass: r.identical ? ok : false };
  out(`   edit one / cold at ${big}: ${x(r.vsCold)} wall, ${x(r.cpuVsCold)} cpu, output ${r.identical ? "identical" : "DIFFERS"}   target <= 0.2x at 10,000   ${verdict(results.targets.editOneVsCold.pass)}`);
  out(`   first compile writing the cache / cold at ${big}: ${x(r.firstVsCold)} wall, ${x(r.firstCpuVsCold)} cpu (no target: the one compile of a clone)`);
  // The first compile writing the cache and the warm edit-one compile are compile commands too:
  // their peaks count toward the memory target.
  const memory = results.targets.peakMemory;
  memory.peaks.populate = r.firstPeakRssMiB;
  memory.peaks.editOne = r.peakRssMiB;
  memory.value = Math.max(...Object.values(memory.peaks));
  memory.pass = big >= 10000 ? memory.value <= TARGETS.peakMemory.max : undefined;
  out(`   peak RSS at ${big} with the first compile writing the cache ${r.firstPeakRssMiB} MiB and the warm edit-one compile ${r.peakRssMiB} MiB; of every compile command ${memory.value} MiB   target <= 1024 MiB at 10,000   ${verdict(memory.pass)}`);
}

out("\n== manifest size (generated/manifest.json), against the same manifest as manifestVersion 1 wrote it (UTF-8 text as written: canonical, two-space indent, ASCII)");
results.manifestSize = {};
// Version 1 repeated each produced dataset's uri, schema and quality rules (implied and data-time
// rules included) in dags[].runtime.datasets[]; expandToV1 (the measured build's) puts them back,
// and the text is written as the compiler writes it (ADR 0017f). A version-1 manifest is its own baseline.
const measuredDist = path.join(path.dirname(BIN), "..", "dist", "compiler");
const { expandToV1 } = await import(pathToFileURL(path.join(measuredDist, "manifest", "manifestV1.js")).href);
const { canonicalJsonAscii } = await import(pathToFileURL(path.join(measuredDist, "support", "canonical-json.js")).href);
for (const n of SIZES) {
  const text = fs.readFileSync(path.join(work, `corpus-${n}`, "generated", "manifest.json"), "utf8");
  const value = JSON.parse(text);
  const bytes = Buffer.byteLength(text, "utf8");
  const v1Bytes = value.manifestVersion === 1 ? bytes : Buffer.byteLength(canonicalJsonAscii(expandToV1(value)), "utf8");
  // What each top-level field takes, compact, to show where the bytes are.
  const fields = Object.fromEntries(Object.keys(value).map((k) => [k, Buffer.byteLength(JSON.stringify(value[k]), "utf8")]));
  results.manifestSize[n] = { manifestVersion: value.manifestVersion, bytes, v1Bytes, ratio: round(bytes / v1Bytes, 3), compactFieldBytes: fields };
  const mb = (b) => `${(b / 1e6).toFixed(1)} MB`;
  const top = Object.entries(fields).sort((a, b) => b[1] - a[1]).slice(0, 4).map(([k, b]) => `${k} ${mb(b)}`).join(", ");
  out(`   ${String(n).padStart(6)}  ${mb(bytes).padStart(9)} (manifestVersion ${value.manifestVersion}; as v1 wrote it ${mb(v1Bytes)}, ${x(round(bytes / v1Bytes, 3))})   compact: ${top}`);
}
{
  const r = results.manifestSize[big];
  const ok = big >= 10000 ? r.ratio <= TARGETS.manifestSize.max : undefined;
  results.targets.manifestSize = { ...TARGETS.manifestSize, size: big, value: r.ratio, bytes: r.bytes, v1Bytes: r.v1Bytes, pass: ok };
  out(`   manifest at ${big}: ${x(r.ratio)} of v1's size   target <= 0.5x at 10,000   ${verdict(ok)}`);
}

out("\n== start time");
{
  const v = [];
  const bare = [];
  let shown = "";
  for (let i = 0; i < VERSION_RUNS; i++) {
    const r = run(NODE, [BIN, "--version"]);
    if (r.exit !== 0) die(`contract-assets --version exited ${r.exit}: ${r.stderr}`);
    shown = r.stdout.trim();
    v.push(r.wallMs);
    bare.push(run(NODE, ["-e", ""]).wallMs);
  }
  results.version = { runs: v.length, wallMs: round(median(v), 1), nodeBareWallMs: round(median(bare), 1), printed: shown };
  out(`   contract-assets --version: ${sec(median(v))} (median of ${v.length}; bare node -e "" ${sec(median(bare))}); prints ${shown}`);
}

const compileMisses = results.targets.compileVsFloor.pass === false || results.targets.scaling.pass === false;
if (flag("--profile") || compileMisses) {
  out(`\n== profile: node --cpu-prof, cold compile of ${big} contracts (${compileMisses ? "a compiler target missed" : "--profile"})`);
  const root = path.join(work, `corpus-${big}`);
  setAside(path.join(root, "generated"));
  const dir = path.join(work, "cpu-profile");
  const p = run(NODE, ["--cpu-prof", "--cpu-prof-dir", dir, BIN, "compile", "--no-cache", "--root", root]);
  const file = fs.existsSync(dir) ? fs.readdirSync(dir).find((f) => f.endsWith(".cpuprofile")) : undefined;
  if (p.exit === 0 && file) {
    const s = summarise(JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")), 20);
    results.profile = { size: big, ...s };
    out(formatSummary(s, "   ").replace(/\n$/, "").split("\n").map((l) => "   " + l.trimStart()).join("\n"));
  } else out(`   profile failed (exit ${p.exit})`);
}
{
  // What the set-aside keeps out of the figures (ADR 0017y): a cold compile right after deleting
  // the generated/ of the one before; the last of the compiler's runs, so no timed one follows it.
  // Shown, not a target: the time it adds is the file system's, and a fresh clone has no recently
  // deleted files.
  out(`\n== cold compile of ${big} right after rm -rf generated/ (1 run, not a target)`);
  const root = path.join(work, `corpus-${big}`);
  fs.rmSync(path.join(root, "generated"), { recursive: true, force: true });
  const c = measureNode(BIN, ["compile", "--no-cache", "--root", root]);
  if (c.exit !== 0) die(`compile right after rm -rf generated/ of the ${big}-contract corpus exited ${c.exit}:\n${c.stderr.split("\n").slice(-20).join("\n")}`);
  const r = results.compile[big];
  r.afterDelete = { wallMs: round(c.wallMs, 1), cpuS: round(c.cpuS, 2), sysS: round(c.sysS, 2), ratioWall: round(c.wallMs / r.floorWallMs, 3) };
  out(`   ${sec(c.wallMs)} (${c.cpuS.toFixed(2)} s cpu), ${x(r.afterDelete.ratioWall)} the floor (cold ${x(r.ratioWall)}); the file system looks past the files just deleted for each new one (ADR 0017y)`);
  // The bench deletes nothing before a timed run, but another process may have (a test suite
  // cleaning up its temporary projects): kernel time of the cold compiles nearer this run's than
  // the no-op's (which creates no file) says their files were created past recent deletions.
  const noopSys = results.noop[big]?.sysS;
  const coldSys = r.compileSysS;
  if ([noopSys, coldSys, c.sysS].every(Number.isFinite)) {
    // Only where a delete costs this machine anything to speak of (at 10,000 contracts, 4-5 s).
    const tainted = c.sysS - noopSys > 0.5 && coldSys - noopSys > (c.sysS - noopSys) / 2;
    r.coldTainted = tainted;
    out(`   kernel time: cold ${coldSys.toFixed(2)} s (median), no-op ${noopSys.toFixed(2)} s, right after rm -rf ${c.sysS.toFixed(2)} s${tainted ? "\n   CAUTION: the cold compiles spent nearer the time of one right after a delete than a no-op's: something deleted many files on this file system in the minutes before (ADR 0017y); their figures, and every ratio to them, are not the compiler's. Run the bench again six minutes after the last such delete." : ""}`);
  }
}

// ------------------------------------------------------------------------------------ airflow

if (flag("--skip-airflow") || !havePython) {
  out(`\n== Airflow: skipped (${skipReason("--skip-airflow")})`);
  for (const k of ["vsHand", "vsDagFactory", "dagProcessorVsHand"]) results.targets[k] = { ...TARGETS[k], value: null, pass: undefined };
} else {
  out(`\n== Airflow ${m.airflow}: DagBag fill of ${AIRFLOW_SIZE} contracts' DAGs (fresh process per fill; airflow, airflow.sdk and contract_runtime imported first, not timed; median of ${AIRFLOW_ROUNDS}, dag-factory ${DAGFACTORY_ROUNDS}, after one fill that writes __pycache__)`);
  const root = path.join(work, `corpus-${AIRFLOW_SIZE}`);
  const manifestPath = path.join(root, "generated", "manifest.json");
  const manifest = JSON.parse(fs.readFileSync(manifestPath, "utf8"));
  const af = path.join(work, "airflow");
  const variants = {
    generated: path.join(af, "generated", "dags"),
    hand: path.join(af, "hand", "dags"),
    dagfactory: path.join(af, "dagfactory", "dags"),
  };
  fs.cpSync(path.join(root, "generated"), path.join(af, "generated"), { recursive: true });
  writeHandWritten(manifest, variants.hand);
  fs.copyFileSync(manifestPath, path.join(af, "hand", "manifest.json"));
  writeDagFactory(manifest, variants.dagfactory);
  // Modules the compiler writes beside the per-contract ones (the freshness monitor DAG) are one
  // and the same in every form: each peer gets a copy, so all three load the same DAGs.
  const shared = fs.readdirSync(variants.generated).filter((f) => f.endsWith(".py"));
  for (const f of shared) for (const peer of [variants.hand, variants.dagfactory]) fs.copyFileSync(path.join(variants.generated, f), path.join(peer, f));
  if (shared.length > 0) fs.copyFileSync(manifestPath, path.join(af, "dagfactory", "manifest.json"));
  const home = path.join(af, "home");
  fs.mkdirSync(home, { recursive: true });
  const env = {
    ...process.env,
    AIRFLOW_HOME: home,
    AIRFLOW__CORE__LOAD_EXAMPLES: "False",
    AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT: "600",
    // dag-factory sends telemetry over the network unless told not to.
    DO_NOT_TRACK: "1",
    SCARF_NO_ANALYTICS: "true",
    AIRFLOW__DAG_FACTORY__ENABLE_TELEMETRY: "False",
  };
  delete env.AIRFLOW_CONFIG;
  delete env.AIRFLOW__CORE__UNIT_TEST_MODE;
  delete env.PYTHONDONTWRITEBYTECODE;
  const expected = manifest.dags.length + shared.length;
  const runsBy = { generated: [], hand: [], dagfactory: [] };
  const cold = {};
  let signatures;
  const problems = [];
  // Round 0 writes __pycache__ (the steady state of Airflow's parse loop) and checks that every
  // variant loaded every DAG, without errors, equal to the generated one.
  for (let round_ = 0; round_ <= AIRFLOW_ROUNDS; round_++) {
    // Rotate the order every round, so no variant always runs right after another.
    const order = Object.entries(variants);
    for (let k = 0; k < round_ % order.length; k++) order.push(order.shift());
    for (const [name, folder] of order) {
      if (name === "dagfactory" && round_ > DAGFACTORY_ROUNDS) continue;
      const r = pythonJson("dagbag_fill.py", round_ === 0 ? [folder, "--signatures"] : [folder], env);
      if (round_ === 0) {
        cold[name] = r.fill_seconds;
        if (r.dags !== expected) problems.push(`${name}: ${r.dags} of ${expected} DAGs loaded`);
        if (r.import_errors > 0) problems.push(`${name}: ${r.import_errors} import errors, first: ${JSON.stringify(r.first_import_error).slice(0, 600)}`);
        if (name === "generated") signatures = r.signatures;
        else {
          const differ = Object.keys(signatures).filter((id) => JSON.stringify(signatures[id]) !== JSON.stringify(r.signatures?.[id]));
          if (differ.length > 0) problems.push(`${name}: ${differ.length} DAGs differ from the generated ones, e.g. ${differ[0]}`);
        }
        delete r.signatures;
      } else runsBy[name].push(r);
    }
  }
  // One more fill of the generated modules with Python's cyclic GC off: each module's own cost.
  const noGc = pythonJson("dagbag_fill.py", [variants.generated, "--no-gc"], env);
  const fill = (name) => median(runsBy[name].map((r) => r.fill_seconds)) * 1000;
  const slowest = (name) => median(runsBy[name].map((r) => r.slowest[0]?.seconds ?? NaN)) * 1000;
  const medFile = (name) => median(runsBy[name].map((r) => r.median_file_seconds ?? NaN)) * 1000;
  const p99File = (name) => median(runsBy[name].map((r) => r.p99_file_seconds ?? NaN)) * 1000;
  const a = {
    size: AIRFLOW_SIZE,
    dags: expected,
    runs: { generated: AIRFLOW_ROUNDS, hand: AIRFLOW_ROUNDS, dagfactory: DAGFACTORY_ROUNDS },
    fillRunsMs: Object.fromEntries(Object.entries(runsBy).map(([k, rs]) => [k, rs.map((r) => round(r.fill_seconds * 1000, 1))])),
    fillMs: { generated: round(fill("generated"), 1), hand: round(fill("hand"), 1), dagfactory: round(fill("dagfactory"), 1) },
    firstFillWithoutPycacheMs: Object.fromEntries(Object.entries(cold).map(([k, v]) => [k, round(v * 1000, 1)])),
    slowestModuleMs: { generated: round(slowest("generated"), 2), hand: round(slowest("hand"), 2) },
    slowestModules: runsBy.generated.at(-1)?.slowest ?? [],
    medianModuleMs: { generated: round(medFile("generated"), 3), hand: round(medFile("hand"), 3) },
    p99ModuleMs: { generated: round(p99File("generated"), 3), hand: round(p99File("hand"), 3) },
    airflowImportS: round(median(runsBy.generated.map((r) => r.import_seconds)), 2),
    gcMaxPauseMs: round(median(runsBy.generated.map((r) => r.gc.max_pause_seconds)) * 1000, 1),
    gcTotalMs: round(median(runsBy.generated.map((r) => r.gc.total_seconds)) * 1000, 1),
    slowestModuleWithoutGcMs: round((noGc.slowest[0]?.seconds ?? NaN) * 1000, 2),
    slowestModuleWithoutGc: noGc.slowest[0]?.file ?? null,
    fillWithoutGcMs: round(noGc.fill_seconds * 1000, 1),
    problems,
  };
  a.vsHand = round(a.fillMs.generated / a.fillMs.hand);
  a.dagFactorySpeedup = round(a.fillMs.dagfactory / a.fillMs.generated);
  results.airflow = a;
  const fair = problems.length === 0;
  out(`   generated modules   ${sec(a.fillMs.generated).padStart(9)}   (${expected} modules; first fill without __pycache__ ${sec(a.firstFillWithoutPycacheMs.generated)})`);
  out(`   hand-written        ${sec(a.fillMs.hand).padStart(9)}   (minimal modules, same Assets, schedules, operators; first fill ${sec(a.firstFillWithoutPycacheMs.hand)})`);
  out(`   dag-factory ${(m.dagFactory ?? "").padEnd(7)} ${sec(a.fillMs.dagfactory).padStart(9)}   (one YAML per DAG + one loader module; first fill ${sec(a.firstFillWithoutPycacheMs.dagfactory)})`);
  out(`   check: every variant loaded ${expected} DAGs, no import errors, identical DAGs: ${fair ? "yes" : "NO\n     " + problems.join("\n     ")}`);
  out(
    `   slowest single module: ${a.slowestModuleMs.generated.toFixed(1)} ms (${a.slowestModules[0]?.file ?? "?"}); p99 ${a.p99ModuleMs.generated.toFixed(2)} ms, median ${a.medianModuleMs.generated.toFixed(2)} ms` +
      ` (hand-written: slowest ${a.slowestModuleMs.hand.toFixed(1)} ms, p99 ${a.p99ModuleMs.hand.toFixed(2)} ms, median ${a.medianModuleMs.hand.toFixed(2)} ms)`,
  );
  out(
    `   (largest Python cyclic-GC pause during the fill: ${a.gcMaxPauseMs.toFixed(0)} ms, inside whichever module is loading; with the GC off the slowest module takes ${a.slowestModuleWithoutGcMs.toFixed(1)} ms, ${a.slowestModuleWithoutGc})`,
  );
  results.targets.vsHand = { ...TARGETS.vsHand, value: a.vsHand, pass: fair ? a.vsHand <= TARGETS.vsHand.max : undefined };
  results.targets.vsDagFactory = { ...TARGETS.vsDagFactory, value: a.dagFactorySpeedup, pass: fair ? a.dagFactorySpeedup >= TARGETS.vsDagFactory.min : undefined };
  out(`   generated / hand-written: ${x(a.vsHand)}   target <= 1.2x   ${verdict(results.targets.vsHand.pass)}`);
  out(`   dag-factory / generated:  ${x(a.dagFactorySpeedup)}   target >= 3x    ${verdict(results.targets.vsDagFactory.pass)}`);

  // A real `airflow dag-processor` on the same two folders, timed by its own bookkeeping.
  if (flag("--skip-dag-processor")) {
    out("\n== airflow dag-processor: skipped (--skip-dag-processor)");
    results.targets.dagProcessorVsHand = { ...TARGETS.dagProcessorVsHand, value: null, pass: undefined };
  } else {
    const files = Math.min(DAG_PROCESSOR_FILES, expected);
    out(
      `\n== airflow dag-processor ${m.airflow}: ${files} of the ${AIRFLOW_SIZE}-contract corpus's DAG files, generated against hand-written, parse time per file as the processor records it ` +
        `(dag.last_parse_duration; fresh AIRFLOW_HOME + SQLite per run, __pycache__ written first, ${DAG_PROCESSOR_BATCHES} interleaved batches, --num-runs 1)`,
    );
    let d;
    try {
      d = pythonJson("dag_processor.py", [path.join(af, "dag-processor"), "--variant", `generated=${variants.generated}`, "--variant", `hand=${variants.hand}`, "--files", String(files), "--batches", String(DAG_PROCESSOR_BATCHES), "--timeout", "1200"], env);
    } catch (error) {
      d = { available: false, reason: String(error.message).split("\n").slice(-6).join(" / ") };
    }
    if (d.available === false) {
      results.dagProcessor = d;
      results.targets.dagProcessorVsHand = { ...TARGETS.dagProcessorVsHand, value: null, pass: undefined };
      out(`   not available: ${d.reason}`);
    } else {
      const g = d.variants.generated;
      const h = d.variants.hand;
      const checks = [];
      for (const [name, v] of [["generated", g], ["hand-written", h]]) {
        if (v.dags !== d.files) checks.push(`${name}: ${v.dags} of ${d.files} DAGs in the metadata DB`);
        if (v.import_errors > 0) checks.push(`${name}: ${v.import_errors} import errors, first: ${JSON.stringify(v.first_import_error).slice(0, 400)}`);
        if (v.missing_durations > 0) checks.push(`${name}: ${v.missing_durations} DAGs without last_parse_duration`);
      }
      const ratio = g.sum_s / h.sum_s;
      results.dagProcessor = {
        files: d.files,
        batches: d.batches,
        parsingProcesses: d.parsing_processes,
        migrateS: round(d.migrate_s, 1),
        totalS: { generated: round(g.sum_s, 2), hand: round(h.sum_s, 2) },
        medianFileMs: { generated: round(g.median_s * 1000, 1), hand: round(h.median_s * 1000, 1) },
        p95FileMs: { generated: round(g.p95_s * 1000, 1), hand: round(h.p95_s * 1000, 1) },
        maxFileMs: { generated: round(g.max_s * 1000, 1), hand: round(h.max_s * 1000, 1) },
        batchTotalsS: { generated: g.batches.map((b) => round(b.sum_s, 2)), hand: h.batches.map((b) => round(b.sum_s, 2)) },
        processWallS: { generated: g.batches.map((b) => round(b.process_wall_s, 1)), hand: h.batches.map((b) => round(b.process_wall_s, 1)) },
        // The house rule: ratios are ratios of medians (a file parsed during a burst of other load
        // moves a sum far more than a median); the sum's ratio is printed beside it.
        vsHand: round(g.median_s / h.median_s),
        sumVsHand: round(ratio),
        problems: checks,
      };
      const r = results.dagProcessor;
      out(`   generated     total ${sec(g.sum_s * 1000).padStart(8)}   per file median ${r.medianFileMs.generated.toFixed(0)} ms, p95 ${r.p95FileMs.generated.toFixed(0)} ms, max ${r.maxFileMs.generated.toFixed(0)} ms`);
      out(`   hand-written  total ${sec(h.sum_s * 1000).padStart(8)}   per file median ${r.medianFileMs.hand.toFixed(0)} ms, p95 ${r.p95FileMs.hand.toFixed(0)} ms, max ${r.maxFileMs.hand.toFixed(0)} ms`);
      out(`   (${d.parsing_processes} parsing processes; batch totals generated ${r.batchTotalsS.generated.join(", ")} s, hand-written ${r.batchTotalsS.hand.join(", ")} s; airflow db migrate ${r.migrateS} s, once)`);
      out(`   check: every run parsed all its files into the metadata DB, no import errors: ${checks.length === 0 ? "yes" : "NO\n     " + checks.join("\n     ")}`);
      results.targets.dagProcessorVsHand = { ...TARGETS.dagProcessorVsHand, value: r.vsHand, pass: checks.length === 0 ? r.vsHand <= TARGETS.dagProcessorVsHand.max : undefined };
      out(`   generated / hand-written (median per-file parse time): ${x(r.vsHand)} (sum of the per-file times ${x(r.sumVsHand)})   target <= 1.2x   ${verdict(results.targets.dagProcessorVsHand.pass)}`);
    }
  }
}

// ------------------------------------------------------------------------------------ runtime

if (flag("--skip-runtime") || !havePython) {
  out(`\n== runtime: skipped (${skipReason("--skip-runtime")})`);
  results.targets.emit = { ...TARGETS.emit, value: null, pass: undefined };
} else {
  out(`\n== runtime: lineage emit hook, file transport, ${EMIT_EVENTS} events against the same loop with OPENLINEAGE_DISABLED=true`);
  const dir = path.join(work, "lineage");
  fs.mkdirSync(dir, { recursive: true });
  const manifestPath = path.join(work, `corpus-${AIRFLOW_SIZE}`, "generated", "manifest.json");
  let r;
  try {
    r = pythonJson("emit_overhead.py", [manifestPath, path.join(dir, "events.jsonl"), "--events", String(EMIT_EVENTS)], { ...process.env, AIRFLOW_HOME: path.join(work, "airflow", "home") });
  } catch (error) {
    r = { available: false, reason: String(error.message).split("\n").slice(-3).join(" ") };
  }
  results.runtime = r;
  if (!r.available) {
    results.targets.emit = { ...TARGETS.emit, value: null, pass: undefined };
    out(`   not available: ${r.reason}`);
  } else {
    const ok = r.added_ms <= TARGETS.emit.max && r.events_written === r.events_expected;
    results.targets.emit = { ...TARGETS.emit, value: round(r.added_ms, 3), pass: ok };
    out(
      `   added time per event: ${r.added_ms.toFixed(2)} ms (median ${r.median_enabled_ms.toFixed(2)} ms enabled, ${(r.median_disabled_ms * 1000).toFixed(1)} us disabled; p95 ${r.p95_enabled_ms.toFixed(2)} ms; first event ${r.first_event_ms.toFixed(1)} ms)`,
    );
    out(`   by event: ${Object.entries(r.median_by_event_ms).map(([k, v]) => `${k} ${v.toFixed(2)} ms`).join(", ")}; ${r.events_written}/${r.events_expected} events in the file`);
    out(`   target <= 20 ms per event   ${verdict(ok)}`);
  }
}

// ------------------------------------------------------------------------------------ operators

if (flag("--skip-runtime") || flag("--skip-operators") || !havePython) {
  out(`\n== operators: skipped (${skipReason("--skip-runtime", "--skip-operators")})`);
  for (const k of ["operatorOverhead", "operatorOverheadOneDag"]) results.targets[k] = { ...TARGETS[k], value: null, pass: undefined };
} else {
  const corpusManifest = path.join(work, `corpus-${AIRFLOW_SIZE}`, "generated", "manifest.json");
  out(
    `\n== operators: produce / audit / publish against a bare SQLExecuteQueryOperator running the same statements (PostgreSQL on loopback, one Connection for both, ` +
      `each task's execute() timed, manifest cache cleared per task as in a task process of its own, lineage off)`,
  );
  results.operators = {};
  const configs = [
    ["operatorOverheadOneDag", "one-DAG manifest", [], OPERATOR_ROUNDS],
    ["operatorOverhead", `${AIRFLOW_SIZE}-contract corpus manifest`, ["--manifest", corpusManifest], OPERATOR_CORPUS_ROUNDS],
  ];
  for (const [key, label, extra, rounds] of configs) {
    const dir = path.join(work, `operators-${key}`);
    fs.mkdirSync(dir, { recursive: true });
    let r;
    try {
      r = pythonJson("operator_overhead.py", [dir, "--rounds", String(rounds), ...extra], { ...process.env, AIRFLOW_HOME: path.join(work, "airflow", "home") });
    } catch (error) {
      r = { available: false, reason: String(error.message).split("\n").slice(-4).join(" / ") };
    }
    results.operators[key] = r;
    if (!r.available) {
      results.targets[key] = { ...TARGETS[key], value: null, pass: undefined };
      out(`   ${label}: not available: ${r.reason}`);
      continue;
    }
    const stages = ["produce", "audit", "publish"];
    const fmt = (ms) => (ms >= 1000 ? sec(ms) : `${ms.toFixed(1)} ms`);
    out(`   ${label} (${r.manifest_bytes >= 2 ** 20 ? `${(r.manifest_bytes / 2 ** 20).toFixed(1)} MiB` : `${(r.manifest_bytes / 1024).toFixed(1)} KiB`}, ${r.manifest_dags} DAG${r.manifest_dags === 1 ? "" : "s"}; ${r.rows} rows; median of ${r.rounds}; statements per task ${stages.map((s) => r.statements[s]).join("/")}):`);
    for (const s of stages) out(`     ${s.padEnd(8)} ours ${fmt(r.median_ms.ours[s]).padStart(9)}   bare ${fmt(r.median_ms.bare[s]).padStart(9)}   added ${fmt(r.added_ms[s]).padStart(9)} (${x(r.ratio[s])})`);
    const ok = r.published_rows_by_bare === r.rows;
    if (!ok) out(`     check: the bare tasks published ${r.published_rows_by_bare} of ${r.rows} rows: NOT the same work`);
    results.targets[key] = { ...TARGETS[key], value: round(r.max_added_ms, 1), pass: ok ? r.max_added_ms <= TARGETS[key].max : undefined };
    out(`     most added to one task: ${fmt(r.max_added_ms)}   target <= 50 ms   ${verdict(results.targets[key].pass)}`);
  }
}

// ------------------------------------------------------------------------------------ dbt

if (flag("--skip-runtime") || flag("--skip-dbt") || !havePython) {
  out(`\n== dbt producer: skipped (${skipReason("--skip-runtime", "--skip-dbt")})`);
} else {
  const rounds = flag("--quick") ? 1 : 3;
  out(`\n== dbt producer: finance.invoices_curated, produce + audit + publish against dbt build --select of the same model run directly (DuckDB, median of ${rounds}, alternating order)`);
  const dir = path.join(work, "dbt");
  fs.mkdirSync(dir, { recursive: true });
  let r;
  try {
    r = pythonJson("dbt_overhead.py", [dir, "--rounds", String(rounds)], { ...process.env, AIRFLOW_HOME: path.join(work, "airflow", "home") });
  } catch (error) {
    r = { available: false, reason: String(error.message).split("\n").slice(-3).join(" ") };
  }
  results.dbt = r;
  if (!r.available) out(`   not available: ${r.reason}`);
  else {
    out(`   dbt build --select directly: ${r.median_direct_s.toFixed(2)} s; our three tasks: ${r.median_ours_s.toFixed(2)} s`);
    out(`   overhead per model: ${r.overhead_s.toFixed(2)} s (${r.ratio.toFixed(2)}x); rounds direct ${r.direct_s.join(", ")} s, ours ${r.ours_s.join(", ")} s`);
  }
}

// ------------------------------------------------------------------------------------ live stacks

if (flag("--skip-live") || !havePython) {
  out(`\n== live stacks: skipped (${skipReason("--skip-live")})`);
} else {
  const hops = flag("--quick") ? 5 : 20;
  out(`\n== live stacks: Asset-hop latency over a chain of ${hops} hops, and the bundled corpus' wall time, on the LocalExecutor stack and the CeleryExecutor stack with 2 and 1 workers (scripts/bench/live_stacks.py; each stack fresh, PostgreSQL warehouse)`);
  const dir = path.join(work, "live");
  fs.mkdirSync(dir, { recursive: true });
  fs.chmodSync(work, 0o755);
  fs.chmodSync(dir, 0o755);
  let r;
  try {
    r = pythonJson("live_stacks.py", [dir, "--hops", String(hops), ...(flag("--quick") ? ["--skip-corpus"] : [])], process.env);
  } catch (error) {
    r = { available: false, reason: String(error.message).split("\n").slice(-3).join(" ") };
  }
  results.live = r;
  if (!r.available) out(`   not available: ${r.reason}`);
  else {
    const names = { local: "LocalExecutor", celery_2: "Celery, 2 workers", celery_1: "Celery, 1 worker" };
    for (const [label, h] of Object.entries(r.hop_latency)) out(`   hop latency, ${names[label].padEnd(18)} median ${h.median_s.toFixed(2)} s, p95 ${h.p95_s.toFixed(2)} s (${h.hops} hops, ${h.min_s.toFixed(2)}-${h.max_s.toFixed(2)} s)`);
    if (r.hop_latency.local && r.hop_latency.celery_2) out(`   Celery against LocalExecutor: median ${x(r.hop_latency.celery_2.median_s / r.hop_latency.local.median_s)}, p95 ${x(r.hop_latency.celery_2.p95_s / r.hop_latency.local.p95_s)}`);
    for (const [label, c] of Object.entries(r.corpus)) {
      out(`   corpus, ${names[label].padEnd(18)} ${c.wall_s.toFixed(1)} s (${c.dag_runs} DAG runs: ${Object.entries(c.states).map(([k, v]) => `${v} ${k}`).join(", ")})`);
      for (const t of c.retried ?? []) out(`     retried: ${t.dag_id} ${t.task_id} (${t.tries} tries; the wall time includes its retry_delay); its first try ended:\n       ${t.first_try.split("\n").join("\n       ")}`);
    }
    if (r.corpus.celery_1 && r.corpus.celery_2) out(`   2 workers against 1: ${x(r.corpus.celery_2.wall_s / r.corpus.celery_1.wall_s)}; Celery (2) against LocalExecutor: ${r.corpus.local ? x(r.corpus.celery_2.wall_s / r.corpus.local.wall_s) : "n/a"}`);
  }
}

// ------------------------------------------------------------------------------------ summary

results.loadAverageAtEnd = os.loadavg().map((l) => round(l, 2));
results.benchSeconds = round((Date.now() - started) / 1000, 1);
out("\n== targets");
for (const [key, t] of Object.entries(results.targets)) {
  const value =
    t.value === null || t.value === undefined
      ? "n/a"
      : key === "noopWrites"
        ? `${t.value} files`
        : key === "peakMemory"
          ? `${t.value} MiB`
        : key === "emit" || key.startsWith("operatorOverhead")
          ? `${t.value.toFixed(2)} ms`
          : key === "scaling"
            ? t.value.toFixed(2)
            : x(t.value);
  out(`   ${verdict(t.pass)}  ${t.label}: ${value}`);
}
if (results.compile?.[big]?.coldTainted) out("   CAUTION: the cold compiles ran right after something deleted many files (see the kernel times above, ADR 0017y): the compiler's figures of this run are not to be trusted");
fs.writeFileSync(resultsPath, JSON.stringify(results, null, 2) + "\n");
out(`\nload average at end: ${results.loadAverageAtEnd.join(", ")}`);
out(`bench took ${Math.floor(results.benchSeconds / 60)} min ${Math.round(results.benchSeconds % 60)} s`);
out(`results: ${resultsPath}`);
if (flag("--keep")) out(`kept: ${work}`);
else fs.rmSync(work, { recursive: true, force: true });
