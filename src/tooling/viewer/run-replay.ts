/**
 * The viewer's time travel, replayed: the machine events a trace recorded are sent, in order, to the loop
 * machine itself with XState's pure `transition()`, from the input the run's first event recorded. Every
 * frame's state, counters, streaks and budgets are the machine's own, not figures rebuilt from the trace;
 * the edges each event took are the microsteps XState reports for it.
 */
import { getMicrosteps, initialTransition, transition } from 'xstate';
import { loopMachine, type LoopSnapshot } from '../../../machines/index.js';
import type { LoopContext, LoopEvent, LoopInput, LoopLimits, NoProgressThresholds } from '../../../machines/types.js';
import { DEFAULT_LIMITS, DEFAULT_NO_PROGRESS, type TraceEvent } from '../../index.js';
import { lineageOf, type StatechartGraph } from './statechart-graph.js';

type MachineEventRecord = Extract<TraceEvent, { type: 'machine-event' }>;
type TracedInput = NonNullable<MachineEventRecord['input']>;

/** What a frame shows of the machine's context: all of it but the input, which every frame shares. */
export type FrameContext = Omit<LoopContext, 'limits' | 'noProgress' | 'tasks'>;

/** The machine after one recorded event (or, first, after its input), as the replay reached it. */
export interface ReplayedFrame {
  /** The trace event's position in the run's events; -1 for the opening frame. */
  position: number;
  at: number;
  /** The machine event's type; null for the opening frame. */
  event: string | null;
  from: string | null;
  state: string;
  /** The edges the event took, in order: the transition it chose, then each eventless hop. */
  route: string[];
  context: FrameContext;
}

export interface Replay {
  /** The limits and thresholds the machine ran with (`Infinity` where switched off). */
  input: LoopInput;
  frames: ReplayedFrame[];
  /** Where the replay and the recorded run parted (a trace from another version of the machine), in words. */
  notices: string[];
}

/** The dotted name of the snapshot's state, as the trace names it (`RUNNING.deciding`). */
export function stateNameOf(snapshot: LoopSnapshot): string {
  const name = (value: unknown): string => {
    if (typeof value === 'string') return value;
    const [parent, child] = Object.entries(value as Record<string, unknown>)[0] ?? ['?', '?'];
    return `${parent}.${name(child)}`;
  };
  return name(snapshot.value);
}

/** Recorded values with JSON's null back to `Infinity` (switched off); one the trace lacks (added since) is its default. */
const restored = <Values extends object>(traced: object, defaults: Readonly<Partial<Values>>): Values =>
  ({
    ...defaults,
    ...Object.fromEntries(Object.entries(traced).map(([key, value]) => [key, value === null ? Infinity : value])),
  }) as Values;

/** The machine's input as recorded, with JSON's null back to `Infinity`. */
function machineInput(traced: TracedInput): LoopInput {
  return {
    limits: restored<LoopLimits>(traced.limits, DEFAULT_LIMITS),
    noProgress: restored<NoProgressThresholds>(traced.noProgress, DEFAULT_NO_PROGRESS),
    tasks: traced.tasks,
  };
}

function frameContext(context: LoopContext): FrameContext {
  const { limits: _limits, noProgress: _noProgress, tasks: _tasks, ...rest } = context;
  return rest;
}

/** The edges of one event: for each microstep, the transition from a state containing the last one into the next. */
function routeOfMicrosteps(graph: StatechartGraph, before: LoopSnapshot, event: LoopEvent): string[] {
  const lineage = lineageOf(graph);
  const route: string[] = [];
  let from = stateNameOf(before);
  for (const [index, [micro]] of getMicrosteps(loopMachine, before, event).entries()) {
    const to = stateNameOf(micro);
    const wanted = index === 0 ? event.type : null;
    // Deepest source first, as XState selects: a child's transition wins over its parent's.
    const edge = lineage(from)
      .flatMap((source) => graph.edges.filter((candidate) => candidate.source === source))
      .find(
        (candidate) =>
          candidate.transitions.some((item) => item.event === wanted) &&
          (candidate.target === to || lineage(to).includes(candidate.target)),
      );
    if (edge !== undefined) route.push(edge.id);
    from = to;
  }
  return route;
}

/**
 * Replays a run's machine events; null when the trace holds no machine input to start from (a version 1
 * trace, or one that begins after the run did).
 * @example
 * const replay = replayRun(trace.events, statechartGraph(loopMachine));
 * replay?.frames.at(-1)?.context.usage.inputTokens // what the machine counted
 */
export function replayRun(events: readonly TraceEvent[], graph: StatechartGraph): Replay | null {
  const start = events.find(
    (event): event is MachineEventRecord => event.type === 'machine-event' && event.input !== undefined,
  );
  if (start?.input === undefined) return null;
  const input = machineInput(start.input);
  const notices: string[] = [];
  let [snapshot] = initialTransition(loopMachine, input);
  const frames: ReplayedFrame[] = [
    {
      position: -1,
      at: start.at,
      event: null,
      from: null,
      state: stateNameOf(snapshot),
      route: [],
      context: frameContext(snapshot.context),
    },
  ];
  // The snapshot before the last event: a run that stopped to wait for a person continues from there.
  let beforeLast = snapshot;
  let resumed = false;
  const first = events.indexOf(start);
  events.forEach((traced, position) => {
    if (traced.type === 'run-resume') resumed = true;
    if (traced.type === 'transition') {
      const replayed = frames.at(-1);
      if (replayed !== undefined && replayed.position >= 0 && replayed.state !== traced.to && notices.length === 0) {
        notices.push(
          `the replay left ${traced.from} for ${replayed.state} on ${traced.event}, the run for ${traced.to}: a trace from another version of the machine? Frames from here on may differ from the run`,
        );
      }
      return;
    }
    if (traced.type !== 'machine-event' || position < first) return;
    // The recorded event is the machine's own union (the schema reads it loosely).
    const event = traced.event as unknown as LoopEvent;
    // A durable run stopped for approval continues with a new event in place of the one it stopped at.
    if (resumed && snapshot.status !== 'active') snapshot = beforeLast;
    resumed = false;
    const route = routeOfMicrosteps(graph, snapshot, event);
    const from = stateNameOf(snapshot);
    beforeLast = snapshot;
    [snapshot] = transition(loopMachine, snapshot, event);
    frames.push({
      position,
      at: traced.at,
      event: event.type,
      from,
      state: stateNameOf(snapshot),
      route,
      context: frameContext(snapshot.context),
    });
  });
  return { input, frames, notices };
}
