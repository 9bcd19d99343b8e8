import { createDiagnostic, Diagnostics } from "../diagnostics/catalogue.js";
import type { Diagnostic, StageResult } from "../diagnostics/diagnostic.js";
import type { LinkedContract, LinkedProject } from "../link/linkProject.js";
import { compareStrings } from "../support/compare.js";

/** One graph edge: an upstream asset feeds a produced asset through a DAG. */
export interface Edge {
  from: string;
  to: string;
  /** The dag_id (contract id) that reads `from` and produces `to`. */
  via: string;
}

export interface AssetGraph {
  edges: Edge[];
  /** Contract ids in dependency order (producers before consumers), ties by id. */
  order: string[];
  /** Consumers of each asset: contract ids, sorted. */
  consumers: Map<string, string[]>;
}

/**
 * The graph stage: edges from every upstream (and ingestion source) to every dataset of the
 * reading contract, a dependency order, and cycle detection over contracts (Tarjan's strongly
 * connected components). Each cycle is one CA5001 at its first member, naming every member in
 * order, with a related location at each member's upstream that closes the loop.
 */
export function buildGraph(project: LinkedProject): StageResult<AssetGraph> {
  const diagnostics: Diagnostic[] = [];
  const edges: Edge[] = [];
  const consumers = new Map<string, Set<string>>();
  const byId = new Map(project.contracts.map((c) => [c.contract.id, c]));
  const dependsOn = new Map<string, Array<{ id: string; via: LinkedContract["upstreams"][number] }>>();
  for (const c of project.contracts) {
    const reads = [...c.upstreams.map((u) => u.asset), ...(c.sourceAsset ? [c.sourceAsset] : [])];
    for (const from of reads) {
      for (const out of c.outlets) edges.push({ from, to: out.name, via: c.contract.id });
      if (!consumers.has(from)) consumers.set(from, new Set());
      consumers.get(from)!.add(c.contract.id);
    }
    const deps: Array<{ id: string; via: LinkedContract["upstreams"][number] }> = [];
    for (const u of c.upstreams) {
      const producer = project.assets.get(u.asset)?.producer;
      if (producer && byId.has(producer)) deps.push({ id: producer, via: u });
    }
    dependsOn.set(c.contract.id, deps);
  }

  // Tarjan's algorithm, iterating ids in sorted order so the cycles found are deterministic.
  const ids = [...byId.keys()].sort(compareStrings);
  let index = 0;
  const indexes = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const strongConnect = (v: string): void => {
    indexes.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const { id: w } of dependsOn.get(v) ?? []) {
      if (!indexes.has(w)) {
        strongConnect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indexes.get(w)!));
    }
    if (low.get(v) === indexes.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      components.push(component);
    }
  };
  for (const id of ids) if (!indexes.has(id)) strongConnect(id);

  // Tarjan emits components consumers-last in reverse topological order: producers come first.
  const order: string[] = [];
  for (const component of components) {
    const members = new Set(component);
    const selfLoop = component.length === 1 && (dependsOn.get(component[0]!) ?? []).some((d) => d.id === component[0]);
    if (component.length > 1 || selfLoop) {
      const cycle = orderCycle(component.sort(compareStrings)[0]!, members, dependsOn);
      const first = byId.get(cycle[0]!)!;
      const related = cycle.map((id, i) => {
        const next = cycle[(i + 1) % cycle.length]!;
        const via = (dependsOn.get(id) ?? []).find((d) => d.id === next)!.via;
        return { message: `${JSON.stringify(id)} reads ${JSON.stringify(via.asset)} from ${JSON.stringify(next)}`, location: via.location };
      });
      diagnostics.push(
        createDiagnostic(Diagnostics.Cycle, { members: [...cycle, cycle[0]!].map((m) => JSON.stringify(m)).join(" -> ") }, first.located.source.locate(["id"]), { related }),
      );
    }
    order.push(...component.sort(compareStrings));
  }

  // Sort for determinism.
  edges.sort((a, b) => compareStrings(a.from, b.from) || compareStrings(a.to, b.to) || compareStrings(a.via, b.via));
  const consumerMap = new Map([...consumers].map(([k, v]) => [k, [...v].sort(compareStrings)]));
  return { value: { edges, order, consumers: consumerMap }, diagnostics };
}

/** Walks a strongly connected component from `start` into one simple cycle back to `start`. */
function orderCycle(start: string, members: Set<string>, dependsOn: Map<string, Array<{ id: string }>>): string[] {
  const path: string[] = [start];
  const seen = new Set([start]);
  const walk = (v: string): boolean => {
    const next = (dependsOn.get(v) ?? []).map((d) => d.id).filter((id) => members.has(id)).sort(compareStrings);
    for (const w of next) {
      if (w === start) return true;
      if (seen.has(w)) continue;
      seen.add(w);
      path.push(w);
      if (walk(w)) return true;
      path.pop();
    }
    return false;
  };
  walk(start);
  return path;
}
