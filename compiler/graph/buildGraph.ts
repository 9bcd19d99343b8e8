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
    // A retired contract reads nothing any more; and an edge needs both ends to be known assets.
    if (c.status === "retired") continue;
    const reads = [...c.upstreams.map((u) => u.asset), ...(c.sourceAsset ? [c.sourceAsset] : [])].filter((a) => project.assets.has(a));
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

  // Tarjan's algorithm, iterative (a chain of 10,000 contracts must not overflow the call stack),
  // visiting ids in sorted order so the cycles found are deterministic.
  const ids = [...byId.keys()].sort(compareStrings);
  let index = 0;
  const indexes = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  for (const startId of ids) {
    if (indexes.has(startId)) continue;
    const frames: Array<{ v: string; next: number }> = [{ v: startId, next: 0 }];
    indexes.set(startId, index);
    low.set(startId, index++);
    stack.push(startId);
    onStack.add(startId);
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!;
      const deps = dependsOn.get(frame.v) ?? [];
      if (frame.next < deps.length) {
        const w = deps[frame.next++]!.id;
        if (!indexes.has(w)) {
          indexes.set(w, index);
          low.set(w, index++);
          stack.push(w);
          onStack.add(w);
          frames.push({ v: w, next: 0 });
        } else if (onStack.has(w)) low.set(frame.v, Math.min(low.get(frame.v)!, indexes.get(w)!));
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent) low.set(parent.v, Math.min(low.get(parent.v)!, low.get(frame.v)!));
      if (low.get(frame.v) === indexes.get(frame.v)) {
        const component: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          component.push(w);
        } while (w !== frame.v);
        components.push(component);
      }
    }
  }

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

/**
 * One simple cycle through `start` inside a strongly connected component: a breadth-first search
 * for the shortest way back to `start` (iterative, so large components cannot overflow the stack).
 */
function orderCycle(start: string, members: Set<string>, dependsOn: Map<string, Array<{ id: string }>>): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  for (let head = 0; head < queue.length; head++) {
    const v = queue[head]!;
    const next = (dependsOn.get(v) ?? []).map((d) => d.id).filter((id) => members.has(id)).sort(compareStrings);
    for (const w of next) {
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(previous.get(path[0]!)!);
        return path;
      }
      if (previous.has(w) || w === start) continue;
      previous.set(w, v);
      queue.push(w);
    }
  }
  return [start];
}
