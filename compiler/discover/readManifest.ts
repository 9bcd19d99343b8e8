import jsonc from "jsonc-parser";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, SourceLocation } from "../diagnostics/diagnostic.js";
import { MANIFEST_VERSION, type Manifest } from "../model/manifest.js";
import { checkManifest } from "./manifestSchema.js";

/** Why a manifest text cannot be used, and where: a UTF-16 offset into the text (0 when the whole text is at fault). */
export interface ManifestProblem {
  problem: string;
  offset: number;
}

/** The offset of the value a JSON pointer names (or of its nearest parent that exists), in a text that is valid JSON. */
function offsetOfPointer(text: string, pointer: string): number {
  const tree = jsonc.parseTree(text);
  if (!tree) return 0;
  const segments = pointer === "" || pointer === "/" ? [] : pointer.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
  for (let length = segments.length; length >= 0; length--) {
    const path = segments.slice(0, length).map((s) => (/^\d+$/.test(s) ? Number(s) : s));
    const node = jsonc.findNodeAtLocation(tree, path);
    if (node) return node.offset;
  }
  return 0;
}

/** Where strict JSON parsing failed: the first error jsonc-parser finds, else V8's own position, else the start. */
function offsetOfSyntaxError(text: string, message: string): number {
  const errors: jsonc.ParseError[] = [];
  jsonc.parseTree(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  if (errors[0]) return errors[0].offset;
  const position = /at position (\d+)/.exec(message);
  return position ? Number(position[1]) : 0;
}

/**
 * Reads a manifest written by this compiler (the previous state of a diff, the input of `stale`).
 *
 * Returns the manifest, or a one-line reason when the text is not JSON, of a `manifestVersion`
 * this compiler does not know, or not valid against the manifest schema of its version (the
 * reason then names the offending field by JSON pointer), with the offset of the fault in the text.
 * Valid manifests are parsed once with `JSON.parse`; the text is walked again only to locate a fault.
 */
export function parseManifest(text: string): { manifest: Manifest; problem?: undefined } | ({ manifest?: undefined } & ManifestProblem) {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message.split("\n")[0] ?? "";
    // The location says where; V8's offset would only repeat it.
    return { problem: `not JSON (${message.replace(/ in JSON at position \d+.*$/, "")})`, offset: offsetOfSyntaxError(text, message) };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return { problem: "not a JSON object", offset: offsetOfPointer(text, "") };
  const version = (value as { manifestVersion?: unknown }).manifestVersion;
  if (version !== MANIFEST_VERSION) {
    return {
      problem: `manifestVersion ${JSON.stringify(version)} is not ${MANIFEST_VERSION}; compile it again with this compiler`,
      offset: offsetOfPointer(text, "/manifestVersion"),
    };
  }
  const checked = checkManifest(value);
  if (checked.manifest) return { manifest: checked.manifest };
  return { problem: `not a contract-assets manifest: ${checked.problem}`, offset: offsetOfPointer(text, checked.pointer) };
}

/** 1-based line and column (UTF-16 code units, as every diagnostic counts) of an offset. */
function locationAt(file: string, text: string, offset: number): SourceLocation {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { file, line, column: offset - lineStart + 1 };
}

/**
 * The previous state of a compile, checked: the manifest of `file` (the output folder's, or one
 * committed at a Git ref), or CA1101 at the line and column of the fault when it is damaged (not
 * JSON, a foreign `manifestVersion`, not valid against the manifest schema). A damaged previous
 * manifest is never read as empty: that would report every asset as added and let a breaking
 * change through. With `force` (`compile --force`) CA1101 is a warning and the compile goes on
 * without a previous state, so `write` replaces the file.
 */
export function readPreviousManifest(file: { path: string; text: string }, force: boolean): { manifest?: Manifest; diagnostics: Diagnostic[] } {
  const parsed = parseManifest(file.text);
  if (parsed.manifest) return { manifest: parsed.manifest, diagnostics: [] };
  const hint = force
    ? "--force: the compile goes on without a previous state and rewrites it"
    : "restore it from Git, delete it to compile without a previous state, or run \"contract-assets compile --force\" to regenerate it";
  const diagnostic = createDiagnostic(Diagnostics.PreviousManifestDamaged, { path: file.path, problem: parsed.problem }, locationAt(file.path, file.text, parsed.offset), {
    hint,
    ...(force ? { severity: "warning" as const } : {}),
  });
  return { diagnostics: [diagnostic] };
}
