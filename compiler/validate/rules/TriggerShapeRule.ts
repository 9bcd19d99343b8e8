import { createDiagnostic, Diagnostics } from "../../diagnostics/catalogue.js";
import { conditionKey } from "../../model/conditions.js";
import type { AssetCondition } from "../../model/contract.js";
import { suggest } from "../../support/suggest.js";
import { describePath } from "../mapSchemaErrors.js";
import type { DocumentRule } from "./rule.js";

/** Leaves of an asset condition tree with their paths below `trigger.assets`. */
export function conditionLeaves(condition: AssetCondition, path: Array<string | number>): Array<{ name: string; path: Array<string | number> }> {
  if (typeof condition === "string") return [{ name: condition, path }];
  const [op, items] = "all" in condition ? ["all", condition.all] : ["any", condition.any];
  return items.flatMap((item, i) => conditionLeaves(item, [...path, op, i]));
}

/** Members of a group that repeat an earlier member of the same group (by {@link conditionKey}). */
function repeatedMembers(condition: AssetCondition, path: Array<string | number>): Array<{ op: string; path: Array<string | number> }> {
  if (typeof condition === "string") return [];
  const [op, items] = "all" in condition ? ["all", condition.all] : ["any", condition.any];
  const seen = new Set<string>();
  const found: Array<{ op: string; path: Array<string | number> }> = [];
  items.forEach((item, i) => {
    const key = conditionKey(item);
    if (seen.has(key)) found.push({ op, path: [...path, op, i] });
    seen.add(key);
    found.push(...repeatedMembers(item, [...path, op, i]));
  });
  return found;
}

/**
 * A contract says when it runs: triggering upstreams, a cron or schedule_ref, a queue, or `trigger: manual`;
 * `manual` has no triggering upstreams; every leaf of a trigger tree is a triggering upstream, and
 * every triggering upstream appears in the tree; a member repeated within one group is a warning
 * (CA3804). Why: Airflow would otherwise build a DAG that never
 * runs, or waits on an Asset the contract never declared it reads (DESIGN §3.5).
 */
export const TriggerShapeRule: DocumentRule = {
  name: "TriggerShapeRule",
  check(document, context) {
    if (document.kind === "OrchestrationConfig" || document.kind === "ExternalAssets") return;
    const upstreams = document.upstreams ?? [];
    const triggering = upstreams.filter((u) => u.trigger !== false);
    const trigger = document.trigger;
    if (trigger === "manual") {
      triggering.forEach((u) => {
        const i = upstreams.indexOf(u);
        context.report(createDiagnostic(Diagnostics.ManualWithSchedule, {}, context.source.locate(["upstreams", i, "asset"])));
      });
      return;
    }
    // A queue (ADR 0034) schedules the DAG on its source's watcher events; QueueTriggerRule checks the rest.
    const timed = trigger?.cron !== undefined || trigger?.schedule_ref !== undefined || trigger?.queue !== undefined;
    if (triggering.length === 0 && !timed) {
      // A load whose source is an extract's dataset is triggered by it: link knows (TriggeredLoadRule).
      if (document.kind === "IngestionContract" && document.mode === "load" && trigger === undefined) return;
      context.report(createDiagnostic(Diagnostics.NoTrigger, {}, context.source.locate(trigger ? ["trigger"] : ["id"])));
      return;
    }
    const tree = trigger?.assets;
    if (tree === undefined || typeof tree === "string") return;
    const names = new Set(triggering.map((u) => u.asset));
    // A repeated member means nothing more to Airflow; canonical order drops it (same schedule).
    for (const repeated of repeatedMembers(tree, ["trigger", "assets"])) {
      const field = (context.source.describe ?? describePath)(repeated.path);
      context.report(createDiagnostic(Diagnostics.DuplicateTriggerMember, { field, op: repeated.op }, context.source.locate(repeated.path)));
    }
    const leaves = conditionLeaves(tree, ["trigger", "assets"]);
    for (const leaf of leaves) {
      if (names.has(leaf.name)) continue;
      const readOnly = upstreams.findIndex((u) => u.asset === leaf.name && u.trigger === false);
      const guess = suggest(leaf.name, names);
      const extras =
        readOnly >= 0
          ? { hint: 'it is marked "trigger: false" (read, never waited for); remove that or the leaf', related: [{ message: "marked here", location: context.source.locate(["upstreams", readOnly, "trigger"]) }] }
          : guess
            ? { hint: `did you mean "${guess}"?` }
            : {};
      context.report(createDiagnostic(Diagnostics.TriggerNotUpstream, { asset: leaf.name }, context.source.locate(leaf.path), extras));
    }
    const used = new Set(leaves.map((l) => l.name));
    upstreams.forEach((u, i) => {
      if (u.trigger !== false && !used.has(u.asset)) {
        context.report(createDiagnostic(Diagnostics.TriggerMissesUpstream, { asset: u.asset }, context.source.locate(["upstreams", i, "asset"])));
      }
    });
  },
};
