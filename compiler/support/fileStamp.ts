/**
 * A file's identity as `lstat` (or `fstat`) gives it, to tell without reading it that a file is
 * still the one whose bytes were hashed (ADR 0017q): the device, the inode, the size, and the
 * modification and inode-change times in nanoseconds (`fs.lstatSync(p, { bigint: true })`).
 * The ctime is the one a user cannot set: `touch -r`, `fs.utimesSync` or `cp -p` restore an
 * mtime, and set the ctime to the present; a file renamed over another has another inode.
 *
 * Git's rule for the same shortcut (its index's "racily clean" entries:
 * https://git-scm.com/docs/racy-git, and `Documentation/technical/index-format.txt`): a stamp
 * is only worth anything if it was taken after the file's last change had its timestamp, later
 * by more than the file system's timestamp granularity; otherwise a change in the same tick of
 * the clock, of the same size, leaves the same stamp. See {@link trustedStamp}.
 */
export type FileStamp = readonly [dev: bigint, ino: bigint, size: bigint, mtimeNs: bigint, ctimeNs: bigint];

/** Numbers in a stamp ({@link FileStamp}): how many a stored table of stamps holds per file. */
export const STAMP_FIELDS = 5;

/**
 * How much older than the moment a stamp was taken the file's mtime and ctime must be for the
 * stamp to be trusted: 2 s, in ns. It covers the coarsest timestamps of a Linux file system a
 * project may sit on (FAT's 2 s mtime; ext3 and HFS+ have 1 s; ext4, XFS, Btrfs and tmpfs
 * nanoseconds) and the lag of the kernel's coarse clock behind `Date.now()`'s (one jiffy, at most
 * 10 ms), both of which can give a change made after `since` a timestamp before it.
 */
export const RACY_MARGIN_NS = 2_000_000_000n;

/** The present as `Date.now()` gives it (the system's real-time clock), in ns since the epoch. */
export function nowNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

/** The stamp of a `bigint` stat of a file (`fs.BigIntStats`: pure here, the disk is discover's and write's). */
export function stampOf(stat: { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): FileStamp {
  return [stat.dev, stat.ino, stat.size, stat.mtimeNs, stat.ctimeNs];
}

/** Whether two stamps are the same, every field (as {@link writeStamps} stores them: 64 bits, signed). */
export function sameStamp(a: FileStamp, b: FileStamp): boolean {
  for (let i = 0; i < STAMP_FIELDS; i++) if (BigInt.asIntN(64, a[i]!) !== BigInt.asIntN(64, b[i]!)) return false;
  return true;
}

/**
 * `stamp` when it may be trusted later, else undefined (git's racily clean rule, see
 * {@link FileStamp}): it was taken after `since` (ns since the epoch, the real-time clock), and
 * both the file's mtime and ctime are older than `since` by more than {@link RACY_MARGIN_NS}.
 * Then any change to the file after `since` gives it a later ctime (and mtime), so a stamp
 * that still matches says the file was not changed. Assumes the file system's clock is this
 * machine's (within the margin): a network file system stamped by a server whose clock is behind
 * by more, or a clock stepped back, defeats it, as it does Git's.
 */
export function trustedStamp(stamp: FileStamp, since: bigint): FileStamp | undefined {
  const [, , , mtimeNs, ctimeNs] = stamp;
  return mtimeNs + RACY_MARGIN_NS < since && ctimeNs + RACY_MARGIN_NS < since ? stamp : undefined;
}

/** No stamp, in a stored table ({@link writeStamps}): a size of -1, which no file has. */
const NONE = -1n;

/** Writes `stamp` (or none) at file `index` of a stored table of stamps, {@link STAMP_FIELDS} signed 64-bit numbers a file. */
export function writeStamps(table: BigInt64Array, index: number, stamp: FileStamp | undefined): void {
  if (!stamp) return void table.fill(0n, STAMP_FIELDS * index, STAMP_FIELDS * (index + 1)).set([NONE], STAMP_FIELDS * index + 2);
  for (let i = 0; i < STAMP_FIELDS; i++) table[STAMP_FIELDS * index + i] = BigInt.asIntN(64, stamp[i]!);
}

/** The stamp at file `index` of a stored table ({@link writeStamps}), or undefined for none. */
export function readStamp(table: BigInt64Array, index: number): FileStamp | undefined {
  const at = STAMP_FIELDS * index;
  if (table[at + 2] === NONE) return undefined;
  return [table[at]!, table[at + 1]!, table[at + 2]!, table[at + 3]!, table[at + 4]!];
}
