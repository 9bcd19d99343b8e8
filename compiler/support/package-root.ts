import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

let cached: string | undefined;

/**
 * The folder of the compiler's own package.json (found upward from this file), so templates and
 * the version are found both from the TypeScript sources and from the built `dist/`.
 */
export function packageRoot(): string {
  if (cached) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (fs.existsSync(path.join(dir, "package.json")) && fs.existsSync(path.join(dir, "templates"))) return (cached = dir);
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("contract-assets: cannot find the package root");
    dir = parent;
  }
}
