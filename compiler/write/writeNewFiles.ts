import fs from "node:fs";
import path from "node:path";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, StageResult } from "../diagnostics/diagnostic.js";
import type { FileMap } from "../render/renderModules.js";

/**
 * Writes files that must not exist yet (`init`, ADR 0018) into the folder `target` (created when
 * missing). Every path is checked first: when any exists (a file, a folder or a link), or
 * `target` itself is not a folder, nothing is written and each is CA9901. Reported paths are
 * prefixed with `shown` (the folder as the user named it; "" or "." for none).
 *
 * @returns The paths written, as reported; all of them or none (a failure part-way is CA9003,
 *   and the files written before it are removed again).
 */
export function writeNewFiles(target: string, files: FileMap, shown: string): StageResult<string[]> {
  const display = (relative: string): string => (shown === "" || shown === "." ? relative : relative === "" ? shown : `${shown.replace(/\/+$/, "")}/${relative}`);
  const at = (relative: string) => ({ file: display(relative) === "" ? "." : display(relative), line: 1, column: 1 });
  const exists = (full: string): fs.Stats | undefined => {
    try {
      return fs.lstatSync(full);
    } catch {
      return undefined;
    }
  };
  const folder = exists(target);
  if (folder && !folder.isDirectory()) return { value: [], diagnostics: [createDiagnostic(Diagnostics.InitWouldOverwrite, {}, at(""))] };
  const diagnostics: Diagnostic[] = [];
  for (const relative of files.keys()) {
    if (exists(path.join(target, ...relative.split("/")))) diagnostics.push(createDiagnostic(Diagnostics.InitWouldOverwrite, {}, at(relative)));
  }
  if (diagnostics.length > 0) return { value: [], diagnostics };
  const written: string[] = [];
  let current = "";
  try {
    for (const [relative, text] of files) {
      current = relative;
      const full = path.join(target, ...relative.split("/"));
      fs.mkdirSync(path.dirname(full), { recursive: true });
      // "wx": a file that appeared since the check is still never overwritten.
      fs.writeFileSync(full, text, { flag: "wx" });
      written.push(relative);
    }
  } catch (error) {
    for (const relative of written) fs.rmSync(path.join(target, ...relative.split("/")), { force: true });
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    return { value: [], diagnostics: [createDiagnostic(Diagnostics.WriteFailed, { path: display(current), reason }, at(current))] };
  }
  return { value: written.map(display), diagnostics: [] };
}
