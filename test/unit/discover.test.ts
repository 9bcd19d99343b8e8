import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { spawn, spawnSync } from "node:child_process";
import { describe, expect, it, vi } from "vitest";
import { defaultLayout, discoverProject, MAX_FILE_BYTES, readReferencedFiles } from "../../compiler/discover/discoverProject.js";
import { compileProject } from "../../compiler/pipeline.js";
import { copyBundledProject } from "./helpers.js";

describe("discover", () => {
  it("refuses a contract file over the size limit without reading it", () => {
    const root = copyBundledProject();
    const big = path.join(root, "contracts", "huge.yaml");
    fs.writeFileSync(big, "# " + "x".repeat(MAX_FILE_BYTES) + "\n");
    const result = discoverProject(defaultLayout(root));
    const d = result.diagnostics.find((x) => x.code === "CA1002");
    expect(d?.location).toEqual({ file: "contracts/huge.yaml", line: 1, column: 1 });
    expect(result.value.contracts.map((c) => c.path)).not.toContain("contracts/huge.yaml");
  });

  it("lists contracts sorted by path, .yaml and .yml alike", () => {
    const root = copyBundledProject();
    fs.writeFileSync(path.join(root, "contracts", "a.yml"), "x: 1\n");
    fs.writeFileSync(path.join(root, "contracts", "notes.txt"), "not a contract\n");
    const paths = discoverProject(defaultLayout(root)).value.contracts.map((c) => c.path);
    expect(paths[0]).toBe("contracts/a.yml");
    expect(paths).toEqual([...paths].sort());
    expect(paths).not.toContain("contracts/notes.txt");
  });

  it("reports a project without contracts", () => {
    const root = fs.mkdtempSync(path.join(copyBundledProject(), "empty-"));
    const result = discoverProject(defaultLayout(root));
    expect(result.diagnostics.map((d) => d.code)).toEqual(["CA1003", "CA1006"]);
  });
});

describe("the files contracts name", () => {
  it("reads regular files and links that stay inside the project, asking each folder's real path once", () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), "referenced-"));
    const root = path.join(base, "project");
    fs.mkdirSync(path.join(root, "sql", "a"), { recursive: true });
    fs.mkdirSync(path.join(root, "sql", "real"));
    fs.mkdirSync(path.join(base, "outside"));
    fs.writeFileSync(path.join(root, "sql", "a", "x.sql"), "select 1\r\n");
    fs.writeFileSync(path.join(root, "sql", "a", "y.sql"), "select 2\n");
    fs.writeFileSync(path.join(root, "sql", "real", "r.sql"), "select 3\n");
    fs.writeFileSync(path.join(base, "outside", "o.sql"), "select 4\n");
    fs.mkdirSync(path.join(root, "sql", "folder.sql"));
    const link = (target: string, at: string): void => fs.symlinkSync(target, path.join(root, at));
    link("x.sql", "sql/a/in.sql");
    link("../../../outside/o.sql", "sql/a/out.sql");
    link("../../outside", "sql/outdir");
    link("real", "sql/indir");
    link("loop_b", "sql/loop_a");
    link("loop_a", "sql/loop_b");
    link("nowhere", "sql/dangling.sql");
    link("a/x.sql", "sql/file_link");
    const paths = ["sql/a/x.sql", "sql/a/y.sql", "sql/a/in.sql", "sql/a/out.sql", "sql/outdir/o.sql", "sql/indir/r.sql", "sql/loop_a", "sql/loop_b/x.sql", "sql/dangling.sql", "sql/folder.sql", "sql/file_link", "sql/file_link/x.sql", "sql/a/missing.sql", "../outside/o.sql", "sql/a/../a/y.sql"];
    const realpath = vi.spyOn(fs, "realpathSync");
    try {
      const read = readReferencedFiles(root, paths);
      expect([...read.value]).toEqual([
        ["sql/a/../a/y.sql", "select 2\n"],
        ["sql/a/in.sql", "select 1\n"],
        ["sql/a/x.sql", "select 1\n"],
        ["sql/a/y.sql", "select 2\n"],
        ["sql/file_link", "select 1\n"],
        ["sql/indir/r.sql", "select 3\n"],
      ]);
      expect(read.diagnostics).toEqual([]);
      // The root, the folders sql/a, sql, sql/outdir, sql/indir, sql/loop_b and sql/file_link, and
      // the five links among the files (in, out, loop_a, dangling, file_link): not one per file (15).
      expect(realpath.mock.calls.length).toBe(12);
    } finally {
      realpath.mockRestore();
    }
  });
});

describe("the previous state", () => {
  it("is CA1001 when a FIFO stands in the output folder's manifest, with or without the cache, never a read that blocks", () => {
    for (const cache of [false, true]) {
      const root = copyBundledProject();
      fs.mkdirSync(path.join(root, "generated"), { recursive: true });
      if (cache) {
        // A warm cache, so that the record cache asks for the manifest's bytes before the manifest is built (ADR 0017p).
        expect(compileProject(defaultLayout(root), { cache: true, write: "write" }).diagnostics.filter((d) => d.severity === "error")).toEqual([]);
        fs.rmSync(path.join(root, "generated", "manifest.json"));
      }
      const fifo = path.join(root, "generated", "manifest.json");
      expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
      // Without the fix the read blocks this thread until a writer comes: this one opens the FIFO
      // after 10 s and writes nothing, so the test then fails (an empty manifest, CA1101) rather than hanging.
      const unblock = spawn("sh", ["-c", `sleep 10; : > "${fifo}"`], { stdio: "ignore" });
      try {
        const result = compileProject(defaultLayout(root), { write: "write", ...(cache ? { cache: true } : {}) });
        const errors = result.diagnostics.filter((d) => d.severity === "error").map((d) => `${d.code} ${d.location?.file}:${d.location?.line}:${d.location?.column} ${d.message}`);
        expect(errors).toEqual(["CA1001 generated/manifest.json:1:1 cannot read the file: not a regular file"]);
        expect(result.written).toBeUndefined();
        expect(fs.lstatSync(fifo).isFIFO()).toBe(true);
      } finally {
        unblock.kill();
      }
    }
  });

  it("is checked in the output folder too when a compile against a Git ref would overwrite it", () => {
    const root = copyBundledProject();
    fs.mkdirSync(path.join(root, "generated"), { recursive: true });
    const damaged = '{\n  "assets": [\n<<<<<<< HEAD\n';
    fs.writeFileSync(path.join(root, "generated", "manifest.json"), damaged);
    const result = compileProject(defaultLayout(root), { against: "HEAD", write: "write" });
    const found = result.diagnostics.filter((d) => d.code === "CA1101" || d.code === "CA7002").map((d) => `${d.code} ${d.severity} ${d.location ? `${d.location.file}:${d.location.line}:${d.location.column}` : "-"}`);
    // Not a Git repository: no previous state at HEAD (CA7002); the output folder's manifest is damaged (CA1101).
    expect(found).toEqual(["CA7002 error -", "CA1101 error generated/manifest.json:3:1"]);
    expect(result.written).toBeUndefined();
    expect(fs.readFileSync(path.join(root, "generated", "manifest.json"), "utf8")).toBe(damaged);
    // --force: both are warnings, and the compile regenerates the file.
    const forced = compileProject(defaultLayout(root), { against: "HEAD", write: "write", force: true });
    expect(forced.diagnostics.filter((d) => d.code === "CA1101" || d.code === "CA7002").map((d) => d.severity)).toEqual(["warning", "warning"]);
    expect(forced.written?.written).toContain("generated/manifest.json");
    expect(JSON.parse(fs.readFileSync(path.join(root, "generated", "manifest.json"), "utf8")).manifestVersion).toBe(2);
  });
});
