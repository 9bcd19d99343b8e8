import type { Change } from "../diff/changeRules.js";
import type { ManifestDiff } from "../diff/diffManifests.js";
import type { LinkedProject } from "../link/linkProject.js";
import { githubEscape } from "../support/github.js";
import { maskSecrets } from "../support/secrets.js";

/** Output formats of a diff report. */
export type ChangeFormat = "text" | "json" | "github";

function summaryLine(diff: ManifestDiff): string {
  const n = diff.changes.length;
  return `${n} change${n === 1 ? "" : "s"}: ${diff.summary.breaking} breaking, ${diff.summary.dangerous} dangerous, ${diff.summary.safe} safe`;
}

/**
 * A diff report for people: one line per change, `severity  RULE_ID  asset: message`, grouped by
 * asset in the diff's sorted order, then a summary line.
 */
export function formatChangesText(diff: ManifestDiff): string {
  const width = Math.max(0, ...diff.changes.map((c) => c.rule.length));
  const lines = diff.changes.map((c) => `${c.severity.padEnd(9)} ${c.rule.padEnd(width)}  ${c.message}`);
  lines.push(summaryLine(diff));
  return maskSecrets(lines.join("\n")) + "\n";
}

/**
 * The stable JSON report documented in ARCHITECTURE.md ("Diff report"): `{changes, summary}`, each
 * change `{rule, severity, asset, message, field?, before?, after?, consumers?}`, in the diff's
 * order, keys in a fixed order.
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
  }));
  return maskSecrets(JSON.stringify({ changes, summary: diff.summary }, null, 2)) + "\n";
}

const escapeData = (value: string): string => githubEscape(value, false);
const escapeProperty = (value: string): string => githubEscape(value, true);

/**
 * GitHub workflow annotations: breaking as `::error`, dangerous as `::warning`, safe as `::notice`,
 * placed at the asset's declaration when the current project has it.
 */
export function formatChangesGithub(diff: ManifestDiff, project: LinkedProject | undefined): string {
  const lines = diff.changes.map((c) => {
    const command = c.severity === "breaking" ? "error" : c.severity === "dangerous" ? "warning" : "notice";
    // A broken consumer is annotated where it reads the asset; other changes at the asset.
    const consumer = c.consumers?.[0] ? project?.contracts.find((x) => x.contract.id === c.consumers![0]) : undefined;
    const at = consumer?.upstreams.find((u) => u.asset === c.asset)?.location ?? project?.assets.get(c.asset)?.location;
    const props = [...(at ? [`file=${escapeProperty(at.file)}`, `line=${at.line}`, `col=${at.column}`] : []), `title=${escapeProperty(c.rule)}`];
    return `::${command} ${props.join(",")}::${escapeData(c.message)}`;
  });
  lines.push(`::notice title=contract-assets diff::${escapeData(summaryLine(diff))}`);
  return maskSecrets(lines.join("\n")) + "\n";
}

/** Formats a diff report in the chosen format. */
export function formatChanges(diff: ManifestDiff, format: ChangeFormat, project?: LinkedProject): string {
  if (format === "json") return formatChangesJson(diff);
  if (format === "github") return formatChangesGithub(diff, project);
  return formatChangesText(diff);
}
