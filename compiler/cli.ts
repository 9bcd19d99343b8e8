import path from "node:path";
import { Command, InvalidArgumentError, Option } from "commander";
import type { AirflowCommandOptions } from "./report/airflowCommand.js";
import type { GraphFormat } from "./report/describeGraph.js";
import { isFolder } from "./discover/discoverProject.js";
import { COMPILER_VERSION } from "./version.js";

/** Exit codes (DESIGN §4): 0 ok, 1 errors in the input or --check drift, 2 usage or internal error. */
export const EXIT_OK = 0;
export const EXIT_INPUT = 1;
export const EXIT_INTERNAL = 2;

const REPORT_HINT = "please report it with the output of the same command run with --debug";

interface CommonOptions {
  root?: string;
  format?: "text" | "json" | "github";
  debug?: boolean;
  /** `--cache` (true), `--no-cache` (false), neither (undefined: see {@link usesCache}). */
  cache?: boolean;
}

/**
 * Whether a command uses the incremental cache (ADR 0017c): as `--cache` or `--no-cache` say;
 * without either, yes, except under CI (the `CI` variable set, and not to "false" or "0", as
 * GitHub Actions, GitLab CI and most others set it). A CI job starts from a fresh clone, where
 * the git-ignored cache is empty: writing it would only add time to `compile --check`, and a job
 * that keeps the folder between runs says `--cache`.
 */
export function usesCache(options: Pick<CommonOptions, "cache">, env: NodeJS.ProcessEnv = process.env): boolean {
  if (options.cache !== undefined) return options.cache;
  const ci = (env.CI ?? "").trim().toLowerCase();
  return ci === "" || ci === "false" || ci === "0";
}

/**
 * Where a command writes and how it ends: the process streams and exit code for the bin, a
 * capture for the golden command cases (`runCli`).
 */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  exit: (code: number) => void;
}

/** The bin's IO: the process streams; the exit code is set, not forced (pending output drains). */
export const PROCESS_IO: CliIo = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  exit: (code) => {
    process.exitCode = code;
  },
};

/** A usage error: one line on stderr, exit 2 (thrown through `guarded`). */
class UsageError extends Error {}

function rootOf(options: CommonOptions): string {
  if (options.root === "") throw new UsageError("--root needs a folder");
  const root = path.resolve(options.root ?? process.cwd());
  if (!isFolder(root)) throw new UsageError(`the project root ${JSON.stringify(options.root ?? root)} is not a folder`);
  return root;
}

/**
 * Runs one command and turns a thrown error (a bug: stages never throw on bad input) into one line
 * on stderr and exit 2; `--debug` adds the stack trace.
 */
export async function guarded(options: CommonOptions, body: () => Promise<number>, io: CliIo = PROCESS_IO): Promise<void> {
  try {
    io.exit(await body());
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`contract-assets: ${error.message}\n`);
      io.exit(EXIT_INTERNAL);
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    io.stderr(`contract-assets: internal error: ${message.split("\n")[0]} (${REPORT_HINT})\n`);
    if (options.debug && error instanceof Error && error.stack) io.stderr(error.stack + "\n");
    io.exit(EXIT_INTERNAL);
  }
}

interface CompileFlags extends CommonOptions {
  check?: boolean;
  diff?: boolean;
  against?: string;
  force?: boolean;
  workers?: number;
}

/** `--workers N`: a whole number from 0 (parse in the main thread) to 64. */
function parseWorkers(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 64) throw new InvalidArgumentError("give a whole number from 0 to 64.");
  return Number(value);
}

async function compileCommand(options: CompileFlags, mode: "compile" | "validate" | "diff", io: CliIo): Promise<number> {
  const { compileProject } = await import("./pipeline.js");
  const { defaultLayout } = await import("./discover/discoverProject.js");
  const { formatDiagnostics } = await import("./diagnostics/format.js");
  const { hasErrors } = await import("./diagnostics/diagnostic.js");
  const layout = defaultLayout(rootOf(options));
  const wantsDiff = mode === "diff" || options.diff === true || options.against !== undefined;
  // The pipeline reads the previous state (discover) and drives the write; the CLI only reports.
  const result = compileProject(layout, {
    ...(wantsDiff ? { diff: true } : {}),
    ...(options.against !== undefined ? { against: options.against } : {}),
    ...(options.force ? { force: true } : {}),
    ...(options.workers !== undefined ? { workers: options.workers } : {}),
    ...(usesCache(options) ? { cache: true, splice: true } : {}),
    // validate and diff print no file: nothing is rendered (render reports nothing).
    ...(mode === "compile" ? { write: options.check ? ("check" as const) : ("write" as const) } : { render: false }),
  });
  const diagnostics = result.diagnostics;
  let summary = "";
  let drift: import("./report/formatDrift.js").DriftPatch[] = [];
  const r = result.written;
  if (r) {
    // What differs, file by file (sqlc's `verify`): bounded unified diffs.
    if (r.drift?.length) drift = (await import("./report/formatDrift.js")).driftPatches(r.drift);
    const failed = diagnostics.some((d) => d.code === "CA9003");
    const dags = result.manifest?.dags.length ?? result.counts?.dags ?? 0;
    const assets = result.manifest?.assets.length ?? result.counts?.assets ?? 0;
    summary = options.check
      ? hasErrors(diagnostics)
        ? `${layout.outDir}/ is out of date: ${r.written.length + r.deleted.length} file(s) differ\n`
        : `${layout.outDir}/ is up to date (${dags} DAGs, ${assets} assets)\n`
      : failed
        ? `${layout.outDir}/ could not be written: ${r.written.length} written, ${r.deleted.length} deleted before the failure\n`
        : `compiled ${dags} DAGs and ${assets} assets: ${r.written.length} written, ${r.deleted.length} deleted, ${r.unchanged.length} unchanged\n`;
  } else if (!hasErrors(diagnostics) && mode === "validate") {
    summary = `valid: ${result.project?.contracts.length ?? 0} contracts, ${result.project?.assets.size ?? 0} assets\n`;
  }
  const format = options.format ?? "text";
  const text = formatDiagnostics(diagnostics, format, (f) => result.sources.get(f));
  const { formatChanges } = await import("./report/formatChanges.js");
  if (format === "json") {
    const body = JSON.parse(text) as Record<string, unknown>;
    if (wantsDiff && result.diff) body.diff = JSON.parse(formatChanges(result.diff, "json"));
    if (drift.length) body.stale_files = drift;
    io.stdout(JSON.stringify(body, null, 2) + "\n");
  } else {
    if (format === "text") io.stderr(text + summary);
    else io.stdout(text);
    if (format === "text" && drift.length) io.stdout((await import("./report/formatDrift.js")).formatDriftText(drift));
    if (wantsDiff && result.diff) io.stdout(formatChanges(result.diff, format, result.project));
  }
  return hasErrors(diagnostics) ? EXIT_INPUT : EXIT_OK;
}

async function withProject(options: CommonOptions, io: CliIo, body: (r: import("./pipeline.js").CompileResult) => number): Promise<number> {
  const { compileProject, isCacheNote } = await import("./pipeline.js");
  const { defaultLayout } = await import("./discover/discoverProject.js");
  const { formatDiagnostics } = await import("./diagnostics/format.js");
  const { hasErrors } = await import("./diagnostics/diagnostic.js");
  const result = compileProject(defaultLayout(rootOf(options)), usesCache(options) ? { cache: true } : {});
  if (hasErrors(result.diagnostics) || !result.project || !result.graph) {
    io.stderr(formatDiagnostics(result.diagnostics, "text", (f) => result.sources.get(f)));
    return EXIT_INPUT;
  }
  // A clean compile's findings are not this command's to print, but a cache entry it could not use is noted as every compile notes it.
  const notes = result.diagnostics.filter(isCacheNote);
  if (notes.length > 0) io.stderr(formatDiagnostics(notes, "text", (f) => result.sources.get(f)));
  return body(result);
}

/**
 * A folder or file given on the command line, read relative to the project root (`--root`, by
 * default the current directory) like every path of the project; it may lie outside the root.
 */
function relativeToRoot(root: string, given: string, what: string): string {
  if (given === "") throw new UsageError(`${what} needs a path`);
  const relative = path.relative(root, path.resolve(root, given)).split(path.sep).join("/");
  return relative === "" ? "." : relative;
}

interface ExchangeFlags extends CommonOptions {
  out?: string;
  /** `import odcs`: replace a contract file that exists with other content (CA3606 otherwise). */
  force?: boolean;
}

/** `export odcs`: compile, render one ODCS document per contract, write them (only changed files). */
async function exportOdcsCommand(options: ExchangeFlags, io: CliIo): Promise<number> {
  const { exportOdcs } = await import("./pipeline.js");
  const { defaultLayout } = await import("./discover/discoverProject.js");
  const { formatDiagnostics } = await import("./diagnostics/format.js");
  const { hasErrors } = await import("./diagnostics/diagnostic.js");
  const { DEFAULT_ODCS_DIR } = await import("./render/renderOdcs.js");
  const layout = defaultLayout(rootOf(options));
  const dir = options.out !== undefined ? relativeToRoot(layout.root, options.out, "--out") : DEFAULT_ODCS_DIR;
  const result = exportOdcs(layout, dir, { write: true });
  const diagnostics = result.diagnostics;
  let summary = "";
  if (result.files && result.written) {
    const r = result.written;
    summary = `exported ${result.files.size} ODCS documents to ${options.out ?? dir}: ${r.written.length} written, ${r.deleted.length} deleted, ${r.unchanged.length} unchanged\n`;
  }
  io.stderr(formatDiagnostics(diagnostics, "text", (f) => result.sources.get(f)) + summary);
  return hasErrors(diagnostics) ? EXIT_INPUT : EXIT_OK;
}

/** `import odcs`: read ODCS documents, write our contracts, report the validation of what was written. */
async function importOdcsCommand(files: string[], options: ExchangeFlags, io: CliIo): Promise<number> {
  const { importOdcs } = await import("./pipeline.js");
  const { defaultLayout } = await import("./discover/discoverProject.js");
  const { formatDiagnostics } = await import("./diagnostics/format.js");
  const { hasErrors } = await import("./diagnostics/diagnostic.js");
  const layout = defaultLayout(rootOf(options));
  const dir = options.out !== undefined ? relativeToRoot(layout.root, options.out, "--out") : layout.contractsDir;
  const result = importOdcs(layout, files.map((f) => relativeToRoot(layout.root, f, "a file")), dir, { write: true, ...(options.force ? { force: true } : {}) });
  const diagnostics = result.diagnostics;
  const summary = `imported ${result.files.size} of ${files.length} ODCS documents into ${options.out ?? dir}: ${result.written?.written.length ?? 0} written, ${result.written?.unchanged.length ?? 0} unchanged\n`;
  io.stderr(formatDiagnostics(diagnostics, "text", (f) => result.sources.get(f)) + summary);
  return hasErrors(diagnostics) ? EXIT_INPUT : EXIT_OK;
}

/**
 * `contract-assets drift apply PROPOSAL`: merges a proposal into the contract file with the same
 * id (comments and layout kept, `mergeProposal` in report/driftApply.ts), then validates the project as `validate`
 * does. The file is written only when the merged project is valid; otherwise it is left as it was
 * and the diagnostics are printed. The PROPOSAL path is relative to the project root.
 *
 * @returns Exit code: 0 merged, 1 invalid proposal, unknown contract or invalid result, 2 the
 *   proposal cannot be read.
 */
async function driftApplyCommand(root: string, proposalPath: string, io: CliIo): Promise<number> {
  const { applyProposal } = await import("./pipeline.js");
  const { defaultLayout } = await import("./discover/discoverProject.js");
  const { formatDiagnostics } = await import("./diagnostics/format.js");
  const layout = defaultLayout(root);
  const result = applyProposal(layout, relativeToRoot(root, proposalPath, "a proposal"));
  if (result.problem) {
    io.stderr(`contract-assets: ${result.problem}\n`);
    return result.problemKind === "unreadable" ? EXIT_INTERNAL : EXIT_INPUT;
  }
  const relative = result.contract!;
  if (result.changes.length === 0 && !result.written) {
    io.stdout(`${relative}: already matches the proposal; nothing to merge\n`);
    return EXIT_OK;
  }
  if (!result.written) {
    io.stderr(formatDiagnostics(result.diagnostics, "text", (f) => result.sources.get(f)));
    io.stderr(`${relative}: the merged contract does not validate; the file is left as it was\n`);
    return EXIT_INPUT;
  }
  io.stdout(`${relative}: merged ${relativeToRoot(root, proposalPath, "a proposal")}\n${result.changes.map((c) => `  ${c}\n`).join("")}`);
  io.stdout(`valid: ${result.contractCount} contracts, ${result.assetCount} assets\n`);
  return EXIT_OK;
}

/**
 * `contract-assets init [DIR]`: a new contracts repository in DIR (relative to `--root`, default
 * the root itself; created when missing). Exit 1 with CA9901 for each file that exists, or for
 * DIR when it is a file (nothing is written).
 */
async function initCommand(dir: string | undefined, options: CommonOptions, io: CliIo): Promise<number> {
  const { initRepository } = await import("./pipeline.js");
  const { shellQuote } = await import("./report/initCommand.js");
  const { formatDiagnostics } = await import("./diagnostics/format.js");
  const base = rootOf(options);
  const given = dir ?? ".";
  if (given === "") throw new UsageError("init needs a folder");
  // As the user named it: an absolute folder stays absolute, a relative one is shown from the root.
  const shown = path.isAbsolute(given) ? given : relativeToRoot(base, given, "the folder");
  const result = initRepository(path.resolve(base, given), shown);
  if (result.diagnostics.length > 0) {
    const format = options.format ?? "text";
    const text = formatDiagnostics(result.diagnostics, format, () => undefined);
    if (format === "text") io.stderr(text);
    else io.stdout(text);
    return EXIT_INPUT;
  }
  const where = shown === "." ? "the current folder" : shown;
  io.stdout(`initialised a contracts repository in ${where}:\n${result.value.map((f) => `  ${f}\n`).join("")}`);
  // `cd` from where the command ran, which `--root` may not be; quoted, so that the line works when pasted.
  const from = path.relative(process.cwd(), path.resolve(base, given)).split(path.sep).join("/");
  io.stdout(
    `next: ${from === "" ? "" : `cd ${shellQuote(from, { path: true })} && `}npm install && npx contract-assets compile (README.md has the next steps; ` +
      `where no registry serves contract-assets, install its tarball instead: npm install --save-dev <path>/contract-assets-${COMPILER_VERSION}.tgz)\n`,
  );
  return EXIT_OK;
}

/** Thrown by commander's exit override so `runCli` can end a usage error without `process.exit`. */
class CommandExit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/**
 * Builds the commander program (exported for tests). Every command writes through `io`; with the
 * default IO, a usage error ends the process (exit 2; `--help` and `--version` exit 0).
 */
export function buildProgram(io: CliIo = PROCESS_IO): Command {
  const program = new Command("contract-assets")
    .description("Compile Git-authored data contracts into Apache Airflow 3.2 Assets and DAG modules.")
    .version(COMPILER_VERSION, "-V, --version")
    .showHelpAfterError()
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      // Captured output (runCli) is the same on any terminal: 80 columns, no colour.
      ...(io === PROCESS_IO ? {} : { getOutHelpWidth: () => 80, getErrHelpWidth: () => 80, getOutHasColors: () => false, getErrHasColors: () => false }),
    })
    .exitOverride((error) => {
      // Usage errors exit 2; --help and --version exit 0.
      const code = error.exitCode === 0 ? EXIT_OK : EXIT_INTERNAL;
      if (io === PROCESS_IO) process.exit(code);
      throw new CommandExit(code);
    });
  const root = new Option("--root <dir>", "project root (default: the current directory)");
  const debug = new Option("--debug", "show the stack trace of an internal error");
  const format = new Option("--format <format>", "diagnostics format").choices(["text", "json", "github"]).default("text");
  const workers = new Option("--workers <n>", "worker threads that parse the YAML files (default: as many as the machine offers, at most 7, none below 2 MiB of YAML; 0: parse in the main thread)").argParser(parseWorkers);
  // Both spellings, so that neither sets a default: without them the CI variable decides (usesCache).
  const cache = new Option("--cache", "use the incremental cache in .contract-assets/cache (the default, except when CI is set)");
  const noCache = new Option("--no-cache", "parse every file; neither read nor write the incremental cache");

  program
    .command("init")
    .description("write a new contracts repository: two example contracts, the orchestration config, package.json, CI workflow, README")
    .argument("[dir]", "the folder to write (created when missing; default: the current directory)")
    .addOption(format)
    .addOption(root)
    .addOption(debug)
    .action((dir: string | undefined, opts: CommonOptions) => guarded(opts, () => initCommand(dir, opts, io), io));

  program
    .command("compile")
    .description("compile contracts/ into generated/manifest.json and generated/dags/")
    .option("--check", "write nothing; exit 1 when generated/ differs from what compile would write")
    .option("--diff", "also report what changed against the manifest in generated/ (or --against)")
    .option("--against <ref>", "with --diff: compare with the manifest committed at this Git ref")
    .option("--force", "regenerate a damaged generated/manifest.json (CA1101 becomes a warning; nothing is checked against it)")
    .addOption(workers)
    .addOption(format)
    .addOption(cache)
    .addOption(noCache)
    .addOption(root)
    .addOption(debug)
    .action((opts: CompileFlags) => guarded(opts, () => compileCommand(opts, "compile", io), io));

  program
    .command("diff")
    .description("report added, removed, renamed and changed assets and broken consumers; write nothing")
    .option("--against <ref>", "compare with the manifest committed at this Git ref (default: generated/manifest.json)")
    .addOption(workers)
    .addOption(format)
    .addOption(cache)
    .addOption(noCache)
    .addOption(root)
    .addOption(debug)
    .action((opts: CompileFlags) => guarded(opts, () => compileCommand(opts, "diff", io), io));

  program
    .command("validate")
    .description("check every contract and the orchestration config; write nothing")
    .addOption(workers)
    .addOption(format)
    .addOption(cache)
    .addOption(noCache)
    .addOption(root)
    .addOption(debug)
    .action((opts: CommonOptions) => guarded(opts, () => compileCommand(opts, "validate", io), io));

  program
    .command("graph")
    .description("print the asset graph")
    .addOption(new Option("--format <format>", "graph format").choices(["mermaid", "dot", "json"]).default("mermaid"))
    .addOption(cache)
    .addOption(noCache)
    .addOption(root)
    .addOption(debug)
    .action((opts: CommonOptions & { format: GraphFormat }) =>
      guarded(opts, async () => {
        const { formatGraph } = await import("./report/describeGraph.js");
        return withProject(opts, io, (r) => {
          io.stdout(formatGraph(r.project!, r.graph!, opts.format));
          return EXIT_OK;
        });
      }, io),
    );

  program
    .command("explain")
    .description("explain an asset: its producer, upstreams, schedule in words and consumers")
    .argument("<asset>", "asset name, like sales.orders_clean")
    .addOption(cache)
    .addOption(noCache)
    .addOption(root)
    .addOption(debug)
    .action((asset: string, opts: CommonOptions) =>
      guarded(opts, async () => {
        const { explainAsset } = await import("./report/describeGraph.js");
        const { suggest } = await import("./support/suggest.js");
        return withProject(opts, io, (r) => {
          const text = explainAsset(r.project!, r.graph!, asset);
          if (text === undefined) {
            // A name a dataset declares it was renamed from is that dataset's old name, not a typo.
            const renamedTo = r.project!.contracts.flatMap((c) => c.contract.datasets.filter((d) => d.renamed_from?.includes(asset)).map((d) => `${c.contract.domain}.${d.name}`))[0];
            const guess = renamedTo === undefined ? suggest(asset, r.project!.assets.keys()) : undefined;
            const hint = renamedTo !== undefined ? `; it was renamed to ${JSON.stringify(renamedTo)} (renamed_from)` : guess ? `; did you mean ${JSON.stringify(guess)}?` : "";
            io.stderr(`contract-assets: unknown asset ${JSON.stringify(asset)}${hint}\n`);
            return EXIT_INPUT;
          }
          io.stdout(text);
          return EXIT_OK;
        });
      }, io),
    );
  const exporter = program.command("export").description("write the contracts in another format");
  exporter
    .command("odcs")
    .description("write one ODCS v3 document per contract (<contract id>.odcs.yaml); orchestration fields as customProperties")
    .option("--out <dir>", "the folder to write (default: generated/odcs)")
    .addOption(root)
    .addOption(debug)
    .action((opts: ExchangeFlags) => guarded(opts, () => exportOdcsCommand(opts, io), io));
  const importer = program.command("import").description("write contracts of ours from another format");
  importer
    .command("odcs")
    .description("write our contract YAML from ODCS v3 documents, with comments on the orchestration fields to fill in; then validate it")
    .argument("<file...>", "ODCS documents (apiVersion v3.x.x, kind DataContract)")
    .option("--out <dir>", "the folder to write <domain>/<name>.yaml under (default: contracts)")
    .option("--force", "replace a contract file that exists there with other content (refused otherwise, CA3606)")
    .addOption(root)
    .addOption(debug)
    .action((files: string[], opts: ExchangeFlags) => guarded(opts, () => importOdcsCommand(files, opts, io), io));
  const drift = program.command("drift").description("schema drift proposals written by the runtime");
  drift
    .command("apply")
    .description("merge a proposed contract into its contract file (comments and layout kept), then validate")
    .argument("<proposal>", "the proposal file, relative to the project root")
    .addOption(root)
    .addOption(debug)
    .action((proposal: string, opts: CommonOptions) => guarded(opts, () => driftApplyCommand(rootOf(opts), proposal, io), io));

  program
    .command("preflight")
    .description("in the runtime's environment: import every entrypoint, parse every SQL producer and quality query, look up every named Connection")
    .option("--python <path>", "the runtime's Python (default: $CONTRACT_ASSETS_PYTHON, else .venv/bin/python)")
    .option("--no-connections", "do not look up Airflow Connections")
    .addOption(format)
    .addOption(root)
    .addOption(debug)
    .action((opts: CommonOptions & { python?: string; connections: boolean }) =>
      guarded(opts, async () => {
        const { compileProject } = await import("./pipeline.js");
        const { defaultLayout } = await import("./discover/discoverProject.js");
        const { runPreflightCommand } = await import("./report/preflightCommand.js");
        const rootDir = rootOf(opts);
        return runPreflightCommand(compileProject(defaultLayout(rootDir)), {
          root: rootDir,
          format: opts.format ?? "text",
          connections: opts.connections,
          stdout: io.stdout,
          stderr: io.stderr,
          ...(opts.python ? { python: opts.python } : {}),
        });
      }, io),
    );

  program
    .command("backfill")
    .description("list the partition keys of a partitioned asset in a range and, with --run, start one run per missing or failed key (a dry run by default)")
    .argument("<asset>", "the partitioned asset, <domain>.<dataset>")
    .requiredOption("--from <time>", "start of the range, an ISO 8601 date or date-time (UTC unless it has an offset)")
    .requiredOption("--to <time>", "end of the range, exclusive, in the same form")
    .option("--run", "start the runs (default: only list them)", false)
    .option("--airflow-url <url>", "the Airflow API server, like http://localhost:8080 (needed to see which keys are missing, and for --run)")
    .option("--token <token>", "bearer token (default: $AIRFLOW_TOKEN, else $AIRFLOW_USERNAME and $AIRFLOW_PASSWORD)")
    .option("--max-keys <n>", "refuse a range of more keys than this", "1000")
    .addOption(new Option("--format <format>", "report format").choices(["text", "json"]).default("text"))
    .addOption(root)
    .addOption(debug)
    .action((asset: string, opts: CommonOptions & { from: string; to: string; run: boolean; airflowUrl?: string; token?: string; maxKeys: string; format: "text" | "json" }) =>
      guarded(
        opts,
        async () => {
          const maxKeys = Number(opts.maxKeys);
          if (!Number.isInteger(maxKeys) || maxKeys < 1) {
            io.stderr(`contract-assets: backfill: --max-keys must be a positive whole number, not ${JSON.stringify(opts.maxKeys)}\n`);
            return 2;
          }
          const { runBackfillCommand } = await import("./report/backfillCommand.js");
          return runBackfillCommand({
            root: rootOf(opts),
            asset,
            from: opts.from,
            to: opts.to,
            run: opts.run,
            format: opts.format,
            maxKeys,
            stdout: io.stdout,
            stderr: io.stderr,
            ...(opts.airflowUrl ? { airflowUrl: opts.airflowUrl } : {}),
            ...(opts.token ? { token: opts.token } : {}),
          });
        },
        io,
      ),
    );

  // The commands that read a running Airflow share their options (report/airflowCommand.ts).
  const airflowCommands = [
    {
      name: "stale",
      description: "list assets a running Airflow still holds as active that the manifest no longer declares",
      run: async (options: AirflowCommandOptions) => (await import("./report/staleCommand.js")).runStaleCommand(options),
    },
    {
      name: "freshness",
      description: "the freshness state of every asset with a policy, from a running Airflow (exit 1 when any is stale)",
      run: async (options: AirflowCommandOptions) => (await import("./report/freshnessCommand.js")).runFreshnessCommand(options),
    },
  ];
  for (const command of airflowCommands) {
    program
      .command(command.name)
      .description(command.description)
      .requiredOption("--airflow-url <url>", "the Airflow API server, like http://localhost:8080")
      .addOption(new Option("--format <format>", "report format").choices(["text", "json"]).default("text"))
      .option("--token <token>", "bearer token (default: $AIRFLOW_TOKEN, else $AIRFLOW_USERNAME and $AIRFLOW_PASSWORD)")
      .addOption(root)
      .addOption(debug)
      .action((opts: CommonOptions & { airflowUrl: string; format: "text" | "json"; token?: string }) =>
        guarded(
          opts,
          () => command.run({ root: rootOf(opts), airflowUrl: opts.airflowUrl, format: opts.format, stdout: io.stdout, stderr: io.stderr, ...(opts.token ? { token: opts.token } : {}) }),
          io,
        ),
      );
  }
  return program;
}

/** Entry point of the `contract-assets` bin. */
export async function main(argv: string[]): Promise<void> {
  // A closed pipe (`contract-assets graph | head`) ends the output, not the process with a trace.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "EPIPE") process.exit(process.exitCode ?? EXIT_OK);
      throw error;
    });
  }
  await buildProgram().parseAsync(argv);
}

/**
 * Runs one command line in this process (the arguments after the program name) with its output
 * captured, as the golden command cases do: `{exitCode, stdout, stderr}`, byte for byte what the
 * bin would print.
 */
export async function runCli(args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  let exitCode = EXIT_OK;
  const io: CliIo = { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t), exit: (c) => void (exitCode = c) };
  try {
    await buildProgram(io).parseAsync(args, { from: "user" });
  } catch (error) {
    if (!(error instanceof CommandExit)) throw error;
    exitCode = error.code;
  }
  return { exitCode, stdout, stderr };
}
