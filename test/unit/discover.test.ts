import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultLayout, discoverProject, MAX_FILE_BYTES } from "../../compiler/discover/discoverProject.js";
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
