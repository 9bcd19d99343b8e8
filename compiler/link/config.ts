import type { SourceLocation } from "../diagnostics/diagnostic.js";
import type { OrchestrationConfigDocument, RunSettings } from "../model/contract.js";
import type { Located } from "../validate/validateDocuments.js";

/** The default Asset URI template (DESIGN §3.3). */
export const DEFAULT_URI_TEMPLATE = "x-datalake://{layer}/{domain}/{name}";
/** The default OpenLineage namespace when the config names none. */
export const DEFAULT_LINEAGE_NAMESPACE = "contract-assets";

/** The orchestration config of the whole project, merged from every file of the config folder. */
export interface OrchestrationConfig {
  uriTemplate: string;
  uriTemplateLocation?: SourceLocation;
  lineageNamespace: string;
  schedules: Map<string, { cron: string; timezone: string }>;
  defaults: RunSettings;
  producers: Map<string, { command: string[]; env: Record<string, string> }>;
  overrides: Array<RunSettings & { match: { domain?: string; contract?: string }; location: SourceLocation }>;
  sampleData: Map<string, string>;
  /** Whether compile also writes the ODCS export (`exports: {odcs: true}`). */
  exportOdcs: boolean;
  /** Where the runtime writes schema-drift proposals (`proposals`); absent: beside the warehouse. */
  proposals?: { uri: string; connection_id?: string };
}

/** A config key set twice: the later setting is ignored (reported by UniqueConfigKeyRule). */
export interface ConfigConflict {
  key: string;
  location: SourceLocation;
  first: SourceLocation;
}

/**
 * Merges the config files in the order given. A single-valued key (uri_template, lineage,
 * defaults) set in two files, or a schedule or producer family named in two files, keeps the first
 * setting and is recorded in `conflicts`.
 */
export function mergeConfigs(configs: ReadonlyArray<Located<OrchestrationConfigDocument>>): { config: OrchestrationConfig; conflicts: ConfigConflict[] } {
  const conflicts: ConfigConflict[] = [];
  const config: OrchestrationConfig = {
    uriTemplate: DEFAULT_URI_TEMPLATE,
    lineageNamespace: DEFAULT_LINEAGE_NAMESPACE,
    schedules: new Map(),
    defaults: {},
    producers: new Map(),
    overrides: [],
    sampleData: new Map(),
    exportOdcs: false,
  };
  const firstSeen = new Map<string, SourceLocation>();
  const claim = (key: string, location: SourceLocation): boolean => {
    const seen = firstSeen.get(key);
    if (seen) {
      conflicts.push({ key, location, first: seen });
      return false;
    }
    firstSeen.set(key, location);
    return true;
  };
  for (const { document, source } of configs) {
    if (document.uri_template !== undefined && claim("uri_template", source.locate(["uri_template"], "key"))) {
      config.uriTemplate = document.uri_template;
      config.uriTemplateLocation = source.locate(["uri_template"]);
    }
    if (document.lineage !== undefined && claim("lineage", source.locate(["lineage"], "key"))) config.lineageNamespace = document.lineage.namespace;
    if (document.proposals !== undefined && claim("proposals", source.locate(["proposals"], "key"))) config.proposals = document.proposals;
    if (document.defaults !== undefined && claim("defaults", source.locate(["defaults"], "key"))) config.defaults = document.defaults;
    if (document.exports?.odcs !== undefined && claim("exports.odcs", source.locate(["exports", "odcs"], "key"))) config.exportOdcs = document.exports.odcs;
    for (const [name, s] of Object.entries(document.schedules ?? {})) {
      if (claim(`schedules.${name}`, source.locate(["schedules", name], "key"))) config.schedules.set(name, { cron: s.cron, timezone: s.timezone ?? "UTC" });
    }
    for (const [name, p] of Object.entries(document.producers ?? {})) {
      if (claim(`producers.${name}`, source.locate(["producers", name], "key"))) config.producers.set(name, { command: p.command, env: p.env ?? {} });
    }
    for (const [name, p] of Object.entries(document.sample_data ?? {})) {
      if (claim(`sample_data.${name}`, source.locate(["sample_data", name], "key"))) config.sampleData.set(name, p);
    }
    (document.overrides ?? []).forEach((o, i) => config.overrides.push({ ...o, location: source.locate(["overrides", i, "match"]) }));
  }
  return { config, conflicts };
}

/**
 * The run settings of one contract: the defaults, then overrides matching its domain, then
 * overrides matching its id (the more specific wins; within a level, later files win).
 */
export function runSettingsFor(config: OrchestrationConfig, contractId: string, domain: string): RunSettings {
  const settings: RunSettings = { ...config.defaults };
  const strip = (o: OrchestrationConfig["overrides"][number]): RunSettings => {
    const { match: _match, location: _location, ...rest } = o;
    return rest;
  };
  for (const o of config.overrides) if (o.match.domain === domain) Object.assign(settings, strip(o));
  for (const o of config.overrides) if (o.match.contract === contractId) Object.assign(settings, strip(o));
  return settings;
}

/**
 * Expands the URI template for one dataset. Unknown placeholders are found once per template by
 * {@link templateProblems}.
 */
export function expandUriTemplate(template: string, values: { layer: string; domain: string; name: string }): string {
  return template.replace(/\{(layer|domain|name)\}/g, (_, key: "layer" | "domain" | "name") => values[key]);
}

/** Placeholders of a URI template that are not {layer}, {domain} or {name}, and stray braces. */
export function templateProblems(template: string): string[] {
  const unknown = [...template.matchAll(/\{[^{}]*\}/g)].map((m) => m[0]).filter((p) => !["{layer}", "{domain}", "{name}"].includes(p));
  const stray = template.replace(/\{[^{}]*\}/g, "").match(/[{}]/);
  return stray ? [...unknown, stray[0]] : unknown;
}
