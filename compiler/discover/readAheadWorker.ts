// The entry of discover's reader thread (readAhead.ts, ADR 0017x): claims contract files one slot at
// a time from the first on (the calling thread claims from the last back), reads each as discover
// reads it (`readRegularFile`) into one buffer, keys it under the cache context it is given
// (`cacheKey`), then claims entries a batch at a time from a shared cursor (the calling thread
// claims from it too) and reads and checks each key's parse-cache entry (`checkCacheEntry`). It never decides what a file means: refusals and problems go back as they
// are. Everything, the imports included, runs inside the try, so a failure is a message too, never
// a silent exit.
import { workerData } from "node:worker_threads";
import type { AheadBatch, AheadInput, AheadReply, AheadStart, EntryProblem } from "./readAhead.js";
import type { RegularFileRefusal } from "./regularFile.js";

const input = workerData as AheadInput;
const counters = new Int32Array(input.signal);
let posted = 0;
/** How many batches of files were posted (set once the files are all claimed). */
let filesPosted = 0;
try {
  const path = await import("node:path");
  const { Counter, Slot } = await import("./readAhead.js");
  const { readRegularFile } = await import("./regularFile.js");
  const { openCacheReader } = await import("./readCache.js");
  const { cacheKey, checkCacheEntry } = await import("../support/cacheEntry.js");
  /** Posts one reply, counts it and wakes the calling thread. */
  const post = (reply: AheadReply, transfer: ArrayBuffer[] = []): void => {
    input.port.postMessage(reply, transfer);
    posted++;
    Atomics.add(counters, Counter.Posted, 1);
    Atomics.notify(counters, Counter.Posted);
  };
  /** Waits while {@link AheadInput.lead} batches are untaken (of entries: the files are not held back); false when the calling thread took none for a minute (it is gone or done). */
  const mayClaim = (): boolean => {
    // Replies are taken in the order posted: the files' batches first, then the entries'.
    for (let taken = Atomics.load(counters, Counter.Taken), since = Date.now(); posted - Math.max(taken, filesPosted) >= input.lead; taken = Atomics.load(counters, Counter.Taken)) {
      if (Date.now() - since > 60_000) return false;
      Atomics.wait(counters, Counter.Taken, taken, 1000);
    }
    return true;
  };
  const start = await new Promise<AheadStart>((resolve) => input.port.once("message", resolve));
  const count = start.paths.length;
  // The batch being made is read into one buffer (`readRegularFile`'s `into`), kept; what of it is
  // used goes out as a copy of its exact size, transferred.
  let arena = Buffer.allocUnsafeSlow(input.arenaBytes);
  let used = 0;
  let from = 0;
  // Per item of the batch, `[start, end)` of its bytes in the arena (-1, -1 for none).
  let places: number[] = [];
  let keys: string[] = [];
  let refusals: Array<[number, RegularFileRefusal]> = [];
  let problems: Array<[number, EntryProblem]> = [];
  let rekeyed: Array<[number, string]> = [];
  let kind: AheadBatch["kind"] = "files";
  const flush = (): void => {
    if (places.length === 0) return;
    const buffer = arena.buffer.slice(0, used) as ArrayBuffer;
    const at = Int32Array.from(places);
    const batch: AheadBatch = kind === "files" ? { kind, from, buffer, places: at, keys: keys.join(""), refusals } : { kind, from, buffer, places: at, problems, rekeyed };
    post(batch, [buffer, at.buffer]);
    from += places.length / 2;
    used = 0;
    places = [];
    keys = [];
    refusals = [];
    problems = [];
    rekeyed = [];
  };
  const into = (bytes: number): Buffer => {
    if (used + bytes > arena.byteLength) {
      flush();
      if (bytes > arena.byteLength) arena = Buffer.allocUnsafeSlow(bytes);
    }
    return arena.subarray(used);
  };
  /** Adds the next item: `bytes`, a view of the arena, stay where they were read; the arena is used up to their end. */
  const add = (bytes: Uint8Array | undefined): void => {
    places.push(bytes ? bytes.byteOffset : -1, bytes ? bytes.byteOffset + bytes.byteLength : -1);
    if (bytes) used = bytes.byteOffset + bytes.byteLength;
  };
  // Each file's key, for the files this thread read.
  const made = new Array<string | undefined>(count);
  // The files' bytes are kept by the calling thread for the whole compile anyway: no lead. Each
  // file's slot is claimed from the first on, until one is the calling thread's (it claims from
  // the last back).
  const slots = new Int32Array(start.slots);
  const shared = Buffer.from(start.keys);
  from = 0;
  for (let i = 0; i < count && Atomics.compareExchange(slots, i, Slot.Free, Slot.Thread) === Slot.Free; i++) {
    const relative = start.paths[i]!;
    const read = readRegularFile(path.join(input.root, relative), { limit: input.limit, follow: true, into });
    if ("bytes" in read) {
      const key = cacheKey(start.context, relative, read.bytes);
      made[i] = key;
      keys.push(key);
      add(read.bytes);
    } else {
      refusals.push([places.length / 2, read]);
      add(undefined);
    }
    if (places.length >= 2 * input.batchFiles) flush();
  }
  flush();
  filesPosted = posted;
  kind = "entries";
  const entry = openCacheReader(input.root, input.folder, into);
  while (mayClaim()) {
    from = Atomics.add(counters, Counter.NextEntry, input.claimEntries);
    if (from >= count) break;
    for (let i = from; i < Math.min(count, from + input.claimEntries); i++) {
      // A file the calling thread read: its key as it made it, or (not made yet) the file read again
      // here for it; the key goes with the entry, taken only under the calling thread's own key.
      let key = made[i];
      if (key === undefined && Atomics.load(slots, i) === Slot.Keyed) {
        key = shared.toString("hex", 32 * i, 32 * i + 32);
        rekeyed.push([places.length / 2, key]);
      } else if (key === undefined) {
        const again = readRegularFile(path.join(input.root, start.paths[i]!), { limit: input.limit, follow: true, reuse: true });
        if ("bytes" in again) {
          key = cacheKey(start.context, start.paths[i]!, again.bytes);
          rekeyed.push([places.length / 2, key]);
        }
      }
      const read = key === undefined ? undefined : entry(key);
      const checked = read && "bytes" in read ? checkCacheEntry(read.bytes, { key: key!, compiler: start.compiler }) : undefined;
      // The entry's header stays in the arena before its payload; the item names the payload.
      if (checked && "payload" in checked) add(checked.payload);
      else {
        problems.push([places.length / 2, key === undefined ? { notRead: true } : read === undefined ? { missing: true } : (checked ?? (read as { unreadable: string }))]);
        add(undefined);
      }
    }
    flush();
  }
  post({ kind: "done" });
} catch (error) {
  input.port.postMessage({ kind: "error", error: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies AheadReply);
  Atomics.add(counters, 0, 1);
  Atomics.notify(counters, 0);
}
input.port.close();
