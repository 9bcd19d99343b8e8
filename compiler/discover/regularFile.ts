import fs from "node:fs";
import { stampOf, type FileStamp } from "../support/fileStamp.js";

/**
 * Why {@link readRegularFile} gave no bytes: the file is missing, is a symbolic link (only when
 * links are not followed), a folder, something else that is not a regular file (a FIFO, a
 * device, a socket), over the size limit, grew while it was read, or the system refused (an errno
 * code such as `EACCES`).
 */
export type RegularFileRefusal =
  | { reason: "missing" }
  | { reason: "a symbolic link" }
  | { reason: "a folder" }
  | { reason: "not a regular file" }
  | { reason: "too large"; size: number }
  | { reason: "grew while read" }
  | { reason: "error"; code: string };

/** A regular file's bytes, with its stamp (`support/fileStamp.ts`) when asked for, or why there are none. */
export type RegularFileRead = { bytes: Buffer; stamp?: FileStamp } | RegularFileRefusal;

/** How {@link readRegularFile} opens and reads. */
export interface RegularFileOptions {
  /** Largest size read, in bytes; a larger file is `too large`, never read. */
  limit: number;
  /** Whether a symbolic link is followed (a project's input) or refused (`O_NOFOLLOW`: the cache's own entries). */
  follow: boolean;
  /** The file's stamp from the `fstat` taken before its bytes were read (`bigint: true`). */
  stamp?: boolean;
  /**
   * Read into one buffer kept for the process, grown as needed: the bytes returned are a view of
   * it, valid until the next call that reuses it (a caller that only hashes them). Otherwise a new
   * buffer each time, which the caller may keep (`v8.deserialize` makes views of it).
   */
  reuse?: boolean;
  /**
   * Where to read: called once the size is known with the bytes needed (the size and one more), it
   * gives a buffer of at least that many, and the bytes returned are a view of it (discover's reader
   * thread reads a batch of files into one buffer, ADR 0017x).
   */
  into?: (bytes: number) => Buffer;
}

/** The buffer {@link readRegularFile} reads into with `reuse`. */
let scratch: Buffer | undefined;

/**
 * One file's bytes, read as the compiler reads what it does not trust to be a regular file: one
 * `open` without blocking (`O_NONBLOCK`: a FIFO with no writer opens at once; `O_NOFOLLOW` unless
 * `follow`), one `fstat`, and only a regular file within `limit` is read, to the size the `fstat`
 * gave and one byte more, so a file that grew meanwhile is `grew while read` rather than cut
 * (a file that shrank is read as far as it goes). Never throws and never blocks: a FIFO or
 * device in a file's place would block a plain read for ever or never end. `absolute`: the
 * file's path. The one place for discover's inputs (`readBytes`), the cache's entries
 * (`readEntry`) and the write stage's check of a file's digest (`fileHasDigest`); here, not in
 * `support/`, since only discover reads the project's disk (ARCHITECTURE.md) and write imports it
 * as it does `fileHoldsText`.
 */
export function readRegularFile(absolute: string, options: RegularFileOptions): RegularFileRead {
  let fd: number | undefined;
  try {
    try {
      fd = fs.openSync(absolute, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | (options.follow ? 0 : fs.constants.O_NOFOLLOW));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      if (code === "ENOENT") return { reason: "missing" };
      if (code === "ELOOP" && !options.follow) return { reason: "a symbolic link" };
      // Opening a folder for reading succeeds on Linux; EISDIR is another system's way to say it.
      if (code === "EISDIR") return { reason: "a folder" };
      return { reason: "error", code };
    }
    const stat = options.stamp ? fs.fstatSync(fd, { bigint: true }) : fs.fstatSync(fd);
    if (!stat.isFile()) return { reason: stat.isDirectory() ? "a folder" : "not a regular file" };
    const size = Number(stat.size);
    if (size > options.limit) return { reason: "too large", size };
    let into: Buffer;
    if (options.into) into = options.into(size + 1).subarray(0, size + 1);
    else if (options.reuse) {
      if (!scratch || scratch.length < size + 1) scratch = Buffer.allocUnsafeSlow(Math.max(size + 1, 1 << 16));
      into = scratch.subarray(0, size + 1);
    } else into = Buffer.allocUnsafeSlow(size + 1);
    let read = 0;
    for (let got = 1; got > 0 && read < into.length; read += got) got = fs.readSync(fd, into, read, into.length - read, read);
    if (read > size) return { reason: "grew while read" };
    const bytes = into.subarray(0, read);
    return options.stamp ? { bytes, stamp: stampOf(stat as fs.BigIntStats) } : { bytes };
  } catch (error) {
    return { reason: "error", code: (error as NodeJS.ErrnoException).code ?? String(error) };
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
