/**
 * The loop statechart as plain graph data, read from the machine's own definition (its state nodes and
 * their transitions), never from a hand-kept copy: a state added to the machine appears in the viewer.
 * Also finds the edges a recorded `transition` trace event went through: the driver records only the
 * resting states before and after each event, so the eventless hops between them are searched for.
 */
import type { AnyStateMachine } from 'xstate';

/** One state; `id` is the path the trace uses (`READY`, `RUNNING.deciding`). */
export interface StatechartState {
  id: string;
  key: string;
  parent: string | null;
  kind: 'atomic' | 'compound' | 'final';
  /** The child entered first, for a compound state. */
  initial: string | null;
  children: string[];
}

/** One candidate transition: `event` null for an eventless (`always`) one; `guard` its guard's name. */
export interface StatechartTransition {
  source: string;
  target: string;
  event: string | null;
  guard: string | null;
}

/** The transitions between two states, drawn as one arrow. */
export interface StatechartEdge {
  id: string;
  source: string;
  target: string;
  /** The events on it, in definition order; eventless transitions are not listed (see `eventless`). */
  events: string[];
  eventless: boolean;
  transitions: StatechartTransition[];
}

export interface StatechartGraph {
  /** Depth first, parents before children. */
  states: StatechartState[];
  edges: StatechartEdge[];
}

interface StateNodeLike {
  id: string;
  key: string;
  type: string;
  states: Record<string, StateNodeLike>;
  initial?: { target: readonly StateNodeLike[] };
  transitions: Map<string, readonly TransitionLike[]>;
  always?: readonly TransitionLike[];
}

interface TransitionLike {
  target?: readonly StateNodeLike[];
  guard?: unknown;
}

/** A guard's name as written in the machine: a string, `{ type }`, or a combinator such as `and([...])`. */
function guardName(guard: unknown): string | null {
  if (guard === undefined || guard === null) return null;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'object' && typeof (guard as { type?: unknown }).type === 'string')
    return (guard as { type: string }).type;
  if (typeof guard === 'function') {
    const parts = (guard as { guards?: unknown }).guards;
    if (Array.isArray(parts)) return parts.map((part) => guardName(part) ?? '?').join(' and ');
    return guard.name || 'guard';
  }
  return 'guard';
}

/**
 * Reads `machine`'s states and transitions into graph data.
 * @example
 * const { states, edges } = statechartGraph(loopMachine); // states[0].id === 'READY'
 */
export function statechartGraph(machine: AnyStateMachine): StatechartGraph {
  const root = machine.root as unknown as StateNodeLike;
  const prefix = `${root.id}.`;
  const pathOf = (node: StateNodeLike) => (node.id.startsWith(prefix) ? node.id.slice(prefix.length) : node.id);
  const states: StatechartState[] = [];
  const transitions: StatechartTransition[] = [];
  const visit = (node: StateNodeLike, parent: string | null) => {
    const id = pathOf(node);
    const children = Object.values(node.states);
    const kind = node.type === 'final' ? 'final' : children.length > 0 ? 'compound' : 'atomic';
    const initial = kind === 'compound' ? node.initial?.target[0] : undefined;
    states.push({
      id,
      key: node.key,
      parent,
      kind,
      initial: initial === undefined ? null : pathOf(initial),
      children: children.map(pathOf),
    });
    const add = (event: string | null, transition: TransitionLike) => {
      for (const target of transition.target ?? [])
        transitions.push({ source: id, target: pathOf(target), event, guard: guardName(transition.guard) });
    };
    for (const [event, list] of node.transitions) for (const transition of list) add(event, transition);
    for (const transition of node.always ?? []) add(null, transition);
    for (const child of children) visit(child, id);
  };
  for (const child of Object.values(root.states)) visit(child, null);
  const edges = new Map<string, StatechartEdge>();
  for (const transition of transitions) {
    const id = `${transition.source}->${transition.target}`;
    let edge = edges.get(id);
    if (edge === undefined)
      edges.set(
        id,
        (edge = {
          id,
          source: transition.source,
          target: transition.target,
          events: [],
          eventless: false,
          transitions: [],
        }),
      );
    edge.transitions.push(transition);
    if (transition.event === null) edge.eventless = true;
    else if (!edge.events.includes(transition.event)) edge.events.push(transition.event);
  }
  return { states, edges: [...edges.values()] };
}

/** The longest run of eventless hops searched between two recorded resting states. */
const MAX_HOPS = 16;

/**
 * A state's id and its ancestors' ids, innermost first (`RUNNING.deciding`, `RUNNING`).
 * @example
 * lineageOf(graph)('RUNNING.deciding') // ['RUNNING.deciding', 'RUNNING']
 */
export function lineageOf(graph: StatechartGraph): (id: string) => string[] {
  const byId = new Map(graph.states.map((state) => [state.id, state]));
  return (id) => {
    const chain: string[] = [];
    for (
      let state = byId.get(id);
      state !== undefined;
      state = state.parent === null ? undefined : byId.get(state.parent)
    )
      chain.push(state.id);
    return chain;
  };
}

/**
 * The edges one recorded transition went through: `event` taken from `from` (or a state containing
 * it), then eventless transitions, until `to`. The shortest such route, or the shortest through the
 * state `through` when one is given and exists (what else the trace recorded can tell two routes
 * apart); null when none exists (a trace from another version of the machine).
 * @example
 * routeOf(graph, 'READY', 'run.started', 'RUNNING.deciding') // ['READY->RUNNING', 'RUNNING.gate->RUNNING.deciding']
 */
export function routeOf(
  graph: StatechartGraph,
  from: string,
  event: string,
  to: string,
  through?: string,
): string[] | null {
  const byId = new Map(graph.states.map((state) => [state.id, state]));
  const outgoing = new Map<string, StatechartTransition[]>();
  for (const edge of graph.edges)
    for (const transition of edge.transitions)
      outgoing.set(transition.source, [...(outgoing.get(transition.source) ?? []), transition]);
  const lineage = lineageOf(graph);
  // Entering a compound state enters its initial child, down to an atomic one.
  const settle = (id: string): string => {
    let state = byId.get(id);
    while (state?.kind === 'compound' && state.initial !== null) state = byId.get(state.initial);
    return state?.id ?? id;
  };
  const candidates = (id: string, wanted: string | null) =>
    lineage(id).flatMap((source) => (outgoing.get(source) ?? []).filter((transition) => transition.event === wanted));
  interface Step {
    state: string;
    passed: boolean;
    edges: string[];
  }
  const advance = (step: Step | null, transition: StatechartTransition): Step => {
    const state = settle(transition.target);
    const passed =
      (step?.passed ?? false) || through === undefined || transition.target === through || state === through;
    return { state, passed, edges: [...(step?.edges ?? []), `${transition.source}->${transition.target}`] };
  };
  let frontier: Step[] = candidates(from, event).map((transition) => advance(null, transition));
  const seen = new Set<string>();
  for (let hop = 0; hop < MAX_HOPS && frontier.length > 0; hop++) {
    const found = frontier.find((step) => step.state === to && step.passed);
    if (found !== undefined) return found.edges;
    const next: Step[] = [];
    for (const step of frontier) {
      const key = `${step.state}|${step.passed}`;
      if (seen.has(key)) continue;
      seen.add(key);
      for (const transition of candidates(step.state, null)) next.push(advance(step, transition));
    }
    frontier = next;
  }
  return through === undefined ? null : routeOf(graph, from, event, to);
}
