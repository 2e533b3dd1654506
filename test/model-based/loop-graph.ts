/**
 * The reachable graph of the loop statechart under one model configuration, built with `xstate/graph`,
 * plus the transition definitions each edge fires. Exported for the exploration test and for replaying
 * the shortest paths against the runtime.
 */
import { initialTransition, type ActorLogic, type AnyTransitionDefinition } from 'xstate';
import { getAdjacencyMap, getShortestPaths, type SerializedEvent, type StatePath } from 'xstate/graph';
import { loopMachine, type LoopMachine } from '../../machines/loop-machine.js';
import type { LoopSnapshot } from '../../machines/pending-effect.js';
import type { LoopEvent, LoopInput } from '../../machines/types.js';
import {
  abstractOutcomes,
  createAbstractEvents,
  modelInput,
  serializeLoopEvent,
  serializeLoopSnapshot,
  type ModelConfiguration,
} from './abstract-events.js';
import {
  createTransitionTracer,
  listTransitionDefinitions,
  type TransitionEntry,
} from '../../src/tooling/verify/transition-catalog.js';

/** Safety net: the traversal throws instead of running away if a configuration's space explodes. */
export const TRAVERSAL_LIMIT = 200_000;

export interface LoopGraphEdge {
  source: string;
  target: string;
  label: string;
  event: LoopEvent;
  /** Ids (see `TransitionEntry.id`) of the transition definitions taken, in microstep order. */
  fired: string[];
  /** Microsteps of this macrostep that assigned `context.stop`. */
  stopAssignments: number;
}

export interface LoopGraph {
  config: ModelConfiguration;
  initial: string;
  states: Map<string, LoopSnapshot>;
  edges: LoopGraphEdge[];
  transitions: TransitionEntry[];
}

function traversalOptions(config: ModelConfiguration) {
  return {
    input: modelInput(config),
    events: createAbstractEvents(config),
    serializeState: (snapshot: LoopSnapshot) => serializeLoopSnapshot(snapshot),
    serializeEvent: serializeLoopEvent,
    limit: TRAVERSAL_LIMIT,
  };
}

interface EdgeTrace {
  fired: string[];
  stopAssignments: number;
}

/**
 * The machine as actor logic whose `transition` also records what each macrostep fired, keyed by the
 * source snapshot and event objects, which `getAdjacencyMap` hands back unchanged in its result.
 */
function tracedLoopLogic(
  machine: LoopMachine,
  initial: LoopSnapshot,
  idOf: ReadonlyMap<AnyTransitionDefinition, string>,
) {
  const tracer = createTransitionTracer(machine);
  const traces = new Map<LoopSnapshot, Map<LoopEvent, EdgeTrace>>();
  const logic: ActorLogic<LoopSnapshot, LoopEvent, LoopInput> = {
    transition: (snapshot, event) => {
      const traced = tracer.step(snapshot, event);
      let stopAssignments = 0;
      let previousStop = snapshot.context.stop;
      for (const microstep of traced.microsteps) {
        if (microstep.context.stop !== previousStop) stopAssignments += 1;
        previousStop = microstep.context.stop;
      }
      const fired = traced.fired.map((definition) => idOf.get(definition) ?? `unknown:${definition.eventType}`);
      const bySource = traces.get(snapshot) ?? new Map<LoopEvent, EdgeTrace>();
      bySource.set(event, { fired, stopAssignments });
      traces.set(snapshot, bySource);
      return traced.next;
    },
    getInitialSnapshot: () => initial,
    getPersistedSnapshot: (snapshot) => snapshot,
  };
  return { logic, traces };
}

function labelsOf(config: ModelConfiguration, snapshot: LoopSnapshot): Map<string, string> {
  return new Map(
    abstractOutcomes(config, snapshot).map((outcome) => [serializeLoopEvent(outcome.event), outcome.label]),
  );
}

/**
 * Breadth-first exploration with `getAdjacencyMap` from the initial snapshot (READY, waiting for
 * `run.started`), recording the transition definitions every edge fires. `machine` may be the loop machine
 * with other implementations (`loopMachine.provide(...)`).
 */
export function exploreLoopGraph(config: ModelConfiguration, machine: LoopMachine = loopMachine): LoopGraph {
  const transitions = listTransitionDefinitions(machine.root);
  const [initialSnapshot] = initialTransition(machine, modelInput(config));
  const { logic, traces } = tracedLoopLogic(
    machine,
    initialSnapshot,
    new Map(transitions.map((entry) => [entry.definition, entry.id])),
  );
  const adjacency = getAdjacencyMap(logic, { ...traversalOptions(config), fromState: initialSnapshot });
  const states = new Map<string, LoopSnapshot>();
  const edges: LoopGraphEdge[] = [];
  for (const [source, { state, transitions: outgoing }] of Object.entries(adjacency)) {
    states.set(source, state);
    const labels = labelsOf(config, state);
    for (const eventKey of Object.keys(outgoing) as SerializedEvent[]) {
      const { event, state: next } = outgoing[eventKey] as { event: LoopEvent; state: LoopSnapshot };
      const trace = traces.get(state)?.get(event) ?? { fired: [], stopAssignments: 0 };
      edges.push({
        source,
        target: serializeLoopSnapshot(next),
        label: labels.get(eventKey) ?? eventKey,
        event,
        ...trace,
      });
    }
  }
  return { config, initial: serializeLoopSnapshot(initialSnapshot), states, edges, transitions };
}

/** States from which no final state can be reached (reverse breadth-first search from the final states). */
export function statesThatCannotFinish(graph: LoopGraph): string[] {
  const incoming = new Map<string, string[]>();
  for (const edge of graph.edges) {
    const sources = incoming.get(edge.target) ?? [];
    sources.push(edge.source);
    incoming.set(edge.target, sources);
  }
  const canFinish = new Set<string>();
  const queue: string[] = [];
  for (const [key, snapshot] of graph.states) {
    if (snapshot.status === 'done') {
      canFinish.add(key);
      queue.push(key);
    }
  }
  for (let head = 0; head < queue.length; head += 1) {
    for (const source of incoming.get(queue[head] as string) ?? []) {
      if (canFinish.has(source)) continue;
      canFinish.add(source);
      queue.push(source);
    }
  }
  return [...graph.states.keys()].filter((key) => !canFinish.has(key));
}

/** Events in the longest run (topological order); infinite when the graph has a cycle, i.e. some run need not end. */
export function longestRun(graph: LoopGraph): number {
  const outgoing = new Map<string, string[]>();
  const indegree = new Map<string, number>([...graph.states.keys()].map((key) => [key, 0]));
  for (const edge of graph.edges) {
    const targets = outgoing.get(edge.source) ?? [];
    targets.push(edge.target);
    outgoing.set(edge.source, targets);
    indegree.set(edge.target, (indegree.get(edge.target) ?? 0) + 1);
  }
  const depth = new Map<string, number>();
  const queue = [...indegree].filter(([, count]) => count === 0).map(([key]) => key);
  let longest = 0;
  for (let head = 0; head < queue.length; head += 1) {
    const key = queue[head] as string;
    const here = depth.get(key) ?? 0;
    longest = Math.max(longest, here);
    for (const target of outgoing.get(key) ?? []) {
      depth.set(target, Math.max(depth.get(target) ?? 0, here + 1));
      const remaining = (indegree.get(target) ?? 0) - 1;
      indegree.set(target, remaining);
      if (remaining === 0) queue.push(target);
    }
  }
  return queue.length === graph.states.size ? longest : Number.POSITIVE_INFINITY;
}

export interface LabelledStep {
  /** The snapshot the event is sent to. */
  state: LoopSnapshot;
  label: string;
  event: LoopEvent;
}

export interface LabelledPath {
  /** Serialized target state. */
  target: string;
  state: LoopSnapshot;
  steps: LabelledStep[];
}

/** One shortest path (fewest events) from the initial snapshot to every reachable state, from the explored graph. */
export function shortestPathsOf(graph: LoopGraph): LabelledPath[] {
  const parent = new Map<string, LoopGraphEdge | null>([[graph.initial, null]]);
  const queue = [graph.initial];
  const outgoing = new Map<string, LoopGraphEdge[]>();
  for (const edge of graph.edges) {
    const list = outgoing.get(edge.source) ?? [];
    list.push(edge);
    outgoing.set(edge.source, list);
  }
  for (let head = 0; head < queue.length; head += 1) {
    for (const edge of outgoing.get(queue[head] as string) ?? []) {
      if (parent.has(edge.target)) continue;
      parent.set(edge.target, edge);
      queue.push(edge.target);
    }
  }
  return queue.map((target) => {
    const steps: LabelledStep[] = [];
    for (let edge = parent.get(target); edge; edge = parent.get(edge.source)) {
      steps.push({ state: graph.states.get(edge.source) as LoopSnapshot, label: edge.label, event: edge.event });
    }
    return { target, state: graph.states.get(target) as LoopSnapshot, steps: steps.reverse() };
  });
}

/** The same paths straight from `xstate/graph` (`getShortestPaths`); its first step is the `xstate.init` pseudo-event. */
export function getLoopShortestPaths(
  config: ModelConfiguration,
  machine: LoopMachine = loopMachine,
): Array<StatePath<LoopSnapshot, LoopEvent>> {
  return getShortestPaths(machine, traversalOptions(config));
}
