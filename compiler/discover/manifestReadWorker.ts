// The entry of the output folder's manifest read-ahead thread (manifestReadAhead.ts, ADR 0017w):
// reads the file as discover reads it (`readRegularFile`: regular files only, within the limit,
// never blocking on a FIFO), hashes it (sha256) and posts the bytes back by transfer, or why they
// could not be read. Everything but the thread's own plumbing is imported inside the try, so a
// failure is a reply too, never a silent exit.
import { workerData } from "node:worker_threads";
import type { ThreadJobData } from "../support/threadJob.js";
import type { ManifestReadInput, ManifestReadReply } from "./manifestReadAhead.js";

const data = workerData as ThreadJobData<ManifestReadInput>;
const counter = new Int32Array(data.signal);
const reply = (message: ManifestReadReply, transfer: ArrayBuffer[] = []): void => {
  data.port.postMessage(message, transfer);
  Atomics.add(counter, 0, 1);
  Atomics.notify(counter, 0);
};
try {
  const { createHash } = await import("node:crypto");
  const { readRegularFile } = await import("./regularFile.js");
  const read = readRegularFile(data.input.path, { limit: data.input.limit, follow: true });
  if ("bytes" in read) {
    Atomics.add(counter, 0, 1);
    const sha256 = createHash("sha256").update(read.bytes).digest("hex");
    reply({ bytes: read.bytes, sha256 }, [read.bytes.buffer as ArrayBuffer]);
  } else reply({ refused: read });
} catch (error) {
  reply({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
}
data.port.close();
