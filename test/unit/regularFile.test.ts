import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readRegularFile } from "../../compiler/discover/regularFile.js";

// The one reader of files the compiler does not trust to be regular files (discover's inputs, the
// cache's entries, the write stage's digest check): it never blocks and says why it read nothing.

describe("readRegularFile", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "regular-file-"));
  const file = path.join(dir, "a.bin");
  fs.writeFileSync(file, "abcdef");
  fs.symlinkSync(file, path.join(dir, "link"));
  fs.symlinkSync(path.join(dir, "nowhere"), path.join(dir, "dangling"));
  fs.mkdirSync(path.join(dir, "folder"));
  execFileSync("mkfifo", [path.join(dir, "fifo")]);
  const options = { limit: 1024, follow: true };

  it("reads a regular file whole, with its stamp when asked for", () => {
    const read = readRegularFile(file, { ...options, stamp: true });
    expect("bytes" in read && read.bytes.toString()).toBe("abcdef");
    const stat = fs.statSync(file, { bigint: true });
    expect("bytes" in read && read.stamp).toEqual([stat.dev, stat.ino, stat.size, stat.mtimeNs, stat.ctimeNs]);
    expect("bytes" in read && "stamp" in readRegularFile(file, options)).toBe(false);
  });

  it("says why it read nothing: missing, a folder, a FIFO (without blocking), too large", () => {
    expect(readRegularFile(path.join(dir, "none"), options)).toEqual({ reason: "missing" });
    expect(readRegularFile(path.join(dir, "folder"), options)).toEqual({ reason: "a folder" });
    expect(readRegularFile(path.join(dir, "fifo"), options)).toEqual({ reason: "not a regular file" });
    expect(readRegularFile(file, { ...options, limit: 5 })).toEqual({ reason: "too large", size: 6 });
    expect("bytes" in readRegularFile(file, { ...options, limit: 6 })).toBe(true);
  });

  it("follows a link only when told to; a dangling one is missing or refused", () => {
    const followed = readRegularFile(path.join(dir, "link"), options);
    expect("bytes" in followed && followed.bytes.toString()).toBe("abcdef");
    expect(readRegularFile(path.join(dir, "link"), { ...options, follow: false })).toEqual({ reason: "a symbolic link" });
    expect(readRegularFile(path.join(dir, "dangling"), { ...options, follow: false })).toEqual({ reason: "a symbolic link" });
    expect(readRegularFile(path.join(dir, "dangling"), options)).toEqual({ reason: "missing" });
  });

  it("gives a new buffer each time, or a view of one reused buffer when asked", () => {
    const a = readRegularFile(file, options);
    const b = readRegularFile(file, options);
    expect("bytes" in a && "bytes" in b && a.bytes.buffer !== b.bytes.buffer).toBe(true);
    const c = readRegularFile(file, { ...options, reuse: true });
    const d = readRegularFile(file, { ...options, reuse: true });
    expect("bytes" in c && "bytes" in d && c.bytes.buffer === d.bytes.buffer).toBe(true);
  });
});
