import { readPackageFile } from "./support/package-root.js";

/** The compiler's version, from package.json; written into generated headers and the manifest. */
export const COMPILER_VERSION: string = (JSON.parse(readPackageFile("package.json")) as { version: string }).version;
export const COMPILER_NAME = "contract-assets";
