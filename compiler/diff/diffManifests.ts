import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, RelatedLocation, SourceLocation, StageResult } from "../diagnostics/diagnostic.js";
import type { LinkedProject } from "../link/linkProject.js";
import type { Manifest } from "../manifest/buildManifest.js";
import { compareStrings } from "../support/compare.js";
import { CHANGE_RULES, type Change, type ChangeSeverity, type DiffContext } from "./changeRules.js";

const SEVERITY_ORDER: Record<ChangeSeverity, number> = { breaking: 0, dangerous: 1, safe: 2 };

/** The diff's result: changes sorted by asset, severity and rule, and counts per severity. */
export interface ManifestDiff {
  changes: Change[];
  summary: Record<ChangeSeverity, number>;
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
  for (const rule of CHANGE_RULES) {
    for (const finding of rule.detect(context)) changes.push({ rule: rule.id, severity: rule.severity, ...finding });
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
  for (const c of changes) summary[c.severity]++;
  return { changes, summary };
}

/**
 * Breaking changes as located errors (CA7001): one per consumer, at the consumer's upstream line,
 * with the producer's declaration (or the previous manifest's record of it) as a related location.
 */
export function breakingDiagnostics(diff: ManifestDiff, project: LinkedProject, previous: Manifest): StageResult<null> {
  const diagnostics: Diagnostic[] = [];
  const previousAssets = new Map(previous.assets.map((a) => [a.name, a]));
  for (const change of diff.changes) {
    if (change.severity !== "breaking") continue;
    const related: RelatedLocation[] = [];
    const current = project.assets.get(change.asset);
    if (current) related.push({ message: `${JSON.stringify(change.asset)} is declared here`, location: current.location });
    else {
      const before = previousAssets.get(change.asset);
      if (before) related.push({ message: `${JSON.stringify(change.asset)} was declared here in the previous manifest`, location: { file: before.contract, line: 1, column: 1 } });
    }
    for (const consumer of change.consumers ?? []) {
      const linked = project.contracts.find((c) => c.contract.id === consumer);
      const upstream = linked?.upstreams.find((u) => u.asset === change.asset);
      const location: SourceLocation | undefined = upstream?.location ?? linked?.located.source.locate(["id"]);
      diagnostics.push(createDiagnostic(Diagnostics.BreakingChange, { rule: change.rule, message: change.message }, location, { related }));
    }
  }
  return { value: null, diagnostics };
}
