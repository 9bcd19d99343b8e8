// The entry of a parse worker thread (see parallelParse.ts): parses its share of the files and posts
// the results in batches on its port, each followed by a count and a wake-up of the waiting thread.
// Everything, the imports included, runs inside the try, so a failure is a message too, never a
// silent exit.
import { workerData } from "node:worker_threads";
import type { Payload } from "./parseCache.js";
import type { WorkerInput, WorkerReply } from "./parallelParse.js";

const input = workerData as WorkerInput;
const counters = new Int32Array(input.signal);
const post = (reply: WorkerReply): void => {
  input.port.postMessage(reply);
  Atomics.add(counters, 0, 1);
  Atomics.notify(counters, 0);
};
try {
  const { parseData } = await import("./parseDocument.js");
  const { toPayload } = await import("./parseCache.js");
  let batch: Payload[] = [];
  let at = 0;
  for (const file of input.files) {
    batch.push(toPayload({ data: parseData(file), verdict: null }));
    Atomics.add(counters, input.slot, 1);
    if (batch.length === input.batch) {
      post({ at, results: batch });
      at += batch.length;
      batch = [];
    }
  }
  if (batch.length > 0) post({ at, results: batch });
  post({ done: true });
} catch (error) {
  post({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
}
input.port.close();
