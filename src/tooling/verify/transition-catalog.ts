/**
 * Every transition definition of a machine, with a stable id, and a tracer that reports which of them
 * fire in a macrostep, eventless ones included.
 *
 * The tracer runs `machine.transition` with an actor scope whose system has an inspection observer:
 * xstate reports each microstep as `@xstate.microstep` with the transition definitions it took, so no
 * guard has to be re-evaluated here.
 */
import { createEmptyActor, type AnyActorScope, type AnyStateNode, type AnyTransitionDefinition } from 'xstate';
import { loopMachine, type LoopMachine } from '../../../machines/loop-machine.js';
import type { LoopSnapshot } from '../../../machines/pending-effect.js';
import type { LoopEvent } from '../../../machines/types.js';

export interface TransitionEntry {
  /** `<source node id>|<event type or "always">|<index among that node's candidates for the event>`. */
  id: string;
  source: string;
  eventType: string;
  index: number;
  guard: string | null;
  targets: string[];
  definition: AnyTransitionDefinition;
}

function guardName(definition: AnyTransitionDefinition): string | null {
  const guard: unknown = definition.guard;
  if (guard === undefined) return null;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'object' && guard !== null && 'type' in guard) return String(guard.type);
  return 'inline';
}

function describe(
  node: AnyStateNode,
  eventType: string,
  index: number,
  definition: AnyTransitionDefinition,
): TransitionEntry {
  return {
    id: `${node.id}|${eventType}|${index}`,
    source: node.id,
    eventType,
    index,
    guard: guardName(definition),
    targets: (definition.target ?? []).map((target) => target.id),
    definition,
  };
}

function collect(node: AnyStateNode, entries: TransitionEntry[]): void {
  for (const [eventType, definitions] of node.transitions) {
    definitions.forEach((definition, index) => entries.push(describe(node, eventType, index, definition)));
  }
  (node.always ?? []).forEach((definition, index) => entries.push(describe(node, 'always', index, definition)));
  for (const child of Object.values(node.states)) collect(child, entries);
}

/** All transition definitions of the machine, depth first in document order. */
export function listTransitionDefinitions(root: AnyStateNode = loopMachine.root): TransitionEntry[] {
  const entries: TransitionEntry[] = [];
  collect(root, entries);
  return entries;
}

export interface TracedMacrostep {
  next: LoopSnapshot;
  /** The transition definitions taken, microstep by microstep. */
  fired: AnyTransitionDefinition[];
  /** The snapshot after each microstep (the last one is `next`). */
  microsteps: LoopSnapshot[];
}

export interface TransitionTracer {
  step(snapshot: LoopSnapshot, event: LoopEvent): TracedMacrostep;
}

/** A tracer owning one inert actor scope; the machine's actions are all `assign`, so nothing executes. */
export function createTransitionTracer(machine: LoopMachine = loopMachine): TransitionTracer {
  let fired: AnyTransitionDefinition[] = [];
  let microsteps: LoopSnapshot[] = [];
  const probe = createEmptyActor();
  probe.system.inspect((inspection) => {
    if (inspection.type !== '@xstate.microstep') return;
    fired.push(...inspection._transitions);
    microsteps.push(inspection.snapshot as LoopSnapshot);
  });
  const scope: AnyActorScope = {
    self: probe,
    id: '',
    sessionId: '',
    logger: () => {},
    defer: () => {},
    emit: () => {},
    system: probe.system,
    stopChild: () => {},
    actionExecutor: () => {},
  };
  return {
    step(snapshot, event) {
      fired = [];
      microsteps = [];
      const next = machine.transition(snapshot, event, scope);
      return { next, fired, microsteps };
    },
  };
}
