import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads";

/**
 * One job done in a worker thread and waited for synchronously (ADR 0017w, after ADR 0017e's
 * parse workers): the pipeline stays one synchronous function. The thread posts one reply on a
 * message port and counts each step of its work (and its reply) in a shared Int32 counter, with
 * `Atomics.notify`; the caller sleeps in `Atomics.wait` and takes the reply with
 * `receiveMessageOnPort`, which needs no event loop. A thread that cannot start gives no job; one
 * whose counter has not moved for {@link STALL_MS} while the caller waits (it stalled, or died
 * before it could reply) is given up, and the caller does the work itself. Never throws.
 */

/** A job whose thread has not counted a step for this long while its caller waits is given up (ms). */
export const STALL_MS = 10_000;

/** What a job's thread is given as `workerData`: its input, the shared counter and the port it replies on. */
export interface ThreadJobData<I> {
  input: I;
  /** One Int32: steps the thread counted, its reply included. */
  signal: SharedArrayBuffer;
  port: MessagePort;
}

/** A started job. */
export interface ThreadJob<R> {
  /**
   * The thread's reply, waited for while the thread makes progress (at most {@link STALL_MS}
   * between two of its steps), or undefined when it stalled or died first. The first call ends
   * the thread; later calls give the same answer at once.
   */
  wait(): R | undefined;
}

/**
 * Starts a worker thread on `script` that does not keep the process alive (`unref`), with a
 * message port of its own: `workerData(port)` is its `workerData`, holding `port` (the thread's
 * end, transferred with `transfer`, the ArrayBuffers it takes over); the caller keeps the other
 * end. An error the thread throws is its caller's to notice (a reply that never comes), never the
 * process's: an 'error' event without a listener would be thrown when the event loop next runs.
 * Undefined when the thread cannot be created (`new Worker` throws). The one start of ADR 0017w's
 * jobs and ADR 0017x's reader thread.
 */
export function spawnThread(script: URL, workerData: (port: MessagePort) => unknown, transfer: ArrayBuffer[] = []): { worker: Worker; port: MessagePort } | undefined {
  const { port1, port2 } = new MessageChannel();
  try {
    const worker = new Worker(script, { workerData: workerData(port2), transferList: [port2, ...transfer] });
    worker.unref();
    worker.on("error", () => {});
    return { worker, port: port1 };
  } catch {
    port1.close();
    return undefined;
  }
}

/**
 * Starts `script` on `input` (with `transfer`: the ArrayBuffers it takes over, zero-copy; the
 * caller can no longer read them, even when the thread fails). Undefined when the thread cannot be
 * created. `stallMs`: {@link STALL_MS}, shorter in tests.
 */
export function startThreadJob<I, R>(script: URL, input: I, transfer: ArrayBuffer[] = [], stallMs = STALL_MS): ThreadJob<R> | undefined {
  const signal = new SharedArrayBuffer(4);
  const counter = new Int32Array(signal);
  const started = spawnThread(script, (port): ThreadJobData<I> => ({ input, signal, port }), transfer);
  if (!started) return undefined;
  const { worker, port: port1 } = started;
  let settled = false;
  let reply: R | undefined;
  return {
    wait() {
      if (settled) return reply;
      settled = true;
      let seen = Atomics.load(counter, 0);
      let since = Date.now();
      for (;;) {
        const message = receiveMessageOnPort(port1);
        if (message) {
          reply = message.message as R;
          break;
        }
        Atomics.wait(counter, 0, seen, Math.max(1, Math.min(200, stallMs)));
        const now = Atomics.load(counter, 0);
        if (now !== seen) {
          seen = now;
          since = Date.now();
        } else if (Date.now() - since >= stallMs) break;
      }
      void worker.terminate();
      port1.close();
      return reply;
    },
  };
}
