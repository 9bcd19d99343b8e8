import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { defaultLayout } from "../../compiler/discover/discoverProject.js";
import { compileProject } from "../../compiler/pipeline.js";
import { openWrite } from "../../compiler/write/writeOutputs.js";
import { copyBundledProject, exitedProcessId, snapshot, tree } from "./helpers.js";

// The write stage fed file by file as render produces them (ADR 0017i): no rendered text is kept
// by a write, and the write is as atomic as when it was handed the whole map (ADR 0004): a target
// found blocked, or a failure while staging, after other files were staged leaves the output
// folder as it was, temporaries and the folders made for them removed.

const roots: string[] = [];
function project(): string {
  const root = copyBundledProject();
  roots.push(root);
  return root;
}

afterEach(() => {
  vi.restoreAllMocks();
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

describe("a compile that writes", () => {
  it("keeps no rendered file unless asked, and writes exactly the files a render-only compile gives", () => {
    const root = project();
    const layout = defaultLayout(root);
    const rendered = compileProject(layout).files!;
    expect(rendered.size).toBeGreaterThan(10);
    const cold = compileProject(layout, { write: "write" });
    expect(cold.files).toBeUndefined();
    expect(cold.written!.written).toEqual([...rendered.keys()].sort());
    expect(cold.written!.deleted).toEqual([]);
    // Nothing but the targets: no temporary left, none taken for a stale module.
    const onDisk = tree(path.join(root, "generated")).filter((p) => !p.endsWith("/"));
    expect(onDisk.map((p) => `generated/${p}`)).toEqual([...rendered.keys()].sort());
    for (const [file, text] of rendered) expect(fs.readFileSync(path.join(root, file), "utf8"), file).toBe(text);
    const kept = compileProject(layout, { write: "check", keepFiles: true });
    expect(kept.files).toEqual(rendered);
    expect(kept.written!.unchanged.length).toBe(rendered.size);
  });

  it("deletes the temporaries a killed write left beside the files it renders, whatever they hold", () => {
    const root = project();
    const layout = defaultLayout(root);
    compileProject(layout, { write: "write" });
    const module = [...compileProject(layout).files!.keys()].find((f) => f.startsWith("generated/dags/"))!;
    // Left by a write killed before its renames: the manifest's (JSON, no header) and a module's
    // killed before its first byte (empty); and one beside no rendered file, which stays foreign.
    const pid = exitedProcessId();
    const left = { manifest: `generated/manifest.json.tmp-${pid}-0a1b2c3d`, module: `${module}.tmp-${pid}-0a1b2c3d` };
    fs.writeFileSync(path.join(root, left.manifest), '{\n  "manifestVersion": 2\n');
    fs.writeFileSync(path.join(root, left.module), "");
    fs.writeFileSync(path.join(root, `generated/notes.txt.tmp-${pid}-0a1b2c3d`), "kept\n");
    const check = compileProject(layout, { write: "check" });
    expect(check.written!.deleted).toEqual([left.manifest, left.module].sort());
    expect(check.diagnostics.filter((d) => d.code === "CA9001").map((d) => d.location?.file)).toEqual([left.manifest, left.module].sort());
    const written = compileProject(layout, { write: "write" });
    expect(written.written!.deleted).toEqual([left.manifest, left.module].sort());
    expect(written.written!.foreign).toEqual([`generated/notes.txt.tmp-${pid}-0a1b2c3d`]);
    for (const file of Object.values(left)) expect(fs.existsSync(path.join(root, file)), file).toBe(false);
    expect(fs.readFileSync(path.join(root, `generated/notes.txt.tmp-${pid}-0a1b2c3d`), "utf8")).toBe("kept\n");
  });

  it("leaves the temporaries of a compile still writing in another process where they are, unless they are ten minutes old", () => {
    const root = project();
    const layout = defaultLayout(root);
    compileProject(layout, { write: "write" });
    const module = [...compileProject(layout).files!.keys()].find((f) => f.startsWith("generated/dags/"))!;
    // Staged by another compile of the same project, whose process (this one's parent) is running:
    // it renames them next, so they are neither deleted nor reported, by --check or by a write.
    const running = process.ppid;
    const theirs = { manifest: `generated/manifest.json.tmp-${running}-0a1b2c3d`, module: `${module}.tmp-${running}-0a1b2c3d`, other: `generated/notes.txt.tmp-${running}-0a1b2c3d` };
    const old = `${module}.tmp-${running}-0e0e0e0e`;
    for (const file of [...Object.values(theirs), old]) fs.writeFileSync(path.join(root, file), "");
    // One as old as no write of a compile runs: left over, whatever its name says.
    fs.utimesSync(path.join(root, old), new Date(Date.now() - 11 * 60_000), new Date(Date.now() - 11 * 60_000));
    const check = compileProject(layout, { write: "check" });
    expect(check.written!.deleted).toEqual([old]);
    expect(check.written!.foreign).toEqual([]);
    const written = compileProject(layout, { write: "write" });
    expect(written.written!.deleted).toEqual([old]);
    expect(written.written!.foreign).toEqual([]);
    for (const file of Object.values(theirs)) expect(fs.existsSync(path.join(root, file)), file).toBe(true);
    expect(fs.existsSync(path.join(root, old))).toBe(false);
  });

  it("leaves the output folder as it was when a target late in render order is blocked", () => {
    const root = project();
    const layout = defaultLayout(root);
    const files = [...compileProject(layout).files!.keys()];
    // The last DAG module rendered (before the freshness monitor's): every other file is staged first.
    const blocked = files.filter((f) => f.startsWith("generated/dags/") && f.split("/").length === 4).at(-1)!;
    fs.mkdirSync(path.join(root, blocked), { recursive: true });
    fs.writeFileSync(path.join(root, blocked, "keep.txt"), "a folder where a module must go\n");
    const before = tree(path.join(root, "generated"));
    const open = fs.openSync;
    let temporaries = 0;
    vi.spyOn(fs, "openSync").mockImplementation(((file: fs.PathLike, flags?: fs.OpenMode, mode?: fs.Mode) => {
      if (flags === "w" && String(file).includes(".tmp-")) temporaries++;
      return open(file, flags, mode);
    }) as typeof fs.openSync);
    const result = compileProject(layout, { write: "write" });
    // The other files were staged before the blocked target was reached, then removed.
    expect(temporaries).toBe(files.length - 2);
    expect(result.diagnostics.filter((d) => d.severity === "error").map((d) => [d.code, d.location?.file, d.message])).toEqual([
      ["CA9003", blocked, expect.stringContaining("it is not a regular file")],
    ]);
    expect(result.written!.written).toEqual([]);
    expect(tree(path.join(root, "generated"))).toEqual(before);
  });

  it("removes what it staged, and the folders it made, when staging a file fails", () => {
    const root = project();
    const layout = defaultLayout(root);
    const open = fs.openSync;
    let temporaries = 0;
    let failedAt: string | undefined;
    vi.spyOn(fs, "openSync").mockImplementation(((file: fs.PathLike, flags?: fs.OpenMode, mode?: fs.Mode) => {
      if (flags === "w" && String(file).includes(".tmp-") && ++temporaries === 6) {
        failedAt = String(file);
        throw Object.assign(new Error("no space left on device"), { code: "ENOSPC" });
      }
      return open(file, flags, mode);
    }) as typeof fs.openSync);
    const result = compileProject(layout, { write: "write" });
    expect(failedAt).toBeDefined();
    const failed = path.relative(root, failedAt!.replace(/\.tmp-.*$/, "")).split(path.sep).join("/");
    expect(result.diagnostics.filter((d) => d.severity === "error").map((d) => [d.code, d.location?.file, d.message])).toEqual([
      ["CA9003", failed, expect.stringContaining("ENOSPC")],
    ]);
    expect(result.written!.written).toEqual([]);
    // A first compile: generated/ did not exist, and still does not.
    expect(fs.existsSync(path.join(root, "generated"))).toBe(false);

    // Over an existing output: the files already there keep their bytes, and nothing is added.
    vi.restoreAllMocks();
    compileProject(layout, { write: "write" });
    const contract = path.join(root, "contracts", "finance", "invoices_curated.yaml");
    fs.writeFileSync(contract, fs.readFileSync(contract, "utf8").replace(/^description: .*$/m, "description: Changed by the test."));
    const before = snapshot(path.join(root, "generated"));
    const folders = tree(path.join(root, "generated"));
    temporaries = 0;
    vi.spyOn(fs, "openSync").mockImplementation(((file: fs.PathLike, flags?: fs.OpenMode, mode?: fs.Mode) => {
      if (flags === "w" && String(file).includes(".tmp-") && ++temporaries === 2) throw Object.assign(new Error("input/output error"), { code: "EIO" });
      return open(file, flags, mode);
    }) as typeof fs.openSync);
    const again = compileProject(layout, { write: "write" });
    expect(again.diagnostics.filter((d) => d.severity === "error").map((d) => d.code)).toEqual(["CA9003"]);
    expect(snapshot(path.join(root, "generated"))).toEqual(before);
    expect(tree(path.join(root, "generated"))).toEqual(folders);
  });
});

describe("openWrite", () => {
  it("removes every staged temporary on discard, and lets each known text go once its file is added", () => {
    const root = project();
    const layout = defaultLayout(root);
    fs.mkdirSync(path.join(root, "generated", "dags"), { recursive: true });
    fs.writeFileSync(path.join(root, "generated", "manifest.json"), "{}\n");
    const known = new Map([["generated/manifest.json", "{}\n"]]);
    const write = openWrite(layout, { check: false, known });
    write.add("generated/manifest.json", "{}\n");
    expect(known.size).toBe(0);
    write.add("generated/dags/a/one.py", "# Generated by contract-assets test\n");
    write.add("generated/dags/b/two.py", "# Generated by contract-assets test\n");
    expect(tree(path.join(root, "generated")).filter((p) => p.includes(".tmp-")).length).toBe(2);
    write.discard();
    expect(tree(path.join(root, "generated"))).toEqual(["dags/", "manifest.json"]);
    expect(() => write.add("generated/dags/c.py", "")).toThrow(/after the write ended/);
  });
});
