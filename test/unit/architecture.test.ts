import { cruise } from "dependency-cruiser";
import extractTSConfig from "dependency-cruiser/config-utl/extract-ts-config";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Diagnostics, listCodes } from "../../compiler/diagnostics/catalogue.js";
import { LINK_RULES } from "../../compiler/link/rules/index.js";
import { DOCUMENT_RULES } from "../../compiler/validate/rules/index.js";
import { REPO } from "./helpers.js";

const COMPILER = path.join(REPO, "compiler");
const require = createRequire(import.meta.url);

function sources(): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.name.endsWith(".ts")) out.set(path.relative(COMPILER, full).split(path.sep).join("/"), fs.readFileSync(full, "utf8"));
    }
  };
  walk(COMPILER);
  return out;
}

/** The text of every Python file of the runtime and the scripts. */
function pythonSources(): string {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, e.name);
      if (e.isDirectory() && e.name !== "__pycache__") walk(full);
      else if (e.name.endsWith(".py")) out.push(fs.readFileSync(full, "utf8"));
    }
  };
  walk(path.join(REPO, "orchestration"));
  walk(path.join(REPO, "scripts"));
  return out.join("\n");
}

describe("architecture", () => {
  it("imports flow one way, in no cycle (dependency-cruiser over ARCHITECTURE.md's compiler-layers)", async () => {
    const config = require(path.join(REPO, ".dependency-cruiser.cjs")) as { forbidden: unknown[]; options: Record<string, unknown> };
    const result = await cruise(["compiler"], { ...config.options, baseDir: REPO, ruleSet: { forbidden: config.forbidden }, validate: true } as never, undefined, {
      tsConfig: extractTSConfig(path.join(REPO, "tsconfig.json")),
    });
    if (typeof result.output === "string") throw new Error("dependency-cruiser returned text, not a result");
    const violations = result.output.summary.violations.map((v) => `${v.rule.name}: ${[v.from, ...(v.cycle?.map((c) => c.name) ?? [v.to])].join(" -> ")}`);
    expect(violations).toEqual([]);
    // Every top-level folder and file of compiler/ was cruised (the rules would pass on nothing).
    expect(result.output.summary.totalCruised).toBeGreaterThan(100);
  });

  it("refuses an upward import, a cycle and a support module that imports the project", async () => {
    const config = require(path.join(REPO, ".dependency-cruiser.cjs")) as { forbidden: unknown[]; options: Record<string, unknown> };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ca-layers-"));
    const root = path.join(dir, "compiler");
    const put = (file: string, text: string): void => {
      fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      fs.writeFileSync(path.join(root, file), text);
    };
    put("support/leaf.ts", 'import { x } from "../diagnostics/catalogue.js";\nexport const y = x;\n');
    put("diagnostics/catalogue.ts", "export const x = 1;\n");
    put("parse/a.ts", 'import { w } from "../write/w.js";\nimport { b } from "./b.js";\nexport const a = w + b;\n');
    // The cycle closes through a type-only import, which a runtime check would never see.
    put("parse/b.ts", 'import type { a } from "./a.js";\nexport const b = 2;\nexport type A = typeof a;\n');
    put("write/w.ts", "export const w = 3;\n");
    fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext" } }));
    try {
      const result = await cruise(["compiler"], { ...config.options, baseDir: dir, ruleSet: { forbidden: config.forbidden }, validate: true } as never, undefined, {
        tsConfig: extractTSConfig(path.join(dir, "tsconfig.json")),
      });
      if (typeof result.output === "string") throw new Error("dependency-cruiser returned text, not a result");
      const names = new Set(result.output.summary.violations.map((v) => `${v.rule.name} ${v.from}`));
      expect(names).toEqual(
        new Set([
          "support-is-a-leaf compiler/support/leaf.ts",
          "layer-model-version-ts-support compiler/support/leaf.ts",
          "layer-parse compiler/parse/a.ts",
          "no-circular compiler/parse/a.ts",
        ]),
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("has one catalogue of unique, well-formed codes, each used by the compiler", () => {
    const codes = listCodes();
    expect(new Set(codes.map((c) => c.code)).size).toBe(codes.length);
    for (const c of codes) expect(c.code).toMatch(/^CA\d{4}$/);
    const text = [...sources()].filter(([f]) => f !== "diagnostics/catalogue.ts").map(([, t]) => t).join("\n");
    const unused = Object.keys(Diagnostics).filter((name) => !text.includes(`Diagnostics.${name}`));
    expect(unused).toEqual([]);
  });

  it("keeps one rule per file, named <Adjective><Subject>Rule, each listed once", () => {
    for (const [folder, rules] of [["validate/rules", DOCUMENT_RULES], ["link/rules", LINK_RULES]] as const) {
      const files = fs
        .readdirSync(path.join(COMPILER, folder))
        .filter((f) => f.endsWith("Rule.ts"))
        .map((f) => f.replace(/\.ts$/, ""))
        .sort();
      expect(rules.map((r) => r.name).sort(), folder).toEqual(files);
      for (const name of files) {
        expect(name).toMatch(/^[A-Z][a-z]+[A-Z][A-Za-z]*Rule$/);
        const text = fs.readFileSync(path.join(COMPILER, folder, `${name}.ts`), "utf8");
        expect(text, `${name} states its rule and why`).toMatch(/\/\*\*[^]*?Why[^]*?\*\//);
      }
    }
  });

  it("reports link findings only from link rules", () => {
    // The asset table and resolution decide; the rules of link/rules report (ARCHITECTURE.md, link).
    for (const [file, text] of sources()) {
      if (!file.startsWith("link/") || file.startsWith("link/rules/") || file === "link/assetTable.ts") continue;
      expect(text, file).not.toContain("createDiagnostic(");
    }
  });

  it("lists every catalogue code with its severity in the docs' code table, and no other", () => {
    const doc = fs.readFileSync(path.join(REPO, "docs", "contract-format.md"), "utf8");
    const table = [...doc.matchAll(/^\| (CA\d{4}) \| (error|warning|info) \|/gm)].map((m) => `${m[1]} ${m[2]}`);
    expect(table).toEqual(listCodes().map((c) => `${c.code} ${c.severity}`).sort());
  });

  it("names in ARCHITECTURE.md only functions and types that exist", () => {
    const doc = fs.readFileSync(path.join(REPO, "ARCHITECTURE.md"), "utf8");
    const ts = [...sources().values()].join("\n");
    const python = pythonSources();
    // camelCase names in backticks are TypeScript symbols; snake_case ones followed by "()" or
    // naming a module's function are Python (checked against `def`).
    // Names of libraries the document cites (ajv's error field), not ours.
    const external = new Set(["instancePath"]);
    const camel = new Set([...doc.matchAll(/`([a-z]+[A-Z][A-Za-z0-9]*)(?:\(\))?`/g)].map((m) => m[1]!).filter((n) => !external.has(n)));
    const missingTs = [...camel].filter((n) => !new RegExp(`(function|const|let|class|interface|type)\\s+${n}\\b|\\b${n}\\s*[:(]`).test(ts) && !python.includes(`def ${n}(`) && !python.includes(`${n} =`));
    expect(missingTs, "camelCase names of ARCHITECTURE.md that no source defines").toEqual([]);
    const snakeCalls = new Set([...doc.matchAll(/`(?:[a-z_]+\.)?([a-z]+_[a-z_]+)\(\)`/g)].map((m) => m[1]!));
    const missingPy = [...snakeCalls].filter((n) => !python.includes(`def ${n}(`));
    expect(missingPy, "Python functions of ARCHITECTURE.md that the runtime does not define").toEqual([]);
  });

  it("reads only in discover and writes only in write (ARCHITECTURE.md, the pipeline)", () => {
    // Any way to the file system or another process: node:fs (and its promises), fast-glob,
    // node:child_process, a CommonJS require (which reads files).
    const io = /from\s+["'](?:node:)?(?:fs|fs\/promises|child_process)["']|from\s+["']fast-glob["']|import\(\s*["'](?:node:)?(?:fs|fs\/promises|child_process)["']\s*\)|\bcreateRequire\b|\brequire\(/;
    const allowed: Record<string, string> = {
      // The compiler's own files (templates, schemas, package.json), never the project's: readPackageFile.
      "support/package-root.ts": "package files",
      // Runs the runtime's Python (python -m contract_runtime.preflight), as airflow/ talks to a server.
      "report/preflightCommand.ts": "the preflight process",
    };
    const readers = [...sources()].filter(([file, text]) => !file.startsWith("discover/") && !file.startsWith("write/") && !(file in allowed) && io.test(text)).map(([file]) => file);
    expect(readers, "modules outside discover/ and write/ that reach the file system").toEqual([]);
    const writes = /\bfs\.(?:writeFile|writeFileSync|appendFile|appendFileSync|rename|renameSync|rm|rmSync|rmdirSync|unlink|unlinkSync|mkdir|mkdirSync|copyFile|copyFileSync|cp|cpSync|symlink|symlinkSync|truncate|truncateSync)\b/;
    const writers = [...sources()].filter(([file, text]) => !file.startsWith("write/") && writes.test(text)).map(([file]) => file);
    expect(writers, "modules outside write/ that write the file system").toEqual([]);
    // The package-file reader reads only below the package root.
    expect(sources().get("support/package-root.ts")).toMatch(/readFileSync\(path\.join\(packageRoot\(\)/);
  });

  it("makes diagnostics only through the catalogue", () => {
    for (const [file, text] of sources()) {
      if (file.startsWith("diagnostics/")) continue;
      expect(text, file).not.toMatch(/code:\s*"CA\d{4}"/);
    }
  });

  it("keeps engine code free of product literals (DESIGN §2.2)", () => {
    const corpusNames = ["billing", "revrec", "invoices_raw", "team-finance"];
    for (const [file, text] of sources()) for (const name of corpusNames) expect(text.includes(name), `${file} mentions ${name}`).toBe(false);
  });
});
