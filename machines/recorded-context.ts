/**
 * The context an outcome event leaves behind, for the guards of that event's own transitions.
 *
 * XState evaluates a transition's guards before its actions, so a guard on `model.responded` sees the
 * context as it was before the reply was recorded. Routing the outcome straight to its next resting
 * state (instead of recording it, then hopping through an eventless routing state to decide) needs
 * guards that read the context as recorded: `{ type: 'isStepLimitReached', params: RECORDED }` asks the
 * named guard about the context with the event's reducer applied. The reducer is pure, so the result
 * is the same as recording first; it is computed once per event and context, however many guards ask.
 */
import { recordModelResponse, recordToolRound, type ReducerArgs } from '../actions/record.js';
import type { LoopContext, LoopEvent } from './types.js';

/** Guard params: read the context as the event's own transition will leave it. */
export const RECORDED = Object.freeze({ recorded: true as const });

export type RecordedParams = typeof RECORDED | undefined;

const RECORDERS: Partial<Record<LoopEvent['type'], (args: ReducerArgs) => Partial<LoopContext>>> = {
  'model.responded': recordModelResponse,
  'tools.completed': recordToolRound,
};

/**
 * The last event recorded, the context it was recorded into, the reducer's update and the result. One entry is
 * enough (a macrostep evaluates an event's guards and then its assign, in one go), and unlike a WeakMap keyed by
 * event it costs the garbage collector nothing: an exhaustive exploration sends hundreds of thousands of events.
 */
let last: { event: LoopEvent; before: LoopContext; update: Partial<LoopContext>; after: LoopContext } | undefined;

function recorded(context: LoopContext, event: LoopEvent, record: (args: ReducerArgs) => Partial<LoopContext>) {
  const cached = last;
  if (cached !== undefined && cached.event === event && cached.before === context) return cached;
  const update = record({ context, event });
  const entry = { event, before: context, update, after: { ...context, ...update } };
  last = entry;
  return entry;
}

/**
 * The last recording, when it was of `event` into `context`: its update and the context it leaves (the update
 * merged into `context`). A caller applying that very update can take the merged context instead of merging again.
 */
export function lastRecorded(
  context: LoopContext,
  event: LoopEvent,
): { update: Partial<LoopContext>; after: LoopContext } | undefined {
  return last !== undefined && last.event === event && last.before === context ? last : undefined;
}

/** The context after `event` is recorded into `context`; `context` itself for events that record nothing here. */
export function recordedContext(context: LoopContext, event: LoopEvent): LoopContext {
  const record = RECORDERS[event.type];
  return record === undefined ? context : recorded(context, event, record).after;
}

/**
 * The reducer's update for `event`, for the transition's own `assign`: the one its guards computed, so
 * the reducer runs once per event however many guards read the recorded context.
 * @example
 * assign(({ context, event }) => recordedUpdate(context, event, recordModelResponse))
 */
export function recordedUpdate(
  context: LoopContext,
  event: LoopEvent,
  record: (args: ReducerArgs) => Partial<LoopContext>,
): Partial<LoopContext> {
  return RECORDERS[event.type] === record ? recorded(context, event, record).update : record({ context, event });
}

/** A guard that reads the recorded context when its params say so, and the context as it is otherwise. */
export function readingRecorded(guard: (args: { context: LoopContext; event: LoopEvent }) => boolean) {
  return (args: { context: LoopContext; event: LoopEvent }, params: RecordedParams): boolean =>
    guard(params?.recorded === true ? { context: recordedContext(args.context, args.event), event: args.event } : args);
}
