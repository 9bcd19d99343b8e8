import { MANIFEST_VERSION, type Manifest } from "./buildManifest.js";

/**
 * Reads a manifest written by this compiler (the previous state of a diff, the input of `stale`).
 *
 * Returns the manifest, or a one-line reason when the text is not JSON, not a manifest (no
 * `assets[]`, `edges[]` or `dags[]`; an asset without a name or uri; a DAG without dag_id, inlets or
 * outlets), or of a `manifestVersion` this compiler does not know.
 */
export function parseManifest(text: string): { manifest?: Manifest; problem?: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: `not JSON (${(error as Error).message})` };
  }
  if (value === null || typeof value !== "object") return { problem: "not a JSON object" };
  const m = value as Partial<Manifest>;
  if (!Array.isArray(m.assets) || !Array.isArray(m.dags) || !Array.isArray(m.edges)) return { problem: "not a contract-assets manifest (no assets[], edges[] or dags[])" };
  if (m.manifestVersion !== MANIFEST_VERSION) {
    return { problem: `manifestVersion ${JSON.stringify(m.manifestVersion)} is not ${MANIFEST_VERSION}; compile it again with this compiler` };
  }
  for (const a of m.assets) if (typeof a?.name !== "string" || typeof a?.uri !== "string") return { problem: "an asset has no name or uri" };
  for (const d of m.dags) {
    if (typeof d?.dag_id !== "string" || !Array.isArray(d.inlets) || !Array.isArray(d.outlets)) return { problem: "a DAG has no dag_id, inlets or outlets" };
  }
  return { manifest: m as Manifest };
}
