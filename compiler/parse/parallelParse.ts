import os from "node:os";
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads";
import type { SourceFile } from "../discover/discoverProject.js";
import { packageFileUrl } from "../support/package-root.js";
import { fromPayload, type Payload } from "./parseCache.js";
import { parseData, type ParsedData } from "./parseDocument.js";

/**
 * Parsing in worker threads, waited for synchronously, so the pipeline stays one synchronous
 * function (ADR 0017e).
 *
 * The files are cut into contiguous shares of about equal size in bytes, one per worker. A worker
 * posts its results in batches (plain {@link ParsedData}, by structured clone) on a message port and
 * wakes the caller through a shared counter (`Atomics.notify`); the caller sleeps in `Atomics.wait`
 * and takes each batch with `receiveMessageOnPort`, which needs no event loop, so decoding one batch
 * overlaps the parsing of the next. Results go back in input order: the output is the same whatever
 * the number of workers (a test compiles with 0 and with several and compares the bytes).
 *
 * A worker that cannot start, throws, or makes no progress for {@link STALL_MS} is not waited for:
 * what it did not deliver is parsed in the calling thread. A worker never decides what a file means.
 */

/** Below this many bytes of YAML a worker costs more than it saves (its start is about 60 ms). */
export const MIN_PARALLEL_BYTES = 2 * 1024 * 1024;

/** Below this many files a share is not worth a worker. */
const MIN_FILES_PER_WORKER = 64;

/** A worker whose progress counter has not moved for this long is given up (ms). */
const STALL_MS = 60_000;

/** The most workers a parse starts, whatever the machine has. */
const MAX_WORKERS = 7;

/** Files a worker parses before it posts them (a batch). */
export const BATCH_FILES = 200;

/**
 * The young generation of a worker's heap (MiB). Parsing YAML allocates many short-lived objects;
 * V8's default semi-space (16 MiB) makes the scavenger run most of the time, and a larger one
 * lets most of them die unseen (`resourceLimits.maxYoungGenerationSizeMb`, Node's Worker docs).
 */
const YOUNG_GENERATION_MB = 96;

/**
 * How many workers to start for `files` when the caller did not say: {@link workerCountFor} their
 * text's length. The calling thread only decodes what they post.
 */
export function defaultWorkerCount(files: readonly SourceFile[]): number {
  let chars = 0;
  for (const f of files) chars += f.text.length;
  return workerCountFor(chars);
}

/**
 * Workers for `chars` characters of YAML on a machine of `threads` threads: none below
 * {@link MIN_PARALLEL_BYTES} or on one thread, else one a thread (`os.availableParallelism()`,
 * which follows the CPU affinity Node sees), at most {@link MAX_WORKERS}.
 */
export function workerCountFor(chars: number, threads: number = os.availableParallelism()): number {
  if (chars < MIN_PARALLEL_BYTES || threads < 2) return 0;
  return Math.min(MAX_WORKERS, threads);
}

/** The worker script: the compiled one in the package's `dist/`, also when this runs from source (tests). */
function workerScript(): URL | undefined {
  return packageFileUrl("dist/compiler/parse/parseWorker.js");
}

/** What the caller keeps of one started worker. */
interface Running {
  worker: Worker;
  port: MessagePort;
  /** Its progress counter in the shared array. */
  slot: number;
  /** Its share of the files: `[start, end)`. */
  start: number;
  end: number;
  /** Whether it posted its last batch, or failed. */
  finished: boolean;
}

/** What a worker posts: a batch of results from `at` (an index into its share), its end, or why it stopped. */
export type WorkerReply = { at: number; results: Payload[] } | { done: true } | { error: string };

/** A worker's input. `signal` holds Int32 counters: [0] messages posted by all workers, [slot] files this worker parsed. */
export interface WorkerInput {
  files: Array<Pick<SourceFile, "path" | "text">>;
  signal: SharedArrayBuffer;
  slot: number;
  port: MessagePort;
  batch: number;
}

/** Cuts `files` into `parts` contiguous shares of about equal bytes; returns the `parts + 1` boundaries. */
function shares(files: readonly SourceFile[], parts: number): number[] {
  let total = 0;
  for (const f of files) total += f.text.length;
  const bounds = [0];
  let acc = 0;
  for (let i = 0; i < files.length && bounds.length < parts; i++) {
    acc += files[i]!.text.length;
    if (acc >= (total * bounds.length) / parts) bounds.push(i + 1);
  }
  while (bounds.length < parts) bounds.push(files.length);
  bounds.push(files.length);
  return bounds;
}

/** What {@link parseAll} returns. */
export interface ParseRun {
  /** {@link parseData} of each file, in input order. */
  results: ParsedData[];
  /** How many of the files worker threads parsed (the calling thread parsed the rest). */
  byWorkers: number;
}

/** Options of {@link parseAll}. */
export interface ParseAllOptions {
  /** Called in the calling thread with each file's index and result as it arrives, once per file, in no particular order. */
  onResult?: (index: number, data: ParsedData) => void;
  /** The worker script (tests); default the compiled `parseWorker.js`. */
  script?: URL;
}

/**
 * {@link parseData} of every file, parsed by `workers` worker threads (0, or a project too small to
 * share out: all in the calling thread). `onResult` lets the caller work on each result while the
 * workers go on. Never throws for a worker's sake (see the module comment).
 */
export function parseAll(files: readonly SourceFile[], workers: number, options: ParseAllOptions = {}): ParseRun {
  const onResult = options.onResult ?? (() => {});
  const results = new Array<ParsedData | undefined>(files.length);
  const deliver = (index: number, data: ParsedData): void => {
    results[index] = data;
    onResult(index, data);
  };
  const count = Math.min(workers, Math.floor(files.length / MIN_FILES_PER_WORKER));
  const script = count > 0 ? (options.script ?? workerScript()) : undefined;
  if (!script) {
    files.forEach((f, i) => deliver(i, parseData(f)));
    return { results: results as ParsedData[], byWorkers: 0 };
  }
  const bounds = shares(files, count);
  const signal = new SharedArrayBuffer(4 * (count + 1));
  const counters = new Int32Array(signal);
  const running: Running[] = [];
  for (let i = 0; i < count; i++) {
    const start = bounds[i]!;
    const end = bounds[i + 1]!;
    if (start === end) continue;
    const { port1, port2 } = new MessageChannel();
    const input: WorkerInput = { files: files.slice(start, end).map((f) => ({ path: f.path, text: f.text })), signal, slot: i + 1, port: port2, batch: BATCH_FILES };
    try {
      const worker = new Worker(script, { workerData: input, transferList: [port2], resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
      worker.unref();
      running.push({ worker, port: port1, slot: i + 1, start, end, finished: false });
    } catch {
      port1.close();
    }
  }
  let progress = running.map((r) => Atomics.load(counters, r.slot));
  let since = Date.now();
  for (;;) {
    const seen = Atomics.load(counters, 0);
    let received = false;
    for (const r of running) {
      for (let m = r.finished ? undefined : receiveMessageOnPort(r.port); m; m = r.finished ? undefined : receiveMessageOnPort(r.port)) {
        received = true;
        const reply = m.message as WorkerReply;
        // Each result comes as a parse cache entry's payload (its value as JSON text): cheaper to
        // take in this thread than the tree of objects; one that does not decode is parsed here.
        if ("results" in reply)
          reply.results.forEach((payload, k) => {
            const entry = fromPayload(payload);
            if (entry) deliver(r.start + reply.at + k, entry.data);
          });
        else r.finished = true;
      }
    }
    if (running.every((r) => r.finished)) break;
    if (!received) Atomics.wait(counters, 0, seen, 1000);
    const now = running.map((r) => Atomics.load(counters, r.slot));
    if (now.some((n, k) => n !== progress[k])) {
      progress = now;
      since = Date.now();
    } else if (Date.now() - since > STALL_MS) {
      break;
    }
  }
  for (const r of running) {
    void r.worker.terminate();
    r.port.close();
  }
  // Whatever a worker did not deliver (it failed or stalled) is parsed here.
  let byWorkers = files.length;
  for (let i = 0; i < files.length; i++) {
    if (results[i]) continue;
    deliver(i, parseData(files[i]!));
    byWorkers--;
  }
  return { results: results as ParsedData[], byWorkers };
}
