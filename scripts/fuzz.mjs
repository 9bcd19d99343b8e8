#!/usr/bin/env node
// Mutation fuzzer for the compiler (not part of CI).
//
//   node scripts/fuzz.mjs [--seconds 600] [--seed N] [--out DIR]
//
// Copies the bundled project, mutates its contract and config files (byte flips, truncation,
// deleted and duplicated lines, hostile values, renamed keys, tabs, BOMs, aliases, huge numbers),
// and compiles each mutant twice: in-process through the built pipeline (a thrown error is a
// crash), and every 25th mutant through the CLI (an exit code other than 0 or 1 is a crash).
// Crashing inputs are saved under --out with the error. Needs `npm run build` first.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = new Map();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i], process.argv[i + 1]);
const seconds = Number(args.get("--seconds") ?? 600);
let seed = Number(args.get("--seed") ?? Date.now() % 2147483647);
const out = path.resolve(args.get("--out") ?? path.join(os.tmpdir(), "contract-assets-fuzz"));

const { compileProject } = await import(path.join(repo, "dist/compiler/pipeline.js"));
const { defaultLayout } = await import(path.join(repo, "dist/compiler/discover/discoverProject.js"));
const { writeOutputs } = await import(path.join(repo, "dist/compiler/write/writeOutputs.js"));

function random(n) {
  seed = (seed * 48271) % 2147483647;
  return seed % n;
}
const pick = (xs) => xs[random(xs.length)];

const HOSTILE = [
  '"', "'''", "\\", "\t", "\u0000", "\u202e", "😀", "طلبات", "{{ ds }}", "${HOME}", "s3://u:p@h/x", "airflow://x", "",
  " ", "~", "null", ".nan", "-.inf", "9007199254740993", "1e400", "0x1F", "yes", "NO", "2024-05-01", "1.10", "[", "]", "{", "}",
  "&a", "*a", "!!binary aGVsbG8=", "!custom x", "|", ">", "---", "...", "#", "x".repeat(5000), "self", "context",
];

function mutate(text) {
  const lines = text.split("\n");
  const kind = random(12);
  const i = random(Math.max(1, lines.length));
  switch (kind) {
    case 0: { // flip a byte
      const b = Buffer.from(text);
      if (b.length) b[random(b.length)] = random(256);
      return b;
    }
    case 1: return text.slice(0, random(text.length + 1)); // truncate
    case 2: lines.splice(i, 1); break; // delete a line
    case 3: lines.splice(i, 0, lines[i] ?? ""); break; // duplicate a line
    case 4: lines[i] = (lines[i] ?? "").replace(/:\s.*$/, `: ${pick(HOSTILE)}`); break; // hostile value
    case 5: lines[i] = (lines[i] ?? "").replace(/^(\s*-?\s*)([A-Za-z_]+)/, (m, a, k) => `${a}${k}${pick(["x", "", "_", "s"])}`); break; // rename a key
    case 6: lines[i] = "\t" + (lines[i] ?? ""); break; // tab indent
    case 7: return "\ufeff" + text; // BOM
    case 8: lines[i] = (lines[i] ?? "").replace(/[A-Za-z_]+\.[A-Za-z_]+/, pick(["sales.nothing", "a.b", "billing.invoices_raw", "finance.contracts_curated"])); break; // re-point a reference
    case 9: lines.splice(i, 0, `x: &a [${"*a, ".repeat(random(4))}1]`); break; // aliases
    case 10: lines[i] = (lines[i] ?? "").replace(/\d+/, String(pick([0, -1, 2 ** 53 + 2, 1e308, 3.5]))); break; // numbers
    default: lines[i] = (lines[i] ?? "") + pick([" # c", " ]", " }", ",", ":", " - x"]); // syntax noise
  }
  return lines.join("\n");
}

function project() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "ca-fuzz-"));
  for (const part of ["contracts", "sql", path.join("orchestration", "airflow", "sources")]) {
    fs.cpSync(path.join(repo, part), path.join(root, part), { recursive: true });
  }
  return root;
}

const files = [];
const walk = (d) => {
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (/\.ya?ml$/.test(e.name)) files.push(path.relative(repo, p));
  }
};
walk(path.join(repo, "contracts"));
walk(path.join(repo, "orchestration", "airflow", "sources"));

const deadline = Date.now() + seconds * 1000;
let runs = 0;
const crashes = [];
const exits = new Map();
console.log(`fuzz: ${files.length} files, ${seconds} s, seed ${seed}`);
while (Date.now() < deadline) {
  const root = project();
  const touched = [];
  for (let n = 1 + random(3); n > 0; n--) {
    const rel = pick(files);
    const abs = path.join(root, rel);
    fs.writeFileSync(abs, mutate(fs.readFileSync(abs, "utf8")));
    touched.push(rel);
  }
  runs++;
  let problem;
  try {
    const layout = defaultLayout(root);
    const result = compileProject(layout);
    if (result.files) writeOutputs(layout, result.files, { check: false });
    const code = result.diagnostics.some((d) => d.severity === "error") ? 1 : 0;
    exits.set(code, (exits.get(code) ?? 0) + 1);
  } catch (error) {
    problem = `in-process throw: ${error?.stack ?? error}`;
  }
  if (!problem && runs % 25 === 0) {
    const r = spawnSync(process.execPath, [path.join(repo, "bin", "contract-assets.js"), "compile", "--root", root], { encoding: "utf8" });
    if (r.status !== 0 && r.status !== 1) problem = `CLI exit ${r.status}: ${r.stderr}`;
  }
  if (problem) {
    const keep = path.join(out, `crash-${crashes.length + 1}`);
    fs.mkdirSync(keep, { recursive: true });
    fs.cpSync(root, path.join(keep, "project"), { recursive: true });
    fs.writeFileSync(path.join(keep, "error.txt"), `${touched.join("\n")}\n\n${problem}\n`);
    crashes.push(keep);
    console.log(`crash ${crashes.length}: ${problem.split("\n")[0]} (saved in ${keep})`);
  }
  fs.rmSync(root, { recursive: true, force: true });
}
console.log(`fuzz: ${runs} mutants in ${seconds} s; exit 0: ${exits.get(0) ?? 0}, exit 1: ${exits.get(1) ?? 0}; crashes: ${crashes.length}`);
process.exit(crashes.length ? 1 : 0);
