import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

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

/** Every file's bytes below a folder, hex-free: a comparable snapshot. */
export function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const rel of mtimes(dir).keys()) out.set(rel, fs.readFileSync(path.join(dir, rel)).toString("base64"));
  return out;
}
