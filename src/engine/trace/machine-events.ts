/**
 * The `machine-event` trace event: each outcome event as the machine is about to take it, so a reader replays
 * the run through the machine itself (the run's first event carries the machine's input). The event is the
 * driver's own summary (digests, counts, short messages): it adds one small record per event, and the
 * session's `record` redacts its strings like every other event's.
 */
import type { LoopContext, LoopEvent, NoProgressThresholds } from '../../../machines/types.js';
import type { TraceEvent, TracedMachineInput } from '../../contracts/trace-schema.js';
import { tracedLimits } from './run-facts.js';

/** Where the event goes: the run session, whose `record` redacts it and feeds the sinks. */
interface Recorder {
  readonly runId: string;
  record(event: TraceEvent): void;
  /** True while a durable run is rebuilt from its journal, its trace so far kept. */
  readonly replaying: boolean;
  /** The trace's first event (a resumed run's is read alone, not its whole trace). */
  readonly firstTraceEvent: TraceEvent | undefined;
}

/**
 * A durable run rebuilt from its journal reproduces its trace as it was written, and the journal counts its
 * events: one an older loopstate started (trace schema 1, no machine events) is rebuilt without them.
 */
function recordedMachineEvents(start: TraceEvent | undefined): boolean {
  return start?.type !== 'run-start' || start.schemaVersion >= 2;
}

type MachineEventRecord = Extract<TraceEvent, { type: 'machine-event' }>;

const finite = (value: number) => (Number.isFinite(value) ? value : null);

/** The thresholds with every switched-off (`Infinity`) one as null, which JSON can carry. */
function tracedThresholds(noProgress: NoProgressThresholds): TracedMachineInput['noProgress'] {
  return {
    repeatedToolCall: finite(noProgress.repeatedToolCall),
    unchangedState: finite(noProgress.unchangedState),
    sameEvaluatorReason: finite(noProgress.sameEvaluatorReason),
    duplicateObservation: finite(noProgress.duplicateObservation),
    planStall: finite(noProgress.planStall),
    sameParseError: finite(noProgress.sameParseError),
  };
}

/**
 * Records `event`, about to be sent to a machine whose context is `before`. On `run.started` that context is
 * still the machine's input, recorded with it: the limits, thresholds and task plans a replay starts from.
 */
export function recordMachineEvent(recorder: Recorder, event: LoopEvent, before: LoopContext): void {
  if (recorder.replaying && !recordedMachineEvents(recorder.firstTraceEvent)) return;
  const input: TracedMachineInput | undefined =
    event.type === 'run.started'
      ? {
          limits: tracedLimits(before.limits),
          noProgress: tracedThresholds(before.noProgress),
          tasks: before.tasks.map((task) => ({ ...task })),
        }
      : undefined;
  // The schema reads any event loosely (a newer machine's too); this one is the machine's own union.
  const recorded = event as unknown as MachineEventRecord['event'];
  recorder.record({
    type: 'machine-event',
    runId: recorder.runId,
    at: event.at,
    event: recorded,
    ...(input === undefined ? {} : { input }),
  });
}
