/**
 * Questions asked of an explored graph: which states cannot finish, whether some run never ends (a cycle),
 * the longest run by a per-edge weight, and the event path to a state, as a counterexample.
 */
import type { LoopSnapshot } from '../../../machines/pending-effect.js';
import type { LoopEvent } from '../../../machines/types.js';
import { outcomesOf, type ExploredGraph, type ExploredState } from './explore.js';

export interface PathStep {
  /** The state the event was sent in, e.g. `RUNNING.deciding`. */
  state: string;
  /** The abstract outcome, in words. */
  outcome: string;
  event: LoopEvent;
}

export function stateName(snapshot: Pick<LoopSnapshot, 'value'>): string {
  const value = snapshot.value;
  if (typeof value === 'string') return value;
  const [parent, child] = Object.entries(value)[0] ?? ['?', '?'];
  return `${parent}.${String(child)}`;
}

function edgeLabel(graph: ExploredGraph, edge: number): string {
  const source = graph.states[graph.edgeSource[edge] as number] as ExploredState;
  const outcome = outcomesOf(graph, source)[graph.edgeOutcome[edge] as number];
  if (outcome === undefined) throw new Error(`edge ${edge} has no outcome`);
  return outcome.label;
}

/**
 * The events along a path of edges, from the initial state. An edge leaves the one snapshot its state keeps, and a
 * path may reach a state through another snapshot of the same key: each outcome is taken by its label from the
 * snapshot the path actually reached (equivalent snapshots have the same outcomes), so the events replay through a
 * fresh actor exactly as printed.
 */
export function stepsAlong(graph: ExploredGraph, edges: readonly number[]): PathStep[] {
  let snapshot: ExploredState = graph.states[0] as ExploredState;
  return edges.map((edge) => {
    const label = edgeLabel(graph, edge);
    const outcome = outcomesOf(graph, snapshot).find((candidate) => candidate.label === label);
    if (outcome === undefined)
      throw new Error(`a state reached along the path has no outcome "${label}": its key merged inequivalent states`);
    const step = { state: stateName(snapshot), outcome: label, event: outcome.event };
    snapshot = graph.successorOf(snapshot, outcome.event);
    return step;
  });
}

function edgesTo(graph: ExploredGraph, state: number): number[] {
  const edges: number[] = [];
  for (
    let edge = graph.parentEdge[state] as number;
    edge >= 0;
    edge = graph.parentEdge[graph.edgeSource[edge] as number] as number
  )
    edges.push(edge);
  return edges.reverse();
}

/** The shortest event path from the initial state to `state`. */
export function pathTo(graph: ExploredGraph, state: number): PathStep[] {
  return stepsAlong(graph, edgesTo(graph, state));
}

/** The shortest path to an edge's source, then the edge. */
export function pathThrough(graph: ExploredGraph, edge: number): PathStep[] {
  return stepsAlong(graph, [...edgesTo(graph, graph.edgeSource[edge] as number), edge]);
}

/** Each graph's outgoing-edge index, built once: the cycle search and both heaviest runs read it. */
const outgoingIndexes = new WeakMap<ExploredGraph, { start: Int32Array; edges: Int32Array }>();

function outgoingIndex(graph: ExploredGraph): { start: Int32Array; edges: Int32Array } {
  const known = outgoingIndexes.get(graph);
  if (known !== undefined) return known;
  const index = edgeIndex(graph.states.length, graph.edgeCount, graph.edgeSource);
  outgoingIndexes.set(graph, index);
  return index;
}

/** The edges grouped by `endpoint[edge]` (counting sort): those of state s are `edges[start[s]]` to `edges[start[s + 1] - 1]`, in edge order. */
function edgeIndex(count: number, edgeCount: number, endpoint: Int32Array): { start: Int32Array; edges: Int32Array } {
  const start = new Int32Array(count + 1);
  for (let edge = 0; edge < edgeCount; edge += 1) {
    const slot = (endpoint[edge] as number) + 1;
    start[slot] = (start[slot] as number) + 1;
  }
  for (let state = 0; state < count; state += 1)
    start[state + 1] = (start[state + 1] as number) + (start[state] as number);
  const fill = start.slice(0, count);
  const edges = new Int32Array(edgeCount);
  for (let edge = 0; edge < edgeCount; edge += 1) {
    const state = endpoint[edge] as number;
    edges[fill[state] as number] = edge;
    fill[state] = (fill[state] as number) + 1;
  }
  return { start, edges };
}

/** States from which no final state can be reached (a reverse breadth-first search from the final ones). */
export function statesThatCannotFinish(graph: ExploredGraph): number[] {
  const count = graph.states.length;
  // Incoming edges grouped by target, in edge order: the order the search visits sources in, as a list per target had.
  const incoming = edgeIndex(count, graph.edgeCount, graph.edgeTarget);
  const canFinish = new Uint8Array(count);
  const queue = new Int32Array(count);
  let tail = 0;
  for (let state = 0; state < count; state += 1)
    if ((graph.states[state] as ExploredState).status === 'done') {
      canFinish[state] = 1;
      queue[tail++] = state;
    }
  for (let head = 0; head < tail; head += 1) {
    const target = queue[head] as number;
    for (
      let position = incoming.start[target] as number;
      position < (incoming.start[target + 1] as number);
      position += 1
    ) {
      const source = graph.edgeSource[incoming.edges[position] as number] as number;
      if (canFinish[source] === 1) continue;
      canFinish[source] = 1;
      queue[tail++] = source;
    }
  }
  const stuck: number[] = [];
  for (let state = 0; state < count; state += 1) if (canFinish[state] === 0) stuck.push(state);
  return stuck;
}

export interface Cycle {
  /** Shortest path to the first state of the cycle. */
  prefix: PathStep[];
  /** The events that lead from that state back to it. */
  cycle: PathStep[];
}

/**
 * States that may lie on a cycle, earliest found first (states are numbered in breadth-first order, so the
 * first has the shortest path): what is left once states without a predecessor, then states without a
 * successor, are peeled off one by one.
 */
function earliestOnCycles(graph: ExploredGraph, start: Int32Array, edges: Int32Array, count = 8): number[] {
  const states = graph.states.length;
  const indegree = new Int32Array(states);
  const outdegree = new Int32Array(states);
  const incoming: number[][] = Array.from({ length: states }, () => []);
  for (let edge = 0; edge < graph.edgeCount; edge += 1) {
    const [source, target] = [graph.edgeSource[edge] as number, graph.edgeTarget[edge] as number];
    indegree[target] = (indegree[target] as number) + 1;
    outdegree[source] = (outdegree[source] as number) + 1;
    (incoming[target] as number[]).push(source);
  }
  const removed = new Uint8Array(states);
  const peel = (degree: Int32Array, next: (state: number) => Iterable<number>) => {
    const queue: number[] = [];
    for (let state = 0; state < states; state += 1) if (degree[state] === 0 && removed[state] === 0) queue.push(state);
    for (let head = 0; head < queue.length; head += 1) {
      const state = queue[head] as number;
      removed[state] = 1;
      for (const neighbour of next(state)) {
        degree[neighbour] = (degree[neighbour] as number) - 1;
        if (degree[neighbour] === 0 && removed[neighbour] === 0) queue.push(neighbour);
      }
    }
  };
  peel(indegree, function* successors(state) {
    for (let position = start[state] as number; position < (start[state + 1] as number); position += 1)
      yield graph.edgeTarget[edges[position] as number] as number;
  });
  peel(outdegree, (state) => incoming[state] as number[]);
  const left: number[] = [];
  for (let state = 0; state < states && left.length < count; state += 1) if (removed[state] === 0) left.push(state);
  return left;
}

/** The shortest cycle back to one of `candidates`, with the shortest path to it: a counterexample easy to read. */
function shortestCycleThrough(
  graph: ExploredGraph,
  candidates: readonly number[],
  start: Int32Array,
  edges: Int32Array,
): Cycle {
  let best: number[] | null = null;
  let bestState = candidates[0] as number;
  for (const origin of candidates) {
    const via = new Map<number, number>();
    const queue = [origin];
    let closing = -1;
    for (let head = 0; head < queue.length && closing < 0; head += 1) {
      const state = queue[head] as number;
      for (let position = start[state] as number; position < (start[state + 1] as number); position += 1) {
        const edge = edges[position] as number;
        const target = graph.edgeTarget[edge] as number;
        if (target === origin) {
          closing = edge;
          break;
        }
        if (via.has(target)) continue;
        via.set(target, edge);
        queue.push(target);
      }
    }
    if (closing < 0) continue;
    const cycle = [closing];
    for (
      let at = graph.edgeSource[closing] as number;
      at !== origin;
      at = graph.edgeSource[via.get(at) as number] as number
    )
      cycle.push(via.get(at) as number);
    // Candidates come earliest first: the first that closes a cycle has the shortest way into it.
    best = cycle.reverse();
    bestState = origin;
    break;
  }
  const prefix = edgesTo(graph, bestState);
  const steps = stepsAlong(graph, [...prefix, ...(best ?? [])]);
  return { prefix: steps.slice(0, prefix.length), cycle: steps.slice(prefix.length) };
}

/**
 * The order in which the heaviest-run search takes the states (Kahn's, from the initial state, each state once
 * its last incoming edge is taken), made once per graph: it depends on the edges alone, not on their weights.
 * `acyclic` when it is a topological order of every state (all are reachable from the initial one, which has no
 * incoming edge).
 */
const takingOrders = new WeakMap<ExploredGraph, { order: number[]; acyclic: boolean }>();

function takingOrder(graph: ExploredGraph): { order: number[]; acyclic: boolean } {
  const known = takingOrders.get(graph);
  if (known !== undefined) return known;
  const count = graph.states.length;
  const indegree = new Int32Array(count);
  for (let edge = 0; edge < graph.edgeCount; edge += 1) {
    const target = graph.edgeTarget[edge] as number;
    indegree[target] = (indegree[target] as number) + 1;
  }
  const acyclicStart = indegree[0] === 0;
  const { start, edges } = outgoingIndex(graph);
  const order = [0];
  for (let head = 0; head < order.length; head += 1) {
    const state = order[head] as number;
    for (let position = start[state] as number; position < (start[state + 1] as number); position += 1) {
      const target = graph.edgeTarget[edges[position] as number] as number;
      indegree[target] = (indegree[target] as number) - 1;
      if (indegree[target] === 0) order.push(target);
    }
  }
  const taking = { order, acyclic: acyclicStart && order.length === count };
  takingOrders.set(graph, taking);
  return taking;
}

/** A cycle of the graph if it has one (iterative depth-first search, then the shortest cycle through what it found), else null. */
export function findCycle(graph: ExploredGraph): Cycle | null {
  // A graph with a topological order of every state has no cycle: the heaviest runs made that order already.
  if (takingOrder(graph).acyclic) return null;
  const { start, edges } = outgoingIndex(graph);
  const count = graph.states.length;
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
        const onCycle = [target];
        for (let at = state; at !== target; at = graph.edgeSource[viaEdge[at] as number] as number) onCycle.push(at);
        return shortestCycleThrough(graph, [...earliestOnCycles(graph, start, edges), ...onCycle], start, edges);
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
  const count = graph.states.length;
  const { start, edges } = outgoingIndex(graph);
  const { order } = takingOrder(graph);
  const best = new Float64Array(count).fill(-Infinity);
  const bestEdge = new Int32Array(count).fill(-1);
  best[0] = 0;
  for (let head = 0; head < order.length; head += 1) {
    const state = order[head] as number;
    for (let position = start[state] as number; position < (start[state + 1] as number); position += 1) {
      const edge = edges[position] as number;
      const target = graph.edgeTarget[edge] as number;
      const total = (best[state] as number) + (weight[edge] as number);
      if (total > (best[target] as number)) {
        best[target] = total;
        bestEdge[target] = edge;
      }
    }
  }
  let argmax = 0;
  for (let state = 1; state < count; state += 1) if ((best[state] as number) > (best[argmax] as number)) argmax = state;
  const path: number[] = [];
  for (let state = argmax; bestEdge[state] !== -1; state = graph.edgeSource[bestEdge[state] as number] as number)
    path.push(bestEdge[state] as number);
  return { total: best[argmax] as number, path: stepsAlong(graph, path.reverse()) };
}
