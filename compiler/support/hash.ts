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
