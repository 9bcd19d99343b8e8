import fs from "node:fs";
import path from "node:path";

/** An entry larger than this is not read (no parse result of a file of at most 1 MiB comes near it). */
export const MAX_CACHE_ENTRY_BYTES = 64 * 1024 * 1024;

/** What {@link readCacheEntries} found: each entry's bytes by key, and why others could not be read. */
export interface CacheEntriesRead {
  found: Map<string, Uint8Array>;
  /** Key → reason (an errno code, or "too large"), for entries that exist but could not be read. */
  unreadable: Map<string, string>;
}

/** One entry read ({@link openCacheReader}): its bytes, why it exists but could not be read, or undefined for none. */
export type CacheEntryRead = { bytes: Uint8Array } | { unreadable: string } | undefined;

/**
 * A reader of the incremental cache's entries `<folder>/<key>.bin` (ADR 0017c), one key at a
 * time, so a caller that decodes each entry as it reads it never holds every entry's bytes (ADR
 * 0017m: after an upgrade every entry is foreign, 136 MB read at 10,000 contracts for nothing);
 * `folder` is project-relative. A missing entry (or folder) is a miss, not a problem. The bytes
 * are not interpreted here: `support/cacheEntry.ts` (`decodeCacheEntry`) checks them.
 */
export function openCacheReader(root: string, folder: string): (key: string) => CacheEntryRead {
  const dir = path.join(root, folder);
  // No folder, something else in its way (a file named like it), or a symbolic link on the way
  // (the cache is the project's own folder, never somewhere a link points): no entries; write
  // reports it.
  if (!isPlainFolderPath(root, folder)) return () => undefined;
  return (key) => readEntry(path.join(dir, `${key}.bin`));
}

/** Opened without following a link and without blocking (a FIFO with no writer opens at once), then looked at. */
const OPEN_ENTRY = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

/**
 * One entry's bytes: one `open` (never through a link, never blocking), one `fstat`, one `read` of
 * the size it gives, where `lstat` then `readFileSync` made six calls (ADR 0017q). What is not a
 * regular file is never read: a link (`ELOOP` from `O_NOFOLLOW`), a folder, a FIFO or a device;
 * nor an entry over {@link MAX_CACHE_ENTRY_BYTES}. The bytes are a new buffer each time, never a
 * reused one: `v8.deserialize` gives typed arrays that are views of the bytes it was handed.
 * A file that changes size while it is read is read as far as its size said, and its decoding
 * then finds it cut short or altered.
 */
function readEntry(file: string): CacheEntryRead {
  let fd: number | undefined;
  try {
    try {
      fd = fs.openSync(file, OPEN_ENTRY);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return undefined;
      if (code === "ELOOP") return { unreadable: "a symbolic link" };
      throw error;
    }
    const stat = fs.fstatSync(fd);
    // A FIFO would block the read for ever; a folder or a link is not an entry either.
    if (!stat.isFile()) return { unreadable: stat.isDirectory() ? "a folder" : "not a regular file" };
    if (stat.size > MAX_CACHE_ENTRY_BYTES) return { unreadable: "too large" };
    const bytes = Buffer.allocUnsafeSlow(stat.size);
    let size = 0;
    for (let got = 1; got > 0 && size < bytes.length; size += got) got = fs.readSync(fd, bytes, size, bytes.length - size, size);
    return { bytes: size === bytes.length ? bytes : bytes.subarray(0, size) };
  } catch (error) {
    return { unreadable: (error as NodeJS.ErrnoException).code ?? String(error) };
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
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
