import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * vitest's global setup: every temporary folder the suites make (`os.tmpdir()`, in the test
 * processes and in the commands they spawn) goes into one folder of this run, removed when the
 * run ends, so a run leaves nothing in the system's temporary folder whatever a test forgets.
 * Returns the teardown.
 */
export default function setup(): () => void {
  const previous = process.env.TMPDIR;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "contract-assets-vitest-"));
  // Set before the test processes start: they inherit it.
  process.env.TMPDIR = dir;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    fs.rmSync(dir, { recursive: true, force: true });
  };
}
