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
    return { problem: `not JSON (${(error as Error).message.split("\n")[0]})` };
  }
  if (value === null || typeof value !== "object") return { problem: "not a JSON object" };
  const m = value as Partial<Manifest>;
  if (!Array.isArray(m.assets) || !Array.isArray(m.dags) || !Array.isArray(m.edges)) return { problem: "not a contract-assets manifest (no assets[], edges[] or dags[])" };
  if (m.manifestVersion !== MANIFEST_VERSION) {
    return { problem: `manifestVersion ${JSON.stringify(m.manifestVersion)} is not ${MANIFEST_VERSION}; compile it again with this compiler` };
  }
  // Every field a reader (diff, stale) relies on, so a hand-damaged manifest is a message, not a crash.
  const isObject = (v: unknown): boolean => v !== null && typeof v === "object" && !Array.isArray(v);
  const strings = (v: unknown): boolean => Array.isArray(v) && v.every((x) => typeof x === "string");
  for (const [i, a] of m.assets.entries()) {
    const ok =
      isObject(a) &&
      typeof a.name === "string" &&
      typeof a.uri === "string" &&
      typeof a.group === "string" &&
      isObject(a.extra) &&
      typeof a.external === "boolean" &&
      typeof a.status === "string" &&
      (a.producer === null || typeof a.producer === "string") &&
      typeof a.contract === "string" &&
      (a.schema === null || (isObject(a.schema) && typeof a.schema.version === "number" && Array.isArray(a.schema.properties))) &&
      Array.isArray(a.quality) &&
      a.quality.every(isObject) &&
      strings(a.renamed_from ?? []);
    if (!ok) return { problem: `assets[${i}] is not a manifest asset` };
  }
  for (const [i, e] of m.edges.entries()) {
    if (!isObject(e) || typeof e.from !== "string" || typeof e.to !== "string" || typeof e.via !== "string") return { problem: `edges[${i}] is not an edge` };
  }
  for (const [i, d] of m.dags.entries()) {
    const ok =
      isObject(d) &&
      typeof d.dag_id === "string" &&
      strings(d.inlets) &&
      strings(d.outlets) &&
      isObject(d.schedule) &&
      isObject(d.runtime) &&
      (d.runtime.upstreams === undefined || (Array.isArray(d.runtime.upstreams) && (d.runtime.upstreams as unknown[]).every(isObject))) &&
      (d.runtime.datasets === undefined || (Array.isArray(d.runtime.datasets) && (d.runtime.datasets as unknown[]).every(isObject)));
    if (!ok) return { problem: `dags[${i}] is not a manifest DAG` };
  }
  return { manifest: m as Manifest };
}
