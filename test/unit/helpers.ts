import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Manifest } from "../../compiler/manifest/buildManifest.js";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { compileProject, type CompileResult } from "../../compiler/pipeline.js";
import { assetRenderInputs, usedAssets } from "../../compiler/render/renderModules.js";
// @ts-expect-error -- plain JavaScript module of the benchmark (scripts/bench), no type declarations
import { writeCorpus } from "../../scripts/bench/corpus.mjs";

export const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "..");
export const BIN = path.join(REPO, "bin", "contract-assets.js");

/** Runs the built CLI (dist/, made by `npm install` or `npm run build`). */
export function cli(args: string[], cwd = REPO): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** A temporary copy of the bundled project (contracts, SQL, orchestration config). */
export function copyBundledProject(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-project-"));
  for (const part of ["contracts", "sql", "dbt", path.join("orchestration", "airflow", "sources")]) {
    fs.cpSync(path.join(REPO, part), path.join(root, part), { recursive: true });
  }
  return root;
}

/**
 * A maker of temporary copies of one synthetic corpus (`scripts/bench/corpus.mjs`, `contracts`
 * contracts of `seed`), generated once, on the first copy, into a folder named after `prefix`.
 */
export function corpusCopies(prefix: string, contracts: number, seed: number): () => string {
  let made: string | undefined;
  return () => {
    made ??= (() => {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-corpus-`));
      writeCorpus({ contracts, seed, root });
      return root;
    })();
    const root = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
    fs.cpSync(made, root, { recursive: true });
    return root;
  };
}

/** `compile` of a root into its generated/ (`--check` with `check`), with the incremental cache when `cache`. */
export const compileRoot = (root: string, options: { cache?: boolean; check?: boolean } = {}): CompileResult =>
  compileProject(defaultLayout(root), { write: options.check ? "check" : "write", ...(options.cache ? { cache: true } : {}) });

/** Modification times of every file below a folder, by relative path. */
export function mtimes(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, e.name);
      // Python's byte-code caches are not output (git ignores them too).
      if (e.name === "__pycache__") continue;
      if (e.isDirectory()) walk(full);
      else out.set(path.relative(dir, full), fs.statSync(full).mtimeMs);
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return out;
}

/** Every path below a folder, folders with a trailing slash, sorted ([] when it is missing). */
export function tree(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)) + (e.isDirectory() ? "/" : ""))
    .sort();
}

/** Every file's bytes below a folder, hex-free: a comparable snapshot. */
export function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const rel of mtimes(dir).keys()) out.set(rel, fs.readFileSync(path.join(dir, rel)).toString("base64"));
  return out;
}

/**
 * How many modules a compile of `next` renders with the render cache of a compile of `previous`
 * (ADR 0017r), every module file on the disk as the last compile wrote it: each DAG whose record,
 * or the record of an Asset it declares (the last of a name), is not the same value as before
 * (JSON texts of sorted keys: `previous` may be the parsed file, its keys in another order), or was not there, and the freshness monitor when its plan or a field the render reads of an
 * Asset it watches changed (its key is of fields, ADR 0017n).
 */
export function modulesToRender(previous: Manifest, next: Manifest): number {
  // Each object's keys sorted (an undefined field left out, as in the file).
  const text = (value: unknown): string =>
    JSON.stringify(value, (_key, v: unknown) => (v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));
  const texts = (m: Manifest): Map<string, string> => new Map(m.assets.map((a) => [a.name, text(a)]));
  const [before, after] = [texts(previous), texts(next)];
  const dagsBefore = new Map(previous.dags.map((d) => [d.dag_id, text(d)]));
  const changed = (name: string): boolean => before.get(name) !== after.get(name);
  let count = next.dags.filter((d) => dagsBefore.get(d.dag_id) !== text(d) || usedAssets(d).some(changed)).length;
  const monitor = next.freshness_monitor;
  if (monitor) {
    const inputs = (m: Manifest, name: string): string => {
      const a = [...m.assets].reverse().find((x) => x.name === name);
      return a ? text(assetRenderInputs(a)) : "null";
    };
    const same = text(previous.freshness_monitor) === text(monitor) && monitor.assets.every((a) => inputs(previous, a.name) === inputs(next, a.name));
    if (!same) count++;
  }
  return count;
}

/** A seeded generator (mulberry32): the same edits on every run. */
export function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The process id of a process that ran and exited (reaped): no process has it until the kernel
 * hands it out again, which it does only after every other free id (ids count up), so a temporary
 * named after it reads as left over by a write that stopped.
 */
export function exitedProcessId(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  const pid = Number(child.stdout);
  if (child.status !== 0 || !Number.isSafeInteger(pid) || pid <= 0) throw new Error(`a child node process did not report its id: ${child.stderr}`);
  return pid;
}
