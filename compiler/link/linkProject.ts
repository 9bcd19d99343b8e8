import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, SourceLocation, StageResult } from "../diagnostics/diagnostic.js";
import type { Contract, Dataset, RunSettings, Status } from "../model/contract.js";
import { canonicalJson } from "../support/canonical-json.js";
import { compareStrings } from "../support/compare.js";
import { sha256Hex, gitBlobId } from "../support/hash.js";
import { suggest } from "../support/suggest.js";
import { describeRenameEvidence, matchProbableRenames, type RenameCandidate } from "../support/renames.js";
import { normaliseUri } from "../support/uri.js";
import { checkUri } from "../validate/rules/ValidUriRule.js";
import type { Located, ValidatedProject } from "../validate/validateDocuments.js";
import { expandUriTemplate, mergeConfigs, runSettingsFor, templateProblems, type OrchestrationConfig } from "./config.js";

/** One Airflow Asset: produced by a contract's dataset, or external. */
export interface AssetDeclaration {
  name: string;
  uri: string;
  group: string;
  /** Computed extra (DESIGN §3.3), identical wherever the Asset is rendered. */
  extra: Record<string, unknown>;
  external: boolean;
  /** The producing contract's id; absent for externals. */
  producer?: string;
  /** The producing contract's status; externals count as active. */
  status: Status;
  /** Project-relative path of the declaring document. */
  declaredIn: string;
  location: SourceLocation;
  uriLocation: SourceLocation;
  /** Schema version of a produced dataset (or of an ingestion source, when declared). */
  schemaVersion?: number;
  schemaVersionLocation?: SourceLocation;
}

/** A contract's upstream after resolution. */
export interface ResolvedUpstream {
  asset: string;
  trigger: boolean;
  schemaVersion?: number;
  location: SourceLocation;
}

/** A contract with everything the later stages need resolved. */
export interface LinkedContract {
  located: Located<Contract>;
  contract: Contract;
  status: Status;
  /** Contract file text hashes over LF-normalised text, so CRLF checkouts hash the same. */
  sha256: string;
  gitBlob: string;
  outlets: AssetDeclaration[];
  upstreams: ResolvedUpstream[];
  /** For ingestion: the external source asset read (an inlet). */
  sourceAsset?: string;
  runSettings: RunSettings;
  timetable?: { cron: string; timezone: string };
}

export interface LinkedProject {
  config: OrchestrationConfig;
  /** Producer files (SQL) by project-relative path, carried into the manifest for the runtime. */
  producerFiles: ReadonlyMap<string, string>;
  /** Asset names refused for an error already reported (a clash, a broken URI template). */
  refused: ReadonlySet<string>;
  contracts: LinkedContract[];
  /** Every asset by name, produced and external. */
  assets: Map<string, AssetDeclaration>;
}

/** What the link stage knows of the world beyond the validated documents. */
export interface LinkContext {
  /** Producer files (SQL) by project-relative path, LF line ends (from discover). */
  producerFiles: ReadonlyMap<string, string>;
  /** Assets of the previous manifest, by name, for rename hints (`support/renames.ts`). */
  previousAssets?: ReadonlyMap<string, Omit<RenameCandidate, "name">>;
  unresolvedNames: ReadonlySet<string>;
  /** Contract ids of documents that failed validation. */
  unresolvedIds?: ReadonlySet<string>;
  /** An orchestration config file failed validation: schedule and producer names are unknown. */
  configBroken?: boolean;
}

/** The layer of a dataset that names none (DESIGN §3.3). */
export const DEFAULT_LAYER: Record<Contract["kind"], string> = { IngestionContract: "raw", TransformContract: "curated" };

function datasetExtra(contract: Contract, dataset: Dataset, layer: string): Record<string, unknown> {
  const extra: Record<string, unknown> = {
    contract_id: contract.id,
    contract_version: contract.version,
    layer,
    owner: contract.owner,
    schema_version: dataset.schema.version,
  };
  if (contract.freshness) extra.freshness = { ...contract.freshness };
  return { ...(dataset.extra ?? {}), ...extra };
}

function lfText(text: string): string {
  return text.replace(/\r\n?/g, "\n");
}

/**
 * The link stage: merges the orchestration config, declares every Asset (produced and external),
 * enforces corpus-wide uniqueness of names and normalised URIs, resolves upstreams and schedules.
 *
 * Diagnostics: CA1007, CA4001–CA4018.
 */
export function linkProject(validated: ValidatedProject, context: LinkContext): StageResult<LinkedProject> {
  const diagnostics: Diagnostic[] = [];
  const { config, diagnostics: configDiagnostics } = mergeConfigs(validated.configs);
  diagnostics.push(...configDiagnostics);
  const badPlaceholders = templateProblems(config.uriTemplate);
  for (const placeholder of badPlaceholders) {
    diagnostics.push(createDiagnostic(Diagnostics.TemplatePlaceholder, { placeholder }, config.uriTemplateLocation));
  }
  // The template itself must give valid URIs: check it once, at the config, rather than once per
  // dataset. Names are lower snake, so a sample expansion stands for every one.
  const templateSource = validated.configs.find((c) => c.document.uri_template !== undefined);
  if (!badPlaceholders.length && templateSource) {
    const before = diagnostics.length;
    checkUri(expandUriTemplate(config.uriTemplate, { layer: "raw", domain: "domain", name: "name" }), ["uri_template"], {
      source: templateSource.source,
      report: (d) => diagnostics.push(d),
    });
    if (diagnostics.length > before) badPlaceholders.push("(invalid template)");
    else if (!config.uriTemplate.includes("{name}") || !config.uriTemplate.includes("{domain}")) {
      diagnostics.push(createDiagnostic(Diagnostics.TemplatePlaceholder, { placeholder: "{domain} and {name} are both required" }, config.uriTemplateLocation));
      badPlaceholders.push("(not unique)");
    }
  }

  const assets = new Map<string, AssetDeclaration>();
  const byUri = new Map<string, AssetDeclaration>();
  // Names refused for a clash: already reported, so their consumers are not told "unknown" too.
  const refused = new Set<string>();
  const declare = (asset: AssetDeclaration): void => {
    const existing = assets.get(asset.name);
    if (existing) {
      if (existing.external && asset.external) {
        if (normaliseUri(existing.uri) !== normaliseUri(asset.uri)) {
          diagnostics.push(
            createDiagnostic(Diagnostics.ConflictingExternal, { name: asset.name, uri: asset.uri, other: existing.uri }, asset.uriLocation, {
              related: [{ message: `declared with ${JSON.stringify(existing.uri)} here`, location: existing.uriLocation }],
            }),
          );
          return;
        }
        // The same external twice must be the same Asset: Airflow compares group and extra too.
        const field = existing.group !== asset.group ? "group (domain)" : canonicalJson(existing.extra) !== canonicalJson(asset.extra) ? "owner or extra" : undefined;
        if (field) {
          diagnostics.push(
            createDiagnostic(Diagnostics.ConflictingExternalDeclaration, { name: asset.name, field }, asset.location, {
              related: [{ message: "also declared here", location: existing.location }],
            }),
          );
        }
        return;
      }
      refused.add(asset.name);
      const entry = existing.external !== asset.external ? Diagnostics.ExternalProducedClash : Diagnostics.DuplicateAssetName;
      diagnostics.push(
        createDiagnostic(entry, { name: asset.name }, asset.location, { related: [{ message: "also declared here", location: existing.location }] }),
      );
      return;
    }
    const normalised = normaliseUri(asset.uri);
    const clash = byUri.get(normalised);
    if (clash) {
      refused.add(asset.name);
      diagnostics.push(
        createDiagnostic(Diagnostics.DuplicateAssetUri, { uri: asset.uri, normalised, other: clash.name }, asset.uriLocation, {
          related: [{ message: `${JSON.stringify(clash.name)} has the uri ${JSON.stringify(clash.uri)}`, location: clash.uriLocation }],
        }),
      );
      return;
    }
    assets.set(asset.name, asset);
    byUri.set(normalised, asset);
  };

  // Sort for determinism: declarations (and so "first declared here") follow file order.
  const contracts = [...validated.contracts].sort((a, b) => compareStrings(a.source.file.path, b.source.file.path));
  const externals = [...validated.externals].sort((a, b) => compareStrings(a.source.file.path, b.source.file.path));

  // Contract ids (dag_ids) are unique. They are lower case by schema, so no two differ by case only.
  const ids = new Map<string, Located<Contract>>();
  const accepted: Array<Located<Contract>> = [];
  for (const located of contracts) {
    const id = located.document.id;
    const at = located.source.locate(["id"]);
    const same = ids.get(id);
    if (same) {
      diagnostics.push(createDiagnostic(Diagnostics.DuplicateContractId, { id }, at, { related: [{ message: "first declared here", location: same.source.locate(["id"]) }] }));
      continue;
    }
    ids.set(id, located);
    accepted.push(located);
  }

  // Produced assets first, so a clash with an external points at the external.
  for (const located of accepted) {
    const c = located.document;
    c.datasets.forEach((dataset, i) => {
      const layer = dataset.layer ?? DEFAULT_LAYER[c.kind];
      if (dataset.uri === undefined && badPlaceholders.length) {
        // Reported once at the template; the dataset's consumers must not cascade.
        refused.add(`${c.domain}.${dataset.name}`);
        return;
      }
      const uri = dataset.uri ?? expandUriTemplate(config.uriTemplate, { layer, domain: c.domain, name: dataset.name });
      const uriLocation = located.source.locate(dataset.uri !== undefined ? ["datasets", i, "uri"] : ["datasets", i, "name"]);
      if (dataset.uri === undefined) {
        // A template can expand to a bad URI (a scheme missing, a placeholder left): check the result.
        const before = diagnostics.length;
        checkUri(uri, ["datasets", i, "name"], { source: located.source, report: (d) => diagnostics.push(d) });
        if (diagnostics.length > before) return;
      }
      declare({
        name: `${c.domain}.${dataset.name}`,
        uri,
        group: c.domain,
        extra: datasetExtra(c, dataset, layer),
        external: false,
        producer: c.id,
        status: c.status ?? "active",
        declaredIn: located.source.file.path,
        location: located.source.locate(["datasets", i, "name"]),
        uriLocation,
        schemaVersion: dataset.schema.version,
        schemaVersionLocation: located.source.locate(["datasets", i, "schema", "version"]),
      });
    });
  }
  for (const located of externals) {
    const doc = located.document;
    doc.assets.forEach((a, i) => {
      declare({
        name: a.name,
        uri: a.uri,
        group: doc.domain,
        extra: { ...(a.extra ?? {}), external: true, owner: doc.owner },
        external: true,
        status: "active",
        declaredIn: located.source.file.path,
        location: located.source.locate(["assets", i, "name"]),
        uriLocation: located.source.locate(["assets", i, "uri"]),
      });
    });
  }
  for (const located of accepted) {
    const c = located.document;
    if (c.kind !== "IngestionContract") continue;
    const s = c.source;
    const asset: AssetDeclaration = {
      name: s.name,
      uri: s.uri,
      // The ingesting contract's domain: the source system has no domain of ours.
      group: c.domain,
      extra: { external: true, owner: c.owner },
      external: true,
      status: "active",
      declaredIn: located.source.file.path,
      location: located.source.locate(["source", "name"]),
      uriLocation: located.source.locate(["source", "uri"]),
    };
    if (s.schema_version !== undefined) {
      asset.schemaVersion = s.schema_version;
      asset.schemaVersionLocation = located.source.locate(["source", "schema_version"]);
    }
    declare(asset);
  }

  // Assets renamed through renamed_from, for hints at consumers that did not follow.
  const renamedTo = new Map<string, string>();
  // Assets the previous state did not have, as rename candidates for consumers of a vanished name.
  const added: RenameCandidate[] = [];
  for (const a of assets.values()) {
    const producer = a.producer ? ids.get(a.producer) : undefined;
    const dataset = producer?.document.datasets.find((d) => `${producer.document.domain}.${d.name}` === a.name);
    for (const old of dataset?.renamed_from ?? []) renamedTo.set(old, a.name);
    if (context.previousAssets && !context.previousAssets.has(a.name)) {
      added.push({ name: a.name, uri: a.uri, contractId: a.producer ?? null, properties: dataset?.schema.properties ?? [] });
    }
  }

  const linked: LinkedContract[] = [];
  for (const located of accepted) {
    const c = located.document;
    const status = c.status ?? "active";
    const text = lfText(located.source.file.text);
    const entry: LinkedContract = {
      located,
      contract: c,
      status,
      sha256: sha256Hex(text),
      gitBlob: gitBlobId(Buffer.from(text, "utf8")),
      outlets: c.datasets.map((d) => assets.get(`${c.domain}.${d.name}`)).filter((a): a is AssetDeclaration => a?.producer === c.id),
      upstreams: [],
      runSettings: runSettingsFor(config, c.id, c.domain),
    };
    if (c.kind === "IngestionContract") entry.sourceAsset = c.source.name;

    // Producer references into the orchestration config and the project.
    if (c.kind === "TransformContract" && c.producer.type === "command" && !config.producers.has(c.producer.family) && !context.configBroken) {
      const guess = suggest(c.producer.family, config.producers.keys());
      diagnostics.push(
        createDiagnostic(Diagnostics.UnknownProducerFamily, { family: c.producer.family }, located.source.locate(["producer", "family"]), guess ? { hint: `did you mean "${guess}"?` } : {}),
      );
    }
    if (c.kind === "TransformContract" && c.producer.type === "sql" && !context.producerFiles.has(c.producer.path)) {
      diagnostics.push(createDiagnostic(Diagnostics.ReferencedFileMissing, { path: c.producer.path }, located.source.locate(["producer", "path"])));
    }
    if (c.trigger !== undefined && c.trigger !== "manual") {
      if (c.trigger.cron !== undefined) entry.timetable = { cron: c.trigger.cron, timezone: c.trigger.timezone ?? "UTC" };
      else if (c.trigger.schedule_ref !== undefined) {
        const named = config.schedules.get(c.trigger.schedule_ref);
        if (named) entry.timetable = { cron: named.cron, timezone: c.trigger.timezone ?? named.timezone };
        else if (!context.configBroken) {
          const guess = suggest(c.trigger.schedule_ref, config.schedules.keys());
          diagnostics.push(
            createDiagnostic(Diagnostics.UnknownScheduleRef, { ref: c.trigger.schedule_ref }, located.source.locate(["trigger", "schedule_ref"]), guess ? { hint: `did you mean "${guess}"?` } : {}),
          );
        }
      }
    }

    // Upstreams. A retired contract runs nothing, so its own references are not checked.
    (c.upstreams ?? []).forEach((u, i) => {
      const at = located.source.locate(["upstreams", i, "asset"]);
      const resolved: ResolvedUpstream = { asset: u.asset, trigger: u.trigger !== false, location: at };
      if (u.schema_version !== undefined) resolved.schemaVersion = u.schema_version;
      entry.upstreams.push(resolved);
      if (status === "retired") return;
      const target = assets.get(u.asset);
      if (!target) {
        if (context.unresolvedNames.has(u.asset) || refused.has(u.asset)) return;
        diagnostics.push(createDiagnostic(Diagnostics.UnknownUpstream, { asset: u.asset }, at, { hint: unknownHint(u.asset, assets, renamedTo, added, context) }));
        return;
      }
      const related = [{ message: `${JSON.stringify(target.name)} is declared here`, location: target.location }];
      if (target.status === "retired") {
        diagnostics.push(createDiagnostic(Diagnostics.RetiredUpstream, { asset: u.asset, contract: target.producer! }, at, { related }));
      } else if (target.status === "draft" && status !== "draft") {
        diagnostics.push(createDiagnostic(Diagnostics.DraftUpstream, { asset: u.asset, contract: target.producer! }, at, { related }));
      } else if (target.status === "deprecated") {
        diagnostics.push(createDiagnostic(Diagnostics.DeprecatedUpstream, { asset: u.asset, contract: target.producer! }, at, { related }));
      }
      if (u.schema_version !== undefined && target.schemaVersion !== undefined && u.schema_version !== target.schemaVersion) {
        diagnostics.push(
          createDiagnostic(
            Diagnostics.SchemaVersionMismatch,
            { asset: u.asset, pinned: u.schema_version, actual: target.schemaVersion },
            located.source.locate(["upstreams", i, "schema_version"]),
            {
              related: [{ message: `the schema of ${JSON.stringify(target.name)} is at version ${target.schemaVersion} here`, location: target.schemaVersionLocation ?? target.location }],
              hint: "review the producer's schema change, then update the pin",
            },
          ),
        );
      }
    });
    linked.push(entry);
  }

  // Overrides that match nothing are likely typos.
  const domains = new Set(accepted.map((l) => l.document.domain));
  for (const o of config.overrides) {
    const target = o.match.contract ?? o.match.domain!;
    const known =
      o.match.contract !== undefined ? ids.has(target) || (context.unresolvedIds?.has(target) ?? false) : domains.has(target) || accepted.length === 0;
    if (!known) {
      const guess = suggest(target, o.match.contract !== undefined ? ids.keys() : domains);
      diagnostics.push(createDiagnostic(Diagnostics.UnknownOverrideTarget, { target }, o.location, guess ? { hint: `did you mean "${guess}"?` } : {}));
    }
  }
  return { value: { config, producerFiles: context.producerFiles, refused, contracts: linked, assets }, diagnostics };
}

function unknownHint(
  name: string,
  assets: ReadonlyMap<string, AssetDeclaration>,
  renamedTo: ReadonlyMap<string, string>,
  added: readonly RenameCandidate[],
  context: LinkContext,
): string | undefined {
  const declared = renamedTo.get(name);
  if (declared) return `it was renamed to "${declared}" (renamed_from); update this upstream`;
  const previous = context.previousAssets?.get(name);
  if (previous) {
    const [rename] = matchProbableRenames([{ name, ...previous }], added);
    if (rename) return `it looks renamed to "${rename.to}" (${describeRenameEvidence(rename, previous.contractId)}); update this upstream`;
  }
  const produced = [...assets.values()].filter((a) => a.producer === name).map((a) => a.name);
  if (produced.length) return `"${name}" is a contract; read one of its datasets: ${produced.map((p) => `"${p}"`).join(", ")}`;
  const guess = suggest(name, assets.keys());
  return guess ? `did you mean "${guess}"?` : undefined;
}
