import cronstrue from "cronstrue";
import type { LinkedProject } from "../link/linkProject.js";
import type { ConditionNode } from "../plan/planDags.js";
import { conditionOf } from "../plan/planDags.js";
import { compareStrings } from "../support/compare.js";
import type { AssetGraph } from "../graph/buildGraph.js";

/** Graph output formats of `contract-assets graph`. */
export type GraphFormat = "mermaid" | "dot" | "json";

/**
 * The asset graph as Mermaid, Graphviz dot or JSON. Nodes are assets (externals marked), edges
 * carry the dag_id that reads one and produces the other. Sorted, so the text is stable.
 */
export function formatGraph(project: LinkedProject, graph: AssetGraph, format: GraphFormat): string {
  const assets = [...project.assets.values()].sort((a, b) => compareStrings(a.name, b.name));
  if (format === "json") {
    return (
      JSON.stringify(
        { nodes: assets.map((a) => ({ name: a.name, uri: a.uri, group: a.group, external: a.external, producer: a.producer ?? null })), edges: graph.edges },
        null,
        2,
      ) + "\n"
    );
  }
  const ids = new Map(assets.map((a, i) => [a.name, `a${i}`]));
  if (format === "dot") {
    const lines = ["digraph assets {", "  rankdir=LR;"];
    for (const a of assets) lines.push(`  ${ids.get(a.name)} [label=${JSON.stringify(a.name)}${a.external ? ", shape=box, style=dashed" : ", shape=box"}];`);
    for (const e of graph.edges) lines.push(`  ${ids.get(e.from)} -> ${ids.get(e.to)} [label=${JSON.stringify(e.via)}];`);
    lines.push("}");
    return lines.join("\n") + "\n";
  }
  const lines = ["flowchart LR"];
  for (const a of assets) {
    const label = a.name.replace(/"/g, "#quot;");
    lines.push(a.external ? `  ${ids.get(a.name)}[/"${label}"/]` : `  ${ids.get(a.name)}["${label}"]`);
  }
  for (const e of graph.edges) lines.push(`  ${ids.get(e.from)} -->|${e.via.replace(/[|"]/g, "_")}| ${ids.get(e.to)}`);
  return lines.join("\n") + "\n";
}

/** An asset condition in words: `("a" or "b") and "c"`. */
export function describeCondition(node: ConditionNode, nested = false): string {
  if ("asset" in node) return JSON.stringify(node.asset);
  const [word, items] = "all" in node ? [" and ", node.all] : [" or ", node.any];
  if (items.length === 1) return describeCondition(items[0]!, nested);
  const text = items.map((i) => describeCondition(i, true)).join(word);
  return nested ? `(${text})` : text;
}

/** A cron expression in words, through cronstrue, with the time zone. */
export function describeCron(expression: string, timezone: string): string {
  let words: string;
  try {
    words = cronstrue.toString(expression, { use24HourTimeFormat: true, verbose: false });
  } catch {
    words = `cron ${JSON.stringify(expression)}`;
  }
  return `${words} (${timezone})`;
}

/**
 * `explain <asset>`: who produces it, what that producer reads, when it runs (in words) and who
 * consumes it. Returns undefined when no asset has that name.
 */
export function explainAsset(project: LinkedProject, graph: AssetGraph, name: string): string | undefined {
  const asset = project.assets.get(name);
  if (!asset) return undefined;
  const lines = [`asset ${asset.name}`, `  uri: ${asset.uri}`, `  group: ${asset.group}`];
  const producer = project.contracts.find((c) => c.contract.id === asset.producer);
  if (!producer) {
    lines.push(`  external: declared in ${asset.declaredIn}; no contract produces it`);
  } else {
    lines.push(`  producer: DAG ${producer.contract.id} (${producer.status}), contract ${producer.located.source.file.path}`);
    if (producer.upstreams.length === 0 && !producer.sourceAsset) lines.push("  upstreams: none");
    else {
      lines.push("  upstreams:");
      if (producer.sourceAsset) lines.push(`    - ${producer.sourceAsset} (source, inlet only)`);
      for (const u of producer.upstreams) {
        const pin = u.schemaVersion !== undefined ? `, schema_version ${u.schemaVersion}` : "";
        lines.push(`    - ${u.asset} (${u.trigger ? "triggers" : "inlet only"}${pin})`);
      }
    }
    const condition = conditionOf(producer.contract, producer.upstreams.filter((u) => u.trigger).map((u) => u.asset));
    const when: string[] = [];
    if (producer.status === "retired" || producer.status === "draft") {
      lines.push(`  runs: never (${producer.status}: no DAG is generated)`);
    } else {
    if (condition) when.push(`when ${describeCondition(condition)} ${"asset" in condition ? "has" : "have"} new events`);
    if (producer.timetable) when.push(describeCron(producer.timetable.cron, producer.timetable.timezone).replace(/^./, (c) => c.toLowerCase()));
    lines.push(`  runs: ${when.length ? when.join(", or ") : "only when triggered by hand"}`);
    }
  }
  const consumers = graph.consumers.get(name) ?? [];
  if (consumers.length === 0) lines.push("  consumers: none");
  else {
    lines.push("  consumers:");
    for (const id of consumers) {
      const c = project.contracts.find((x) => x.contract.id === id)!;
      if (c.status === "retired") continue;
      const u = c.upstreams.find((x) => x.asset === name);
      lines.push(`    - ${id} (${u ? (u.trigger ? "triggered by it" : "reads it, not triggered") : "reads it as its source"}; ${c.located.source.file.path})`);
    }
  }
  return lines.join("\n") + "\n";
}
