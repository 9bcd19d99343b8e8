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

/**
 * Reads the incremental cache's entries `<folder>/<key>.bin` for the given keys (ADR 0017c);
 * `folder` is project-relative. A missing entry (or folder) is a miss, not a problem. The bytes are
 * not interpreted here: `support/cacheEntry.ts` (`decodeCacheEntry`) checks them.
 */
export function readCacheEntries(root: string, folder: string, keys: Iterable<string>): CacheEntriesRead {
  const found = new Map<string, Uint8Array>();
  const unreadable = new Map<string, string>();
  const dir = path.join(root, folder);
  // No folder, something else in its way (a file named like it), or a symbolic link on the way
  // (the cache is the project's own folder, never somewhere a link points): no entries; write
  // reports it.
  if (!isPlainFolderPath(root, folder)) return { found, unreadable };
  for (const key of keys) {
    const file = path.join(dir, `${key}.bin`);
    try {
      const stat = fs.lstatSync(file, { throwIfNoEntry: false });
      if (!stat) continue;
      // A FIFO would block the read for ever; a folder or a link is not an entry either.
      if (!stat.isFile()) {
        unreadable.set(key, stat.isDirectory() ? "a folder" : stat.isSymbolicLink() ? "a symbolic link" : "not a regular file");
        continue;
      }
      if (stat.size > MAX_CACHE_ENTRY_BYTES) {
        unreadable.set(key, "too large");
        continue;
      }
      found.set(key, fs.readFileSync(file));
    } catch (error) {
      unreadable.set(key, (error as NodeJS.ErrnoException).code ?? String(error));
    }
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
