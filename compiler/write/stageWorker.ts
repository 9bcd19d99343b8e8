// The entry of the write's staging thread (stageThread.ts, ADR 0017w): creates one temporary
// (`wx`: never one that exists), writes the bytes it was handed (transferred) into it, counting a
// step per chunk, closes it, hashes the bytes (sha256) and replies; a file system error is the
// reply `failed` with its code (the temporary, if created, is the caller's to remove). Everything
// but the thread's own plumbing is imported inside the try, so a failure is a reply too.
import { workerData } from "node:worker_threads";
import type { ThreadJobData } from "../support/threadJob.js";
import type { StageInput, StageReply } from "./stageThread.js";

const data = workerData as ThreadJobData<StageInput>;
const counter = new Int32Array(data.signal);
const step = (): void => {
  Atomics.add(counter, 0, 1);
  Atomics.notify(counter, 0);
};
const reply = (message: StageReply): void => {
  data.port.postMessage(message);
  step();
};
try {
  const fs = (await import("node:fs")).default;
  const { createHash } = await import("node:crypto");
  const { path, bytes, chunk } = data.input;
  let failed: string | undefined;
  let fd: number | undefined;
  try {
    fd = fs.openSync(path, "wx");
    for (let done = 0; done < bytes.length; step()) done += fs.writeSync(fd, bytes, done, Math.min(chunk, bytes.length - done));
  } catch (error) {
    failed = (error as NodeJS.ErrnoException).code ?? String(error);
  } finally {
    try {
      if (fd !== undefined) fs.closeSync(fd);
    } catch (error) {
      failed ??= (error as NodeJS.ErrnoException).code ?? String(error);
    }
  }
  reply(failed !== undefined ? { failed } : { sha256: createHash("sha256").update(bytes).digest("hex") });
} catch (error) {
  reply({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
}
data.port.close();
