/**
 * Questions asked of an explored graph: which states cannot finish, whether some run never ends (a cycle),
 * the longest run by a per-edge weight, and the event path to a state, as a counterexample.
 */
import type { LoopSnapshot } from '../../machines/pending-effect.js';
import type { LoopEvent } from '../../machines/types.js';
import { outcomesOf, type ExploredGraph } from './explore.js';

export interface PathStep {
  /** The state the event was sent in, e.g. `RUNNING.deciding`. */
  state: string;
  /** The abstract outcome, in words. */
  outcome: string;
  event: LoopEvent;
}

export function stateName(snapshot: LoopSnapshot): string {
  const value = snapshot.value;
  if (typeof value === 'string') return value;
  const [parent, child] = Object.entries(value)[0] ?? ['?', '?'];
  return `${parent}.${String(child)}`;
}

export function edgeStep(graph: ExploredGraph, edge: number): PathStep {
  const source = graph.snapshots[graph.edgeSource[edge] as number] as LoopSnapshot;
  const outcome = outcomesOf(graph, source)[graph.edgeOutcome[edge] as number];
  if (outcome === undefined) throw new Error(`edge ${edge} has no outcome`);
  return { state: stateName(source), outcome: outcome.label, event: outcome.event };
}

/** The shortest event path from the initial state to `state`. */
export function pathTo(graph: ExploredGraph, state: number): PathStep[] {
  const edges: number[] = [];
  for (let edge = graph.parentEdge[state] as number; edge >= 0; edge = graph.parentEdge[graph.edgeSource[edge] as number] as number) edges.push(edge);
  return edges.reverse().map((edge) => edgeStep(graph, edge));
}

/** The shortest path to an edge's source, then the edge. */
export function pathThrough(graph: ExploredGraph, edge: number): PathStep[] {
  return [...pathTo(graph, graph.edgeSource[edge] as number), edgeStep(graph, edge)];
}

function outgoingIndex(graph: ExploredGraph): { start: Int32Array; edges: Int32Array } {
  const count = graph.keys.length;
  const start = new Int32Array(count + 1);
  for (let edge = 0; edge < graph.edgeCount; edge += 1) {
    const slot = (graph.edgeSource[edge] as number) + 1;
    start[slot] = (start[slot] as number) + 1;
  }
  for (let state = 0; state < count; state += 1) start[state + 1] = (start[state + 1] as number) + (start[state] as number);
  const fill = start.slice(0, count);
  const edges = new Int32Array(graph.edgeCount);
  for (let edge = 0; edge < graph.edgeCount; edge += 1) {
    const source = graph.edgeSource[edge] as number;
    edges[fill[source] as number] = edge;
    fill[source] = (fill[source] as number) + 1;
  }
  return { start, edges };
}

/** States from which no final state can be reached (a reverse breadth-first search from the final ones). */
export function statesThatCannotFinish(graph: ExploredGraph): number[] {
  const incoming = new Map<number, number[]>();
  for (let edge = 0; edge < graph.edgeCount; edge += 1) {
    const target = graph.edgeTarget[edge] as number;
    const list = incoming.get(target) ?? [];
    list.push(graph.edgeSource[edge] as number);
    incoming.set(target, list);
  }
  const canFinish = new Uint8Array(graph.keys.length);
  const queue: number[] = [];
  graph.snapshots.forEach((snapshot, state) => {
    if (snapshot.status === 'done') {
      canFinish[state] = 1;
      queue.push(state);
    }
  });
  for (let head = 0; head < queue.length; head += 1) {
    for (const source of incoming.get(queue[head] as number) ?? []) {
      if (canFinish[source] === 1) continue;
      canFinish[source] = 1;
      queue.push(source);
    }
  }
  return graph.keys.map((_key, state) => state).filter((state) => canFinish[state] === 0);
}

export interface Cycle {
  /** Shortest path to the first state of the cycle. */
  prefix: PathStep[];
  /** The events that lead from that state back to it. */
  cycle: PathStep[];
}

/** A cycle of the graph if it has one (iterative depth-first search), else null. */
export function findCycle(graph: ExploredGraph): Cycle | null {
  const { start, edges } = outgoingIndex(graph);
  const count = graph.keys.length;
  const color = new Uint8Array(count); // 0 unseen, 1 on the stack, 2 done
  const viaEdge = new Int32Array(count).fill(-1);
  const cursor = new Int32Array(count);
  for (let root = 0; root < count; root += 1) {
    if (color[root] !== 0) continue;
    const stack = [root];
    color[root] = 1;
    cursor[root] = start[root] as number;
    while (stack.length > 0) {
      const state = stack[stack.length - 1] as number;
      if ((cursor[state] as number) >= (start[state + 1] as number)) {
        color[state] = 2;
        stack.pop();
        continue;
      }
      const edge = edges[cursor[state] as number] as number;
      cursor[state] = (cursor[state] as number) + 1;
      const target = graph.edgeTarget[edge] as number;
      if (color[target] === 1) {
        const cycleEdges = [edge];
        for (let at = state; at !== target; at = graph.edgeSource[viaEdge[at] as number] as number) cycleEdges.push(viaEdge[at] as number);
        return { prefix: pathTo(graph, target), cycle: cycleEdges.reverse().map((cycleEdge) => edgeStep(graph, cycleEdge)) };
      }
      if (color[target] === 0) {
        color[target] = 1;
        viaEdge[target] = edge;
        cursor[target] = start[target] as number;
        stack.push(target);
      }
    }
  }
  return null;
}

/** The largest sum of `weight` along any run from the initial state (the graph must be acyclic), and a run reaching it. */
export function heaviestRun(graph: ExploredGraph, weight: Int32Array): { total: number; path: PathStep[] } {
  const count = graph.keys.length;
  const indegree = new Int32Array(count);
  for (let edge = 0; edge < graph.edgeCount; edge += 1) {
    const target = graph.edgeTarget[edge] as number;
    indegree[target] = (indegree[target] as number) + 1;
  }
  const { start, edges } = outgoingIndex(graph);
  const best = new Float64Array(count).fill(-Infinity);
  const bestEdge = new Int32Array(count).fill(-1);
  best[0] = 0;
  const queue = [0];
  for (let head = 0; head < queue.length; head += 1) {
    const state = queue[head] as number;
    for (let position = start[state] as number; position < (start[state + 1] as number); position += 1) {
      const edge = edges[position] as number;
      const target = graph.edgeTarget[edge] as number;
      const total = (best[state] as number) + (weight[edge] as number);
      if (total > (best[target] as number)) {
        best[target] = total;
        bestEdge[target] = edge;
      }
      indegree[target] = (indegree[target] as number) - 1;
      if (indegree[target] === 0) queue.push(target);
    }
  }
  let argmax = 0;
  for (let state = 1; state < count; state += 1) if ((best[state] as number) > (best[argmax] as number)) argmax = state;
  const path: PathStep[] = [];
  for (let state = argmax; bestEdge[state] !== -1; state = graph.edgeSource[bestEdge[state] as number] as number) path.push(edgeStep(graph, bestEdge[state] as number));
  return { total: best[argmax] as number, path: path.reverse() };
}
