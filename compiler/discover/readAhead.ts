import path from "node:path";
import { receiveMessageOnPort, type MessagePort } from "node:worker_threads";
import { packageFileUrl } from "../support/package-root.js";
import { spawnThread } from "../support/threadJob.js";
import { openCacheReader, type CacheEntryRead } from "./readCache.js";
import { readRegularFile, type RegularFileRead, type RegularFileRefusal } from "./regularFile.js";

/**
 * Discover's reader thread (ADR 0017x): in a compile with the incremental cache, a worker thread
 * reads the contract files in discover's order, keys each (`cacheKey`), then reads and checks each
 * key's parse-cache entry (`checkCacheEntry`: everything short of `v8.deserialize`), while the
 * calling thread decodes what it has taken. The calling thread takes each batch synchronously as
 * it needs it (`Atomics.wait` on a shared counter, then `receiveMessageOnPort`, as the parse
 * workers are waited for, ADR 0017e), so the pipeline stays one synchronous function.
 *
 * Work is claimed, never assigned, so the calling thread never waits for a thread that has not
 * started yet or got no core (a loaded machine), only for a claim in progress. The files: one
 * shared slot each, claimed by compare-and-swap, the thread from the first file on, the calling
 * thread from the last one back, until they meet; then the calling thread takes the thread's (the
 * thread posts {@link BATCH_FILES} at a time) and decodes them all in order. The entries: a shared
 * cursor; the thread claims {@link CLAIM_ENTRIES} at a time, and the calling thread, when the
 * entry it needs is unclaimed, claims it and reads it itself.
 *
 * A batch's bytes are one transferred `ArrayBuffer` of their exact size, the files or payloads
 * slices of it: a few hundred backing stores for the calling thread's heap instead of one per
 * file and one per entry. The thread claims no more entries once {@link LEAD_BATCHES} batches are
 * untaken, so the entries in flight stay a few MB (ADR 0017o: the cache's 136 MB are never held at
 * once); the files it reads as fast as it can (their bytes are kept for the compile anyway).
 *
 * The thread never decides: a refusal (`RegularFileRefusal`) or an entry's problem comes back as
 * `readRegularFile` and `checkCacheEntry` give it, and discover and the parse cache turn it into
 * the same diagnostic and note as when the calling thread reads. A thread that cannot start,
 * posts an error, or posts nothing for {@link STALL_MS} while a claim of it is awaited is given
 * up: the calling thread reads what it did not deliver, as it does without a thread.
 */

/** Below this many contract files the thread is not started (measured, ADR 0017x). */
export const MIN_READ_AHEAD_FILES = 1000;

/** Files the thread posts at a time (one batch). */
const BATCH_FILES = 64;

/** Entries the thread claims at a time (one batch). */
const CLAIM_ENTRIES = 32;

/** The buffer the thread reads a batch into, kept and reused; a batch is sent as a copy of the part used. */
const ARENA_BYTES = 1 << 20;

/** Batches the thread may have posted beyond what the calling thread took, before it claims more entries. */
const LEAD_BATCHES = 16;

/** The calling thread gives the thread up when, awaiting a claim of it, no batch came for this long (ms). */
const STALL_MS = 10_000;

/**
 * The shared counters (Int32, `AheadInput.signal`): batches posted, batches taken, the next
 * unclaimed entry (an index into `paths`).
 */
export const Counter = { Posted: 0, Taken: 1, NextEntry: 2 } as const;

/** A file's slot (`AheadStart.slots`): unclaimed, the thread's, the calling thread's, the calling thread's with its key in `AheadStart.keys`. */
export const Slot = { Free: 0, Thread: 1, Caller: 2, Keyed: 3 } as const;

/** What the thread gets at its start (`workerData`). */
export interface AheadInput {
  root: string;
  /** `MAX_FILE_BYTES`: a larger contract is refused "too large", as discover refuses it. */
  limit: number;
  /** The parse cache's folder, project-relative. */
  folder: string;
  /** The {@link Counter}s. */
  signal: SharedArrayBuffer;
  port: MessagePort;
  lead: number;
  batchFiles: number;
  claimEntries: number;
  arenaBytes: number;
}

/**
 * What the thread is sent once the configs are read: the contract files (sorted,
 * project-relative), the cache context (`cacheContext` of the configs) and the compiler an entry
 * must name (`parseCacheWriter`).
 */
export interface AheadStart {
  paths: string[];
  context: string;
  compiler: string;
  /** One Int32 {@link Slot} per file. */
  slots: SharedArrayBuffer;
  /** 32 bytes per file: the key (sha256) the calling thread made of a file of its share (`Slot.Keyed`), so the thread need not read the file again for it. */
  keys: SharedArrayBuffer;
}

/**
 * A batch: its bytes (one buffer) and, for the files (or entries) `from`, `from + 1`, …, where
 * each lies in it: `places` holds `[start, end)` per item, (-1, -1) for one without bytes. For
 * files, `keys` holds each read file's cache key, 64 hex characters one after the other, and
 * `refusals` why each unread one was not read, by its index in the batch. For entries (in the
 * files' order), `problems` holds why one has no payload, by its index in the batch: missing,
 * unreadable, damaged or foreign, or `notRead` when the thread could not read that file; and
 * `rekeyed` the key of each entry whose file the calling thread read (the thread had its key from
 * `AheadStart.keys`, or read the file again for it: the entry is taken only under the same key). Flat, so taking a batch makes few objects.
 */
export type AheadBatch =
  | { kind: "files"; from: number; buffer: ArrayBuffer; places: Int32Array; keys: string; refusals: Array<[number, RegularFileRefusal]> }
  | { kind: "entries"; from: number; buffer: ArrayBuffer; places: Int32Array; problems: Array<[number, EntryProblem]>; rekeyed: Array<[number, string]> };

/** Why an entry of a batch has no payload. */
export type EntryProblem = { missing: true } | { notRead: true } | { unreadable: string } | { problem: "damaged" | "foreign"; detail: string };

/** What the thread posts: a batch, its end, or why it stopped. */
export type AheadReply = AheadBatch | { kind: "done" } | { kind: "error"; error: string };

/** One contract file as the thread read it: what `readRegularFile` gives, and the key of its bytes under the context. */
export type AheadFile = { read: RegularFileRead; key?: string };

/** A started reader thread ({@link startReadAhead}). */
export interface ReadAhead {
  /** Sends the contract files and the cache context; the thread starts reading. */
  begin(start: Omit<AheadStart, "slots" | "keys">): void;
  /**
   * The next contract file in `paths` order, as `readRegularFile` read it (the first call reads
   * the calling thread's share and waits for the thread's); with its key when the thread read it.
   */
  nextFile(): AheadFile;
  /** The file {@link nextFile} just gave without a key has this key (made by the caller): its entry may come from the thread. */
  keyed(key: string): void;
  /** Reads the entry of `key`: the thread's checked entry when it reads that key's (waited for), else the calling thread's own read (`openCacheReader`). */
  entry(key: string): CacheEntryRead;
  /** Stops the thread and lets go of what it delivered and was not taken. */
  close(): void;
  /** How many contract files and checked entries (payloads and problems) the caller took from the thread. */
  readonly taken: { files: number; entries: number };
}

/** The thread's script: the compiled one in the package's `dist/`, also when this runs from source (tests). */
function readAheadScript(): URL | undefined {
  return packageFileUrl("dist/compiler/discover/readAheadWorker.js");
}

/** An entry the parse cache took, or one the thread did not read. */
const TAKEN = Symbol("taken");
const NOT_READ = Symbol("not read");

/**
 * Claims index `at` of the pass whose cursor is `counter` for the calling thread when nobody has
 * claimed it: the index where the cursor was, up to which the thread claimed (the indexes from it
 * to `at` are skipped, and the calling thread reads them if it ever needs them: a lookup out of
 * order); undefined when the thread has claimed `at`.
 */
function claim(counters: Int32Array, counter: (typeof Counter)["NextEntry"], at: number): number | undefined {
  for (let next = Atomics.load(counters, counter); next <= at; next = Atomics.load(counters, counter)) {
    if (Atomics.compareExchange(counters, counter, next, at + 1) === next) return next;
  }
  return undefined;
}

/**
 * Starts the reader thread of a project's contract files and parse-cache entries (see the module
 * comment), or undefined when it cannot start (no compiled script, or `new Worker` throws).
 * `script`: another worker script (tests); `claims: false`: the calling thread claims nothing and
 * waits for the thread, reading only what it gives up (tests: so that the thread reads every file).
 */
export function startReadAhead(root: string, options: { limit: number; folder: string; script?: URL; claims?: boolean }): ReadAhead | undefined {
  const script = options.script ?? readAheadScript();
  if (!script) return undefined;
  const signal = new SharedArrayBuffer(16);
  const counters = new Int32Array(signal);
  // A thread that throws outside its try (a script that cannot load) is an 'error' event, after
  // the compile: nothing to do then (its files were claimed by nobody, so read here).
  const started = spawnThread(script, (port): AheadInput => ({
    root,
    limit: options.limit,
    folder: options.folder,
    signal,
    port,
    lead: LEAD_BATCHES,
    batchFiles: BATCH_FILES,
    claimEntries: CLAIM_ENTRIES,
    arenaBytes: ARENA_BYTES,
  }));
  if (!started) return undefined;
  const { worker, port: port1 } = started;
  let alive = true;
  const stop = (): void => {
    if (!alive) return;
    alive = false;
    void worker.terminate();
    port1.close();
  };
  const taken = { files: 0, entries: 0 };
  // Files delivered and not yet taken, by index; entries likewise (TAKEN once taken).
  const files: Array<AheadFile | undefined> = [];
  let filled = 0;
  let nextFileAt = 0;
  let paths: string[] = [];
  let slots: Int32Array | undefined;
  let keys: Buffer | undefined;
  const entries: Array<CacheEntryRead | typeof TAKEN | typeof NOT_READ> = [];
  const delivered = { entries: new Set<number>() };
  // The index of each key the thread made (its file's), for the entries.
  const order = new Map<string, number>();
  let own: ((key: string) => CacheEntryRead) | undefined;
  const ownRead = (key: string): CacheEntryRead => (own ??= openCacheReader(root, options.folder))(key);
  const take = (reply: AheadReply): void => {
    if (reply.kind === "done") stop();
    else if (reply.kind === "files") {
      let refused = 0;
      let keyAt = 0;
      for (let k = 0; 2 * k < reply.places.length; k++) {
        const refusal = reply.refusals[refused];
        if (refusal && refusal[0] === k) {
          files[reply.from + k] = { read: refusal[1] };
          filled++;
          taken.files++;
          refused++;
          continue;
        }
        const key = reply.keys.slice(keyAt, (keyAt += 64));
        order.set(key, reply.from + k);
        files[reply.from + k] = { read: { bytes: Buffer.from(reply.buffer, reply.places[2 * k]!, reply.places[2 * k + 1]! - reply.places[2 * k]!) }, key };
        filled++;
        taken.files++;
      }
    } else if (reply.kind === "entries") {
      let problem = 0;
      let rekeyed = 0;
      for (let k = 0; 2 * k < reply.places.length; k++) {
        const again = reply.rekeyed[rekeyed];
        if (again && again[0] === k) {
          rekeyed++;
          if (order.get(again[1]) !== reply.from + k) {
            // Read under another key than the calling thread's: not this file's entry any more.
            if (reply.problems[problem]?.[0] === k) problem++;
            skip(reply.from + k);
            continue;
          }
        }
        const p = reply.problems[problem];
        let read: CacheEntryRead | typeof NOT_READ;
        if (p && p[0] === k) {
          problem++;
          const why = p[1];
          read = "missing" in why ? undefined : "notRead" in why ? NOT_READ : "unreadable" in why ? { unreadable: why.unreadable } : { checked: why };
        } else read = { checked: { payload: Buffer.from(reply.buffer, reply.places[2 * k]!, reply.places[2 * k + 1]! - reply.places[2 * k]!) } };
        entries[reply.from + k] = read;
        delivered.entries.add(reply.from + k);
      }
    }
  };
  const skip = (at: number): void => {
    entries[at] = NOT_READ;
    delivered.entries.add(at);
  };
  /** Takes batches until `has()` or the thread is given up (it failed, or stalled while awaited). */
  const awaitUntil = (has: () => boolean): void => {
    let seen = Atomics.load(counters, Counter.Posted);
    let since = Date.now();
    while (alive && !has()) {
      const m = receiveMessageOnPort(port1);
      if (m) {
        Atomics.add(counters, Counter.Taken, 1);
        Atomics.notify(counters, Counter.Taken);
        const reply = m.message as AheadReply;
        if (reply.kind === "error") stop();
        else take(reply);
        continue;
      }
      const now = Atomics.load(counters, Counter.Posted);
      if (now !== seen) {
        seen = now;
        since = Date.now();
      } else if (Date.now() - since > STALL_MS) stop();
      else Atomics.wait(counters, Counter.Posted, seen, 100);
    }
  };
  const mine = (at: number): boolean => {
    const from = options.claims !== false ? claim(counters, Counter.NextEntry, at) : undefined;
    // Entries skipped are nobody's: read here when looked up.
    if (from !== undefined) for (let i = from; i < at; i++) skip(i);
    return from !== undefined;
  };
  const ownFile = (at: number): AheadFile => ({ read: readRegularFile(path.join(root, paths[at]!), { limit: options.limit, follow: true }) });
  /** The calling thread's share of the files, read from the last one back, then the thread's, waited for; what it did not deliver is read here. */
  const gather = (): void => {
    if (options.claims !== false) {
      for (let at = paths.length - 1; at >= 0 && Atomics.compareExchange(slots!, at, Slot.Free, Slot.Caller) === Slot.Free; at--) {
        files[at] = ownFile(at);
        filled++;
      }
    }
    awaitUntil(() => filled >= paths.length);
    for (let at = 0; at < paths.length; at++) if (files[at] === undefined) files[at] = ownFile(at);
  };
  return {
    taken,
    begin(start) {
      paths = start.paths;
      const shared = { slots: new SharedArrayBuffer(4 * paths.length), keys: new SharedArrayBuffer(32 * paths.length) };
      slots = new Int32Array(shared.slots);
      keys = Buffer.from(shared.keys);
      port1.postMessage({ ...start, ...shared } satisfies AheadStart);
    },
    nextFile() {
      if (nextFileAt === 0) gather();
      const at = nextFileAt++;
      const file = files[at]!;
      // Taken: the list does not hold the file's bytes beyond the caller's need.
      files[at] = undefined;
      return file;
    },
    keyed(key) {
      const at = nextFileAt - 1;
      order.set(key, at);
      if (slots![at] === Slot.Caller) {
        keys!.write(key, 32 * at, 32, "hex");
        Atomics.store(slots!, at, Slot.Keyed);
      }
    },
    entry(key) {
      const at = order.get(key);
      if (at === undefined) return ownRead(key);
      if (!delivered.entries.has(at) && alive && !mine(at)) awaitUntil(() => delivered.entries.has(at));
      const found = delivered.entries.has(at) ? entries[at] : NOT_READ;
      if (found === TAKEN || found === NOT_READ) return ownRead(key);
      entries[at] = TAKEN;
      taken.entries++;
      return found;
    },
    close() {
      stop();
      entries.length = 0;
      delivered.entries.clear();
      order.clear();
      files.length = 0;
    },
  };
}
