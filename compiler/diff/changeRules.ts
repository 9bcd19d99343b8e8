import type { Manifest, ManifestAsset } from "../manifest/buildManifest.js";
import type { Property as ManifestProperty, RuntimeUpstream } from "../model/manifest.js";
import type { DagPlan } from "../plan/planDags.js";
import { canonicalJson } from "../support/canonical-json.js";
import { compareStrings } from "../support/compare.js";
import { describeRenameEvidence, matchProbableRenames, type RenameCandidate, type RenameUriEvidence } from "../support/renames.js";

/**
 * How bad a change is, in the manner of schema breaking-change checkers (graphql-js, buf):
 * `breaking` fails the compile, `dangerous` needs a person's attention, `safe` is informational.
 */
export type ChangeSeverity = "breaking" | "dangerous" | "safe";

/**
 * What a change does to readers of the asset, in the manner of SQLMesh's plan categories:
 * `breaking` removes or narrows what a consumer may read (a removed or retyped property, a removed
 * or renamed asset), `non-breaking` adds or changes data without taking any away (a property added,
 * a type widened, a schedule or quality rule changed), `metadata-only` changes no data at all
 * (owner, group, description, extra). A breaking change needs a major `version` of its contract.
 */
export type ChangeCategory = "breaking" | "non-breaking" | "metadata-only";

/** Evidence for a probable rename (rule ASSET_PROBABLY_RENAMED). */
export interface RenameEvidence {
  same_contract: boolean;
  /** Jaccard similarity of the schemas over (property name, logicalType), two decimals. */
  schema_similarity: number;
  /** Properties in both with the same name and type, and in either schema. */
  matching_properties: number;
  total_properties: number;
  uri: RenameUriEvidence;
}

/** One finding of the diff: which rule, about which asset, in words, with the evidence. */
export interface Change {
  rule: string;
  severity: ChangeSeverity;
  category: ChangeCategory;
  /** The asset the change is about (for a contract's version rule: its first asset concerned). */
  asset: string;
  message: string;
  /** The field changed, for per-field rules (`uri`, `schema.properties.amount.logicalType`, …). */
  field?: string;
  before?: unknown;
  after?: unknown;
  /** dag_ids of consumers affected (breaking rules). */
  consumers?: string[];
  /** The contract id, for rules about a contract's `version`. */
  contract?: string;
  /** Why a removed and an added asset look like one renamed (ASSET_PROBABLY_RENAMED). */
  evidence?: RenameEvidence;
  /** What to write to acknowledge or resolve the change: a `renamed_from` or `version` line. */
  fix?: string;
  /**
   * DAGs downstream of a changed asset (not for metadata-only changes): `direct` read it,
   * `indirect` read an asset produced, directly or further down, by a direct one. Sorted.
   */
  downstream?: { direct: string[]; indirect: string[] };
}

/** What every rule sees: both manifests, indexed. */
export interface DiffContext {
  previous: Manifest;
  current: Manifest;
  before: ReadonlyMap<string, ManifestAsset>;
  after: ReadonlyMap<string, ManifestAsset>;
  /** Old name → new name, declared through `renamed_from` in the current state. */
  renamedTo: ReadonlyMap<string, string>;
  /** dag_id → DAG, per state. */
  dagsBefore: ReadonlyMap<string, DagPlan>;
  dagsAfter: ReadonlyMap<string, DagPlan>;
}

/** What a detector returns: a change without its rule's data; `category` only where it differs. */
export type Finding = Omit<Change, "rule" | "severity" | "category"> & { category?: ChangeCategory };

/**
 * A change rule: an ID, a one-sentence purpose, a severity, a category and a detector (rules as
 * data). `about` says whose side the rule looks at: `asset` rules describe what the producer did,
 * `consumer` rules a consumer that breaks because of it, `contract` rules the producing contract's
 * `version` against the asset rules' findings (they run last and read them). `additive` marks the
 * non-breaking changes that add what a consumer may read (they want a minor version, ADR 0015).
 * A detector may give a finding another category than the rule's (a type widened, not narrowed).
 */
export interface ChangeRule {
  id: string;
  purpose: string;
  severity: ChangeSeverity;
  category: ChangeCategory;
  about: "asset" | "consumer" | "contract";
  additive?: boolean;
  /**
   * The rule reads the current state alone, not what changed between the two, so it can find
   * something when a state is compared with itself (a consumer of a retired asset breaks whether or
   * not anything changed). Every other rule compares a before with an after and finds nothing then:
   * `diffManifests` runs only the rules marked so when both states are one object (ADR 0017g).
   *
   * The same holds record by record (ADR 0017k): the previous state read against the current one
   * holds the current manifest's own object for each record whose text did not change, and a rule
   * that compares an asset's record before with its record after finds nothing in a pair that is
   * one object. Such a rule visits only {@link changedPairs} (or {@link producerChangedPairs} when
   * it reads the producer's DAG too); a rule marked `inOneState`, and a rule that reads names in one
   * state and not the other or the readers of an asset, visits everything it did.
   */
  inOneState?: true;
  detect: (context: DiffContext, earlier: readonly Change[]) => Finding[];
}

// The manifest's own types (model/manifest.ts, checked against its schema): no local copies to drift.
type Property = ManifestProperty;
type Upstream = RuntimeUpstream;

// One object is the same as itself (a no-op compile diffs the new manifest against itself).
const same = (a: unknown, b: unknown): boolean => a === b || canonicalJson(a ?? null) === canonicalJson(b ?? null);
const q = JSON.stringify;

/** A value computed once per diff (per context), for the rules that each ask for it. */
function perDiff<T>(build: (context: DiffContext) => T): (context: DiffContext) => T {
  const cache = new WeakMap<DiffContext, T>();
  return (context) => {
    let value = cache.get(context);
    if (value === undefined) cache.set(context, (value = build(context)));
    return value;
  };
}

type Pair = readonly [ManifestAsset, ManifestAsset];

/** Assets present in both states (by name), in the previous state's order. */
const kept = perDiff((context): readonly Pair[] => {
  const out: Pair[] = [];
  for (const [name, before] of context.before) {
    const after = context.after.get(name);
    if (after) out.push([before, after]);
  }
  return out;
});

/**
 * The pairs of {@link kept} whose two records are not one object, in the same order. A pair that
 * is one object (a record the previous state took over from the current manifest because its text
 * did not change, ADR 0017k; or an unresolved asset's previous record standing for it) has every
 * field equal to itself: a rule that compares the record before with the record after, and reads
 * nothing else that may change, finds nothing in it and may skip it.
 */
export const changedPairs = perDiff((context): readonly Pair[] => kept(context).filter(([b, a]) => b !== a));

/**
 * The pairs of {@link kept} whose records, or whose producers' DAGs (by the records' `producer`),
 * are not one object: what a rule that compares an asset's producer before and after must visit
 * (the asset record may be unchanged while its DAG changed).
 */
export const producerChangedPairs = perDiff((context): readonly Pair[] =>
  kept(context).filter(([b, a]) => b !== a || (b.producer ? context.dagsBefore.get(b.producer) : undefined) !== (a.producer ? context.dagsAfter.get(a.producer) : undefined)),
);

const removedNames = perDiff((context): readonly string[] => [...context.before.keys()].filter((n) => !context.after.has(n)));

const propertyMaps = new WeakMap<ManifestAsset, ReadonlyMap<string, Property>>();

/** An asset's properties by name; one map per asset record (rules ask for it in loops). */
export function propertiesOf(asset: ManifestAsset): ReadonlyMap<string, Property> {
  let map = propertyMaps.get(asset);
  if (!map) propertyMaps.set(asset, (map = new Map((asset.schema?.properties ?? []).map((p) => [p.name, p]))));
  return map;
}

function upstreamsOf(dag: DagPlan | undefined): Upstream[] {
  return dag?.runtime.upstreams ?? [];
}

/** Current consumers of each asset name: each DAG of the current state with its first upstream entry of that name, sorted by dag_id. */
const consumerIndex = perDiff((context): ReadonlyMap<string, ReadonlyArray<{ dag: DagPlan; upstream: Upstream }>> => {
  const index = new Map<string, Array<{ dag: DagPlan; upstream: Upstream }>>();
  for (const dag of context.dagsAfter.values()) {
    for (const upstream of upstreamsOf(dag)) {
      const list = index.get(upstream.asset);
      // A DAG's first upstream entry of a name stands for it (a later one is already listed, last).
      if (!list) index.set(upstream.asset, [{ dag, upstream }]);
      else if (list[list.length - 1]!.dag !== dag) list.push({ dag, upstream });
    }
  }
  // Sort for determinism.
  for (const list of index.values()) list.sort((a, b) => compareStrings(a.dag.dag_id, b.dag.dag_id));
  return index;
});

/** Current consumers (dag_ids) of an asset name, with their upstream entry (its first in the DAG's upstreams), sorted by dag_id. */
export function consumersOf(context: DiffContext, asset: string): Array<{ dag: DagPlan; upstream: Upstream }> {
  return [...(consumerIndex(context).get(asset) ?? [])];
}

function extraWithout(extra: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(extra).filter(([k]) => !keys.includes(k)));
}

function qualityByName(asset: ManifestAsset): Map<string, unknown> {
  // Names are unique within a dataset (the compiler decides them; the schema requires them).
  return new Map(asset.quality.map((r) => [r.name, r]));
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * The queries of a DAG's SQL quality rules, over every dataset it produces: its assets' authored
 * rules (the rules derived from them have no query; manifestVersion 2 stores them on the asset, ADR 0017f).
 */
function ruleQueriesOf(dag: DagPlan, assets: ReadonlyMap<string, ManifestAsset>): string[] {
  return dag.runtime.datasets.flatMap((d) => (assets.get(d.asset)?.quality ?? []).flatMap((r) => (r.query !== undefined ? [r.query] : [])));
}

/** The producing contract's id of an asset (from its extra); null for externals. */
export function contractOf(asset: ManifestAsset): string | null {
  const id = asset.extra.contract_id;
  return typeof id === "string" ? id : null;
}

const datasetName = (asset: string): string => asset.slice(asset.lastIndexOf(".") + 1);

// Integer and floating types in widening order (DuckDB, PostgreSQL and ANSI names).
const INTEGER_LADDER = ["tinyint", "smallint", "int2", "integer", "int", "int4", "bigint", "int8", "hugeint"];
const INTEGER_RANK: Record<string, number> = { tinyint: 0, smallint: 1, int2: 1, integer: 2, int: 2, int4: 2, bigint: 3, int8: 3, hugeint: 4 };
const FLOAT_RANK: Record<string, number> = { real: 0, float4: 0, float: 1, double: 1, "double precision": 1, float8: 1 };

/**
 * Whether a type change only widens what a property may hold, so every value a consumer read
 * before still reads the same: logicalType `integer` → `number`; a physicalType of the same base
 * with parameters no smaller (`varchar(10)` → `varchar(20)`, `decimal(10,2)` → `decimal(12,2)`, the
 * parameters dropped), or a larger integer or floating type. A type declared where there was none,
 * or dropped, changes no data and counts as widened. Anything else is narrowed or incompatible.
 */
export function isWidening(kind: "logicalType" | "physicalType", before: string | undefined, after: string | undefined): boolean {
  if (before === undefined || after === undefined) return true;
  if (kind === "logicalType") return before === "integer" && after === "number";
  const parse = (t: string): { base: string; params: number[] | null } => {
    const m = /^\s*([a-z][a-z0-9_ ]*?)\s*(?:\(([^)]*)\))?\s*$/i.exec(t);
    if (!m) return { base: t.trim().toLowerCase(), params: null };
    const params = m[2] === undefined ? null : m[2].split(",").map((x) => Number(x.trim()));
    return { base: m[1]!.toLowerCase(), params: params && params.every(Number.isFinite) ? params : null };
  };
  const b = parse(before);
  const a = parse(after);
  if (INTEGER_LADDER.includes(b.base) && INTEGER_LADDER.includes(a.base)) return INTEGER_RANK[a.base]! >= INTEGER_RANK[b.base]!;
  if (b.base in FLOAT_RANK && a.base in FLOAT_RANK) return FLOAT_RANK[a.base]! >= FLOAT_RANK[b.base]!;
  if (b.base !== a.base) return false;
  if (a.params === null) return true;
  if (b.params === null || a.params.length !== b.params.length) return false;
  if ((a.base === "decimal" || a.base === "numeric") && a.params.length === 2) {
    // Both the integer digits (precision - scale) and the scale must not shrink.
    return a.params[1]! >= b.params[1]! && a.params[0]! - a.params[1]! >= b.params[0]! - b.params[1]!;
  }
  return a.params.every((x, i) => x >= b.params![i]!);
}

/** Each (property, key) that differs between two records of an asset, for properties in both, in schema order. */
function fieldChanges<K extends keyof Property>(
  b: ManifestAsset,
  a: ManifestAsset,
  keys: readonly K[],
  differs: (before: Property[K], after: Property[K]) => boolean,
): Array<{ name: string; key: K; before: Property[K]; after: Property[K] }> {
  const after = propertiesOf(a);
  return [...propertiesOf(b)].flatMap(([name, p]) => {
    const n = after.get(name);
    return n ? keys.filter((k) => differs(p[k], n[k])).map((key) => ({ name, key, before: p[key], after: n[key] })) : [];
  });
}

/** The breaking property changes between two records of an asset, in words (for a pinned consumer). */
function breakingPropertyChanges(b: ManifestAsset, a: ManifestAsset): string[] {
  const after = propertiesOf(a);
  const out: string[] = [];
  for (const [name, p] of propertiesOf(b)) {
    const n = after.get(name);
    if (!n) out.push(`${q(name)} removed`);
    else if ((["logicalType", "physicalType"] as const).some((k) => (p[k] ?? null) !== (n[k] ?? null) && !isWidening(k, p[k], n[k]))) out.push(`${q(name)} narrowed`);
    else if (p.primaryKey === true && p.required === true && !n.required) out.push(`${q(name)} no longer required`);
  }
  return out;
}

function renameCandidate(asset: ManifestAsset): RenameCandidate {
  return { name: asset.name, uri: asset.uri, contractId: contractOf(asset), properties: asset.schema?.properties ?? [] };
}

/** Removed assets (not declared renamed) paired with added ones (`support/renames.ts`). */
export function probableRenames(context: DiffContext): ReturnType<typeof matchProbableRenames> {
  const removed = removedNames(context).filter((n) => !context.renamedTo.has(n)).map((n) => renameCandidate(context.before.get(n)!));
  const declared = new Set(context.renamedTo.values());
  const added = [...context.after.values()].filter((a) => !context.before.has(a.name) && !declared.has(a.name)).map(renameCandidate);
  return matchProbableRenames(removed, added);
}

type Semver = [number, number, number];

function parseSemver(version: unknown): Semver | undefined {
  const m = typeof version === "string" ? /^(\d+)\.(\d+)\.(\d+)/.exec(version) : null;
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

/**
 * The version level a change needs and whether `after` reaches it from `before`. Semver (2.0.0 §4,
 * §7, §8): a breaking change needs the next major, an additive one the next minor. Below 1.0.0 the
 * levels shift down one place, as Cargo reads semver: 0.y is the major, z the minor.
 */
function bumped(before: Semver, after: Semver, level: "major" | "minor"): boolean {
  const [bM, bm, bp] = before;
  const [aM, am, ap] = after;
  if (aM !== bM) return aM > bM;
  if (bM === 0) return level === "major" ? am > bm : am > bm || (am === bm && ap > bp);
  return level === "major" ? false : am > bm;
}

function nextVersion(before: Semver, level: "major" | "minor"): string {
  const [M, m, p] = before;
  if (M === 0) return level === "major" ? `0.${m + 1}.0` : `0.${m}.${p + 1}`;
  return level === "major" ? `${M + 1}.0.0` : `${M}.${m + 1}.0`;
}

/**
 * The version a contract must set to satisfy a version rule's finding, from the same rule the
 * finding applied (ADR 0015: `VERSION_BREAKING_WITHOUT_MAJOR` asks for the next major of the
 * previous version, `VERSION_ADDITIVE_WITHOUT_MINOR` for the next minor; below 1.0.0 each one
 * place lower, as Cargo reads semver). `drift apply` sets it (docs/contract-format.md), so the tool and the
 * check cannot disagree.
 *
 * @returns The version text (`2.0.0`, `0.4.0`), or undefined for any other change, or when the
 *   previous version is not semver (the rules then found nothing either).
 */
export function requiredVersion(change: Pick<Change, "rule" | "before">): string | undefined {
  const level = change.rule === "VERSION_BREAKING_WITHOUT_MAJOR" ? "major" : change.rule === "VERSION_ADDITIVE_WITHOUT_MINOR" ? "minor" : undefined;
  const before = parseSemver(change.before);
  return level && before ? nextVersion(before, level) : undefined;
}

/** One producing contract as both states know it: its version before and after, its changes. */
interface ContractVersions {
  id: string;
  before: Semver;
  after: Semver;
  beforeText: string;
  afterText: string;
  changes: Change[];
}

/**
 * The contracts declared in both states (by id, from the assets' extra), with the asset rules'
 * findings about their assets. A contract that was a draft is skipped: nothing was published yet.
 * Output sorted by contract id.
 */
function contractsWithChanges(c: DiffContext, earlier: readonly Change[]): ContractVersions[] {
  const { before, after } = contractVersions(c);
  const byContract = new Map<string, Change[]>();
  const asset = (rule: string): boolean => CHANGE_RULES.find((r) => r.id === rule)?.about === "asset";
  for (const change of earlier) {
    if (!asset(change.rule)) continue;
    const record = c.after.get(change.asset) ?? c.before.get(change.asset);
    const id = record ? contractOf(record) : null;
    if (id) byContract.set(id, [...(byContract.get(id) ?? []), change]);
  }
  const out: ContractVersions[] = [];
  // Only a contract with changes or whose version changed can give a version rule's finding (each
  // rule needs breaking or additive changes, or another version); the others are left out here.
  const concerned = [...after.keys()].filter((id) => byContract.has(id) || (before.has(id) && before.get(id)!.version !== after.get(id)!.version));
  // Sort for determinism.
  for (const id of concerned.sort(compareStrings)) {
    const b = before.get(id);
    const a = after.get(id)!;
    if (!b || b.status === "draft") continue;
    const bv = parseSemver(b.version);
    const av = parseSemver(a.version);
    if (!bv || !av) continue;
    out.push({ id, before: bv, after: av, beforeText: String(b.version), afterText: String(a.version), changes: byContract.get(id) ?? [] });
  }
  return out;
}

/** Each producing contract's version and status in each state (from its first asset there, as each state's assets come). */
const contractVersions = perDiff((c) => {
  const versions = (assets: Iterable<ManifestAsset>): Map<string, { version: unknown; status: string }> => {
    const out = new Map<string, { version: unknown; status: string }>();
    for (const a of assets) {
      const id = contractOf(a);
      if (id && !a.external && !out.has(id)) out.set(id, { version: a.extra.contract_version, status: a.status });
    }
    return out;
  };
  return { before: versions(c.before.values()), after: versions(c.after.values()) };
});

/** The first asset the given changes concern (the report groups the version rule under it). */
function firstAsset(v: ContractVersions, c: DiffContext, changes: readonly Change[]): string {
  const names = changes.map((x) => x.asset);
  if (!names.length) for (const a of c.after.values()) if (contractOf(a) === v.id) names.push(a.name);
  return names.sort(compareStrings)[0]!;
}

/** Up to three changes in words, then how many more. */
function listChanges(changes: readonly Change[]): string {
  const shown = changes.slice(0, 3).map((x) => `${x.rule}: ${x.message}`);
  return changes.length > 3 ? `${shown.join("; ")}; and ${changes.length - 3} more` : shown.join("; ");
}

/** A version rule's finding: grouped under the first asset concerned, `before`/`after` the versions. */
function versionFinding(v: ContractVersions, c: DiffContext, changes: readonly Change[], message: string, fix?: string): Finding {
  return { asset: firstAsset(v, c, changes), contract: v.id, field: "version", before: v.beforeText, after: v.afterText, ...(fix ? { fix } : {}), message };
}

const breakingWords = (changes: readonly Change[]): string => (changes.length === 1 ? "a breaking change" : `${changes.length} breaking changes`);
const versionChanged = (v: ContractVersions): boolean => v.beforeText !== v.afterText;
// A probable rename is a hint about a removal already counted (ASSET_REMOVED), not a second change.
const breakingOf = (v: ContractVersions): Change[] => v.changes.filter((x) => x.category === "breaking" && x.rule !== "ASSET_PROBABLY_RENAMED");
const additiveOf = (v: ContractVersions): Change[] => v.changes.filter((x) => CHANGE_RULES.find((r) => r.id === x.rule)?.additive === true && x.category !== "breaking");

/** The declared external assets of the current state, by name: the assets EXTERNAL_ASSET_UNREAD asks the readers of. */
const declaredExternals = perDiff((c): ReadonlySet<string> => new Set([...c.after.values()].filter((a) => isDeclaredExternal(c.current, a)).map((a) => a.name)));

/** Per state, the readers of each declared external asset (of {@link declaredExternals}), one pass over that state's edges and DAGs. */
const readerIndex = (state: "previous" | "current"): ((c: DiffContext) => ReadonlyMap<string, ReadonlySet<string>>) =>
  perDiff((c) => {
    const names = declaredExternals(c);
    const out = new Map<string, Set<string>>();
    const add = (asset: string, reader: string): void => {
      if (!names.has(asset)) return;
      const readers = out.get(asset);
      if (readers) readers.add(reader);
      else out.set(asset, new Set([reader]));
    };
    for (const e of c[state].edges) add(e.from, e.via);
    for (const d of (state === "current" ? c.dagsAfter : c.dagsBefore).values()) for (const inlet of d.inlets) add(inlet, d.dag_id);
    return out;
  });
const readersBefore = readerIndex("previous");
const readersAfter = readerIndex("current");

/**
 * The contracts that read a declared external asset (one of {@link declaredExternals}) in one
 * state: the `via` of its edges (every contract that is not retired, drafts included) and the DAGs
 * that list it as an inlet (also those kept for a file that failed validation). Sorted.
 */
function readersIn(c: DiffContext, state: "previous" | "current", asset: string): string[] {
  // Sort for determinism.
  return [...((state === "current" ? readersAfter : readersBefore)(c).get(asset) ?? [])].sort(compareStrings);
}

// Indexes over one state, built at the first question.
const declaringContracts = new WeakMap<object, Set<string>>();
function indexOf<K extends object, V>(cache: WeakMap<object, V>, key: K, build: (key: K) => V): V {
  let value = cache.get(key);
  if (value === undefined) cache.set(key, (value = build(key)));
  return value;
}

/** Whether an asset is declared by a `kind: ExternalAssets` document (not an ingestion source). */
function isDeclaredExternal(manifest: Manifest, asset: ManifestAsset): boolean {
  return asset.external && !indexOf(declaringContracts, manifest, (m) => new Set(m.assets.filter((a) => !a.external).map((a) => a.contract))).has(asset.contract);
}

/**
 * One field that differs between two records: its path (object keys, and for a list matched by key
 * the element's key; a path that ends at such a list says its order changed) and both values
 * (`null` where absent).
 */
interface FieldDifference {
  path: string[];
  before: unknown;
  after: unknown;
}

// Lists whose elements are matched by a key, not by position, by the list's path: an element added
// or removed is one difference, a reorder of the elements in both is one more (at the list's path).
const KEYED_LISTS: Readonly<Record<string, string>> = {
  "schema.properties": "name",
  "runtime.datasets": "asset",
  "runtime.upstreams": "asset",
  "runtime.producer.models": "name",
};

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);
const ownValue = (o: Record<string, unknown>, k: string): unknown => (Object.hasOwn(o, k) ? o[k] : undefined);

/** A list's elements by the string value of `key`, when every element has a distinct one; else undefined. */
function keyedList(list: readonly unknown[], key: string): Map<string, unknown> | undefined {
  const out = new Map<string, unknown>();
  for (const x of list) {
    const k = isRecord(x) ? x[key] : undefined;
    if (typeof k !== "string" || out.has(k)) return undefined;
    out.set(k, x);
  }
  return out;
}

/**
 * Every field that differs between two JSON values, as leaves: objects are walked key by key (own
 * keys, sorted), lists of {@link KEYED_LISTS} element by element, anything else (a scalar, another
 * list, a value present on one side only) is one difference. Equal values give none (canonical JSON,
 * so the order of an object's keys never counts).
 */
function fieldDifferences(before: unknown, after: unknown, path: string[] = [], out: FieldDifference[] = []): FieldDifference[] {
  if (same(before, after)) return out;
  if (isRecord(before) && isRecord(after)) {
    // Sort for determinism.
    for (const k of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort(compareStrings)) fieldDifferences(ownValue(before, k), ownValue(after, k), [...path, k], out);
    return out;
  }
  const key = KEYED_LISTS[path.join(".")];
  const b = key && Array.isArray(before) ? keyedList(before, key) : undefined;
  const a = key && Array.isArray(after) ? keyedList(after, key) : undefined;
  if (b && a) {
    for (const k of [...new Set([...b.keys(), ...a.keys()])].sort(compareStrings)) fieldDifferences(b.get(k), a.get(k), [...path, k], out);
    const order = (x: Map<string, unknown>, y: Map<string, unknown>): string[] => [...x.keys()].filter((k) => y.has(k));
    if (!same(order(b, a), order(a, b))) out.push({ path, before: order(b, a), after: order(a, b) });
    return out;
  }
  out.push({ path, before: before ?? null, after: after ?? null });
  return out;
}

/** A difference's path as the report's `field`: its parts joined by dots (`default_args.retries`). */
const fieldName = (d: FieldDifference): string => d.path.join(".");

/** A difference in words: set, no longer set or changed, with the values when they are short scalars. */
function differenceWords(d: FieldDifference): string {
  const short = (x: unknown): boolean => x === null || ((typeof x !== "object") && q(x).length <= 80);
  const names = (x: unknown): x is string[] => Array.isArray(x) && x.every((k) => typeof k === "string");
  // A keyed list's own path is its order (its elements are differences of their own).
  if (KEYED_LISTS[fieldName(d)] !== undefined && names(d.before) && names(d.after)) return `changed order (${d.before.map((x) => q(x)).join(", ")} before)`;
  if (d.before === null && short(d.after)) return `is set to ${q(d.after)}`;
  if (d.after === null && short(d.before)) return `is no longer set (was ${q(d.before)})`;
  if (short(d.before) && short(d.after)) return `changed from ${q(d.before)} to ${q(d.after)}`;
  return d.before === null ? "is set" : d.after === null ? "is no longer set" : "changed";
}

/**
 * What of a DAG record no other rule compares, for {@link DAG_FIELD_RULES}: the record without the
 * fields that mirror the asset record or have a rule of their own. Left out, each with its rule:
 * `dag_id` (the asset's `producer`, ASSET_FIELD_CHANGED), `contract` (the asset's, same rule),
 * `contract_sha256` and `contract_git_blob` (CONTRACT_TEXT_CHANGED), `contract_version` (the
 * VERSION_* rules), `status` (ASSET_RETIRED, ASSET_STATUS_CHANGED), `owner` and
 * `default_args.owner` (the asset's `extra.owner`, OWNER_CHANGED), `schedule` (SCHEDULE_CHANGED),
 * `inlets`, `outlets` and `tasks` (made of the upstreams' names, UPSTREAMS_CHANGED, the source's
 * name, kept here, and the datasets' Assets in their order, kept here: `planDags`),
 * `runtime.domain` (the asset's `group`, ASSET_GROUP_CHANGED), each dataset's `name` and `layer`
 * (the asset's name and `extra.layer`, EXTRA_CHANGED) and `runtime.freshness`'s `max_age` and
 * `degrade_after` (the asset's `extra.freshness`, FRESHNESS_CHANGED).
 */
function dagView(dag: DagPlan): Record<string, unknown> {
  const { dag_id: _id, contract: _c, contract_sha256: _s, contract_git_blob: _g, contract_version: _v, status: _st, owner: _o, schedule: _sc, inlets: _i, outlets: _out, tasks: _t, default_args, runtime, ...rest } = dag;
  const { owner: _do, ...args } = default_args;
  const { domain: _d, datasets, freshness, ...run } = runtime as DagPlan["runtime"] & Record<string, unknown>;
  const { max_age: _m, degrade_after: _da, ...ownFreshness } = freshness ?? { max_age: "" };
  return {
    ...rest,
    default_args: args,
    runtime: {
      ...run,
      datasets: datasets.map(({ name: _n, layer: _l, ...d }) => d),
      ...(Object.keys(ownFreshness).length ? { freshness: ownFreshness } : {}),
    },
  };
}

// A DAG's fields that no run reads: Airflow shows the description (as doc_md too) and the tags, the
// processing purpose goes into a lineage facet, the source's description is documentation.
const DAG_METADATA_FIELDS: readonly string[] = ["description", "tags", "runtime.processing", "runtime.source.description"];
const isDagMetadata = (d: FieldDifference): boolean => DAG_METADATA_FIELDS.some((f) => fieldName(d) === f || fieldName(d).startsWith(`${f}.`));

/**
 * The differences of each asset's producing DAG (by the records' `producer`, both present) in
 * {@link dagView}, as (pair, difference): a dataset's own entry (`runtime.datasets.<asset>...`) only
 * for that dataset's asset; an upstream or dataset added or removed is UPSTREAMS_CHANGED's or the
 * asset rules', not listed.
 */
const dagDifferences = perDiff((c): ReadonlyArray<{ asset: ManifestAsset; dag: string; difference: FieldDifference }> =>
  producerChangedPairs(c).flatMap(([b, a]) => {
    const before = b.producer ? c.dagsBefore.get(b.producer) : undefined;
    const after = a.producer ? c.dagsAfter.get(a.producer) : undefined;
    if (!before || !after || before === after) return [];
    return fieldDifferences(dagView(before), dagView(after))
      .filter((d) => {
        const [top, list, key] = d.path;
        if (top !== "runtime" || (list !== "datasets" && list !== "upstreams") || key === undefined) return true;
        // An element's presence has its own rules; a dataset's fields are its own asset's.
        return d.path.length > 3 && (list === "upstreams" || key === a.name);
      })
      .map((difference) => ({ asset: a, dag: a.producer!, difference }));
  }),
);

/**
 * What of an asset record no other rule compares, as differences: whether it is `external`, its
 * `producer` (when its status, which decides it, stayed), its declaring file (`contract`),
 * `renamed_from`, `sample_data`, a schema present on one side only, each property's `primaryKey`
 * and `unique` (they make the audit's implicit rules) and the order of the properties (the table's
 * column order), the order of its quality rules, the contract's version of a former draft (the
 * VERSION_* rules skip drafts) and, for an asset no DAG produces in either state (a draft's), the
 * upstreams its edges name. Everything else has a rule (see {@link dagView} for the DAG's side).
 */
function assetDifferencesOf(c: DiffContext, b: ManifestAsset, a: ManifestAsset): FieldDifference[] {
  const view = (x: ManifestAsset, other: ManifestAsset): Record<string, unknown> => ({
    external: x.external,
    ...(x.status === other.status ? { producer: x.producer } : {}),
    contract: x.contract,
    description: x.description ?? null,
    renamed_from: x.renamed_from,
    sample_data: x.sample_data ?? null,
    schema: x.schema && (b.schema === null) === (a.schema === null) ? { properties: x.schema.properties.map((p) => ({ name: p.name, primaryKey: p.primaryKey ?? false, unique: p.unique ?? false })) } : x.schema,
    quality: x.quality.map((r) => r.name).filter((n) => (x === b ? a : b).quality.some((r) => r.name === n)),
    ...(b.status === "draft" ? { extra: { contract_version: x.extra.contract_version ?? null } } : {}),
    ...(!b.producer && !a.producer ? { upstreams: edgeSources(c, x === b ? "previous" : "current", x.name) } : {}),
  });
  return fieldDifferences(view(b, a), view(a, b)).filter((d) => !(d.path[0] === "schema" && d.path[1] === "properties" && d.path.length === 3));
}

/** {@link assetDifferencesOf} of each of {@link changedPairs}, with the pair's current record; once per diff (two rules read it). */
const assetDifferences = perDiff((c): ReadonlyArray<{ asset: ManifestAsset; difference: FieldDifference }> =>
  changedPairs(c).flatMap(([b, a]) => assetDifferencesOf(c, b, a).map((difference) => ({ asset: a, difference }))),
);

// Of {@link assetDifferencesOf}, the fields no run reads: the declaring file (the module's header),
// the dataset's description, renamed_from (read by the diff), the order of the quality rules (the audit's order of checks),
// and a draft's version and upstreams (a draft has no DAG).
const ASSET_METADATA_FIELDS: readonly string[] = ["contract", "description", "renamed_from", "quality", "extra", "upstreams"];

/** Per state, the assets each asset's edges come from (`edges[].from` by `to`), sorted. */
const edgeIndex = (state: "previous" | "current"): ((c: DiffContext) => ReadonlyMap<string, string[]>) =>
  perDiff((c) => {
    const out = new Map<string, string[]>();
    for (const e of c[state].edges) out.set(e.to, [...(out.get(e.to) ?? []), e.from]);
    // Sort for determinism.
    for (const list of out.values()) list.sort(compareStrings);
    return out;
  });
const edgesBefore = edgeIndex("previous");
const edgesAfter = edgeIndex("current");
const edgeSources = (c: DiffContext, state: "previous" | "current", asset: string): string[] => [...new Set((state === "current" ? edgesAfter : edgesBefore)(c).get(asset) ?? [])];

/**
 * Each contract file whose records (its assets' and its DAGs', by `contract`, with the edges into
 * its assets) differ in nothing but their text's hashes (`contract_sha256`, `contract_git_blob`): a
 * comment, the layout, or a field the manifest does not carry. With the first of its assets by name, and both hashes. A file whose
 * records changed otherwise is left to the rules that name what changed.
 */
function textOnlyChanges(c: DiffContext): Array<{ asset: string; before: string | null; after: string | null }> {
  const files = new Set<string>();
  for (const [b, a] of producerChangedPairs(c)) if (b.contract === a.contract && b.contract_sha256 !== a.contract_sha256) files.add(a.contract);
  if (files.size === 0) return [];
  const { before, after } = recordsByFile(c);
  const withoutHashes = (records: FileRecords | undefined, edges: ReadonlyMap<string, string[]>): unknown => ({
    assets: (records?.assets ?? []).map(({ contract_sha256: _s, ...x }) => ({ ...x, edges: edges.get(x.name) ?? [] })),
    dags: (records?.dags ?? []).map(({ contract_sha256: _s, contract_git_blob: _g, ...d }) => d),
  });
  const out: Array<{ asset: string; before: string | null; after: string | null }> = [];
  // Sort for determinism.
  for (const file of [...files].sort(compareStrings)) {
    if (!same(withoutHashes(before.get(file), edgesBefore(c)), withoutHashes(after.get(file), edgesAfter(c)))) continue;
    const first = after.get(file)!.assets[0]!.name;
    out.push({ asset: first, before: c.before.get(first)!.contract_sha256, after: c.after.get(first)!.contract_sha256 });
  }
  return out;
}

/** A contract file's records in one state: its assets by name, its DAGs by dag_id. */
interface FileRecords {
  assets: ManifestAsset[];
  dags: DagPlan[];
}

/** Per state, each declaring file's records (by `contract`), each list sorted. */
const recordsByFile = perDiff((c) => {
  const index = (assets: ReadonlyMap<string, ManifestAsset>, dags: ReadonlyMap<string, DagPlan>): Map<string, FileRecords> => {
    const out = new Map<string, FileRecords>();
    const of = (file: string): FileRecords => {
      let r = out.get(file);
      if (!r) out.set(file, (r = { assets: [], dags: [] }));
      return r;
    };
    for (const a of assets.values()) of(a.contract).assets.push(a);
    for (const d of dags.values()) of(d.contract).dags.push(d);
    // Sort for determinism: both states' records are compared in name order.
    for (const r of out.values()) {
      r.assets.sort((x, y) => compareStrings(x.name, y.name));
      r.dags.sort((x, y) => compareStrings(x.dag_id, y.dag_id));
    }
    return out;
  };
  return { before: index(c.before, c.dagsBefore), after: index(c.after, c.dagsAfter) };
});

/**
 * The project's settings that reach the manifest outside its assets and DAGs, as differences with
 * the assets each concerns: the lineage namespace (every asset's lineage identity: each asset in
 * both states), the freshness monitor's `dag_id`, schedule, notifier and warehouse connection (each
 * asset it watches in the current state, when both states have a monitor: one appears or goes with
 * the freshness policies, which FRESHNESS_CHANGED reports) and each watched asset's `published_by`
 * (an external asset's, not in its record; reported when its freshness and status stayed). A
 * watched asset's `partition_grain` is its record's `partitioning.grain`, which PARTITIONING_CHANGED
 * reports.
 */
function projectDifferences(c: DiffContext): Array<{ asset: string; difference: FieldDifference }> {
  const out: Array<{ asset: string; difference: FieldDifference }> = [];
  if (!same(c.previous.lineage, c.current.lineage)) {
    for (const d of fieldDifferences(c.previous.lineage, c.current.lineage, ["lineage"])) for (const [, a] of kept(c)) out.push({ asset: a.name, difference: d });
  }
  const before = c.previous.freshness_monitor;
  const after = c.current.freshness_monitor;
  if (before && after) {
    const settings = (m: NonNullable<Manifest["freshness_monitor"]>): unknown => ({ dag_id: m.dag_id, schedule: m.schedule, notifier: m.notifier, warehouse_conn_id: m.warehouse_conn_id, ...(m.pool !== undefined ? { pool: m.pool } : {}) });
    for (const d of fieldDifferences(settings(before), settings(after), ["freshness_monitor"])) for (const w of after.assets) if (c.before.has(w.name)) out.push({ asset: w.name, difference: d });
  }
  const publisher = (m: Manifest["freshness_monitor"], name: string): string | null => m?.assets.find((w) => w.name === name)?.published_by ?? null;
  const watched = [...new Set([...(before?.assets ?? []), ...(after?.assets ?? [])].map((w) => w.name))].sort(compareStrings);
  for (const name of watched) {
    const b = c.before.get(name);
    const a = c.after.get(name);
    if (!b || !a || b.status !== a.status || !same(b.extra.freshness, a.extra.freshness)) continue;
    const p = publisher(before, name);
    const n = publisher(after, name);
    if (p !== n) out.push({ asset: name, difference: { path: ["freshness_monitor", "assets", name, "published_by"], before: p, after: n } });
  }
  return out;
}

/*
 * Which pairs each rule visits (ADR 0017k). A pair of one object (the previous state's record taken
 * over from the current manifest, its text unchanged) cannot differ from itself:
 * - `changedPairs`: every rule that compares an asset's record before with its record after and
 *   nothing else that may change: the consumer pin rules (schema versions, removed or narrowed
 *   properties: nothing is removed or narrowed in one object), ASSET_RETIRED, ASSET_URI_CHANGED,
 *   ASSET_GROUP_CHANGED, the PROPERTY_*, QUALITY_RULE_* rules, FRESHNESS_CHANGED, OWNER_CHANGED and
 *   EXTRA_CHANGED. CONSUMER_RULE_NAMES_REMOVED_PROPERTY reads the consumers' queries only for a
 *   property removed from the record, so only for a changed pair too.
 *   ASSET_STATUS_CHANGED, ASSET_FIELD_CHANGED and ASSET_METADATA_CHANGED compare the record too (the
 *   latter two a draft's edges, which change only with its file, and so with its record).
 * - `producerChangedPairs`: SCHEDULE_CHANGED, UPSTREAMS_CHANGED, DAG_METADATA_CHANGED and
 *   DAG_SETTING_CHANGED read the producer's DAG in each state, which may change while the asset's
 *   record does not (an edit of the config's defaults); they skip a pair only when both the records
 *   and the DAGs are one object each. CONTRACT_TEXT_CHANGED starts from these pairs too.
 * - PROJECT_SETTING_CHANGED compares the manifests' `lineage` and `freshness_monitor`, which are
 *   no asset's record, and visits the assets they concern.
 * - everything, as before: CONSUMER_UPSTREAM_RETIRED (`inOneState`: reads the current state
 *   alone); the rules about names in one state and not the other (removed, renamed, probably
 *   renamed, added: a name, not a record); EXTERNAL_ASSET_UNREAD (an external asset's record may be
 *   one object while its readers, other contracts' edges and DAGs, changed); and the VERSION_*
 *   rules, which read the asset rules' findings and each contract's version in each state (they
 *   leave out, in `contractsWithChanges`, only the contracts with no finding and the same version,
 *   about which none of them can say anything).
 */
/**
 * Every change rule. Add a rule here, with a golden case and a row in ARCHITECTURE.md's table.
 * Together they compare every field of the manifest's `assets[]` and `dags[]` records, its
 * `lineage` and its `freshness_monitor` (ADR 0025): a field without a rule of its own is named by
 * ASSET_FIELD_CHANGED or ASSET_METADATA_CHANGED (an asset record's) or DAG_SETTING_CHANGED or
 * DAG_METADATA_CHANGED (a DAG record's; {@link dagView} lists what those leave to other rules), and
 * a contract file whose text changed with nothing else by CONTRACT_TEXT_CHANGED; only `compiler`
 * and `manifestVersion`, which no project edit changes, are not compared. The asset rules run
 * first, in this order; the contract rules last, reading what they found.
 */
export const CHANGE_RULES: readonly ChangeRule[] = [
  {
    id: "CONSUMER_UPSTREAM_REMOVED",
    purpose: "A consumer still reads an asset that no contract declares any more, so it would wait forever.",
    severity: "breaking",
    category: "breaking",
    about: "consumer",
    detect: (c) =>
      removedNames(c)
        .filter((name) => !c.renamedTo.has(name))
        .flatMap((name) => {
          const consumers = consumersOf(c, name).map((x) => x.dag.dag_id);
          return consumers.length ? [{ asset: name, consumers, message: `${q(name)} is removed but ${consumers.map((x) => q(x)).join(", ")} still read${consumers.length === 1 ? "s" : ""} it` }] : [];
        }),
  },
  {
    id: "CONSUMER_NOT_FOLLOWING_RENAME",
    purpose: "A consumer still reads the old name of an asset renamed through renamed_from.",
    severity: "breaking",
    category: "breaking",
    about: "consumer",
    detect: (c) =>
      removedNames(c)
        .filter((name) => c.renamedTo.has(name))
        .flatMap((name) => {
          const consumers = consumersOf(c, name).map((x) => x.dag.dag_id);
          const to = c.renamedTo.get(name)!;
          return consumers.length ? [{ asset: name, consumers, after: to, message: `${q(name)} is renamed to ${q(to)} but ${consumers.map((x) => q(x)).join(", ")} still read${consumers.length === 1 ? "s" : ""} the old name` }] : [];
        }),
  },
  {
    id: "CONSUMER_UPSTREAM_RETIRED",
    purpose: "A consumer reads an asset whose contract became retired, so no new events will come.",
    severity: "breaking",
    category: "breaking",
    about: "consumer",
    inOneState: true,
    detect: (c) =>
      kept(c)
        .filter(([, a]) => a.status === "retired")
        .flatMap(([, a]) => {
          const consumers = consumersOf(c, a.name).map((x) => x.dag.dag_id);
          return consumers.length ? [{ asset: a.name, consumers, message: `${q(a.name)} is retired but ${consumers.map((x) => q(x)).join(", ")} still read${consumers.length === 1 ? "s" : ""} it` }] : [];
        }),
  },
  {
    id: "CONSUMER_PIN_MISMATCH",
    purpose: "A consumer pinned the schema version of an upstream whose schema version changed.",
    severity: "breaking",
    category: "breaking",
    about: "consumer",
    detect: (c) =>
      changedPairs(c)
        .filter(([b, a]) => b.schema && a.schema && b.schema.version !== a.schema.version)
        .flatMap(([b, a]) => {
          const consumers = consumersOf(c, a.name)
            .filter((x) => x.upstream.schema_version !== undefined && x.upstream.schema_version !== a.schema!.version)
            .map((x) => x.dag.dag_id);
          return consumers.length
            ? [{ asset: a.name, consumers, field: "schema.version", before: b.schema!.version, after: a.schema!.version, message: `the schema of ${q(a.name)} moved from version ${b.schema!.version} to ${a.schema!.version} but ${consumers.map((x) => q(x)).join(", ")} pin${consumers.length === 1 ? "s" : ""} another version` }]
            : [];
        }),
  },
  {
    id: "CONSUMER_RULE_NAMES_REMOVED_PROPERTY",
    purpose: "A consumer's SQL quality rule reads a property of its upstream's table that the upstream no longer has.",
    severity: "breaking",
    category: "breaking",
    about: "consumer",
    // A rule's `column` and a query's `{dataset}` are the consumer's own dataset, whatever the
    // names: only a query that reads the upstream's table (its Asset name, as SQL producers and
    // rules name published tables) and names the property reads the upstream's property.
    detect: (c) =>
      changedPairs(c).flatMap(([b, a]) => {
        const gone = [...propertiesOf(b).keys()].filter((p) => !propertiesOf(a).has(p));
        const table = new RegExp(`(^|[^A-Za-z0-9_."])"?${escapeRegExp(a.name).replace("\\.", '"?\\."?')}"?($|[^A-Za-z0-9_])`, "i");
        return gone.flatMap((property) => {
          const word = new RegExp(`(^|[^A-Za-z0-9_])${escapeRegExp(property)}($|[^A-Za-z0-9_])`, "i");
          const consumers = consumersOf(c, a.name)
            .filter(({ dag }) => ruleQueriesOf(dag, c.after).some((query) => table.test(query) && word.test(query)))
            .map((x) => x.dag.dag_id);
          return consumers.length
            ? [{ asset: a.name, consumers, field: `schema.properties.${property}`, message: `the property ${q(property)} of ${q(a.name)} is removed but a quality rule of ${consumers.map((x) => q(x)).join(", ")} reads it from ${q(a.name)}` }]
            : [];
        });
      }),
  },
  {
    id: "CONSUMER_PINNED_SCHEMA_CHANGED",
    purpose: "A consumer pins a schema version whose properties were removed or narrowed without a new schema version.",
    severity: "breaking",
    category: "breaking",
    about: "consumer",
    // The pin is the consumer's promise to read exactly that schema: a breaking change under the
    // same version breaks it silently (a new version would be CONSUMER_PIN_MISMATCH).
    detect: (c) =>
      changedPairs(c)
        .filter(([b, a]) => b.schema && a.schema && b.schema.version === a.schema.version)
        .flatMap(([b, a]) => {
          const breaks = breakingPropertyChanges(b, a);
          if (!breaks.length) return [];
          const consumers = consumersOf(c, a.name)
            .filter((x) => x.upstream.schema_version === a.schema!.version)
            .map((x) => x.dag.dag_id);
          return consumers.length
            ? [{ asset: a.name, consumers, field: "schema.version", before: b.schema!.version, after: a.schema!.version, message: `the schema of ${q(a.name)} changed under version ${a.schema!.version} (${breaks.join(", ")}) but ${consumers.map((x) => q(x)).join(", ")} pin${consumers.length === 1 ? "s" : ""} that version` }]
            : [];
        }),
  },
  {
    id: "ASSET_REMOVED",
    purpose: "An asset is no longer declared; Airflow keeps it until cleaned up (stale).",
    severity: "dangerous",
    category: "breaking",
    about: "asset",
    detect: (c) =>
      removedNames(c)
        .filter((n) => !c.renamedTo.has(n))
        .map((name) => ({ asset: name, before: c.before.get(name)!.uri, message: `${q(name)} is removed (stale in Airflow until its DAG is gone; check with "contract-assets stale")` })),
  },
  {
    id: "ASSET_PROBABLY_RENAMED",
    purpose: "A removed and an added asset look like one renamed without renamed_from: same contract and matching schema, or the same URI.",
    severity: "dangerous",
    category: "breaking",
    about: "asset",
    detect: (c) => probableRenames(c).map((r) => {
      const to = c.after.get(r.to)!;
      const contract = contractOf(to);
      const evidence = describeRenameEvidence(r, contract);
      return {
        asset: r.from,
        after: r.to,
        evidence: { same_contract: r.sameContract, schema_similarity: r.similarity, matching_properties: r.matching, total_properties: r.total, uri: r.uri },
        fix: `renamed_from: [${r.from}]`,
        message: `${q(r.from)} looks renamed to ${q(r.to)} (${evidence}); if so, add "renamed_from: [${r.from}]" to the dataset ${q(datasetName(r.to))} in ${to.contract}`,
      };
    }),
  },
  {
    id: "ASSET_RENAMED",
    purpose: "An asset is renamed through renamed_from.",
    severity: "safe",
    category: "breaking",
    about: "asset",
    detect: (c) =>
      removedNames(c)
        .filter((n) => c.renamedTo.has(n))
        .map((name) => ({ asset: name, after: c.renamedTo.get(name)!, message: `${q(name)} is renamed to ${q(c.renamedTo.get(name)!)}` })),
  },
  {
    id: "ASSET_RETIRED",
    purpose: "An asset's contract became retired: no more events, and its DAG is removed; breaking (the next major version) unless it was a draft (ADR 0024).",
    severity: "dangerous",
    category: "breaking",
    about: "asset",
    detect: (c) =>
      changedPairs(c)
        .filter(([b, a]) => a.status === "retired" && b.status !== "retired")
        .map(([b, a]) => {
          // ADR 0024: an asset that had a DAG (active or deprecated) takes its events away from every
          // reader, in this corpus or not, as a removal does; a draft never had one.
          const ran = b.status !== "draft";
          const category: ChangeCategory = ran ? "breaking" : "metadata-only";
          const consequence = ran ? "a breaking change: its contract needs the next major version" : "it was a draft, so no reader loses anything";
          return { asset: a.name, field: "status", before: b.status, after: a.status, category, message: `${q(a.name)} is retired (was ${q(b.status)}): ${consequence}` };
        }),
  },
  {
    id: "EXTERNAL_ASSET_UNREAD",
    purpose: "An external asset is added that no contract reads, or its last reader stopped reading it; no DAG declares it, so Airflow never has it.",
    severity: "dangerous",
    category: "metadata-only",
    about: "asset",
    detect: (c) =>
      [...c.after.values()].flatMap((a) => {
        if (!declaredExternals(c).has(a.name) || readersIn(c, "current", a.name).length > 0) return [];
        if (!c.before.has(a.name)) return [{ asset: a.name, field: "readers", after: [], message: `the external asset ${q(a.name)} is added, and no contract reads it` }];
        const before = readersIn(c, "previous", a.name);
        if (before.length === 0) return [];
        return [{ asset: a.name, field: "readers", before, after: [], message: `no contract reads the external asset ${q(a.name)} any more (${before.map((x) => q(x)).join(", ")} did)` }];
      }),
  },
  {
    id: "ASSET_ADDED",
    purpose: "A new asset is declared.",
    severity: "safe",
    category: "non-breaking",
    about: "asset",
    additive: true,
    detect: (c) => [...c.after.values()].filter((a) => !c.before.has(a.name)).map((a) => ({ asset: a.name, after: a.uri, message: `${q(a.name)} is added` })),
  },
  {
    id: "ASSET_URI_CHANGED",
    purpose: "An asset's URI changed: readers outside this corpus that match on the URI lose it.",
    severity: "dangerous",
    category: "non-breaking",
    about: "asset",
    detect: (c) =>
      changedPairs(c)
        .filter(([b, a]) => b.uri !== a.uri)
        .map(([b, a]) => ({ asset: a.name, field: "uri", before: b.uri, after: a.uri, message: `the uri of ${q(a.name)} changed from ${q(b.uri)} to ${q(a.uri)}` })),
  },
  {
    id: "ASSET_GROUP_CHANGED",
    purpose: "An asset moved to another group (domain).",
    severity: "safe",
    category: "metadata-only",
    about: "asset",
    detect: (c) =>
      changedPairs(c)
        .filter(([b, a]) => b.group !== a.group)
        .map(([b, a]) => ({ asset: a.name, field: "group", before: b.group, after: a.group, message: `the group of ${q(a.name)} changed from ${q(b.group)} to ${q(a.group)}` })),
  },
  {
    id: "SCHEDULE_CHANGED",
    purpose: "The condition under which an asset's producer runs changed.",
    severity: "dangerous",
    category: "non-breaking",
    about: "asset",
    detect: (c) =>
      producerChangedPairs(c).flatMap(([b, a]) => {
        const before = b.producer ? c.dagsBefore.get(b.producer)?.schedule : undefined;
        const after = a.producer ? c.dagsAfter.get(a.producer)?.schedule : undefined;
        return before && after && !same(before, after) ? [{ asset: a.name, field: "schedule", before, after, message: `the schedule of the DAG ${q(a.producer!)}, which produces ${q(a.name)}, changed` }] : [];
      }),
  },
  {
    id: "UPSTREAMS_CHANGED",
    purpose: "The upstreams an asset's producer reads changed.",
    severity: "safe",
    category: "non-breaking",
    about: "asset",
    detect: (c) =>
      producerChangedPairs(c).flatMap(([b, a]) => {
        const names = (d: DagPlan | undefined): string[] => upstreamsOf(d).map((u) => u.asset).sort(compareStrings);
        const before = names(b.producer ? c.dagsBefore.get(b.producer) : undefined);
        const after = names(a.producer ? c.dagsAfter.get(a.producer) : undefined);
        if (!a.producer || !b.producer || same(before, after)) return [];
        const added = after.filter((x) => !before.includes(x));
        const removed = before.filter((x) => !after.includes(x));
        const words = [...(added.length ? [`reads ${added.map((x) => q(x)).join(", ")}`] : []), ...(removed.length ? [`no longer reads ${removed.map((x) => q(x)).join(", ")}`] : [])];
        return [{ asset: a.name, field: "upstreams", before, after, message: `the DAG ${q(a.producer)}, which produces ${q(a.name)}, ${words.join(" and ")}` }];
      }),
  },
  {
    id: "PROPERTY_REMOVED",
    purpose: "A property is removed from a dataset's schema; readers of that column break.",
    severity: "dangerous",
    category: "breaking",
    about: "asset",
    detect: (c) =>
      changedPairs(c).flatMap(([b, a]) =>
        [...propertiesOf(b).keys()].filter((p) => !propertiesOf(a).has(p)).map((p) => ({ asset: a.name, field: `schema.properties.${p}`, message: `the property ${q(p)} of ${q(a.name)} is removed` })),
      ),
  },
  {
    id: "PROPERTY_ADDED",
    purpose: "A property is added to a dataset's schema.",
    severity: "safe",
    category: "non-breaking",
    about: "asset",
    additive: true,
    detect: (c) =>
      changedPairs(c).flatMap(([b, a]) =>
        [...propertiesOf(a).keys()].filter((p) => !propertiesOf(b).has(p)).map((p) => ({ asset: a.name, field: `schema.properties.${p}`, message: `the property ${q(p)} is added to ${q(a.name)}` })),
      ),
  },
  {
    id: "PROPERTY_TYPE_CHANGED",
    purpose: "A property's logical or physical type changed: breaking when narrowed or incompatible, non-breaking when widened.",
    severity: "dangerous",
    category: "breaking",
    about: "asset",
    detect: (c) =>
      changedPairs(c).flatMap(([b, a]) =>
        fieldChanges(b, a, ["logicalType", "physicalType"] as const, (x, y) => (x ?? null) !== (y ?? null)).map(({ name, key, before, after }) => {
          const widened = isWidening(key, before, after);
          return {
            asset: a.name,
            field: `schema.properties.${name}.${key}`,
            before: before ?? null,
            after: after ?? null,
            category: widened ? ("non-breaking" as const) : ("breaking" as const),
            message: `the ${key} of ${q(`${a.name}.${name}`)} changed from ${q(before ?? null)} to ${q(after ?? null)} (${widened ? "widened" : "narrowed or incompatible"})`,
          };
        }),
      ),
  },
  {
    id: "PROPERTY_REQUIRED_TIGHTENED",
    purpose: "A property became required: existing rows or producers may now fail the contract.",
    severity: "dangerous",
    category: "non-breaking",
    about: "asset",
    detect: (c) =>
      changedPairs(c).flatMap(([b, a]) => {
        const after = propertiesOf(a);
        return [...propertiesOf(b)]
          .filter(([name, p]) => after.has(name) && !p.required && after.get(name)!.required === true)
          .map(([name]) => ({ asset: a.name, field: `schema.properties.${name}.required`, before: false, after: true, message: `${q(`${a.name}.${name}`)} became required` }));
      }),
  },
  {
    id: "PROPERTY_REQUIRED_RELAXED",
    purpose: "A property is no longer required: consumers may now see nulls; breaking on a primary key.",
    severity: "dangerous",
    category: "non-breaking",
    about: "asset",
    detect: (c) =>
      changedPairs(c).flatMap(([b, a]) => {
        const after = propertiesOf(a);
        return [...propertiesOf(b)]
          .filter(([name, p]) => after.has(name) && p.required === true && !after.get(name)!.required)
          .map(([name, p]) => ({
            asset: a.name,
            field: `schema.properties.${name}.required`,
            before: true,
            after: false,
            // A null key is no key: joins and deduplication on it break.
            ...(p.primaryKey === true ? { category: "breaking" as const } : {}),
            message: `${q(`${a.name}.${name}`)} is no longer required${p.primaryKey === true ? " (it is a primary key)" : ""}`,
          }));
      }),
  },
  {
    id: "PROPERTY_METADATA_CHANGED",
    purpose: "A property's description, tags or classification changed; its data did not.",
    severity: "safe",
    category: "metadata-only",
    about: "asset",
    detect: (c) =>
      changedPairs(c).flatMap(([b, a]) =>
        fieldChanges(b, a, ["classification", "description", "tags"] as const, (x, y) => !same(x, y)).map(({ name, key, before, after }) => ({
          asset: a.name,
          field: `schema.properties.${name}.${key}`,
          before: before ?? null,
          after: after ?? null,
          message: `the ${key} of ${q(`${a.name}.${name}`)} changed`,
        })),
      ),
  },
  {
    id: "QUALITY_RULE_REMOVED",
    purpose: "A quality rule is removed: the gate lets through what it used to stop.",
    severity: "dangerous",
    category: "non-breaking",
    about: "asset",
    detect: (c) =>
      changedPairs(c).flatMap(([b, a]) => {
        const after = qualityByName(a);
        return [...qualityByName(b).keys()].filter((n) => !after.has(n)).map((n) => ({ asset: a.name, field: `quality.${n}`, message: `the quality rule ${q(n)} of ${q(a.name)} is removed` }));
      }),
  },
  {
    id: "QUALITY_RULE_CHANGED",
    purpose: "A quality rule's metric, threshold or severity changed.",
    severity: "dangerous",
    category: "non-breaking",
    about: "asset",
    detect: (c) =>
      changedPairs(c).flatMap(([b, a]) => {
        const after = qualityByName(a);
        return [...qualityByName(b)]
          .filter(([n, r]) => after.has(n) && !same(r, after.get(n)))
          .map(([n, r]) => ({ asset: a.name, field: `quality.${n}`, before: r, after: after.get(n), message: `the quality rule ${q(n)} of ${q(a.name)} changed` }));
      }),
  },
  {
    id: "QUALITY_RULE_ADDED",
    purpose: "A quality rule is added.",
    severity: "safe",
    category: "non-breaking",
    about: "asset",
    detect: (c) =>
      changedPairs(c).flatMap(([b, a]) => {
        const before = qualityByName(b);
        return [...qualityByName(a).keys()].filter((n) => !before.has(n)).map((n) => ({ asset: a.name, field: `quality.${n}`, message: `the quality rule ${q(n)} is added to ${q(a.name)}` }));
      }),
  },
  {
    id: "FRESHNESS_CHANGED",
    purpose: "How old an asset may get before it is degraded or stale changed.",
    severity: "safe",
    category: "metadata-only",
    about: "asset",
    detect: (c) =>
      changedPairs(c)
        .filter(([b, a]) => !same(b.extra.freshness, a.extra.freshness))
        .map(([b, a]) => ({ asset: a.name, field: "freshness", before: b.extra.freshness ?? null, after: a.extra.freshness ?? null, message: `the freshness of ${q(a.name)} changed` })),
  },
  {
    id: "OWNER_CHANGED",
    purpose: "An asset's owning team changed.",
    severity: "safe",
    category: "metadata-only",
    about: "asset",
    detect: (c) =>
      changedPairs(c)
        .filter(([b, a]) => b.extra.owner !== a.extra.owner)
        .map(([b, a]) => ({ asset: a.name, field: "owner", before: b.extra.owner ?? null, after: a.extra.owner ?? null, message: `the owner of ${q(a.name)} changed from ${q(b.extra.owner ?? null)} to ${q(a.extra.owner ?? null)}` })),
  },
  {
    id: "EXTRA_CHANGED",
    purpose: "An asset's extra changed beyond owner, freshness and contract version (schema version, layer, own keys).",
    severity: "safe",
    category: "metadata-only",
    about: "asset",
    detect: (c) =>
      changedPairs(c).flatMap(([b, a]) => {
        // The contract's version has its own rules (VERSION_*), once per contract.
        const before = extraWithout(b.extra, ["owner", "freshness", "contract_version"]);
        const after = extraWithout(a.extra, ["owner", "freshness", "contract_version"]);
        if (same(before, after)) return [];
        // Own keys only: a key one side lacks is absent there, never Object.prototype's member of
        // that name (`toString`, `constructor`, ... are ordinary extra keys).
        const own = (o: Record<string, unknown>, k: string): unknown => (Object.hasOwn(o, k) ? o[k] : undefined);
        const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((k) => !same(own(before, k), own(after, k))).sort(compareStrings);
        return [{ asset: a.name, field: "extra", before, after, message: `the extra of ${q(a.name)} changed (${keys.map((k) => q(k)).join(", ")})` }];
      }),
  },
  {
    id: "ASSET_STATUS_CHANGED",
    purpose: "An asset's contract changed status other than to retired: a draft published (its DAG appears), deprecated, or taken back to draft (its DAG is removed).",
    severity: "dangerous",
    category: "non-breaking",
    about: "asset",
    detect: (c) =>
      changedPairs(c)
        .filter(([b, a]) => b.status !== a.status && a.status !== "retired")
        .map(([b, a]) => {
          const runs = (s: string): boolean => s === "active" || s === "deprecated";
          // A DAG kept is a notice; a DAG removed takes away what consumers read, as retiring does (ASSET_RETIRED).
          const category: ChangeCategory = runs(b.status) && runs(a.status) ? "metadata-only" : runs(b.status) ? "breaking" : runs(a.status) ? "non-breaking" : "metadata-only";
          return { asset: a.name, field: "status", before: b.status, after: a.status, category, message: `the status of ${q(a.name)} changed from ${q(b.status)} to ${q(a.status)}` };
        }),
  },
  {
    id: "PARTITIONING_CHANGED",
    purpose: "An asset's partitioning was added, removed, or its column or grain changed: the published partitions no longer mean what consumers read, and their keys change (ADR 0028).",
    severity: "breaking",
    category: "breaking",
    about: "asset",
    detect: (c) =>
      changedPairs(c)
        .filter(([b, a]) => !b.external && !a.external && b.schema !== null && a.schema !== null)
        .flatMap(([b, a]) => {
          const was = b.partitioning;
          const is = a.partitioning;
          const words = (p: typeof was): string => (p ? `partitioned by ${p.grain} of ${q(p.column)}` : "unpartitioned");
          if (!was && !is) return [];
          if (was && is && was.column === is.column && was.grain === is.grain) return [];
          const field = !was || !is ? "partitioning" : was.column !== is.column ? "partitioning.column" : "partitioning.grain";
          return [{ asset: a.name, field, before: was ? `${was.grain} ${was.column}` : null, after: is ? `${is.grain} ${is.column}` : null, message: `${q(a.name)} was ${words(was)}, now ${words(is)}: its published partitions and their keys change for every consumer` }];
        }),
  },
  {
    id: "ASSET_FIELD_CHANGED",
    purpose: "A field of an asset's record that no other rule compares, and that a run reads, changed (producer, external, sample data, a property's primaryKey or unique, the column order); the field names it.",
    severity: "dangerous",
    category: "non-breaking",
    about: "asset",
    detect: (c) =>
      assetDifferences(c)
        .filter(({ difference: d }) => !ASSET_METADATA_FIELDS.includes(d.path[0]!))
        .map(({ asset: a, difference: d }) => ({ asset: a.name, field: fieldName(d), before: d.before, after: d.after, message: `the ${fieldName(d)} of ${q(a.name)} ${differenceWords(d)}` })),
  },
  {
    id: "ASSET_METADATA_CHANGED",
    purpose: "A field of an asset's record that no run reads changed (its declaring file, renamed_from, the order of its quality rules, a draft's version or upstreams); the field names it.",
    severity: "safe",
    category: "metadata-only",
    about: "asset",
    detect: (c) =>
      assetDifferences(c)
        .filter(({ difference: d }) => ASSET_METADATA_FIELDS.includes(d.path[0]!))
        .map(({ asset: a, difference: d }) => ({
          asset: a.name,
          field: fieldName(d),
          before: d.before,
          after: d.after,
          message: d.path[0] === "quality" ? `the order of the quality rules of ${q(a.name)} changed` : `the ${fieldName(d)} of ${q(a.name)} ${differenceWords(d)}`,
        })),
  },
  {
    id: "DAG_METADATA_CHANGED",
    purpose: "The description or tags of an asset's producing DAG changed (Airflow's description, doc_md and tags), or its processing purpose or source description; nothing runs otherwise.",
    severity: "safe",
    category: "metadata-only",
    about: "asset",
    detect: (c) =>
      dagDifferences(c)
        .filter((x) => isDagMetadata(x.difference))
        .map(({ asset, dag, difference: d }) => ({ asset: asset.name, field: fieldName(d), before: d.before, after: d.after, message: `the ${fieldName(d)} of the DAG ${q(dag)}, which produces ${q(asset.name)}, changed` })),
  },
  {
    id: "DAG_SETTING_CHANGED",
    purpose: "A run setting or the producer of an asset's DAG changed (default_args, deadline, producer, source, landing, connection, on_failure and the like); the field names it.",
    severity: "dangerous",
    category: "non-breaking",
    about: "asset",
    detect: (c) =>
      dagDifferences(c)
        .filter((x) => !isDagMetadata(x.difference))
        .map(({ asset, dag, difference: d }) => ({ asset: asset.name, field: fieldName(d), before: d.before, after: d.after, message: `the ${fieldName(d)} of the DAG ${q(dag)}, which produces ${q(asset.name)}, ${differenceWords(d)}` })),
  },
  {
    id: "PROJECT_SETTING_CHANGED",
    purpose: "A setting of the orchestration config that reaches the manifest outside the assets and DAGs changed (the lineage namespace, the freshness monitor's schedule, notifier or connection, who publishes a watched external asset); reported for each asset it concerns.",
    severity: "dangerous",
    category: "non-breaking",
    about: "asset",
    detect: (c) =>
      projectDifferences(c).map(({ asset, difference: d }) => ({ asset, field: fieldName(d), before: d.before, after: d.after, message: `the ${fieldName(d)}, which concerns ${q(asset)}, ${differenceWords(d)}` })),
  },
  {
    id: "CONTRACT_TEXT_CHANGED",
    purpose: "A contract file's text changed (the sha256 in the manifest and in its DAG module) and nothing it compiles to did: a comment or the layout.",
    severity: "safe",
    category: "metadata-only",
    about: "asset",
    detect: (c) =>
      textOnlyChanges(c).map((x) => ({
        asset: x.asset,
        field: "contract_sha256",
        before: x.before,
        after: x.after,
        message: `the text of ${q(c.after.get(x.asset)!.contract)}, which declares ${q(x.asset)}, changed, and nothing the manifest holds of it did (a comment or the layout)`,
      })),
  },
  {
    id: "VERSION_BREAKING_WITHOUT_MAJOR",
    purpose: "A contract makes a breaking change without a major bump of its version.",
    severity: "breaking",
    category: "breaking",
    about: "contract",
    detect: (c, earlier) =>
      contractsWithChanges(c, earlier).flatMap((v) => {
        const breaking = breakingOf(v);
        if (!breaking.length || bumped(v.before, v.after, "major")) return [];
        const next = nextVersion(v.before, "major");
        return [versionFinding(v, c, breaking, `the contract ${q(v.id)} makes ${breakingWords(breaking)} under version ${v.afterText} (was ${v.beforeText}): ${listChanges(breaking)}; a breaking change needs a major version (${next})`, `version: ${next}`)];
      }),
  },
  {
    id: "VERSION_BREAKING_ACKNOWLEDGED",
    purpose: "A contract makes a breaking change and bumps its major version: acknowledged, consumers still break until they follow.",
    severity: "dangerous",
    category: "breaking",
    about: "contract",
    detect: (c, earlier) =>
      contractsWithChanges(c, earlier).flatMap((v) => {
        const breaking = breakingOf(v);
        if (!breaking.length || !bumped(v.before, v.after, "major")) return [];
        return [versionFinding(v, c, breaking, `the contract ${q(v.id)} makes ${breakingWords(breaking)}, acknowledged by the major version ${v.afterText} (was ${v.beforeText}): ${listChanges(breaking)}`)];
      }),
  },
  {
    id: "VERSION_ADDITIVE_WITHOUT_MINOR",
    purpose: "A contract adds a dataset or a property without a minor bump of its version.",
    severity: "dangerous",
    category: "non-breaking",
    about: "contract",
    detect: (c, earlier) =>
      contractsWithChanges(c, earlier).flatMap((v) => {
        const additive = additiveOf(v);
        if (breakingOf(v).length || !additive.length || bumped(v.before, v.after, "minor")) return [];
        const next = nextVersion(v.before, "minor");
        return [versionFinding(v, c, additive, `the contract ${q(v.id)} adds to what consumers may read under version ${v.afterText} (was ${v.beforeText}): ${listChanges(additive)}; an additive change wants a minor version (${next})`, `version: ${next}`)];
      }),
  },
  {
    id: "VERSION_CHANGED",
    purpose: "A contract's version changed, and no breaking change needed it to.",
    severity: "safe",
    category: "metadata-only",
    about: "contract",
    detect: (c, earlier) =>
      contractsWithChanges(c, earlier)
        .filter((v) => versionChanged(v) && !breakingOf(v).length && !(additiveOf(v).length && !bumped(v.before, v.after, "minor")))
        .map((v) => versionFinding(v, c, v.changes, `the version of the contract ${q(v.id)} changed from ${v.beforeText} to ${v.afterText}`)),
  },
];
