import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, StageResult } from "../diagnostics/diagnostic.js";
import {
  CONFIG_KINDS,
  CONTRACT_KINDS,
  type AnyDocument,
  type Contract,
  type ExternalAssetsDocument,
  type OrchestrationConfigDocument,
} from "../model/contract.js";
import { isOdcsDocument } from "../model/odcs.js";
import type { ParsedDocument } from "../parse/parseDocument.js";
import { suggest } from "../support/suggest.js";
import { mapSchemaErrors } from "./mapSchemaErrors.js";
import { readOdcsContract } from "./readOdcs.js";
import { DOCUMENT_RULES } from "./rules/index.js";
import { validatorFor, type SchemaKind } from "./schemas.js";

/** A document that passed validation, with its parse (for locations and provenance). */
export interface Located<T> {
  document: T;
  source: ParsedDocument;
}

/** The validate stage's output. */
export interface ValidatedProject {
  contracts: Array<Located<Contract>>;
  externals: Array<Located<ExternalAssetsDocument>>;
  configs: Array<Located<OrchestrationConfigDocument>>;
  /**
   * Asset names declared by documents that failed validation, read best-effort: the link stage
   * treats them as known, so one broken file does not cascade into "unknown upstream" errors in
   * every consumer.
   */
  unresolvedNames: Set<string>;
  /** Contract ids of documents that failed validation (read best-effort), for the same reason. */
  unresolvedIds: Set<string>;
  /** Whether an orchestration config document failed validation: its names are then unknown. */
  configBroken: boolean;
}

function bestEffortNames(value: Record<string, unknown>): string[] {
  const names: string[] = [];
  const domain = value.domain;
  if (Array.isArray(value.datasets) && typeof domain === "string") {
    for (const d of value.datasets) {
      const name = (d as Record<string, unknown> | null)?.name;
      if (typeof name === "string") names.push(`${domain}.${name}`);
    }
  }
  const source = value.source as Record<string, unknown> | undefined;
  if (typeof source?.name === "string") names.push(source.name);
  if (Array.isArray(value.assets)) {
    for (const a of value.assets) {
      const name = (a as Record<string, unknown> | null)?.name;
      if (typeof name === "string") names.push(name);
    }
  }
  return names;
}

/** Checks apiVersion and kind, then the kind's JSON Schema; returns the kind when both pass. */
function checkDocument(parsed: ParsedDocument, allowed: readonly string[], diagnostics: Diagnostic[]): SchemaKind | undefined {
  const value = parsed.value as Record<string, unknown>;
  const kind = value.kind;
  if (value.apiVersion !== undefined && value.apiVersion !== "contract-assets/v1") {
    diagnostics.push(createDiagnostic(Diagnostics.UnsupportedApiVersion, { apiVersion: String(value.apiVersion) }, parsed.locate(["apiVersion"])));
    return undefined;
  }
  if (typeof kind !== "string" || !allowed.includes(kind)) {
    const all = [...CONTRACT_KINDS, ...CONFIG_KINDS] as readonly string[];
    if (typeof kind === "string" && all.includes(kind)) {
      const folder = (CONFIG_KINDS as readonly string[]).includes(kind) ? "orchestration/airflow/sources/" : "contracts/";
      diagnostics.push(createDiagnostic(Diagnostics.MisplacedDocument, { kind, folder }, parsed.locate(["kind"])));
      return undefined;
    }
    if (kind === undefined) {
      diagnostics.push(createDiagnostic(Diagnostics.MissingField, { field: "kind", where: "the document" }, parsed.locate([])));
      return undefined;
    }
    const guess = typeof kind === "string" ? suggest(kind, allowed) : undefined;
    diagnostics.push(
      createDiagnostic(
        Diagnostics.UnknownKind,
        { kind: String(kind), allowed: allowed.map((k) => JSON.stringify(k)).join(", ") },
        parsed.locate(["kind"]),
        guess ? { hint: `did you mean "${guess}"?` } : {},
      ),
    );
    return undefined;
  }
  const validate = validatorFor(kind as SchemaKind);
  if (!validate(value)) {
    diagnostics.push(...mapSchemaErrors(parsed, validate.errors ?? []));
    return undefined;
  }
  return kind as SchemaKind;
}

/** What validating one document found: its diagnostics, and what the stage's output takes of it. */
export interface DocumentVerdict {
  diagnostics: Diagnostic[];
  /** The document, when it passed (its schema and every rule without an error). */
  accepted?: { kind: "contract" | "external" | "config"; located: Located<AnyDocument> };
  /** When it failed: the asset names and contract id read from it best-effort, and whether it was a config. */
  failed?: { names: string[]; id: string | undefined; config: boolean };
}

/**
 * One document of the validate stage: its JSON Schema (compiler/schemas/v1), then the per-document
 * semantic rules of validate/rules. A document that fails its schema skips the rules (they assume
 * its shape). `config` says the document is an orchestration config (else a contract). Depends on
 * no other document, so documents can be validated in any order (as their parses arrive).
 */
export function validateDocument(written: ParsedDocument, config: boolean): DocumentVerdict {
  const allowed = config ? CONFIG_KINDS : CONTRACT_KINDS;
  const local: Diagnostic[] = [];
  const verdict: DocumentVerdict = { diagnostics: local };
  let parsed: ParsedDocument | undefined = written;
  let names: string[] | undefined;
  if (isOdcsDocument(written.value)) {
    // An ODCS v3 document is read as a contract located in its own file (readOdcs.ts).
    if (config) {
      local.push(createDiagnostic(Diagnostics.MisplacedDocument, { kind: "DataContract", folder: "contracts/" }, written.locate(["kind"])));
      parsed = undefined;
    } else {
      const reading = readOdcsContract(written);
      local.push(...reading.diagnostics);
      parsed = reading.value.document;
      names = reading.value.names;
    }
  }
  const kind = parsed ? checkDocument(parsed, allowed, local) : undefined;
  if (kind !== undefined) {
    const document = parsed!.value as AnyDocument;
    for (const rule of DOCUMENT_RULES) rule.check(document, { source: parsed!, report: (d) => local.push(d) });
    if (!local.some((d) => d.severity === "error")) {
      const as = document.kind === "ExternalAssets" ? "external" : document.kind === "OrchestrationConfig" ? "config" : "contract";
      verdict.accepted = { kind: as, located: { document, source: parsed! } };
    }
  }
  if (local.some((d) => d.severity === "error")) {
    const raw = written.value as Record<string, unknown>;
    verdict.failed = { names: names ?? bestEffortNames(raw), id: typeof raw.id === "string" ? raw.id : undefined, config };
  }
  return verdict;
}

/**
 * A {@link DocumentVerdict} as the incremental cache keeps it beside the document's parse (ADR
 * 0017j): plain data, the document itself left out (it is the parse's value, and its source the
 * parse). Validating a document reads nothing but the document, its locations and whether it is a
 * config (`validateDocument`), so the verdict of a file whose entry matches its bytes is the one
 * stored; `config` is kept to be checked all the same.
 */
export interface StoredVerdict {
  config: boolean;
  diagnostics: Diagnostic[];
  accepted?: "contract" | "external" | "config";
  failed?: { names: string[]; id: string | undefined };
}

/**
 * What the cache keeps of `verdict`, the verdict of `document`; null when it cannot be kept as
 * data: an ODCS document's verdict holds the contract translated from it, not the parse's value.
 */
export function storedVerdictOf(document: ParsedDocument, verdict: DocumentVerdict, config: boolean): StoredVerdict | null {
  if (isOdcsDocument(document.value)) return null;
  const a = verdict.accepted;
  if (a && (a.located.document !== document.value || a.located.source !== document)) return null;
  const stored: StoredVerdict = { config, diagnostics: verdict.diagnostics };
  if (a) stored.accepted = a.kind;
  if (verdict.failed) stored.failed = { names: verdict.failed.names, id: verdict.failed.id };
  return stored;
}

/** The {@link DocumentVerdict} of `document` from what the cache kept ({@link storedVerdictOf}); undefined when it was kept for the other kind of file. */
export function restoreVerdict(document: ParsedDocument, stored: StoredVerdict, config: boolean): DocumentVerdict | undefined {
  if (stored.config !== config) return undefined;
  const verdict: DocumentVerdict = { diagnostics: stored.diagnostics };
  if (stored.accepted) verdict.accepted = { kind: stored.accepted, located: { document: document.value as AnyDocument, source: document } };
  if (stored.failed) verdict.failed = { names: stored.failed.names, id: stored.failed.id, config };
  return verdict;
}

const isString = (v: unknown): v is string => typeof v === "string";
const isLocation = (v: unknown): boolean => {
  const l = v as Record<string, unknown> | null;
  return typeof l === "object" && l !== null && isString(l.file) && Number.isInteger(l.line) && Number.isInteger(l.column);
};

/** Whether a value read back from the cache has the shape of a {@link StoredVerdict} (else the entry is damaged). */
export function isStoredVerdict(value: unknown): value is StoredVerdict {
  const v = value as Record<string, unknown> | null;
  if (typeof v !== "object" || v === null || typeof v.config !== "boolean" || !Array.isArray(v.diagnostics)) return false;
  for (const d of v.diagnostics as unknown[]) {
    const x = d as Record<string, unknown> | null;
    if (typeof x !== "object" || x === null || !isString(x.code) || !isString(x.message) || !["error", "warning", "info"].includes(x.severity as string)) return false;
    if (x.location !== undefined && !isLocation(x.location)) return false;
    if (!Array.isArray(x.related) || !(x.related as unknown[]).every((r) => isString((r as Record<string, unknown> | null)?.message) && isLocation((r as Record<string, unknown>).location))) return false;
  }
  if (v.accepted !== undefined && !["contract", "external", "config"].includes(v.accepted as string)) return false;
  if (v.failed !== undefined) {
    const f = v.failed as Record<string, unknown> | null;
    if (typeof f !== "object" || f === null || !Array.isArray(f.names) || !(f.names as unknown[]).every(isString) || (f.id !== undefined && !isString(f.id))) return false;
  }
  // A verdict accepts or refuses its document; errors and acceptance exclude each other.
  const errors = (v.diagnostics as Diagnostic[]).some((d) => d.severity === "error");
  return errors ? v.failed !== undefined && v.accepted === undefined : v.failed === undefined;
}

/**
 * The validate stage: {@link validateDocument} of every document, folded in input order (contracts,
 * then configs). A document that fails is left out of the output; its names are kept as unresolved.
 *
 * Input: parsed contract documents and parsed orchestration config documents, or the verdicts of
 * documents already validated (`verdicts`, by position among `contracts`).
 * Diagnostics: CA2007, CA2008, CA2012, CA3xxx.
 */
export function validateDocuments(
  contracts: readonly ParsedDocument[],
  configs: readonly ParsedDocument[],
  verdicts: ReadonlyMap<ParsedDocument, DocumentVerdict> = new Map(),
): StageResult<ValidatedProject> {
  const diagnostics: Diagnostic[] = [];
  const value: ValidatedProject = { contracts: [], externals: [], configs: [], unresolvedNames: new Set(), unresolvedIds: new Set(), configBroken: false };
  const fold = (verdict: DocumentVerdict): void => {
    const a = verdict.accepted;
    if (a?.kind === "external") value.externals.push(a.located as Located<ExternalAssetsDocument>);
    else if (a?.kind === "config") value.configs.push(a.located as Located<OrchestrationConfigDocument>);
    else if (a) value.contracts.push(a.located as Located<Contract>);
    const f = verdict.failed;
    if (f) {
      for (const name of f.names) value.unresolvedNames.add(name);
      if (f.id !== undefined) value.unresolvedIds.add(f.id);
      if (f.config) value.configBroken = true;
    }
    diagnostics.push(...verdict.diagnostics);
  };
  for (const parsed of contracts) fold(verdicts.get(parsed) ?? validateDocument(parsed, false));
  for (const parsed of configs) fold(verdicts.get(parsed) ?? validateDocument(parsed, true));
  return { value, diagnostics };
}
