// The cross-check's compiler side, in one process (a process per case would be most of the test's
// time). For each diff golden pair staged by the test (BEFORE and AFTER roots), it exports every
// contract of both states to ODCS, also when the after state has link-stage errors (a breaking
// change makes the consumer an error, and `export odcs` then refuses to write, while the
// cross-check still needs the producer's new document), and says whether our diff of AFTER against
// BEFORE finds a breaking change. Documents that fail validation are absent. Test helper only:
// users run `contract-assets export odcs` and `contract-assets diff`.
//
//   node test/python/export_odcs_state.mjs < [{"name", "before", "after", "out"}, ...]
//   stdout: {"<name>": {"breaking": n}, ...}; documents in OUT/before/ and OUT/after/
import fs from "node:fs";
import path from "node:path";
import { defaultLayout } from "../../dist/compiler/discover/discoverProject.js";
import { compileProject } from "../../dist/compiler/pipeline.js";
import { renderOdcs } from "../../dist/compiler/render/renderOdcs.js";

const jobs = JSON.parse(fs.readFileSync(0, "utf8"));
const verdicts = {};
for (const job of jobs) {
  const before = compileProject(defaultLayout(path.resolve(job.before)));
  if (before.diagnostics.some((d) => d.severity === "error")) throw new Error(`${job.name}: the previous state does not compile`);
  const after = compileProject(defaultLayout(path.resolve(job.after)), { previousManifest: before.manifest });
  for (const [side, result] of [["before", before], ["after", after]]) {
    const dir = path.join(job.out, side);
    fs.mkdirSync(dir, { recursive: true });
    for (const [file, text] of renderOdcs(result.project, "odcs").value) fs.writeFileSync(path.join(dir, path.basename(file)), text);
  }
  verdicts[job.name] = { breaking: after.diff.changes.filter((c) => c.severity === "breaking").length };
}
process.stdout.write(JSON.stringify(verdicts));
