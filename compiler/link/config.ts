import { compareStrings } from "../support/compare.js";
import type { SourceLocation } from "../diagnostics/diagnostic.js";
import type { OrchestrationConfigDocument, RunSettings, WarehouseDialect } from "../model/contract.js";
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
  /** Airflow notifiers by name: a `BaseNotifier` class path and its constructor arguments. */
  notifiers: Map<string, { class: string; kwargs: Record<string, unknown> }>;
  /** The freshness monitor's schedule and notifier (DESIGN §5.5). */
  freshnessMonitor: { dagId: string; cron: string; timezone: string; notifier?: string };
  /** Every place a notifier is named (for KnownNotifierRule): `freshness_monitor`, `deadline_notifier`. */
  notifierReferences: Array<{ name: string; location: SourceLocation }>;
  /** Whether compile also writes the ODCS export (`exports: {odcs: true}`). */
  exportOdcs: boolean;
  /** Where the runtime writes schema-drift proposals (`proposals`); absent: beside the warehouse. */
  proposals?: { uri: string; connection_id?: string };
  /** The warehouse's kind (`warehouse.dialect`) and where it is set; absent: not said, no identifier limit is checked. */
  warehouse?: { dialect: WarehouseDialect; location: SourceLocation };
}

/** The freshness monitor's default cron: every 15 minutes. */
export const DEFAULT_MONITOR_CRON = "*/15 * * * *";
/**
 * The freshness monitor's default dag_id. Contract ids are `<domain>.<name>` (one dot) and a
 * configured id is lower snake (no dot), so no contract can take it.
 */
export const DEFAULT_MONITOR_DAG_ID = "contract_assets_freshness_monitor";

/** A config key set twice: the later setting is ignored (reported by UniqueConfigKeyRule). */
export interface ConfigConflict {
  key: string;
  location: SourceLocation;
  first: SourceLocation;
}

/**
 * Merges the config files in the order given. A single-valued key (uri_template, lineage,
 * defaults, warehouse) set in two files, or a schedule or producer family named in two files, keeps the first
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
    notifiers: new Map(),
    freshnessMonitor: { dagId: DEFAULT_MONITOR_DAG_ID, cron: DEFAULT_MONITOR_CRON, timezone: "UTC" },
    notifierReferences: [],
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
  // Sort for determinism: "first" is the first file by path, whatever the discovery order, so the
  // setting that wins and the file CA4015 points at never depend on it.
  for (const { document, source } of [...configs].sort((a, b) => compareStrings(a.source.file.path, b.source.file.path))) {
    if (document.uri_template !== undefined && claim("uri_template", source.locate(["uri_template"], "key"))) {
      config.uriTemplate = document.uri_template;
      config.uriTemplateLocation = source.locate(["uri_template"]);
    }
    if (document.lineage !== undefined && claim("lineage", source.locate(["lineage"], "key"))) config.lineageNamespace = document.lineage.namespace;
    if (document.proposals !== undefined && claim("proposals", source.locate(["proposals"], "key"))) config.proposals = document.proposals;
    if (document.warehouse !== undefined && claim("warehouse", source.locate(["warehouse"], "key"))) {
      config.warehouse = { dialect: document.warehouse.dialect, location: source.locate(["warehouse", "dialect"]) };
    }
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
    for (const [name, n] of Object.entries(document.notifiers ?? {})) {
      if (claim(`notifiers.${name}`, source.locate(["notifiers", name], "key"))) config.notifiers.set(name, { class: n.class, kwargs: n.kwargs ?? {} });
    }
    const monitor = document.freshness_monitor;
    if (monitor !== undefined && claim("freshness_monitor", source.locate(["freshness_monitor"], "key"))) {
      config.freshnessMonitor = { dagId: monitor.dag_id ?? DEFAULT_MONITOR_DAG_ID, cron: monitor.cron ?? DEFAULT_MONITOR_CRON, timezone: monitor.timezone ?? "UTC" };
      if (monitor.notifier !== undefined) {
        config.freshnessMonitor.notifier = monitor.notifier;
        config.notifierReferences.push({ name: monitor.notifier, location: source.locate(["freshness_monitor", "notifier"]) });
      }
    }
    if (document.defaults?.deadline_notifier !== undefined) {
      config.notifierReferences.push({ name: document.defaults.deadline_notifier, location: source.locate(["defaults", "deadline_notifier"]) });
    }
    (document.overrides ?? []).forEach((o, i) => {
      if (o.deadline_notifier !== undefined) config.notifierReferences.push({ name: o.deadline_notifier, location: source.locate(["overrides", i, "deadline_notifier"]) });
    });
  }
  return { config, conflicts };
}

/** The overrides of a config by what they match, each without `match` and `location`, in config order. */
interface OverrideIndex {
  byDomain: Map<string, RunSettings[]>;
  byContract: Map<string, RunSettings[]>;
}

// Built once per config: resolution asks for every contract, and a scan of every override per
// contract was quadratic (10,000 contracts x the overrides of a large config).
const overrideIndexes = new WeakMap<OrchestrationConfig, OverrideIndex>();

function overrideIndexOf(config: OrchestrationConfig): OverrideIndex {
  let index = overrideIndexes.get(config);
  if (index) return index;
  index = { byDomain: new Map(), byContract: new Map() };
  const add = (map: Map<string, RunSettings[]>, key: string, settings: RunSettings): void => {
    const list = map.get(key);
    if (list) list.push(settings);
    else map.set(key, [settings]);
  };
  for (const o of config.overrides) {
    const { match, location: _location, ...rest } = o;
    if (match.domain !== undefined) add(index.byDomain, match.domain, rest);
    if (match.contract !== undefined) add(index.byContract, match.contract, rest);
  }
  overrideIndexes.set(config, index);
  return index;
}

/**
 * The run settings of one contract: the defaults, then overrides matching its domain, then
 * overrides matching its id (the more specific wins; within a level, later files win). A new
 * object each call; the overrides are indexed once per config (the config must not change after
 * its first call).
 */
export function runSettingsFor(config: OrchestrationConfig, contractId: string, domain: string): RunSettings {
  const settings: RunSettings = { ...config.defaults };
  const index = overrideIndexOf(config);
  for (const o of index.byDomain.get(domain) ?? []) Object.assign(settings, o);
  for (const o of index.byContract.get(contractId) ?? []) Object.assign(settings, o);
  return settings;
}

/**
 * Expands the URI template for one dataset. Unknown placeholders are found once per template by
 * {@link templateProblems}.
 */
export function expandUriTemplate(template: string, values: { layer: string; domain: string; name: string }): string {
  return uriExpander(template)(values.layer, values.domain, values.name);
}

/**
 * {@link expandUriTemplate} for one template, cut once at its placeholders (the asset table expands
 * it for every dataset without a `uri`): `(layer, domain, name) → uri`, the same text.
 */
export function uriExpander(template: string): (layer: string, domain: string, name: string) => string {
  const pieces = template.split(/\{(layer|domain|name)\}/);
  // split keeps each placeholder's name at the odd places: text, name, text, ..., text.
  return (layer, domain, name) => {
    let out = pieces[0]!;
    for (let i = 1; i < pieces.length; i += 2) out += (pieces[i] === "layer" ? layer : pieces[i] === "domain" ? domain : name) + pieces[i + 1]!;
    return out;
  };
}

/** Placeholders of a URI template that are not {layer}, {domain} or {name}, and stray braces. */
export function templateProblems(template: string): string[] {
  const unknown = [...template.matchAll(/\{[^{}]*\}/g)].map((m) => m[0]).filter((p) => !["{layer}", "{domain}", "{name}"].includes(p));
  const stray = template.replace(/\{[^{}]*\}/g, "").match(/[{}]/);
  return stray ? [...unknown, stray[0]] : unknown;
}

/**
 * The Airflow pool of the tasks that write the embedded DuckDB warehouse: one slot, so the
 * scheduler runs one such task at a time (a DuckDB file takes one writer process; ADR 0030).
 * `generated/pools.json` defines it (`renderPools`); `airflow pools import` creates it.
 */
export const DUCKDB_POOL = "contract_assets_duckdb";

/**
 * Whether a contract with these run settings writes a DuckDB file: it names no
 * `warehouse_conn_id` (the runtime then opens the embedded file, `open_warehouse`), or the config
 * says every warehouse Connection is DuckDB (`warehouse.dialect: duckdb`). A named Connection is
 * otherwise taken for a server database: the compiler cannot see its `conn_type`, which the
 * runtime reads.
 */
export function writesDuckdbFile(config: OrchestrationConfig, settings: RunSettings): boolean {
  return settings.warehouse_conn_id === undefined || config.warehouse?.dialect === "duckdb";
}

/**
 * Whether the config leaves any contract on a DuckDB file (no `defaults.warehouse_conn_id`, or
 * `warehouse.dialect: duckdb`), so compile writes `pools.json`. A function of the config alone,
 * so a compile of changed contracts only (ADR 0022's splice, same config) keeps the file as it is.
 */
export function configUsesDuckdbFile(config: OrchestrationConfig): boolean {
  return writesDuckdbFile(config, config.defaults);
}

/** The `pool` the overrides matching a contract set (its id's over its domain's; later files win), if any. */
function overridePool(config: OrchestrationConfig, contractId: string, domain: string): string | undefined {
  const index = overrideIndexOf(config);
  let pool: string | undefined;
  for (const o of index.byDomain.get(domain) ?? []) if (o.pool !== undefined) pool = o.pool;
  for (const o of index.byContract.get(contractId) ?? []) if (o.pool !== undefined) pool = o.pool;
  return pool;
}

/**
 * The Airflow pool of one contract's tasks (ADR 0030). A contract that writes a DuckDB file
 * ({@link writesDuckdbFile}) runs in {@link DUCKDB_POOL}, unless an override that matches its
 * domain or id sets a `pool` (a choice made for those contracts; the user then owns its slots);
 * `defaults.pool` is a project-wide choice made without the warehouse in view, and gives way.
 * Any other contract keeps the pool of its run settings (absent: Airflow's `default_pool`).
 *
 * @param settings The contract's run settings (`runSettingsFor`).
 * @returns The pool name, or undefined for none set.
 */
export function poolFor(config: OrchestrationConfig, contractId: string, domain: string, settings: RunSettings): string | undefined {
  if (!writesDuckdbFile(config, settings)) return settings.pool;
  return overridePool(config, contractId, domain) ?? DUCKDB_POOL;
}
