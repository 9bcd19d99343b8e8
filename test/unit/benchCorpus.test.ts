import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error -- plain JavaScript module of the benchmark (scripts/bench), no type declarations
import { writeCorpus } from "../../scripts/bench/corpus.mjs";
import { cli } from "./helpers.js";

// `npm run bench` compiles a synthetic corpus; when a compiler check tightens, the generator must
// still write contracts that compile, or the benchmark stops at its first step.
describe("the benchmark's synthetic corpus", () => {
  it("validates with no error, at the bench's seed", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "contract-assets-bench-corpus-"));
    try {
      writeCorpus({ contracts: 300, seed: 20250101, root });
      const result = cli(["validate", "--root", root]);
      expect(result.stderr).not.toMatch(/ error CA\d{4}/);
      expect(result.status, result.stderr).toBe(0);
      expect(result.stdout + result.stderr).toMatch(/valid: 300 contracts/);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
