// The entry of the writer thread (see stageFiles.ts): creates each staged file it is sent, counts
// it in the shared counter and wakes the waiting thread. Its first failure is posted back before
// the count moves; the files after it are counted, not created. Everything, the import included,
// runs inside a try, so a failure is a reply too, never a silent exit.
import { workerData } from "node:worker_threads";
import type { WriterInput, WriterMessage } from "./stageFiles.js";

const input = workerData as WriterInput;
const counters = new Int32Array(input.signal);
let write: ((absolute: string, text: string) => void) | undefined;
let failed = false;
let startError: string | undefined;
try {
  write = (await import("./stageFiles.js")).writeText;
} catch (error) {
  startError = error instanceof Error ? error.message : String(error);
}
input.port.on("message", (message: WriterMessage) => {
  if ("close" in message) return void input.port.close();
  for (const file of message.files) {
    if (failed) continue;
    try {
      if (!write) throw new Error(startError);
      write(file.temp, file.text);
    } catch (error) {
      failed = true;
      input.port.postMessage({ relative: file.relative, reason: (error as NodeJS.ErrnoException).code ?? String(error) });
      Atomics.store(counters, 1, 1);
    }
  }
  Atomics.add(counters, 0, message.files.length);
  Atomics.notify(counters, 0);
});
