import { githubEscape } from "../support/github.js";
import { maskSecrets } from "../support/secrets.js";
import type { Diagnostic, SourceLocation } from "./diagnostic.js";

/** Output formats of diagnostics, chosen with `--format`. */
export type DiagnosticFormat = "text" | "json" | "github";

/** Source text by project-relative path, for excerpts under text diagnostics. */
export type SourceLookup = (file: string) => string | undefined;

function where(location: SourceLocation | undefined): string {
  return location ? `${printable(location.file)}:${location.line}:${location.column}` : "contract-assets";
}

/**
 * The source line of a location with `^~~~` under the span (TypeScript's `.errors.txt` manner).
 * Tabs are kept so the marker lines up in a terminal; a span past the line's end is clipped.
 */
export function excerpt(location: SourceLocation, lookup: SourceLookup): string[] {
  const text = lookup(location.file);
  if (text === undefined) return [];
  const lines = text.split(/\r\n|\r|\n/);
  const full = lines[location.line - 1];
  if (full === undefined) return [];
  // A window around the column: a 1 MiB line must not reach a terminal (or cost time to mask).
  const from = Math.max(0, location.column - 1 - EXCERPT_BEFORE);
  const line = full.slice(from, location.column - 1 + EXCERPT_AFTER);
  const start = Math.max(0, Math.min(location.column - 1 - from, line.length));
  const end =
    location.endLine === location.line && location.endColumn !== undefined
      ? Math.max(start + 1, Math.min(location.endColumn - 1 - from, line.length))
      : Math.max(start + 1, line.length);
  const clippedBefore = from > 0 ? "..." : "";
  const clippedAfter = from + line.length < full.length ? "..." : "";
  const pad = (clippedBefore + line.slice(0, start)).replace(/[^\t]/g, " ");
  const width = Math.max(1, Math.min(end - start, 200));
  return [`  ${clippedBefore}${printable(line)}${clippedAfter}`, `  ${pad}^${"~".repeat(width - 1)}`];
}

const EXCERPT_BEFORE = 120;
const EXCERPT_AFTER = 200;

/**
 * Control characters (other than tab) as `\xNN`, so a file name or a source line cannot move the
 * cursor, colour or split a gcc-style line in a terminal or a CI log.
 */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/**
 * gcc-style text: `path:line:col: error CA3002: message`, then the source excerpt, the hint and the
 * related locations as `note:` lines. Secrets are masked on every line.
 */
export function formatText(diagnostics: readonly Diagnostic[], lookup: SourceLookup): string {
  const out: string[] = [];
  for (const d of diagnostics) {
    out.push(`${where(d.location)}: ${d.severity} ${d.code}: ${printable(d.message)}`);
    if (d.location) out.push(...excerpt(d.location, lookup));
    if (d.hint) out.push(`  hint: ${d.hint}`);
    for (const r of d.related) out.push(`${where(r.location)}: note: ${r.message}`);
  }
  const errors = diagnostics.filter((d) => d.severity === "error").length;
  const warnings = diagnostics.filter((d) => d.severity === "warning").length;
  if (diagnostics.length > 0) out.push(`${errors} error(s), ${warnings} warning(s)`);
  return out.map(maskSecrets).join("\n") + (out.length ? "\n" : "");
}

/** The same data as JSON: `{diagnostics: [...], errors, warnings}`, keys in a fixed order. */
export function formatJson(diagnostics: readonly Diagnostic[]): string {
  const body = {
    diagnostics: diagnostics.map((d) => ({
      code: d.code,
      severity: d.severity,
      message: d.message,
      ...(d.location ? { location: d.location } : {}),
      related: d.related,
      ...(d.hint ? { hint: d.hint } : {}),
    })),
    errors: diagnostics.filter((d) => d.severity === "error").length,
    warnings: diagnostics.filter((d) => d.severity === "warning").length,
  };
  return maskSecrets(JSON.stringify(body, null, 2)) + "\n";
}

/** GitHub Actions workflow commands (`::error file=…,line=…,col=…::message`), one per line. */
export function formatGithub(diagnostics: readonly Diagnostic[]): string {
  const out: string[] = [];
  for (const d of diagnostics) {
    const command = d.severity === "error" ? "error" : d.severity === "warning" ? "warning" : "notice";
    const props: string[] = [`title=${githubEscape(d.code, true)}`];
    if (d.location) {
      props.unshift(
        `file=${githubEscape(d.location.file, true)}`,
        `line=${d.location.line}`,
        `col=${d.location.column}`,
      );
    }
    const message = d.hint ? `${d.message} (hint: ${d.hint})` : d.message;
    out.push(`::${command} ${props.join(",")}::${githubEscape(message, false)}`);
  }
  return out.map(maskSecrets).join("\n") + (out.length ? "\n" : "");
}

/** Formats diagnostics in the chosen format. */
export function formatDiagnostics(
  diagnostics: readonly Diagnostic[],
  format: DiagnosticFormat,
  lookup: SourceLookup,
): string {
  if (format === "json") return formatJson(diagnostics);
  if (format === "github") return formatGithub(diagnostics);
  return formatText(diagnostics, lookup);
}
