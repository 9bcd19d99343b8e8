import { receiveMessageOnPort, type MessagePort } from "node:worker_threads";
import { packageFileUrl } from "../support/package-root.js";
import { spawnThread, STALL_MS } from "../support/threadJob.js";

/**
 * Many small files staged by one thread (ADR 0020): a cold compile writes thousands of DAG
 * modules, and creating and writing them was half a second of the calling thread's time after
 * parse, while the other core had nothing to do. The write posts each changed file's temporary
 * path and text as it comes ({@link BatchStager.post}); the thread writes them in that order; the
 * write waits for it ({@link BatchStager.drain}, `Atomics.wait`) before it renames anything. A
 * file is the caller's until the thread has counted it: its text is kept till then, so a thread
 * that stalls or dies leaves the caller every file it did not count, to stage itself. The thread
 * only writes the temporaries it was given (`openWrite` decides, removes and renames).
 */

/** A write starts the thread at its file number this many, staging the first ones itself: an edit's few files never start it. */
export const BATCH_STAGE_AFTER = 64;
/** Larger texts (in UTF-16 units) are staged by the caller: copying one to the thread costs what writing it does. */
export const BATCH_STAGE_MAX_CHARS = 1 << 20;
/** At most this many files, or {@link MAX_PENDING_CHARS} of text, are posted and not yet counted: the caller then waits. */
const MAX_PENDING_FILES = 512;
const MAX_PENDING_CHARS = 16 << 20;
/** Files go to the thread in messages of this many, or of this much text (a message costs about what copying 100 KB does). */
const FILES_PER_MESSAGE = 32;
const CHARS_PER_MESSAGE = 256 << 10;

/** One file posted to the thread. */
export interface BatchStageFile {
  /** The temporary's absolute path (created `wx`). */
  temp: string;
  text: string;
}

/** The thread's `workerData`: the shared state (one Int32: files counted) and its end of the port, on which it is posted arrays of {@link BatchStageFile}s. */
export interface BatchStageData {
  signal: SharedArrayBuffer;
  port: MessagePort;
}

/** How a write stages in a batch thread (tests): the worker script (`null`: none), its first file, the stall time. */
export interface BatchStageOptions {
  script?: URL | null;
  after?: number;
  stallMs?: number;
}

/** What {@link BatchStager.drain} found: the first failure the thread met, and the files left to the caller. */
export interface BatchDrained<T> {
  /** The first file whose staging failed in the thread, with the errno code. */
  failed?: { tag: T; reason: string };
  /** Files the thread never counted (it stalled or died), in posting order: the caller stages them. */
  left: Array<BatchStageFile & { tag: T }>;
}

/** A running batch thread. `T`: what the caller tags each file with. */
export interface BatchStager<T> {
  /** Posts one file; false when the thread has been given up (the caller stages the file itself). */
  post(temp: string, text: string, tag: T): boolean;
  /** Waits until the thread has counted every file posted, ends it and says how it went. Once. */
  drain(): BatchDrained<T>;
}

/**
 * Starts the batch thread, or undefined when its script is not built or it cannot be created.
 * Never throws.
 */
export function startBatchStager<T>(options: BatchStageOptions = {}): BatchStager<T> | undefined {
  const script = options.script === undefined ? packageFileUrl("dist/compiler/write/batchStageWorker.js") : options.script;
  if (!script) return undefined;
  const signal = new SharedArrayBuffer(4);
  const state = new Int32Array(signal);
  const started = spawnThread(script, (port): BatchStageData => ({ signal, port }));
  if (!started) return undefined;
  const { worker, port } = started;
  const stallMs = options.stallMs ?? STALL_MS;
  // Every file posted, by the thread's count; a counted one's text is dropped.
  const files: Array<{ temp: string; text: string | undefined; tag: T }> = [];
  // Files before this one are counted; the texts from it on are held.
  let counted = 0;
  let heldChars = 0;
  let alive = true;
  let failed: BatchDrained<T>["failed"];
  // Posted by the caller and not yet sent to the thread.
  let outbox: BatchStageFile[] = [];
  let outboxChars = 0;
  const flush = (): void => {
    if (outbox.length === 0) return;
    port.postMessage(outbox);
    outbox = [];
    outboxChars = 0;
  };
  /** Drops the texts of what the thread has counted (while it runs: once it is given up, what it counts later is not its). */
  const forget = (): void => {
    if (!alive) return;
    for (const now = Atomics.load(state, 0); counted < now && counted < files.length; counted++) {
      heldChars -= files[counted]!.text!.length;
      files[counted]!.text = undefined;
    }
  };
  /** Waits while the thread counts, until it has counted `target` files; false when it stalled for `stallMs`. */
  const waitFor = (target: number): boolean => {
    let seen = Atomics.load(state, 0);
    let since = Date.now();
    while (seen < target) {
      Atomics.wait(state, 0, seen, Math.max(1, Math.min(200, stallMs)));
      const now = Atomics.load(state, 0);
      if (now !== seen) {
        seen = now;
        since = Date.now();
      } else if (Date.now() - since >= stallMs) return false;
    }
    return true;
  };
  /** Ends the thread, taking the failure it posted first (it posts one at most) before its port is closed. */
  const end = (): void => {
    // Its count first: the failure of a file counted by then was posted before it was counted.
    forget();
    for (let message = receiveMessageOnPort(port); message; message = receiveMessageOnPort(port)) {
      const m = message.message as { index: number; reason: string };
      if (!failed && Number.isInteger(m.index) && m.index >= 0 && m.index < files.length) failed = { tag: files[m.index]!.tag, reason: String(m.reason) };
    }
    alive = false;
    void worker.terminate();
    port.close();
  };
  return {
    post(temp, text, tag) {
      if (!alive) return false;
      files.push({ temp, text, tag });
      heldChars += text.length;
      outbox.push({ temp, text });
      outboxChars += text.length;
      if (outbox.length >= FILES_PER_MESSAGE || outboxChars >= CHARS_PER_MESSAGE) flush();
      forget();
      if (alive && (files.length - counted > MAX_PENDING_FILES || heldChars > MAX_PENDING_CHARS)) flush();
      while (alive && (files.length - counted > MAX_PENDING_FILES || heldChars > MAX_PENDING_CHARS)) {
        if (waitFor(Math.min(files.length, counted + 64))) forget();
        else end();
      }
      return true;
    },
    drain() {
      if (alive) {
        flush();
        waitFor(files.length);
        end();
      }
      const left = files.slice(counted).map((f) => ({ temp: f.temp, text: f.text!, tag: f.tag }));
      return failed ? { failed, left } : { left };
    },
  };
}
