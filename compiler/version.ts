import fs from "node:fs";
import path from "node:path";
import { packageRoot } from "./support/package-root.js";

/** The compiler's version, from package.json; written into generated headers and the manifest. */
export const COMPILER_VERSION: string = (JSON.parse(fs.readFileSync(path.join(packageRoot(), "package.json"), "utf8")) as { version: string }).version;
export const COMPILER_NAME = "contract-assets";
