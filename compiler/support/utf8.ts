/** UTF-8 encoding of large texts a piece at a time. */

/** Characters of a text encoded at a time when a large file is compared or written (bounds the bytes held). */
export const CHUNK_CHARS = 1 << 20;

/**
 * `text` as consecutive UTF-8 chunks of about {@link CHUNK_CHARS} characters (never splitting a
 * surrogate pair), so a file of hundreds of MB is compared or written holding one chunk's bytes,
 * not the whole text's. The chunks are views of one buffer the generator reuses: each is valid
 * until the next is asked for (write or compare it before that; copy it to keep it).
 */
export function* utf8Chunks(text: string): Generator<Buffer> {
  // Three bytes a UTF-16 unit at most (a surrogate pair, two units, is four bytes).
  const bytes = Buffer.allocUnsafe(Math.min(text.length, CHUNK_CHARS) * 3);
  for (let start = 0; start < text.length; ) {
    let end = Math.min(start + CHUNK_CHARS, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    yield bytes.subarray(0, bytes.write(text.slice(start, end), "utf8"));
    start = end;
  }
}
