import fs from "node:fs";
import { packageFileUrl } from "../support/package-root.js";
import { startThreadJob, type ThreadJob } from "../support/threadJob.js";
import type { RegularFileRefusal } from "./regularFile.js";

/**
 * The output folder's manifest read and hashed in a thread started at discover (ADR 0017w), so
 * that a warm compile's record cache (ADR 0017p) finds the previous manifest's bytes and their
 * sha256 ready instead of reading and hashing ~90 MB in the calling thread. The thread reads as
 * discover does (`readRegularFile`, the same limit); what it gives is what a read in the calling
 * thread would have given, and when it gives nothing (it could not start, threw or stalled) the
 * caller reads the file itself.
 */

/**
 * Below this size (bytes) the manifest is read in the calling thread: a thread's start (about
 * 30 ms of the other core, 1–2 ms of this one) is more than reading and hashing it (about 1 ms per
 * MB). 16 MiB: a project of about 1,800 contracts.
 */
export const READ_AHEAD_MIN_BYTES = 16 * 1024 * 1024;

/** What the thread is asked: the file's absolute path and the size limit (bytes). */
export interface ManifestReadInput {
  path: string;
  limit: number;
}

/** What the thread replies: the bytes (transferred) and their sha256 (hex), why there are none, or its own failure. */
export type ManifestReadReply = { bytes: Uint8Array; sha256: string } | { refused: RegularFileRefusal } | { error: string };

/** What a read-ahead gave: the file's bytes with their sha256, or why `readRegularFile` gave none. */
export type ManifestRead = { bytes: Buffer; sha256: string } | { refused: RegularFileRefusal };

/** A started read-ahead: {@link take} waits for it (once). */
export interface ManifestReadAhead {
  /** The thread's read, or undefined when it gave none (the caller reads the file itself). */
  take(): ManifestRead | undefined;
}

/**
 * Starts reading the file at `absolute` (a project's output folder's manifest) in a thread, when
 * it is a regular file of at least `minBytes` ({@link READ_AHEAD_MIN_BYTES}) and the worker
 * script is built; undefined otherwise (no thread: the caller reads it as before). `script`: the
 * worker script and `stallMs` its stall time (tests).
 */
export function startManifestReadAhead(absolute: string, limit: number, options: { minBytes?: number; script?: URL; stallMs?: number } = {}): ManifestReadAhead | undefined {
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(absolute, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
  if (!stat?.isFile() || stat.size < (options.minBytes ?? READ_AHEAD_MIN_BYTES)) return undefined;
  const script = options.script ?? packageFileUrl("dist/compiler/discover/manifestReadWorker.js");
  const job: ThreadJob<ManifestReadReply> | undefined = script && startThreadJob<ManifestReadInput, ManifestReadReply>(script, { path: absolute, limit }, [], options.stallMs);
  if (!job) return undefined;
  return {
    take() {
      const reply = job.wait();
      if (!reply || "error" in reply) return undefined;
      if ("refused" in reply) return reply;
      return { bytes: Buffer.from(reply.bytes.buffer, reply.bytes.byteOffset, reply.bytes.byteLength), sha256: reply.sha256 };
    },
  };
}
