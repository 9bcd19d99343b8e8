#!/usr/bin/env node
// The peers the generated DAG modules are measured against, built from the same manifest:
//
//   node scripts/bench/peers.mjs hand       MANIFEST OUT_DIR   # one minimal hand-written module per DAG
//   node scripts/bench/peers.mjs dagfactory MANIFEST OUT_DIR   # one dag-factory YAML per DAG + a loader
//
// Both declare exactly the DAGs of the manifest: the same dag_id, Assets (name, uri, group, extra),
// schedule (asset condition tree, cron timetable, or both), default_args, tags, catchup and
// max_active_runs, and the same three contract_runtime operators with the same inlets, outlets and
// dependencies. The hand-written form is minimal: no comments, docstring, description or doc_md.
// The bench compares a signature of every loaded DAG across the three forms, so a peer that drifts
// from the generated modules is reported instead of measured.

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** A JSON value as a Python literal (JSON string escapes are valid Python escapes). */
export function py(value) {
  if (value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "string" || typeof value === "number") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(py).join(", ")}]`;
  return `{${Object.keys(value)
    .sort()
    .map((k) => `${JSON.stringify(k)}: ${py(value[k])}`)
    .join(", ")}}`;
}

function moduleFile(outDir, dagId, ext) {
  const [domain, ...rest] = dagId.split(".");
  return path.join(outDir, domain, `${rest.join(".")}${ext}`);
}

/** Items of a condition node, with a one-item list reduced to its item (as the compiler renders it). */
function reduce(node) {
  if ("asset" in node) return node;
  const [op, items] = "all" in node ? ["all", node.all] : ["any", node.any];
  if (items.length === 1) return reduce(items[0]);
  return { [op]: items.map(reduce) };
}

function defaultArgs(a) {
  const out = { owner: a.owner };
  if (a.pool !== undefined) out.pool = a.pool;
  if (a.retries !== undefined) out.retries = a.retries;
  return out;
}

export function writeHandWritten(manifest, outDir) {
  const assets = new Map(manifest.assets.map((a) => [a.name, a]));
  for (const dag of manifest.dags) {
    const used = [...new Set([...dag.tasks[0].inlets, ...dag.outlets])].sort();
    const v = new Map(used.map((name, i) => [name, `a${i}`]));
    const expr = (node) => {
      if ("asset" in node) return v.get(node.asset);
      const [op, items] = "all" in node ? [" & ", node.all] : [" | ", node.any];
      return `(${items.map(expr).join(op)})`;
    };
    const { assets: tree, cron } = dag.schedule;
    const timetable = cron ? `CronTriggerTimetable(${py(cron.expression)}, timezone=${py(cron.timezone)})` : undefined;
    const schedule = tree && timetable ? `AssetOrTimeSchedule(timetable=${timetable}, assets=${expr(reduce(tree))})` : tree ? expr(reduce(tree)) : (timetable ?? "None");
    const a = dag.default_args;
    const args = [`"owner": ${py(a.owner)}`];
    if (a.pool !== undefined) args.push(`"pool": ${py(a.pool)}`);
    if (a.retries !== undefined) args.push(`"retries": ${a.retries}`);
    if (a.retry_delay_seconds !== undefined) args.push(`"retry_delay": datetime.timedelta(seconds=${a.retry_delay_seconds})`);
    if (a.execution_timeout_seconds !== undefined) args.push(`"execution_timeout": datetime.timedelta(seconds=${a.execution_timeout_seconds})`);
    const sdk = ["DAG", "Asset", ...(timetable ? ["CronTriggerTimetable"] : []), ...(tree && timetable ? ["AssetOrTimeSchedule"] : [])];
    const id = py(dag.dag_id);
    const lines = [
      "import datetime",
      "import os",
      `from airflow.sdk import ${sdk.join(", ")}`,
      "from contract_runtime.operators import AuditOperator, ProduceOperator, PublishOperator",
      'm = os.path.join(os.path.dirname(__file__), "..", "..", "manifest.json")',
      ...used.map((name) => {
        const x = assets.get(name);
        return `${v.get(name)} = Asset(name=${py(x.name)}, uri=${py(x.uri)}, group=${py(x.group)}, extra=${py(x.extra)})`;
      }),
      `with DAG(dag_id=${id}, schedule=${schedule}, tags=${py(dag.tags)}, default_args={${args.join(", ")}}, catchup=False, max_active_runs=1):`,
      `    p = ProduceOperator(task_id="produce", contract_id=${id}, manifest_path=m, inlets=[${dag.tasks[0].inlets.map((n) => v.get(n)).join(", ")}])`,
      `    a = AuditOperator(task_id="audit", contract_id=${id}, manifest_path=m)`,
      `    u = PublishOperator(task_id="publish", contract_id=${id}, manifest_path=m, outlets=[${dag.outlets.map((n) => v.get(n)).join(", ")}])`,
      "    p >> a >> u",
    ];
    const file = moduleFile(outDir, dag.dag_id, ".py");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, lines.join("\n") + "\n");
  }
  return manifest.dags.length;
}

/** YAML flow text for a JSON value (JSON is valid YAML flow syntax). */
const y = (value) => JSON.stringify(value);

export function writeDagFactory(manifest, outDir) {
  const assets = new Map(manifest.assets.map((a) => [a.name, a]));
  const asset = (name) => {
    const x = assets.get(name);
    return { __type__: "airflow.sdk.Asset", name: x.name, uri: x.uri, group: x.group, extra: x.extra };
  };
  const condition = (node) => {
    if ("asset" in node) return asset(node.asset);
    const [type, items] = "all" in node ? ["airflow.sdk.AssetAll", node.all] : ["airflow.sdk.AssetAny", node.any];
    return { __type__: type, __args__: items.map(condition) };
  };
  for (const dag of manifest.dags) {
    const { assets: tree, cron } = dag.schedule;
    const timetable = cron ? { __type__: "airflow.sdk.CronTriggerTimetable", __args__: [cron.expression], timezone: cron.timezone } : undefined;
    const schedule =
      tree && timetable ? { __type__: "airflow.sdk.AssetOrTimeSchedule", timetable, assets: condition(reduce(tree)) } : tree ? condition(reduce(tree)) : (timetable ?? "None");
    const a = dag.default_args;
    const args = defaultArgs(a);
    if (a.retry_delay_seconds !== undefined) args.retry_delay = { __type__: "datetime.timedelta", seconds: a.retry_delay_seconds };
    if (a.execution_timeout_seconds !== undefined) args.execution_timeout = { __type__: "datetime.timedelta", seconds: a.execution_timeout_seconds };
    const manifestPath = "manifest.json";
    const lines = [
      `${dag.dag_id}:`,
      `  default_args: ${y(args)}`,
      `  schedule: ${y(schedule)}`,
      `  tags: ${y(dag.tags)}`,
      "  catchup: false",
      "  max_active_runs: 1",
      "  tasks:",
      "    produce:",
      "      operator: contract_runtime.operators.ProduceOperator",
      `      contract_id: ${y(dag.dag_id)}`,
      `      manifest_path: ${y(manifestPath)}`,
      `      inlets: ${y(dag.tasks[0].inlets.map(asset))}`,
      "    audit:",
      "      operator: contract_runtime.operators.AuditOperator",
      `      contract_id: ${y(dag.dag_id)}`,
      `      manifest_path: ${y(manifestPath)}`,
      "      dependencies: [produce]",
      "    publish:",
      "      operator: contract_runtime.operators.PublishOperator",
      `      contract_id: ${y(dag.dag_id)}`,
      `      manifest_path: ${y(manifestPath)}`,
      `      outlets: ${y(dag.outlets.map(asset))}`,
      "      dependencies: [audit]",
    ];
    const file = moduleFile(outDir, dag.dag_id, ".yml");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, lines.join("\n") + "\n");
  }
  // DagBag's safe mode reads only .py files that mention both "airflow" and "dag".
  fs.writeFileSync(
    path.join(outDir, "load_dags.py"),
    [
      "# airflow dag loader: dag-factory builds one DAG from each .yml file below this folder",
      "import os",
      "from dagfactory import load_yaml_dags",
      "load_yaml_dags(globals_dict=globals(), dags_folder=os.path.dirname(os.path.abspath(__file__)), suffix=[\".yml\"])",
      "",
    ].join("\n"),
  );
  return manifest.dags.length;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const [kind, manifestPath, outDir] = process.argv.slice(2);
  if (!["hand", "dagfactory"].includes(kind ?? "") || !manifestPath || !outDir) {
    process.stderr.write("usage: node scripts/bench/peers.mjs hand|dagfactory MANIFEST OUT_DIR\n");
    process.exit(2);
  }
  const manifest = JSON.parse(fs.readFileSync(manifestPath, "utf8"));
  const count = kind === "hand" ? writeHandWritten(manifest, outDir) : writeDagFactory(manifest, outDir);
  process.stdout.write(`${count} DAGs written to ${outDir}\n`);
}
