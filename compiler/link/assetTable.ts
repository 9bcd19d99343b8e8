import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, SourceLocation } from "../diagnostics/diagnostic.js";
import type { Contract, Dataset, IngestionContract } from "../model/contract.js";
import { canonicalJson } from "../support/canonical-json.js";
import { compareStrings } from "../support/compare.js";
import { sourceAssetUri } from "../support/partitions.js";
import { queueWatcherOf } from "./queueTrigger.js";
import { normaliseUri } from "../support/uri.js";
import { checkUri } from "../validate/rules/ValidUriRule.js";
import type { Located, ValidatedProject } from "../validate/validateDocuments.js";
import { expandUriTemplate, templateProblems, uriExpander, type OrchestrationConfig } from "./config.js";
import type { AssetDeclaration, AssetTable } from "./model.js";

/** The layer of a dataset that names none (DESIGN §3.3). */
export const DEFAULT_LAYER: Record<Contract["kind"], string> = { IngestionContract: "raw", TransformContract: "curated" };

/** A freshness policy as Asset extra carries it: the promise and the escalation only. */
export function policyOf(freshness: { max_age: string; degrade_after?: string }): Record<string, string> {
  return { max_age: freshness.max_age, ...(freshness.degrade_after !== undefined ? { degrade_after: freshness.degrade_after } : {}) };
}

function datasetExtra(contract: Contract, dataset: Dataset, layer: string): Record<string, unknown> {
  const extra: Record<string, unknown> = {
    contract_id: contract.id,
    contract_version: contract.version,
    layer,
    owner: contract.owner,
    schema_version: dataset.schema.version,
  };
  if (contract.freshness) extra.freshness = policyOf(contract.freshness);
  return { ...(dataset.extra ?? {}), ...extra };
}

/**
 * The URI template's problems: unknown placeholders and stray braces (CA4017), a sample expansion
 * that is not a valid URI (the ValidUriRule codes), or a template without both `{domain}` and
 * `{name}` (CA4017), which could not give unique URIs. Names are lower snake, so one sample
 * expansion stands for every dataset.
 */
function uriTemplateFindings(validated: ValidatedProject, config: OrchestrationConfig): Diagnostic[] {
  const findings: Diagnostic[] = [];
  const placeholders = templateProblems(config.uriTemplate);
  for (const placeholder of placeholders) {
    findings.push(createDiagnostic(Diagnostics.TemplatePlaceholder, { placeholder }, config.uriTemplateLocation));
  }
  const templateSource = validated.configs.find((c) => c.document.uri_template !== undefined);
  if (placeholders.length || !templateSource) return findings;
  checkUri(expandUriTemplate(config.uriTemplate, { layer: "raw", domain: "domain", name: "name" }), ["uri_template"], {
    source: templateSource.source,
    report: (d) => findings.push(d),
  });
  if (!findings.length && (!config.uriTemplate.includes("{name}") || !config.uriTemplate.includes("{domain}"))) {
    findings.push(createDiagnostic(Diagnostics.TemplatePlaceholder, { placeholder: "{domain} and {name} are both required" }, config.uriTemplateLocation));
  }
  return findings;
}

/**
 * The asset table, first half of link: accepts the first contract of each id, declares every Asset
 * (produced datasets first, then `ExternalAssets` entries, then ingestion sources, each in file
 * order) and keeps the first of each name and of each normalised URI. Nothing is reported here:
 * what did not go in is recorded (`duplicateIds`, `clashes`, `templateFindings`) for the link rules.
 *
 * Invariant: a name in `refused` is not in `assets`, and its error is among the recorded facts.
 */
/**
 * The extract contract that produces the Asset `name`, when one does (its dataset is the manifest
 * dataset a load contract can name as its source, DESIGN §3.2).
 */
export function extractProducing(table: AssetTable, name: string): Located<IngestionContract> | undefined {
  const producer = table.assets.get(name)?.producer;
  const located = producer === undefined ? undefined : table.ids.get(producer);
  const document = located?.document;
  return document?.kind === "IngestionContract" && document.mode === "extract" ? (located as Located<IngestionContract>) : undefined;
}

export function buildAssetTable(validated: ValidatedProject, config: OrchestrationConfig): AssetTable {
  const templateFindings = uriTemplateFindings(validated, config);
  const templateUsable = templateFindings.length === 0;
  const table: AssetTable = { contracts: [], ids: new Map(), duplicateIds: [], externals: [], assets: new Map(), refused: new Set(), clashes: [], templateFindings };
  const byUri = new Map<string, AssetDeclaration>();
  const declare = (asset: AssetDeclaration): void => {
    const existing = table.assets.get(asset.name);
    if (existing) {
      if (existing.external && asset.external) {
        if (normaliseUri(existing.uri) !== normaliseUri(asset.uri)) {
          table.clashes.push({ kind: "externalUri", asset, existing });
          return;
        }
        // The same external twice must be the same Asset: Airflow compares group and extra too.
        // Watchers too (ADR 0034): Airflow keeps one definition, and one without them drops the trigger.
        const field =
          existing.group !== asset.group
            ? "group (domain)"
            : canonicalJson(existing.extra) !== canonicalJson(asset.extra)
              ? "owner or extra"
              : canonicalJson(existing.watchers ?? []) !== canonicalJson(asset.watchers ?? [])
                ? "watcher (trigger.queue of the ingestion contracts loading it)"
                : undefined;
        if (field) table.clashes.push({ kind: "externalDeclaration", asset, existing, field });
        return;
      }
      table.refused.add(asset.name);
      table.clashes.push({ kind: "name", asset, existing });
      return;
    }
    const normalised = normaliseUri(asset.uri);
    const clash = byUri.get(normalised);
    if (clash) {
      table.refused.add(asset.name);
      table.clashes.push({ kind: "uri", asset, existing: clash, normalised });
      return;
    }
    table.assets.set(asset.name, asset);
    byUri.set(normalised, asset);
  };

  // Sort for determinism: declarations (and so "first declared here") follow file order.
  const contracts = [...validated.contracts].sort((a, b) => compareStrings(a.source.file.path, b.source.file.path));
  table.externals = [...validated.externals].sort((a, b) => compareStrings(a.source.file.path, b.source.file.path));

  // Contract ids (dag_ids) are unique. They are lower case by schema, so no two differ by case only.
  for (const located of contracts) {
    const first = table.ids.get(located.document.id);
    if (first) {
      table.duplicateIds.push({ located, first });
      continue;
    }
    table.ids.set(located.document.id, located);
    table.contracts.push(located);
  }

  // Produced assets first, so a clash with an external points at the external.
  const expand = uriExpander(config.uriTemplate);
  for (const located of table.contracts) {
    const c = located.document;
    const source = located.source;
    c.datasets.forEach((dataset, i) => {
      const layer = dataset.layer ?? DEFAULT_LAYER[c.kind];
      if (dataset.uri === undefined && !templateUsable) {
        // Reported once at the template; the dataset's consumers must not cascade.
        table.refused.add(`${c.domain}.${dataset.name}`);
        return;
      }
      const uri = dataset.uri ?? expand(layer, c.domain, dataset.name);
      if (dataset.uri === undefined) {
        // A template can expand to a bad URI (a scheme missing, a placeholder left): check the result.
        const before = table.templateFindings.length;
        checkUri(uri, ["datasets", i, "name"], { source, report: (d) => table.templateFindings.push(d) });
        if (table.templateFindings.length > before) return;
      }
      // Located when first read (a link rule reporting), not per dataset: the locations of every
      // dataset were a seventh of this function's time, and are read only for a diagnostic.
      // A dataset without a uri is located at its name, one location for both.
      let location: SourceLocation | undefined;
      let uriLocation: SourceLocation | undefined;
      let schemaVersionLocation: SourceLocation | undefined;
      const hasUri = dataset.uri !== undefined;
      declare({
        name: `${c.domain}.${dataset.name}`,
        uri,
        group: c.domain,
        extra: datasetExtra(c, dataset, layer),
        external: false,
        producer: c.id,
        status: c.status ?? "active",
        declaredIn: source.file.path,
        get location() {
          return (location ??= source.locate(["datasets", i, "name"]));
        },
        get uriLocation() {
          return hasUri ? (uriLocation ??= source.locate(["datasets", i, "uri"])) : this.location;
        },
        schemaVersion: dataset.schema.version,
        get schemaVersionLocation() {
          return (schemaVersionLocation ??= source.locate(["datasets", i, "schema", "version"]));
        },
      });
    });
  }
  for (const located of table.externals) {
    const doc = located.document;
    const source = located.source;
    doc.assets.forEach((a, i) => {
      declare({
        name: a.name,
        uri: a.uri,
        group: doc.domain,
        extra: { ...(a.extra ?? {}), external: true, owner: doc.owner, ...(a.freshness ? { freshness: policyOf(a.freshness) } : {}) },
        external: true,
        status: "active",
        declaredIn: source.file.path,
        location: source.locate(["assets", i, "name"]),
        uriLocation: source.locate(["assets", i, "uri"]),
        ...(a.freshness && a.published_by !== undefined ? { publishedBy: a.published_by } : {}),
      });
    });
  }
  for (const located of table.contracts) {
    const c = located.document;
    if (c.kind !== "IngestionContract") continue;
    const s = c.source;
    // A load whose source is an extract's dataset reads that dataset's manifests: not an external.
    if (c.mode === "load" && extractProducing(table, s.name) !== undefined) continue;
    const asset: AssetDeclaration = {
      name: s.name,
      // a partitioned source's objects, every key's, are one Asset: the prefix before {partition}
      uri: sourceAssetUri(s.uri),
      // The ingesting contract's domain: the source system has no domain of ours.
      group: c.domain,
      extra: { external: true, owner: c.owner },
      external: true,
      status: "active",
      declaredIn: located.source.file.path,
      location: located.source.locate(["source", "name"]),
      uriLocation: located.source.locate(["source", "uri"]),
    };
    const watcher = queueWatcherOf(c);
    if (watcher) asset.watchers = [watcher];
    if (s.schema_version !== undefined) {
      asset.schemaVersion = s.schema_version;
      asset.schemaVersionLocation = located.source.locate(["source", "schema_version"]);
    }
    declare(asset);
  }
  return table;
}
