import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, RelatedLocation, SourceLocation, StageResult } from "../diagnostics/diagnostic.js";
import type { LinkedProject } from "../link/linkProject.js";
import type { Manifest } from "../manifest/buildManifest.js";
import { compareStrings } from "../support/compare.js";
import { CHANGE_RULES, type Change, type ChangeCategory, type ChangeSeverity, type DiffContext } from "./changeRules.js";

const SEVERITY_ORDER: Record<ChangeSeverity, number> = { breaking: 0, dangerous: 1, safe: 2 };
const CATEGORY_ORDER: Record<ChangeCategory, number> = { breaking: 0, "non-breaking": 1, "metadata-only": 2 };

/** An asset the producer changed, with the worst category of its changes (SQLMesh: directly modified). */
export interface DirectlyModified {
  asset: string;
  category: ChangeCategory;
  /** Each asset or contract change: what changed (`field`, else the rule's subject) and its category. */
  changes: Array<{ rule: string; field: string | null; category: ChangeCategory }>;
}

/**
 * A DAG downstream of a data change (breaking or non-breaking; metadata-only changes propagate
 * nothing), as SQLMesh's "indirectly modified": `direct` when it reads a changed asset (`via` those
 * assets), `indirect` when it reads what a downstream DAG produces (`via` those dag_ids).
 */
export interface IndirectlyModified {
  dag_id: string;
  kind: "direct" | "indirect";
  /** The worst category of the changes it is downstream of. */
  category: ChangeCategory;
  via: string[];
}

/**
 * The diff's result: changes sorted by asset, severity and rule; counts per severity and per
 * category; and the plan view (directly and indirectly modified).
 */
export interface ManifestDiff {
  changes: Change[];
  summary: Record<ChangeSeverity, number>;
  categories: Record<ChangeCategory, number>;
  plan: { directly_modified: DirectlyModified[]; indirectly_modified: IndirectlyModified[] };
}

const worst = (xs: ChangeCategory[]): ChangeCategory => [...xs].sort((a, b) => CATEGORY_ORDER[a] - CATEGORY_ORDER[b])[0] ?? "metadata-only";

/** The current state's reading graph: asset → dag_ids that read it, dag_id → assets it produces. */
interface ReadGraph {
  readers: Map<string, string[]>;
  produces: Map<string, string[]>;
}

function append(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

function readGraphOf(context: DiffContext): ReadGraph {
  const readers = new Map<string, string[]>();
  const produces = new Map<string, string[]>();
  for (const dag of context.dagsAfter.values()) {
    const upstreams = dag.runtime.upstreams.map((u) => u.asset);
    for (const asset of new Set(upstreams)) append(readers, asset, dag.dag_id);
  }
  for (const a of context.after.values()) if (a.producer) append(produces, a.producer, a.name);
  // Sort for determinism.
  for (const list of readers.values()) list.sort(compareStrings);
  return { readers, produces };
}

/**
 * Downstream DAGs of an asset in the current state: `direct` read it, `indirect` read an asset that a
 * downstream DAG produces (breadth first, to any depth; each DAG once, at its nearest kind).
 * Output: `direct` dag_ids sorted, and by indirect dag_id the downstream DAGs it reads through.
 */
function downstreamOf(graph: ReadGraph, asset: string): { direct: string[]; indirect: Map<string, Set<string>> } {
  const direct = graph.readers.get(asset) ?? [];
  const seen = new Set(direct);
  const indirect = new Map<string, Set<string>>();
  let frontier = direct;
  while (frontier.length) {
    const next: string[] = [];
    for (const dagId of frontier) {
      for (const produced of graph.produces.get(dagId) ?? []) {
        for (const reader of graph.readers.get(produced) ?? []) {
          if (direct.includes(reader)) continue;
          if (!indirect.has(reader)) indirect.set(reader, new Set());
          indirect.get(reader)!.add(dagId);
          if (!seen.has(reader)) {
            seen.add(reader);
            next.push(reader);
          }
        }
      }
    }
    frontier = next;
  }
  return { direct, indirect };
}

/** Adds `downstream` to each data change and builds the plan view. */
function planOf(context: DiffContext, changes: Change[]): ManifestDiff["plan"] {
  const about = new Map(CHANGE_RULES.map((r) => [r.id, r.about]));
  const byAsset = new Map<string, Change[]>();
  const reached = { direct: new Map<string, Set<string>>(), indirect: new Map<string, Set<string>>(), category: new Map<string, ChangeCategory[]>() };
  const add = (m: Map<string, Set<string>>, k: string, v: Iterable<string>): void => {
    if (!m.has(k)) m.set(k, new Set());
    for (const x of v) m.get(k)!.add(x);
  };
  // Built at the first data change: a diff of metadata changes alone reads no graph.
  let graph: ReadGraph | undefined;
  const cache = new Map<string, ReturnType<typeof downstreamOf>>();
  for (const change of changes) {
    // The plan is what producers changed: consumers that break are downstream, and a contract's
    // version rule restates its assets' changes.
    if (about.get(change.rule) !== "asset") continue;
    byAsset.set(change.asset, [...(byAsset.get(change.asset) ?? []), change]);
    if (change.category === "metadata-only") continue;
    if (!cache.has(change.asset)) cache.set(change.asset, downstreamOf((graph ??= readGraphOf(context)), change.asset));
    const d = cache.get(change.asset)!;
    if (d.direct.length || d.indirect.size) change.downstream = { direct: d.direct, indirect: [...d.indirect.keys()].sort(compareStrings) };
    for (const dagId of d.direct) {
      add(reached.direct, dagId, [change.asset]);
      reached.category.set(dagId, [...(reached.category.get(dagId) ?? []), change.category]);
    }
    for (const [dagId, via] of d.indirect) {
      add(reached.indirect, dagId, via);
      reached.category.set(dagId, [...(reached.category.get(dagId) ?? []), change.category]);
    }
  }
  const directly_modified: DirectlyModified[] = [...byAsset]
    // Sort for determinism.
    .sort(([a], [b]) => compareStrings(a, b))
    .map(([asset, xs]) => ({ asset, category: worst(xs.map((x) => x.category)), changes: xs.map((x) => ({ rule: x.rule, field: x.field ?? null, category: x.category })) }));
  const indirectly_modified: IndirectlyModified[] = [...new Set([...reached.direct.keys(), ...reached.indirect.keys()])]
    // Sort for determinism.
    .sort(compareStrings)
    .map((dagId) => {
      const kind = reached.direct.has(dagId) ? ("direct" as const) : ("indirect" as const);
      return { dag_id: dagId, kind, category: worst(reached.category.get(dagId) ?? []), via: [...(kind === "direct" ? reached.direct : reached.indirect).get(dagId)!].sort(compareStrings) };
    });
  return { directly_modified, indirectly_modified };
}

function contextOf(previous: Manifest, current: Manifest, unresolved: ReadonlySet<string>): DiffContext {
  const renamedTo = new Map<string, string>();
  for (const a of current.assets) for (const old of a.renamed_from ?? []) renamedTo.set(old, a.name);
  const before = new Map(previous.assets.map((a) => [a.name, a]));
  const after = new Map(current.assets.map((a) => [a.name, a]));
  const dagsBefore = new Map(previous.dags.map((d) => [d.dag_id, d]));
  const dagsAfter = new Map(current.dags.map((d) => [d.dag_id, d]));
  // An asset whose document failed validation is in an unknown state, not removed: keep its
  // previous record (and its producer's DAG) so the diff reports nothing about it.
  for (const name of unresolved) {
    const old = before.get(name);
    if (!old || after.has(name)) continue;
    after.set(name, old);
    const dag = old.producer ? dagsBefore.get(old.producer) : undefined;
    if (dag && !dagsAfter.has(dag.dag_id)) dagsAfter.set(dag.dag_id, dag);
  }
  return { previous, current, before, after, renamedTo, dagsBefore, dagsAfter };
}

/**
 * The diff stage: compares two manifests by asset name (never as text) with every rule of
 * `CHANGE_RULES`. Pure; the order of assets or DAGs in either manifest does not matter. `unresolved`
 * names assets declared by documents that failed validation: they are taken as unchanged.
 */
export function diffManifests(previous: Manifest, current: Manifest, unresolved: ReadonlySet<string> = new Set()): ManifestDiff {
  const context = contextOf(previous, current, unresolved);
  const changes: Change[] = [];
  // One state against itself (the previous manifest's text was the new one's, ADR 0017): only a
  // rule that reads the current state alone can find anything (`inOneState`), the others compare
  // each record, each property and each rule with itself to find nothing (ADR 0017g).
  const rules = previous === current ? CHANGE_RULES.filter((r) => r.inOneState) : CHANGE_RULES;
  for (const rule of rules) {
    // Contract rules come last and read what the asset rules found.
    for (const finding of rule.detect(context, changes)) changes.push({ ...finding, rule: rule.id, severity: rule.severity, category: finding.category ?? rule.category });
  }
  // Sort for determinism.
  changes.sort(
    (a, b) =>
      compareStrings(a.asset, b.asset) ||
      SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity] ||
      compareStrings(a.rule, b.rule) ||
      compareStrings(a.field ?? "", b.field ?? ""),
  );
  const summary: Record<ChangeSeverity, number> = { breaking: 0, dangerous: 0, safe: 0 };
  const categories: Record<ChangeCategory, number> = { breaking: 0, "non-breaking": 0, "metadata-only": 0 };
  for (const c of changes) {
    summary[c.severity]++;
    categories[c.category]++;
  }
  return { changes, summary, categories, plan: planOf(context, changes) };
}

/**
 * Breaking changes as located errors (CA7001): one per consumer, at the consumer's upstream line,
 * with the producer's declaration (or the previous manifest's record of it) as a related location.
 * A contract's version rules point at its `version` line: a breaking change under the same major
 * version is CA7701 (error), an additive one under the same minor CA7702 (warning), each naming the
 * changes and the version to set.
 */
export function breakingDiagnostics(diff: ManifestDiff, project: LinkedProject, previous: Manifest): StageResult<null> {
  const diagnostics: Diagnostic[] = [];
  let previousAssets: Map<string, Manifest["assets"][number]> | undefined;
  // Each contract by id, the first of that id as `project.contracts` lists them; built at the first question.
  let byId: Map<string, LinkedProject["contracts"][number]> | undefined;
  const contract = (id: string | undefined): LinkedProject["contracts"][number] | undefined => {
    if (!byId) {
      byId = new Map();
      for (const c of project.contracts) if (!byId.has(c.contract.id)) byId.set(c.contract.id, c);
    }
    return id === undefined ? undefined : byId.get(id);
  };
  for (const change of diff.changes) {
    if (change.severity !== "breaking" && change.rule !== "VERSION_ADDITIVE_WITHOUT_MINOR") continue;
    const related: RelatedLocation[] = [];
    const current = project.assets.get(change.asset);
    if (current) related.push({ message: `${JSON.stringify(change.asset)} is declared here`, location: current.location });
    else {
      const before = (previousAssets ??= new Map(previous.assets.map((a) => [a.name, a]))).get(change.asset);
      if (before) related.push({ message: `${JSON.stringify(change.asset)} was declared here in the previous manifest`, location: { file: before.contract, line: 1, column: 1 } });
    }
    if (change.rule === "VERSION_BREAKING_WITHOUT_MAJOR" || change.rule === "VERSION_ADDITIVE_WITHOUT_MINOR") {
      const linked = contract(change.contract);
      if (!linked) continue;
      const entry = change.rule === "VERSION_BREAKING_WITHOUT_MAJOR" ? Diagnostics.BreakingWithoutMajorVersion : Diagnostics.AdditiveWithoutMinorVersion;
      diagnostics.push(createDiagnostic(entry, { message: change.message }, linked.located.source.locate(["version"]), { related, ...(change.fix ? { hint: `set "${change.fix}" to acknowledge it` } : {}) }));
      continue;
    }
    for (const consumer of change.consumers ?? []) {
      const linked = contract(consumer);
      const upstream = linked?.upstreams.find((u) => u.asset === change.asset);
      const location: SourceLocation | undefined = upstream?.location ?? linked?.located.source.locate(["id"]);
      diagnostics.push(createDiagnostic(Diagnostics.BreakingChange, { rule: change.rule, message: change.message }, location, { related }));
    }
  }
  return { value: null, diagnostics };
}
