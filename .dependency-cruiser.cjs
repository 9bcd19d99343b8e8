// dependency-cruiser's rules for compiler/: no import cycle, and the layers of ARCHITECTURE.md
// ("Layering", the `compiler-layers` block, top first), read from there so they are written once.
// Run by test/unit/architecture.test.ts (npm test); by hand: npx depcruise compiler
const fs = require("node:fs");
const path = require("node:path");

/** The `compiler-layers` block of ARCHITECTURE.md: one array of names per line, top first. */
function compilerLayers() {
  const text = fs.readFileSync(path.join(__dirname, "ARCHITECTURE.md"), "utf8");
  const block = /```text compiler-layers\n([\s\S]*?)```/.exec(text);
  if (!block) throw new Error("ARCHITECTURE.md has no ```text compiler-layers block");
  return block[1].split("\n").map((line) => line.trim().split(/\s+/).filter(Boolean)).filter((names) => names.length > 0);
}

const escape = (name) => name.replace(/[.]/g, "\\.");
/** A path pattern for the top-level folders or files `names` of compiler/. */
const under = (names) => `^compiler/(${names.map(escape).join("|")})($|/)`;

const layers = compilerLayers();
const upward = layers.slice(1).map((names, i) => ({
  name: `layer-${names.join("-").replace(/\W+/g, "-")}`,
  comment: `${names.join(", ")} import only their own line of ARCHITECTURE.md's compiler-layers or lines below it`,
  severity: "error",
  from: { path: under(names) },
  to: { path: under(layers.slice(0, i + 1).flat()) },
}));

module.exports = {
  forbidden: [
    { name: "no-circular", comment: "an import cycle, type-only imports included", severity: "error", from: {}, to: { circular: true } },
    {
      name: "support-is-a-leaf",
      comment: "compiler/support/ imports nothing of the project outside support/",
      severity: "error",
      from: { path: "^compiler/support/" },
      to: { path: "^compiler/", pathNot: "^compiler/support/" },
    },
    {
      name: "every-module-has-a-layer",
      comment: "a top-level folder or file of compiler/ missing from ARCHITECTURE.md's compiler-layers",
      severity: "error",
      from: { path: "^compiler/", pathNot: under(layers.flat()) },
      to: {},
    },
    ...upward,
  ],
  options: {
    includeOnly: "^compiler/",
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    doNotFollow: { path: "node_modules" },
  },
};
