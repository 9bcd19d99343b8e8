import { packageFileUrl } from "../support/package-root.js";
import { startThreadJob, STALL_MS } from "../support/threadJob.js";

/**
 * One large file staged by a thread of its own (ADR 0017w): the manifest's bytes, handed over
 * by transfer (zero-copy), are written into their temporary and hashed while the calling thread
 * goes on comparing the DAG modules; the write waits for it (`Atomics.wait`) before its renames.
 * The thread only writes the temporary its caller named (`openWrite` decides, removes and renames).
 */

/**
 * Below this many bytes a file is staged by the calling thread: a thread's start (about 30 ms of
 * the other core, 1–2 ms of this one) is more than writing and hashing it (about 2 ms per MB).
 * 16 MiB: the manifest of about 1,800 contracts.
 */
export const STAGE_THREAD_MIN_BYTES = 16 * 1024 * 1024;

/** Bytes the thread writes at a time, each a step of its progress. */
const CHUNK_BYTES = 8 * 1024 * 1024;

/** What the thread is asked: the temporary's absolute path (created `wx`), the bytes and the chunk size. */
export interface StageInput {
  path: string;
  bytes: Uint8Array;
  chunk: number;
}

/** What the thread replies: the bytes' sha256 (hex) once the temporary holds them and is closed, the errno code of a file system failure, or its own failure. */
export type StageReply = { sha256: string } | { failed: string } | { error: string };

/** How a write stages in a thread (tests): the worker script (`null`: none, as when it cannot start), the least size, the stall time. */
export interface StageThreadOptions {
  script?: URL | null;
  minBytes?: number;
  stallMs?: number;
}

/** A file being staged by a thread: {@link wait} gives its sha256, the failure's code, or undefined when the thread gave nothing (the caller stages it itself). */
export interface StagingThread {
  wait(): { sha256: string } | { failed: string } | undefined;
}

/** Whether `bytes` is a whole ArrayBuffer of its own, so it can be transferred without taking anything else along. */
function ownsBuffer(bytes: Uint8Array): boolean {
  return bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
}

/**
 * Starts staging `bytes` into the new file `temporary` (absolute) in a thread, when they are at
 * least `minBytes` ({@link STAGE_THREAD_MIN_BYTES}), a buffer of their own and the worker script
 * is built; undefined otherwise (nothing started, `bytes` untouched). Once started, `bytes` are the
 * thread's (detached here), even when it later fails.
 */
export function startStagingThread(temporary: string, bytes: Uint8Array, options: StageThreadOptions = {}): StagingThread | undefined {
  if (bytes.byteLength < (options.minBytes ?? STAGE_THREAD_MIN_BYTES) || !ownsBuffer(bytes)) return undefined;
  const script = options.script === undefined ? packageFileUrl("dist/compiler/write/stageWorker.js") : options.script;
  if (!script) return undefined;
  const job = startThreadJob<StageInput, StageReply>(script, { path: temporary, bytes, chunk: CHUNK_BYTES }, [bytes.buffer as ArrayBuffer], options.stallMs ?? STALL_MS);
  if (!job) return undefined;
  return {
    wait() {
      const reply = job.wait();
      return reply && !("error" in reply) ? reply : undefined;
    },
  };
}
