#!/usr/bin/env node
// Runs a Node script in this process and records its resource usage when the process exits: the
// fallback of scripts/bench/run.mjs where GNU time (`/usr/bin/time -v`) is not installed.
//
//   node scripts/bench/rusage.mjs OUT.json SCRIPT [ARGS...]
//
// OUT.json gets {maxRssKb, userSeconds, systemSeconds} of this process (the script included).

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [out, script, ...args] = process.argv.slice(2);
if (!out || !script) {
  process.stderr.write("usage: node scripts/bench/rusage.mjs OUT.json SCRIPT [ARGS...]\n");
  process.exit(2);
}
process.on("exit", () => {
  const u = process.resourceUsage();
  fs.writeFileSync(out, JSON.stringify({ maxRssKb: u.maxRSS, userSeconds: u.userCPUTime / 1e6, systemSeconds: u.systemCPUTime / 1e6 }));
});
const target = path.resolve(script);
process.argv = [process.argv[0], target, ...args];
await import(pathToFileURL(target).href);
