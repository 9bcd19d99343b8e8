import { MANIFEST_VERSION, type Manifest } from "./buildManifest.js";
import { checkManifest } from "./manifestSchema.js";

/**
 * Reads a manifest written by this compiler (the previous state of a diff, the input of `stale`).
 *
 * Returns the manifest, or a one-line reason when the text is not JSON, of a `manifestVersion`
 * this compiler does not know, or not valid against the manifest schema of its version (the
 * reason then names the offending field by JSON pointer).
 */
export function parseManifest(text: string): { manifest?: Manifest; problem?: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: `not JSON (${(error as Error).message.split("\n")[0]})` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return { problem: "not a JSON object" };
  const version = (value as { manifestVersion?: unknown }).manifestVersion;
  if (version !== MANIFEST_VERSION) {
    return { problem: `manifestVersion ${JSON.stringify(version)} is not ${MANIFEST_VERSION}; compile it again with this compiler` };
  }
  const { manifest, problem } = checkManifest(value);
  return manifest ? { manifest } : { problem: `not a contract-assets manifest: ${problem}` };
}
