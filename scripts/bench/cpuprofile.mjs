#!/usr/bin/env node
// Summarises a V8 .cpuprofile (node --cpu-prof): the functions with the most self time and the
// most inclusive time, each as a share of the whole profile.
//
//   node scripts/bench/cpuprofile.mjs FILE.cpuprofile [--top 25] [--json]

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "..", "..");

/** Shortens a script URL to a path inside the repository (or node_modules/..., node:...). */
function shortUrl(url) {
  if (!url) return "(native)";
  let p = url.startsWith("file://") ? fileURLToPath(url) : url;
  const nm = p.lastIndexOf("node_modules/");
  if (nm >= 0) return p.slice(nm);
  if (p.startsWith(repoRoot + path.sep)) return path.relative(repoRoot, p);
  return p;
}

/**
 * Returns `{ totalMs, self: [{fn, where, ms, share}], inclusive: [...] }`. Inclusive time counts a
 * function once per sample even when it recurses.
 */
export function summarise(profile, top = 25) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const key = (n) => {
    const f = n.callFrame;
    return `${f.functionName || "(anonymous)"}\t${shortUrl(f.url)}:${f.lineNumber + 1}`;
  };
  const deltas = profile.timeDeltas;
  const selfUs = new Map();
  const inclUs = new Map();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = deltas[i + 1] ?? deltas[i] ?? 0;
    total += dt;
    let id = profile.samples[i];
    const leaf = nodes.get(id);
    selfUs.set(key(leaf), (selfUs.get(key(leaf)) ?? 0) + dt);
    const seen = new Set();
    while (id !== undefined) {
      const k = key(nodes.get(id));
      if (!seen.has(k)) {
        seen.add(k);
        inclUs.set(k, (inclUs.get(k) ?? 0) + dt);
      }
      id = parent.get(id);
    }
  }
  const rows = (m) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => {
        const [fn, where] = k.split("\t");
        return { fn, where, ms: Math.round(us / 100) / 10, share: Math.round((us / total) * 1000) / 10 };
      });
  return { totalMs: Math.round(total / 1000), self: rows(selfUs), inclusive: rows(inclUs) };
}

export function formatSummary(s, title = "") {
  const out = [`${title}profile ${s.totalMs} ms`];
  const table = (label, rows) => {
    out.push(`  ${label}:`);
    for (const r of rows) out.push(`    ${String(r.share).padStart(5)}%  ${String(r.ms).padStart(9)} ms  ${r.fn}  ${r.where}`);
  };
  table("self time", s.self);
  table("inclusive time", s.inclusive);
  return out.join("\n") + "\n";
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const args = process.argv.slice(2);
  const file = args.find((a, i) => !a.startsWith("--") && args[i - 1] !== "--top");
  const topAt = args.indexOf("--top");
  const top = topAt >= 0 ? Number(args[topAt + 1]) : 25;
  if (!file) {
    process.stderr.write("usage: node scripts/bench/cpuprofile.mjs FILE.cpuprofile [--top N] [--json]\n");
    process.exit(2);
  }
  const s = summarise(JSON.parse(fs.readFileSync(file, "utf8")), top);
  process.stdout.write(args.includes("--json") ? JSON.stringify(s, null, 2) + "\n" : formatSummary(s));
}
