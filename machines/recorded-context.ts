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
import { copyContext } from '../actions/record-copy.js';
import type { LoopContext, LoopEvent } from './types.js';

/** Guard params: read the context as the event's own transition will leave it. */
export const RECORDED = Object.freeze({ recorded: true as const });

export type RecordedParams = typeof RECORDED | undefined;

/**
 * The reducer that records `type` here, if any: a reply's and a tool round's. Two comparisons instead of a keyed load
 * by a type that varies from call to call (megamorphic), asked by every guard that reads the recorded context.
 */
const recorderOf = (type: LoopEvent['type']): ((args: ReducerArgs) => Partial<LoopContext>) | undefined =>
  type === 'model.responded' ? recordModelResponse : type === 'tools.completed' ? recordToolRound : undefined;

/**
 * The last event recorded, the context it was recorded into, the reducer's update and the result. One entry is
 * enough (a macrostep evaluates an event's guards and then its assign, in one go), and unlike a WeakMap keyed by
 * event it costs the garbage collector nothing: an exhaustive exploration sends hundreds of thousands of events.
 */
interface Recording {
  event: LoopEvent;
  before: LoopContext;
  update: Partial<LoopContext>;
  after: LoopContext;
  /** `{ context: after, event }`, made once for every guard that reads the recorded context. */
  args: { context: LoopContext; event: LoopEvent };
}

let last: Recording | undefined;

/**
 * The one entry every recording after the first refills (`last` is it from then on): an exhaustive exploration records
 * hundreds of thousands of replies, and a fresh entry and args object for each is garbage the moment the next one is
 * made. Nothing keeps either across recordings: `lastRecorded` answers are read before the next event is recorded,
 * and guards read `args` during their call. The update and the merged context are new objects each time.
 */
const spare: Recording = {
  event: undefined as never,
  before: undefined as never,
  update: undefined as never,
  after: undefined as never,
  args: { context: undefined as never, event: undefined as never },
};

/** `{ ...context, ...update }`, as an object literal of the context's fields (see record-copy.ts) when it can be. */
function merged(context: LoopContext, update: Partial<LoopContext>): LoopContext {
  const after = copyContext(context) as unknown as Record<string, unknown>;
  for (const key in update) {
    if (!Object.hasOwn(after, key)) return { ...context, ...update };
    after[key] = (update as Record<string, unknown>)[key];
  }
  return after as unknown as LoopContext;
}

function recorded(
  context: LoopContext,
  event: LoopEvent,
  record: (args: ReducerArgs) => Partial<LoopContext>,
): Recording {
  const cached = last;
  if (cached !== undefined && cached.event === event && cached.before === context) return cached;
  const update = record({ context, event });
  const after = merged(context, update);
  const entry = spare;
  entry.event = event;
  entry.before = context;
  entry.update = update;
  entry.after = after;
  entry.args.context = after;
  entry.args.event = event;
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
  const record = recorderOf(event.type);
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
  return recorderOf(event.type) === record ? recorded(context, event, record).update : record({ context, event });
}

/**
 * The guard args with the recorded context: one object per recording, however many guards read it.
 * @example
 * plainGuard(recordedArgs({ context, event })) // what `readingRecorded(plainGuard)(args, RECORDED)` answers
 */
export function recordedArgs(args: { context: LoopContext; event: LoopEvent }): {
  context: LoopContext;
  event: LoopEvent;
} {
  const record = recorderOf(args.event.type);
  return record === undefined ? args : recorded(args.context, args.event, record).args;
}

type PlainGuard = (args: { context: LoopContext; event: LoopEvent }) => boolean;

/** The guard each `readingRecorded` wrapper calls. */
const wrapped = new WeakMap<object, PlainGuard>();

/** A guard that reads the recorded context when its params say so, and the context as it is otherwise. */
export function readingRecorded(guard: PlainGuard) {
  const reading = (args: { context: LoopContext; event: LoopEvent }, params: RecordedParams): boolean =>
    guard(params?.recorded === true ? recordedArgs(args) : args);
  wrapped.set(reading, guard);
  return reading;
}

/**
 * The guard a `readingRecorded` wrapper calls, or undefined for any other function: a caller that knows the params
 * can call it as the wrapper would (with `recordedArgs(args)` when they are `RECORDED`, else `args`) and skip a call.
 * @example
 * const plain = plainGuardOf(machine.implementations.guards.isStepLimitReached); // budget.isStepLimitReached
 */
export function plainGuardOf(guard: unknown): PlainGuard | undefined {
  return typeof guard === 'function' ? wrapped.get(guard) : undefined;
}
