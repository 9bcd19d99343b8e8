import fs from "node:fs";
import os from "node:os";
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads";
import { packageFileUrl } from "../support/package-root.js";
import { utf8Chunks } from "../support/utf8.js";

/**
 * Creating the temporary files a write stages (`openWrite`, ADR 0017v): beside the calling thread,
 * in one writer thread, so that opening, writing and closing thousands of files overlaps the
 * render of the next modules instead of following it. The calling thread waits, synchronously,
 * only when it must know every file is there: before the renames, or before it removes what was
 * staged. A worker thread, not the callback `fs` API: the pipeline does not return to the event
 * loop before the write's end, so each file's open → write → close chain would stop after its
 * first step.
 *
 * Protocol: the calling thread posts batches of files on a message port; the writer creates each
 * (`writeText`), adds the count to a shared counter and wakes the caller (`Atomics.notify`). Its
 * first failure is posted back (the file's path and the error's code) before the counter moves
 * and raises a shared flag; it then creates no more files but still counts the ones it skips, so
 * the caller's wait ends. The caller reads the reply with `receiveMessageOnPort`, which needs no
 * event loop (the parse workers' protocol, ADR 0017e).
 */

/** Writes `text` as UTF-8 into a new (or truncated) file, chunk by chunk (`utf8Chunks`), holding one chunk's bytes at a time. */
export function writeText(absolute: string, text: string): void {
  const fd = fs.openSync(absolute, "w");
  try {
    for (const chunk of utf8Chunks(text)) {
      for (let done = 0; done < chunk.length; ) done += fs.writeSync(fd, chunk, done, chunk.length - done);
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** Why creating one staged file failed: its project-relative path and the error's code (`ENOSPC`) or text. */
export interface StageFailure {
  relative: string;
  reason: string;
}

/** One file to stage: the project-relative path (for the diagnostic), the temporary's absolute path, the text. */
export interface StagedFile {
  relative: string;
  temp: string;
  text: string;
}

/**
 * Creates staged files, maybe after `stage` has returned. `stage` never throws; {@link failure}
 * gives the first failure known so far without waiting, {@link settle} waits until every file
 * given is created (or skipped after a failure) and gives the first failure. After `settle` no file
 * is created until the next `stage`, so the caller may remove the temporaries. `close` settles and
 * ends the writer thread.
 */
export interface Stager {
  stage(file: StagedFile): void;
  failure(): StageFailure | undefined;
  settle(): StageFailure | undefined;
  close(): void;
}

/** Files staged in the calling thread before the writer thread takes over: below this a thread (about 40 ms to start) costs more than it saves. */
export const THREAD_AFTER_FILES = 64;

/** A text at least this long (UTF-16 units) is written in the calling thread: posting it would copy it (the manifest can be hundreds of MB). */
const THREAD_MAX_CHARS = 1 << 20;

/** Files (or characters) posted to the writer thread at a time. */
const BATCH_FILES = 32;
const BATCH_CHARS = 1 << 18;

/** A writer thread whose counter has not moved for this long while files are pending is given up (ms): the write fails (CA9003). */
const STALL_MS = 60_000;

/** What the writer thread posts back: its first failure. */
export type WriterReply = StageFailure;

/** The writer thread's input. `signal` holds Int32 counters: [0] files created or skipped, [1] 1 once a file failed. */
export interface WriterInput {
  signal: SharedArrayBuffer;
  port: MessagePort;
}

/** What the calling thread posts: files to create, or the end. */
export type WriterMessage = { files: StagedFile[] } | { close: true };

/** Creates each file at once, in the calling thread. */
function inlineStager(): Stager {
  let failed: StageFailure | undefined;
  return {
    stage(file) {
      if (failed) return;
      try {
        writeText(file.temp, file.text);
      } catch (error) {
        failed = { relative: file.relative, reason: (error as NodeJS.ErrnoException).code ?? String(error) };
      }
    },
    failure: () => failed,
    settle: () => failed,
    close() {},
  };
}

/** The writer thread's script: the compiled one in the package's `dist/`, also when this runs from source (tests). */
function writerScript(): URL | undefined {
  return packageFileUrl("dist/compiler/write/stageWorker.js");
}

/** A writer thread, or undefined when it cannot start (the caller then stages in its own thread). */
function threadStager(script: URL): Stager | undefined {
  const signal = new SharedArrayBuffer(8);
  const counters = new Int32Array(signal);
  const { port1, port2 } = new MessageChannel();
  let worker: Worker;
  try {
    const input: WriterInput = { signal, port: port2 };
    worker = new Worker(script, { workerData: input, transferList: [port2] });
    worker.unref();
  } catch {
    port1.close();
    return undefined;
  }
  let batch: StagedFile[] = [];
  let batchChars = 0;
  let posted = 0;
  let failed: StageFailure | undefined;
  let closed = false;
  const flush = (): void => {
    if (batch.length === 0) return;
    port1.postMessage({ files: batch } satisfies WriterMessage);
    posted += batch.length;
    batch = [];
    batchChars = 0;
  };
  const failure = (): StageFailure | undefined => {
    if (!failed && Atomics.load(counters, 1) === 1) {
      const reply = receiveMessageOnPort(port1);
      failed = reply ? (reply.message as WriterReply) : { relative: "", reason: "the writer thread failed" };
    }
    return failed;
  };
  const settle = (): StageFailure | undefined => {
    flush();
    let seen = Atomics.load(counters, 0);
    let since = Date.now();
    while (seen < posted) {
      Atomics.wait(counters, 0, seen, 1000);
      const now = Atomics.load(counters, 0);
      if (now !== seen) {
        seen = now;
        since = Date.now();
      } else if (Date.now() - since > STALL_MS) {
        failed ??= { relative: batch[0]?.relative ?? "", reason: "the writer thread stopped" };
        break;
      }
    }
    return failure();
  };
  return {
    stage(file) {
      if (closed || failure()) return;
      batch.push(file);
      batchChars += file.text.length;
      if (batch.length >= BATCH_FILES || batchChars >= BATCH_CHARS) flush();
    },
    failure,
    settle,
    close() {
      if (closed) return;
      settle();
      closed = true;
      port1.postMessage({ close: true } satisfies WriterMessage);
      port1.close();
      void worker.terminate();
    },
  };
}

/** Options of {@link openStager}: files staged in the calling thread before the writer thread starts (default {@link THREAD_AFTER_FILES}); the writer script (tests). */
export interface StagerOptions {
  threadAfter?: number;
  script?: URL;
}

/**
 * A {@link Stager} that creates the first `threadAfter` files (and every text of
 * {@link THREAD_MAX_CHARS} or more) in the calling thread, the others in a writer thread started
 * at the first of them; on one hardware thread, or when the thread cannot start, all in the calling
 * thread. The files are the same either way: only the thread that makes them differs.
 */
export function openStager(options: StagerOptions = {}): Stager {
  const threadAfter = options.threadAfter ?? THREAD_AFTER_FILES;
  const inline = inlineStager();
  let thread: Stager | undefined;
  let tried = os.availableParallelism() < 2 && options.script === undefined;
  let count = 0;
  const first = (): StageFailure | undefined => thread?.failure() ?? inline.failure();
  return {
    stage(file) {
      if (first()) return;
      count++;
      if (!thread && !tried && count > threadAfter) {
        tried = true;
        const script = options.script ?? writerScript();
        thread = script ? threadStager(script) : undefined;
      }
      if (thread && file.text.length < THREAD_MAX_CHARS) thread.stage(file);
      else inline.stage(file);
    },
    failure: first,
    // Every file of the thread was handed over before any file of the calling thread failed (no
    // file is staged after a failure is seen), so the thread's failure comes first in path order.
    settle: () => thread?.settle() ?? inline.settle(),
    close() {
      thread?.close();
    },
  };
}
