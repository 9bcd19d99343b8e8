import { spawnSync } from "node:child_process";
import path from "node:path";
import type { Diagnostic, SourceLocation } from "../diagnostics/diagnostic.js";
import { hasErrors, sortDiagnostics } from "../diagnostics/diagnostic.js";
import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import { formatDiagnostics, type DiagnosticFormat } from "../diagnostics/format.js";
import type { LinkedContract, LinkedProject } from "../link/linkProject.js";
import { pathExists } from "../discover/discoverProject.js";
import type { Manifest } from "../manifest/buildManifest.js";
import { canonicalJson } from "../support/canonical-json.js";
import { packageRoot } from "../support/package-root.js";

/** What preflight needs of a compile (`pipeline.compileProject`'s result). */
export interface CompiledProject {
  diagnostics: Diagnostic[];
  sources: Map<string, string>;
  project?: LinkedProject;
  manifest?: Manifest;
}

/** One finding of `python -m contract_runtime.preflight` (see that module's doc). */
interface Finding {
  check: "entrypoint" | "sql" | "quality_sql" | "connection";
  severity: "error" | "warning" | "info";
  dag_id: string;
  pointer: Array<string | number>;
  message: string;
  detail?: string;
  file?: string;
  sql_line?: number | null;
  sql_column?: number | null;
  conn_id?: string;
}

/** One module's import time as `python -m contract_runtime.preflight` measures it (`import_times`). */
export interface ImportTime {
  module: string;
  /** Seconds; null when the module does not import. */
  seconds: number | null;
  error: string | null;
  /** The DAGs that import it, sorted. */
  dag_ids: string[];
}

/**
 * The import-time report printed after preflight's summary: one line per module, in the runtime's
 * order (the operators every DAG module imports, the producer modules, the python entrypoints),
 * with its seconds (3 decimals) and the DAGs that import it (the first three named, then a count).
 */
export function formatImportTimes(imports: readonly ImportTime[], python: string): string {
  if (imports.length === 0) return "";
  const width = Math.max(...imports.map((i) => i.module.length));
  const lines = imports.map((i) => {
    const shown = i.dag_ids.slice(0, 3).join(", ") + (i.dag_ids.length > 3 ? ` and ${i.dag_ids.length - 3} more` : "");
    const time = i.seconds === null ? `does not import (${i.error ?? "unknown error"})` : `${i.seconds.toFixed(3)} s`;
    return `  ${i.module.padEnd(width)}  ${time}  imported by ${shown}\n`;
  });
  return `preflight: import time of each module the DAGs import, in ${python} (each once: what an earlier one imported is not counted again):\n${lines.join("")}`;
}

export interface PreflightOptions {
  root: string;
  format: DiagnosticFormat;
  /** The runtime's Python; default `$CONTRACT_ASSETS_PYTHON`, the project's `.venv`, this package's `.venv`, `python3`. */
  python?: string;
  /** Skip the Airflow Connection lookups (a CI job without the deployment's secrets). */
  connections: boolean;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** The interpreter of the runtime's environment (see `PreflightOptions.python`). */
export function runtimePython(root: string, given?: string): string {
  if (given) return given;
  if (process.env.CONTRACT_ASSETS_PYTHON) return process.env.CONTRACT_ASSETS_PYTHON;
  for (const base of [root, packageRoot()]) {
    const candidate = path.join(base, ".venv", "bin", "python");
    if (pathExists(candidate)) return candidate;
  }
  return "python3";
}

function locationOf(contract: LinkedContract | undefined, finding: Finding): SourceLocation | undefined {
  if (finding.check === "sql" && finding.file && finding.sql_line) {
    return { file: finding.file, line: finding.sql_line, column: finding.sql_column ?? 1 };
  }
  if (!contract) return undefined;
  return contract.located.source.locate(finding.pointer);
}

function toDiagnostic(contract: LinkedContract | undefined, finding: Finding): Diagnostic {
  const at = locationOf(contract, finding);
  const detail = finding.detail ?? "";
  switch (finding.check) {
    case "entrypoint": {
      const producer = contract?.contract.kind === "TransformContract" ? contract.contract.producer : undefined;
      const entrypoint = producer?.type === "python" ? producer.entrypoint : "?";
      return createDiagnostic(Diagnostics.PreflightEntrypoint, { entrypoint, detail }, at);
    }
    case "sql":
      if (finding.severity === "info") return createDiagnostic(Diagnostics.PreflightSqlNotParsed, { detail: finding.message }, at);
      return createDiagnostic(Diagnostics.PreflightSqlParse, { detail }, at);
    case "quality_sql": {
      const [, d, , r] = finding.pointer;
      const rule = contract?.contract.datasets[Number(d)]?.quality?.[Number(r)];
      return createDiagnostic(Diagnostics.PreflightQualitySqlParse, { rule: rule?.name ?? `#${Number(r) + 1}`, detail }, at);
    }
    case "connection":
      if (finding.pointer[0] === "id") return createDiagnostic(Diagnostics.PreflightWarehouseConnectionMissing, { connId: finding.conn_id ?? "?" }, at);
      return createDiagnostic(Diagnostics.PreflightConnectionMissing, { connId: finding.conn_id ?? "?", detail }, at);
  }
}

/**
 * `contract-assets preflight`: compile in memory, then run `python -m contract_runtime.preflight`
 * in the runtime's environment on the manifest (through stdin) and report its findings as located
 * diagnostics: an entrypoint that does not import (CA8801) at `producer.entrypoint`, a SQL producer
 * that does not parse (CA8802) at the line and column in its file, a quality query that does not
 * parse (CA8803) at its `query`, a named Connection that does not exist (CA8804, a warehouse
 * Connection CA8805); then the import time of each module the DAGs import (`formatImportTimes`). Exit 0, 1 on errors (compile errors included), 2 when the runtime
 * cannot run it (CA8806).
 */
export function runPreflightCommand(result: CompiledProject, options: PreflightOptions): number {
  const sources = new Map(result.sources);
  const print = (diagnostics: Diagnostic[]): void => {
    const text = formatDiagnostics(sortDiagnostics(diagnostics), options.format, (f) => sources.get(f));
    if (options.format === "text") options.stderr(text);
    else options.stdout(text);
  };
  if (hasErrors(result.diagnostics) || !result.project || !result.manifest) {
    print(result.diagnostics);
    return 1;
  }
  for (const [file, text] of result.project.producerFiles) sources.set(file, text);
  const python = runtimePython(options.root, options.python);
  const args = ["-m", "contract_runtime.preflight", "--manifest", "-", ...(options.connections ? [] : ["--no-connections"])];
  const run = spawnSync(python, args, { cwd: options.root, input: canonicalJson(result.manifest), encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  let findings: Finding[] | undefined;
  let imports: ImportTime[] = [];
  if (run.status === 0) {
    try {
      const output = JSON.parse(run.stdout.trim().split("\n").pop() ?? "") as { findings: Finding[]; imports?: ImportTime[] };
      findings = output.findings;
      imports = output.imports ?? [];
    } catch {
      findings = undefined;
    }
  }
  if (!findings) {
    const why = run.error ? run.error.message : (run.stderr || run.stdout || `exit ${run.status}`).trim().split("\n").slice(-1)[0]!;
    print([createDiagnostic(Diagnostics.PreflightNotRun, { detail: `${python}: ${why}` }, undefined)]);
    return 2;
  }
  const byId = new Map(result.project.contracts.map((c) => [c.contract.id, c]));
  const diagnostics = [...result.diagnostics, ...findings.map((f) => toDiagnostic(byId.get(f.dag_id), f))];
  print(diagnostics);
  const errors = diagnostics.filter((d) => d.severity === "error").length;
  const dags = result.manifest.dags.length;
  options.stderr(`preflight: ${dags} DAGs checked in ${python}: ${errors} error(s), ${diagnostics.length - errors} other finding(s)\n`);
  options.stderr(formatImportTimes(imports, python));
  return errors > 0 ? 1 : 0;
}
