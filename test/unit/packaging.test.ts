import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { REPO } from "./helpers.js";

/** One release number, and one CI workflow for contracts repositories (ADR 0018). */
describe("packaging", () => {
  it("gives the compiler and the runtime the same version", () => {
    const compiler = (JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string }).version;
    const pyproject = /^version = "([^"]+)"$/m.exec(fs.readFileSync(path.join(REPO, "orchestration", "pyproject.toml"), "utf8"))?.[1];
    const runtime = /^__version__: str = "([^"]+)"$/m.exec(fs.readFileSync(path.join(REPO, "orchestration", "contract_runtime", "__init__.py"), "utf8"))?.[1];
    expect(pyproject).toBe(compiler);
    expect(runtime).toBe(compiler);
  });

  it("writes, with init, the workflow of this repository but for how the runtime's Python is built", () => {
    type Workflow = { jobs: Record<string, { steps: Array<Record<string, unknown>> }> } & Record<string, unknown>;
    const ours = parse(fs.readFileSync(path.join(REPO, ".github", "workflows", "contract-assets.yml"), "utf8")) as Workflow;
    const init = parse(fs.readFileSync(path.join(REPO, "templates", "init", "github", "workflows", "contract-assets.yml"), "utf8")) as Workflow;
    const runtimeStep = "Runtime environment (the workers' Python, with contract_runtime)";
    const without = (w: Workflow): unknown =>
      Object.values(w.jobs)[0]!.steps.filter((s) => s.name !== runtimeStep && s.uses !== "actions/setup-python@v5");
    expect(without(init)).toEqual(without(ours));
    expect({ ...init, jobs: undefined }).toEqual({ ...ours, jobs: undefined });
    const step = (w: Workflow): unknown => Object.values(w.jobs)[0]!.steps.find((s) => s.name === runtimeStep)?.run;
    expect(step(ours)).toBe("bash scripts/python-env.sh");
    expect(step(init)).toBe("python -m venv .venv && .venv/bin/pip install -r requirements.txt");
  });
});
