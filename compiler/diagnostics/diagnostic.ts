import { compareStrings } from "../support/compare.js";

/** How bad a diagnostic is. Only `error` fails a compile (exit 1). */
export type Severity = "error" | "warning" | "info";

/**
 * A place in a project file. Paths are project-relative POSIX; `line` and `column` are 1-based and
 * count UTF-16 code units like editors do; the end is exclusive and optional.
 */
export interface SourceLocation {
  file: string;
  line: number;
  column: number;
  endLine?: number;
  endColumn?: number;
}

/** Another place a diagnostic involves: the other party of a conflict, a member of a cycle. */
export interface RelatedLocation {
  message: string;
  location: SourceLocation;
}

/**
 * One finding of the compiler. Made only through {@link createDiagnostic} from the catalogue, so
 * every code has one message template.
 */
export interface Diagnostic {
  /** `CA` plus four digits; the thousands digit is the stage (see catalogue.ts). */
  code: string;
  severity: Severity;
  /** One sentence, names in double quotes. */
  message: string;
  /** Absent only for findings about the whole project (no contracts found, usage). */
  location?: SourceLocation;
  related: RelatedLocation[];
  hint?: string;
}

/** Stage output: a value plus everything found on the way. Stages never throw on bad input. */
export interface StageResult<T> {
  value: T;
  diagnostics: Diagnostic[];
}

/** Whether any diagnostic is an error. */
export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === "error");
}

function locationKey(location: SourceLocation | undefined): string {
  if (!location) return "";
  // Zero-padded so that the string order is the numeric order.
  return `${location.file}\u0000${String(location.line).padStart(9, "0")}\u0000${String(location.column).padStart(9, "0")}`;
}

/**
 * Sorted by file, line, column, code and message, with exact duplicates removed; a report is the
 * same whatever order the files were discovered or the rules ran in.
 */
export function sortDiagnostics(diagnostics: readonly Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  const unique: Diagnostic[] = [];
  for (const d of diagnostics) {
    const key = JSON.stringify([d.code, d.message, d.location, d.related, d.hint]);
    if (seen.has(key)) continue;
    seen.add(key);
    unique.push(d);
  }
  // Sort for determinism.
  return unique.sort(
    (a, b) =>
      compareStrings(locationKey(a.location), locationKey(b.location)) ||
      compareStrings(a.code, b.code) ||
      compareStrings(a.message, b.message),
  );
}
