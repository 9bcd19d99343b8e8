import { createTwoFilesPatch, FILE_HEADERS_ONLY } from "diff";
import type { DriftedFile } from "../write/writeOutputs.js";
import { maskSecrets } from "../support/secrets.js";

/**
 * How much of each stale file `compile --check` shows, in lines of unified diff (headers included),
 * and how large an edit the line diff may compute before it gives up (the `diff` package's
 * `maxEditLength`, in edited lines): a regenerated manifest stays fast to check and short to read.
 */
export const DRIFT_LINES_PER_FILE = 60;
export const DRIFT_MAX_EDIT_LENGTH = 1_000;

/** One stale file as `compile --check` reports it: the unified diff shown and the lines cut. */
export interface DriftPatch {
  path: string;
  change: "out of date" | "missing" | "stale";
  /** Unified diff, disk (`a/`) → what compile would write (`b/`), at most `DRIFT_LINES_PER_FILE` lines. */
  patch: string;
  /** Lines of the full unified diff left out of `patch` (0 when shown whole). */
  cut_lines: number;
}

/**
 * The unified diff of each stale file, as sqlc's `diff` and `verify` show it: `--- a/<path>` is the
 * file on disk (`/dev/null` when missing), `+++ b/<path>` what `compile` would write (`/dev/null`
 * when it would delete the file), three lines of context, computed by the `diff` package (Myers).
 * Each file is bounded to `limit` lines; what is cut is counted. An edit too large to compute within
 * `DRIFT_MAX_EDIT_LENGTH` is summarised by its line counts instead. Input and output in path order.
 */
export function driftPatches(drift: readonly DriftedFile[], limit: number = DRIFT_LINES_PER_FILE): DriftPatch[] {
  return drift.map((file) => {
    const change = file.onDisk === null ? "missing" : file.compiled === null ? "stale" : "out of date";
    const before = file.onDisk ?? "";
    const after = file.compiled ?? "";
    const full = createTwoFilesPatch(file.onDisk === null ? "/dev/null" : `a/${file.path}`, file.compiled === null ? "/dev/null" : `b/${file.path}`, before, after, undefined, undefined, {
      context: 3,
      headerOptions: FILE_HEADERS_ONLY,
      maxEditLength: DRIFT_MAX_EDIT_LENGTH,
    });
    if (full === undefined) {
      const count = (text: string): number => (text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0));
      return { path: file.path, change, patch: `--- a/${file.path}\n+++ b/${file.path}\n(too many differences to show: ${count(before)} lines on disk, ${count(after)} compiled)\n`, cut_lines: 0 };
    }
    const lines = full.split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    const shown = lines.slice(0, limit);
    return { path: file.path, change, patch: maskSecrets(shown.join("\n")) + "\n", cut_lines: lines.length - shown.length };
  });
}

/** The patches for people: each diff, then a line saying how many lines were cut, if any. */
export function formatDriftText(patches: readonly DriftPatch[]): string {
  return patches
    .map((p) => p.patch + (p.cut_lines > 0 ? `... ${p.cut_lines} more line${p.cut_lines === 1 ? "" : "s"} of this diff cut; run "contract-assets compile" and "git diff" for all of it\n` : ""))
    .join("");
}
