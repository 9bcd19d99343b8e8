import type { Change } from "../diff/changeRules.js";
import type { ManifestDiff } from "../diff/diffManifests.js";
import type { LinkedProject } from "../link/linkProject.js";
import { githubEscape } from "../support/github.js";
import { maskSecrets } from "../support/secrets.js";

/** Output formats of a diff report. */
export type ChangeFormat = "text" | "json" | "github";

function summaryLine(diff: ManifestDiff): string {
  const n = diff.changes.length;
  const k = diff.categories;
  return `${n} change${n === 1 ? "" : "s"}: ${diff.summary.breaking} breaking, ${diff.summary.dangerous} dangerous, ${diff.summary.safe} safe; by category: ${k.breaking} breaking, ${k["non-breaking"]} non-breaking, ${k["metadata-only"]} metadata-only`;
}

const quote = (xs: readonly string[]): string => xs.map((x) => JSON.stringify(x)).join(", ");

/**
 * The plan view in the manner of SQLMesh's plan: each directly modified asset with the category of
 * every change (per property where the change is), then the DAGs downstream of a data change,
 * `direct` (they read a changed asset) or `indirect` (they read what a downstream DAG produces).
 */
function planLines(diff: ManifestDiff): string[] {
  const { directly_modified, indirectly_modified } = diff.plan;
  if (!directly_modified.length) return [];
  const lines = ["Directly modified:"];
  const fieldWidth = Math.max(0, ...directly_modified.flatMap((d) => d.changes.map((c) => (c.field ?? "(asset)").length)));
  for (const d of directly_modified) {
    lines.push(`  ${d.asset} (${d.category})`);
    for (const c of d.changes) lines.push(`    ${c.category.padEnd(13)}  ${(c.field ?? "(asset)").padEnd(fieldWidth)}  ${c.rule}`);
  }
  if (indirectly_modified.length) {
    lines.push("Indirectly modified:");
    for (const i of indirectly_modified) lines.push(`  ${i.dag_id} (${i.kind}, ${i.category}): ${i.kind === "direct" ? "reads" : "downstream of"} ${quote(i.via)}`);
  }
  return lines;
}

/**
 * A diff report for people: one line per change, `severity  RULE_ID  message`, grouped by asset in
 * the diff's sorted order; then the plan view (directly and indirectly modified, with categories);
 * then a summary line.
 */
export function formatChangesText(diff: ManifestDiff): string {
  const width = Math.max(0, ...diff.changes.map((c) => c.rule.length));
  const lines = diff.changes.map((c) => `${c.severity.padEnd(9)} ${c.rule.padEnd(width)}  ${c.message}`);
  lines.push(...planLines(diff));
  lines.push(summaryLine(diff));
  return maskSecrets(lines.join("\n")) + "\n";
}

/**
 * The stable JSON report documented in ARCHITECTURE.md ("Diff report"): `{changes, summary,
 * categories, plan}`, each change `{rule, severity, asset, message, field?, before?, after?,
 * consumers?, category, contract?, evidence?, fix?, downstream?}`, in the diff's order, keys in a
 * fixed order (fields added since the first shape come after the first ones).
 */
export function formatChangesJson(diff: ManifestDiff): string {
  const changes = diff.changes.map((c: Change) => ({
    rule: c.rule,
    severity: c.severity,
    asset: c.asset,
    message: c.message,
    ...(c.field !== undefined ? { field: c.field } : {}),
    ...(c.before !== undefined ? { before: c.before } : {}),
    ...(c.after !== undefined ? { after: c.after } : {}),
    ...(c.consumers !== undefined ? { consumers: c.consumers } : {}),
    category: c.category,
    ...(c.contract !== undefined ? { contract: c.contract } : {}),
    ...(c.evidence !== undefined ? { evidence: c.evidence } : {}),
    ...(c.fix !== undefined ? { fix: c.fix } : {}),
    ...(c.downstream !== undefined ? { downstream: c.downstream } : {}),
  }));
  return maskSecrets(JSON.stringify({ changes, summary: diff.summary, categories: diff.categories, plan: diff.plan }, null, 2)) + "\n";
}

const escapeData = (value: string): string => githubEscape(value, false);
const escapeProperty = (value: string): string => githubEscape(value, true);

/**
 * GitHub workflow annotations: breaking as `::error`, dangerous as `::warning`, safe as `::notice`,
 * placed at the asset's declaration when the current project has it, each with its category and
 * downstream DAGs; then one notice per directly and indirectly modified entry of the plan.
 */
export function formatChangesGithub(diff: ManifestDiff, project: LinkedProject | undefined): string {
  const lines = diff.changes.map((c) => {
    const command = c.severity === "breaking" ? "error" : c.severity === "dangerous" ? "warning" : "notice";
    // A broken consumer is annotated where it reads the asset; other changes at the asset.
    const consumer = c.consumers?.[0] ? project?.contracts.find((x) => x.contract.id === c.consumers![0]) : undefined;
    // A version rule at the contract's version line; a probable rename where renamed_from goes.
    const contract = c.contract !== undefined ? project?.contracts.find((x) => x.contract.id === c.contract) : undefined;
    const renamedTo = c.rule === "ASSET_PROBABLY_RENAMED" && typeof c.after === "string" ? project?.assets.get(c.after)?.location : undefined;
    const at = contract?.located.source.locate(["version"]) ?? renamedTo ?? consumer?.upstreams.find((u) => u.asset === c.asset)?.location ?? project?.assets.get(c.asset)?.location;
    const props = [...(at ? [`file=${escapeProperty(at.file)}`, `line=${at.line}`, `col=${at.column}`] : []), `title=${escapeProperty(c.rule)}`];
    const down = c.downstream ? `; downstream: ${[...(c.downstream.direct.length ? [`direct ${quote(c.downstream.direct)}`] : []), ...(c.downstream.indirect.length ? [`indirect ${quote(c.downstream.indirect)}`] : [])].join(", ")}` : "";
    return `::${command} ${props.join(",")}::${escapeData(`${c.message} (category: ${c.category}${down})`)}`;
  });
  for (const d of diff.plan.directly_modified) {
    const at = project?.assets.get(d.asset)?.location;
    const props = [...(at ? [`file=${escapeProperty(at.file)}`, `line=${at.line}`, `col=${at.column}`] : []), `title=${escapeProperty(`directly modified (${d.category})`)}`];
    lines.push(`::notice ${props.join(",")}::${escapeData(`${d.asset}: ${d.changes.map((c) => `${c.field ?? "(asset)"} ${c.category} (${c.rule})`).join(", ")}`)}`);
  }
  for (const i of diff.plan.indirectly_modified) {
    lines.push(`::notice title=${escapeProperty(`indirectly modified (${i.kind}, ${i.category})`)}::${escapeData(`${i.dag_id} ${i.kind === "direct" ? "reads" : "is downstream of"} ${quote(i.via)}`)}`);
  }
  lines.push(`::notice title=contract-assets diff::${escapeData(summaryLine(diff))}`);
  return maskSecrets(lines.join("\n")) + "\n";
}

/** Formats a diff report in the chosen format. */
export function formatChanges(diff: ManifestDiff, format: ChangeFormat, project?: LinkedProject): string {
  if (format === "json") return formatChangesJson(diff);
  if (format === "github") return formatChangesGithub(diff, project);
  return formatChangesText(diff);
}
