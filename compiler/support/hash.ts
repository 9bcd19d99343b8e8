import { createHash } from "node:crypto";

/** Hex sha256 of a string's UTF-8 bytes or of raw bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/**
 * The Git blob id of some bytes (`git hash-object`): sha1 over `blob <length>\0<bytes>`.
 * Lineage provenance records it so a batch can be traced to the exact committed file.
 */
export function gitBlobId(data: Uint8Array): string {
  return createHash("sha1").update(`blob ${data.byteLength}\0`).update(data).digest("hex");
}

/** A contract file's content hashes, as provenance records them (the manifest's `contract_sha256` and `contract_git_blob`). */
export interface ContentHashes {
  /** Hex sha256 of the text with LF line ends, UTF-8. */
  sha256: string;
  /** {@link gitBlobId} of the same bytes (what Git stores once `core.autocrlf` has made the line ends LF). */
  gitBlob: string;
}

/** {@link ContentHashes} of a file's text (line ends made LF first, so a CRLF checkout hashes the same). */
export function contentHashes(text: string): ContentHashes {
  const lf = text.replace(/\r\n?/g, "\n");
  return { sha256: sha256Hex(lf), gitBlob: gitBlobId(Buffer.from(lf, "utf8")) };
}
