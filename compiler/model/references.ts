import { CONTRACT_PROPERTIES, isOdcsDocument } from "./odcs.js";

/** The committed, parsed manifest of a dbt project: where `dbt parse` output is kept (ADR 0012). */
export function dbtManifestPath(project: string): string {
  return `${project.replace(/\/+$/, "")}/manifest.json`;
}

/** A file a document names: a SQL producer's query, or a dbt project's committed manifest (read with a larger size limit). */
export interface Reference {
  path: string;
  kind: "sql" | "dbtManifest";
}

/** The files a producer names: a SQL producer's `path`, a dbt producer's committed `manifest.json`. */
function producerReferences(producer: unknown): Reference[] {
  if (producer === null || typeof producer !== "object" || Array.isArray(producer)) return [];
  const p = producer as Record<string, unknown>;
  if (p.type === "sql" && typeof p.path === "string") return [{ path: p.path, kind: "sql" }];
  if (p.type === "dbt" && typeof p.project === "string") return [{ path: dbtManifestPath(p.project), kind: "dbtManifest" }];
  return [];
}

/**
 * The project files one parsed document names, read by `discover` before any stage interprets a
 * document (`readReferencedFiles`): a transform's SQL producer file and a dbt producer's
 * `manifest.json`, in our format or in an ODCS document's `producer` custom property. Input: the
 * document's plain value, not yet validated (so every field is checked for its type here); output:
 * project-relative paths as written (with what they are), possibly outside the project (`discover` reads only those
 * inside). A path of a document that later fails validation is read all the same: harmless, and its
 * problems (too large, not UTF-8) are reported in the same run.
 */
export function referencedPaths(document: unknown): Reference[] {
  if (document === null || typeof document !== "object" || Array.isArray(document)) return [];
  const d = document as Record<string, unknown>;
  if (isOdcsDocument(d)) {
    const properties = Array.isArray(d.customProperties) ? (d.customProperties as unknown[]) : [];
    return properties.flatMap((c) =>
      c !== null && typeof c === "object" && (c as Record<string, unknown>).property === CONTRACT_PROPERTIES.producer ? producerReferences((c as Record<string, unknown>).value) : [],
    );
  }
  return d.kind === "TransformContract" ? producerReferences(d.producer) : [];
}
