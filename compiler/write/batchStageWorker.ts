// The entry of the write's batch staging thread (batchStager.ts, ADR 0020): takes the files its
// caller posts (an array a message), in order, each a temporary's absolute path and a text, and
// writes each text as UTF-8 into a new file there (`wx`: never one that exists). After each file
// it counts one in the shared state; at its first file system failure it posts that file's index
// and errno code, and writes nothing more (the later files are counted as they come, unwritten).
// Removing, renaming and deciding stay with the caller.
import fs from "node:fs";
import { workerData } from "node:worker_threads";
import type { BatchStageData, BatchStageFile } from "./batchStager.js";

const data = workerData as BatchStageData;
const state = new Int32Array(data.signal);
let index = 0;
let failed = false;
data.port.on("message", (files: BatchStageFile[]) => {
  for (const file of files) {
    if (!failed) {
      try {
        fs.writeFileSync(file.temp, file.text, { flag: "wx" });
      } catch (error) {
        failed = true;
        data.port.postMessage({ index, reason: (error as NodeJS.ErrnoException).code ?? String(error) });
      }
    }
    index++;
    Atomics.store(state, 0, index);
    Atomics.notify(state, 0);
  }
});
