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
  // Edges by their `from` and consumers by asset, each list in contract order.
  const edgesFrom = new Map<string, Edge[]>();
  const consumers = new Map<string, string[]>();
  const byId = new Map(project.contracts.map((c) => [c.contract.id, c]));
  // Contracts by their place in id order: the search below works on these numbers, not on ids.
  const ids = [...byId.keys()].sort(compareStrings);
  const place = new Map(ids.map((id, i) => [id, i]));
  const none: Dependency[] = [];
  const dependsOn: Dependency[][] = ids.map(() => none);
  for (const c of project.contracts) {
    // A retired contract reads nothing any more; and an edge needs both ends to be known assets.
    if (c.status === "retired") continue;
    const id = c.contract.id;
    const read = (from: string): void => {
      if (!project.assets.has(from)) return;
      if (c.outlets.length > 0) {
        let group = edgesFrom.get(from);
        if (!group) edgesFrom.set(from, (group = []));
        for (const out of c.outlets) group.push({ from, to: out.name, via: id });
      }
      const list = consumers.get(from);
      // A contract's reads come one after the other: it is in the list once if it is last.
      if (!list) consumers.set(from, [id]);
      else if (list[list.length - 1] !== id) list.push(id);
    };
    for (const u of c.upstreams) read(u.asset);
    if (c.sourceAsset) read(c.sourceAsset);
    const deps: Dependency[] = [];
    for (const u of c.upstreams) {
      const producer = project.assets.get(u.asset)?.producer;
      const at = producer === undefined ? undefined : place.get(producer);
      if (at !== undefined) deps.push({ id: producer!, at, via: u });
    }
    dependsOn[place.get(id)!] = deps;
  }

  // Tarjan's algorithm, iterative (a chain of 10,000 contracts must not overflow the call stack),
  // visiting ids in sorted order so the cycles found are deterministic.
  const count = ids.length;
  let index = 0;
  const indexes = new Int32Array(count).fill(-1);
  const low = new Int32Array(count);
  const onStack = new Uint8Array(count);
  const stack: number[] = [];
  const components: string[][] = [];
  const frameOf: number[] = [];
  const nextOf: number[] = [];
  for (let start = 0; start < count; start++) {
    if (indexes[start]! >= 0) continue;
    frameOf.push(start);
    nextOf.push(0);
    indexes[start] = index;
    low[start] = index++;
    stack.push(start);
    onStack[start] = 1;
    while (frameOf.length > 0) {
      const top = frameOf.length - 1;
      const v = frameOf[top]!;
      const deps = dependsOn[v]!;
      if (nextOf[top]! < deps.length) {
        const w = deps[nextOf[top]!++]!.at;
        if (indexes[w]! < 0) {
          indexes[w] = index;
          low[w] = index++;
          stack.push(w);
          onStack[w] = 1;
          frameOf.push(w);
          nextOf.push(0);
        } else if (onStack[w]) low[v] = Math.min(low[v]!, indexes[w]!);
        continue;
      }
      frameOf.pop();
      nextOf.pop();
      if (top > 0) {
        const parent = frameOf[top - 1]!;
        low[parent] = Math.min(low[parent]!, low[v]!);
      }
      if (low[v] === indexes[v]) {
        const component: string[] = [];
        let w: number;
        do {
          w = stack.pop()!;
          onStack[w] = 0;
          component.push(ids[w]!);
        } while (w !== v);
        components.push(component);
      }
    }
  }

  const depsOf = (id: string): Dependency[] => dependsOn[place.get(id)!]!;
  // Tarjan emits components consumers-last in reverse topological order: producers come first.
  const order: string[] = [];
  for (const component of components) {
    const selfLoop = component.length === 1 && depsOf(component[0]!).some((d) => d.id === component[0]);
    if (component.length > 1 || selfLoop) {
      const members = new Set(component);
      const cycle = orderCycle(component.sort(compareStrings)[0]!, members, depsOf);
      const first = byId.get(cycle[0]!)!;
      const related = cycle.map((id, i) => {
        const next = cycle[(i + 1) % cycle.length]!;
        const via = depsOf(id).find((d) => d.id === next)!.via;
        return { message: `${JSON.stringify(id)} reads ${JSON.stringify(via.asset)} from ${JSON.stringify(next)}`, location: via.location };
      });
      diagnostics.push(
        createDiagnostic(Diagnostics.Cycle, { members: [...cycle, cycle[0]!].map((m) => JSON.stringify(m)).join(" -> ") }, first.located.source.locate(["id"]), { related }),
      );
    }
    if (component.length === 1) order.push(component[0]!);
    else order.push(...component.sort(compareStrings));
  }

  // Sort for determinism: by from, to, via; the groups of one `from` are sorted apart (a few
  // edges each), fewer comparisons than sorting every edge against every other.
  const edges: Edge[] = [];
  for (const from of [...edgesFrom.keys()].sort(compareStrings)) {
    const group = edgesFrom.get(from)!;
    if (group.length > 1) group.sort((a, b) => compareStrings(a.to, b.to) || compareStrings(a.via, b.via));
    for (const edge of group) edges.push(edge);
  }
  for (const list of consumers.values()) if (list.length > 1) list.sort(compareStrings);
  return { value: { edges, order, consumers }, diagnostics };
}

/** A contract's dependency: the producer of one of its upstreams (its id and place in id order). */
interface Dependency {
  id: string;
  at: number;
  via: LinkedContract["upstreams"][number];
}

/**
 * One simple cycle through `start` inside a strongly connected component: a breadth-first search
 * for the shortest way back to `start` (iterative, so large components cannot overflow the stack).
 */
function orderCycle(start: string, members: Set<string>, dependsOn: (id: string) => ReadonlyArray<{ id: string }>): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  for (let head = 0; head < queue.length; head++) {
    const v = queue[head]!;
    const next = dependsOn(v).map((d) => d.id).filter((id) => members.has(id)).sort(compareStrings);
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
