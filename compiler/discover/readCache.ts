import fs from "node:fs";
import path from "node:path";
import type { CheckedEntry } from "../support/cacheEntry.js";
import { readRegularFile, type RegularFileOptions } from "./regularFile.js";

/** An entry larger than this is not read (no parse result of a file of at most 1 MiB comes near it). */
export const MAX_CACHE_ENTRY_BYTES = 64 * 1024 * 1024;

/** What {@link readCacheEntries} found: each entry's bytes by key, and why others could not be read. */
export interface CacheEntriesRead {
  found: Map<string, Uint8Array>;
  /** Key → reason (an errno code, or "too large"), for entries that exist but could not be read. */
  unreadable: Map<string, string>;
}

/**
 * One entry read ({@link openCacheReader}): its bytes, why it exists but could not be read, or
 * undefined for none; or, from discover's reader thread (`readAhead.ts`, ADR 0017x), the entry
 * already checked (`checkCacheEntry`): its payload not yet deserialised, or why it is not usable.
 */
export type CacheEntryRead = EntryBytesRead | { checked: CheckedEntry };

/** One entry as {@link openCacheReader} reads it: its bytes, why it exists but could not be read, or undefined for none. */
export type EntryBytesRead = { bytes: Uint8Array } | { unreadable: string } | undefined;

/**
 * A reader of the incremental cache's entries `<folder>/<key>.bin` (ADR 0017c), one key at a
 * time, so a caller that decodes each entry as it reads it never holds every entry's bytes (ADR
 * 0017m: after an upgrade every entry is foreign, 136 MB read at 10,000 contracts for nothing);
 * `folder` is project-relative. A missing entry (or folder) is a miss, not a problem. The bytes
 * are not interpreted here: `support/cacheEntry.ts` (`decodeCacheEntry`) checks them.
 */
export function openCacheReader(root: string, folder: string, into?: RegularFileOptions["into"]): (key: string) => EntryBytesRead {
  const dir = path.join(root, folder);
  // No folder, something else in its way (a file named like it), or a symbolic link on the way
  // (the cache is the project's own folder, never somewhere a link points): no entries; write
  // reports it.
  if (!isPlainFolderPath(root, folder)) return () => undefined;
  return (key) => readEntry(path.join(dir, `${key}.bin`), into);
}

/**
 * One entry's bytes (`readRegularFile`, `discover/regularFile.ts`): one `open` (never through a
 * link, never blocking), one `fstat`, one `read` of the size it gives (ADR 0017q). What is not a
 * regular file is never read: a link, dangling or not ("a symbolic link"), a folder ("a folder"),
 * a FIFO or device ("not a regular file"); nor an entry over {@link MAX_CACHE_ENTRY_BYTES} ("too
 * large"). The bytes are a new buffer each time, never a reused one: `v8.deserialize` gives typed
 * arrays that are views of the bytes it was handed. A missing entry is none (undefined). `into`:
 * where to read instead (`readRegularFile`'s option: the reader thread's batch buffer, ADR 0017x).
 */
function readEntry(file: string, into?: RegularFileOptions["into"]): EntryBytesRead {
  const read = readRegularFile(file, { limit: MAX_CACHE_ENTRY_BYTES, follow: false, ...(into ? { into } : {}) });
  if ("bytes" in read) return { bytes: read.bytes };
  if (read.reason === "missing") return undefined;
  return { unreadable: read.reason === "error" ? read.code : read.reason };
}

/** The entries of `keys` ({@link openCacheReader}), all at once: each entry's bytes by key, and why others could not be read. */
export function readCacheEntries(root: string, folder: string, keys: Iterable<string>): CacheEntriesRead {
  const found = new Map<string, Uint8Array>();
  const unreadable = new Map<string, string>();
  const read = openCacheReader(root, folder);
  for (const key of keys) {
    const entry = read(key);
    if (entry && "bytes" in entry) found.set(key, entry.bytes);
    else if (entry) unreadable.set(key, entry.unreadable);
  }
  return { found, unreadable };
}

/**
 * Whether every folder of `folder` (project-relative, POSIX) below `root` is a real folder, none
 * of them a symbolic link: the cache's folders must be the project's own, so that neither a read
 * nor a write or removal of the cache can reach outside the project.
 */
export function isPlainFolderPath(root: string, folder: string): boolean {
  let at = root;
  for (const part of folder.split("/")) {
    at = path.join(at, part);
    try {
      const stat = fs.lstatSync(at, { throwIfNoEntry: false });
      if (!stat?.isDirectory()) return false;
    } catch {
      return false;
    }
  }
  return true;
}
