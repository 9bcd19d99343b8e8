/** Asset conditions (DESIGN §3.5): a contract's trigger tree as the manifest carries it, and its identity. */
import { compareStrings } from "../support/compare.js";
import type { AssetCondition } from "./contract.js";
import type { ConditionNode } from "./manifest.js";

/** A contract's condition (`trigger.assets`: a name, or `all`/`any` of conditions) as the manifest's tree. */
export function conditionNode(condition: AssetCondition): ConditionNode {
  if (typeof condition === "string") return { asset: condition };
  if ("all" in condition) return { all: condition.all.map(conditionNode) };
  return { any: condition.any.map(conditionNode) };
}

/**
 * A condition tree in canonical order: the members of every `all`/`any` sorted by the JSON text of
 * each (already canonical) member, compared by code unit. That puts nested `all` groups
 * first, then nested `any` groups, then assets by name (`{"all"` < `{"any"` < `{"asset"`), each
 * group ordered by its own members. `&` and `|` are commutative, so the order is the author's
 * choice of spelling, not a meaning: without this, reordering `upstreams` or a tree's members
 * changed the rendered `schedule=` and so made Airflow store a new DAG version for the same
 * schedule. Nesting is kept as written; a member repeated within one group (equal once
 * canonical; CA3804, a warning) is written once.
 */
export function canonicalCondition(node: ConditionNode): ConditionNode {
  if ("asset" in node) return node;
  const members = ("all" in node ? node.all : node.any).map(canonicalCondition);
  // A leaf's text is written out directly: the same text as JSON.stringify gives, without the walk.
  const keyed = members.map((m) => ({ m, key: "asset" in m ? `{"asset":${JSON.stringify(m.asset)}}` : JSON.stringify(m) }));
  // Sort for determinism: the members of an all/any are a set to Airflow.
  keyed.sort((a, b) => compareStrings(a.key, b.key));
  // ... and a set: a repeated member (CA3804) is left out, so the schedule is the same
  const sorted = keyed.filter((k, i) => i === 0 || k.key !== keyed[i - 1]!.key).map((k) => k.m);
  return "all" in node ? { all: sorted } : { any: sorted };
}

/**
 * A condition's identity regardless of member order and repetition: the JSON text of its
 * {@link canonicalCondition}, the schedule it compiles to (validate's CA3804 finds a group's
 * repeated members by it).
 */
export function conditionKey(condition: AssetCondition): string {
  return JSON.stringify(canonicalCondition(conditionNode(condition)));
}
