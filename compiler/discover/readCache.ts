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
  // No folder, or something else in its way (a file named like it): no entries; write reports it.
  let folderStat: fs.Stats | undefined;
  try {
    folderStat = fs.statSync(dir, { throwIfNoEntry: false });
  } catch {
    folderStat = undefined;
  }
  if (!folderStat?.isDirectory()) return { found, unreadable };
  for (const key of keys) {
    const file = path.join(dir, `${key}.bin`);
    try {
      const stat = fs.statSync(file, { throwIfNoEntry: false });
      if (!stat) continue;
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
