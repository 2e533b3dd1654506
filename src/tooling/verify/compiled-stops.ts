/**
 * The steps that end a run and that the compiled step (compiled-step.ts) can take without all of their actions, when
 * the caller already has the finished state they land on (a finished state is keyed by its stop reason alone): a stop
 * by the loop's own `stopRun` with a fixed reason, a reply or a failed call that stops at once, and a task that fails
 * for good. Each is recognised here, once per exploration, by the loop's own functions (not by their names: a
 * statechart that provides its own is stepped whole) and the shapes of the transitions around them.
 */
import { failTask, stopRun, stopWithTaskFailure } from '../../../actions/control.js';
import { isDeadlineExceeded } from '../../../guards/budget.js';
import { canContinueAfterTaskFailure } from '../../../guards/decision.js';
import { isFatalModelFailure } from '../../../guards/retry.js';
import { loopMachine } from '../../../machines/loop-machine.js';
import type { Action } from './compiled-actions.js';
import type {
  Assignment,
  Candidate,
  CompiledAction,
  Leaf,
  PlainGuard,
  TaskFailureStop,
  Taken,
} from './compiled-table.js';

const loopActions = loopMachine.implementations.actions as Record<string, { assignment?: unknown }>;
/** The assignment of the loop machine's own `recordModelResponse` action (a statechart may provide its own). */
const LOOP_RECORDS_REPLY = loopActions.recordModelResponse?.assignment;
/** The assignment of the loop machine's own `recordModelFailure` action. */
const LOOP_RECORDS_FAILURE = loopActions.recordModelFailure?.assignment;

/** The static `reason` param of the last of `actions` when its reducer is `reducer`, else null. */
function lastReason(
  actions: readonly Action[],
  assignments: ReadonlyMap<string, Assignment>,
  reducer: unknown,
): string | null {
  const last = actions[actions.length - 1] as string | { type: string; params?: unknown } | undefined;
  if (typeof last !== 'object' || last === null || (assignments.get(last.type) as unknown) !== reducer) return null;
  const params = last.params as { reason?: unknown } | undefined;
  if (typeof params !== 'object' || params === null || typeof params.reason !== 'string') return null;
  return params.reason;
}

/**
 * The reason of a run stopped by `actions` into the final leaf `landed`: when the last action is the loop's own
 * `stopRun` (its assignment is `actions/control.ts`' function, not one a test provided) with static params naming a
 * reason, and no exit action runs on entering the final state (nothing could write the stop record after it).
 *
 * @example
 * fixedStopReason([{ type: 'stopRun', params: { reason: 'max_steps' } }], assignments, terminated); // 'max_steps'
 */
export function fixedStopReason(
  actions: readonly Action[],
  assignments: ReadonlyMap<string, Assignment>,
  landed: Leaf,
): string | null {
  if (landed.chain.some((node) => node.exit.length > 0)) return null;
  return lastReason(actions, assignments, stopRun);
}

/**
 * The reason of the loop's own `failTask` with static params naming one, when it is the last of `actions`.
 *
 * @example
 * fixedFailReason([{ type: 'failTask', params: { reason: 'retries_exhausted' } }], assignments); // 'retries_exhausted'
 */
export function fixedFailReason(
  actions: readonly Action[],
  assignments: ReadonlyMap<string, Assignment>,
): string | null {
  return lastReason(actions, assignments, failTask);
}

/**
 * Whether a stop with `stopReason` whose actions before `stopRun` are `beforeStop` records a reply and nothing else:
 * the loop machine's own `recordModelResponse` alone, with static params (see `Taken.replyStop`).
 *
 * @example
 * isReplyStop('max_steps', actions.compile(['recordModelResponse'])); // true
 */
export function isReplyStop(stopReason: string | null, beforeStop: readonly CompiledAction[]): boolean {
  const [recording, ...more] = beforeStop;
  return (
    stopReason !== null &&
    recording !== undefined &&
    more.length === 0 &&
    recording.paramsOf === null &&
    recording.assignment === LOOP_RECORDS_REPLY
  );
}

/** The task-failure stop of `taken`, into `landed` by `failTask` with `reason` (see `TaskFailureStop`), or null. */
function failStopInto(leaves: readonly Leaf[], reason: string, taken: Taken): TaskFailureStop | null {
  const [first, second, ...more] = (leaves[taken.leaf] as Leaf).always;
  if (first === undefined || second === undefined || more.length > 0) return null;
  if (first.plain !== canContinueAfterTaskFailure || first.readsRecorded) return null;
  const stop = second.taken;
  if (second.guard !== null || !stop.final || stop.actions.length !== 1) return null;
  const [only] = stop.actions as [CompiledAction];
  if (only.assignment !== (stopWithTaskFailure as unknown) || only.paramsOf !== null) return null;
  if ((leaves[stop.leaf] as Leaf).finalExits.length > 0) return null;
  return {
    reason,
    beforeFail: taken.actions.slice(0, -1),
    fail: taken.actions.slice(-1),
    canContinue: first.plain,
    stopNumber: second.number,
    stopLeaf: stop.leaf,
  };
}

/**
 * Whether `plain` answers the same before the loop's own `recordModelFailure` as after it: `isFatalModelFailure` reads
 * the event alone, and `isDeadlineExceeded` reads `startedAt`, `limits` and `max(event.at, lastEventAt)`, of which the
 * recording changes only `lastEventAt`, to `max(lastEventAt, event.at)` (see compiled-guards.ts' `readsRecordedDeadline`).
 */
function answersBeforeFailure(plain: PlainGuard): boolean {
  return plain === isDeadlineExceeded || plain === isFatalModelFailure;
}

/** The stops a failed call meets first (see `Taken.failureStops`), or null. */
function failureStopsInto(leaves: readonly Leaf[], taken: Taken): Candidate[] | null {
  const [only, ...more] = taken.actions;
  if (taken.final || only === undefined || more.length > 0) return null;
  if (only.paramsOf !== null || only.assignment !== LOOP_RECORDS_FAILURE) return null;
  const stops: Candidate[] = [];
  for (const next of (leaves[taken.leaf] as Leaf).always) {
    if (next.plain === null || next.readsRecorded || !answersBeforeFailure(next.plain)) break;
    if (next.taken.stopReason === null || next.taken.beforeStop.length > 0) break;
    stops.push(next);
  }
  return stops.length > 0 ? stops : null;
}

/**
 * Fills in every candidate's `failStop` and `failureStops`, once every leaf's candidates are known (each looks at the
 * candidates of the leaf it lands on).
 *
 * @example
 * addLaterStops(leaves); // after compiled-transitions.ts has given every leaf its candidates
 */
export function addLaterStops(leaves: readonly Leaf[]): void {
  for (const leaf of leaves)
    for (const candidate of [...[...leaf.on.values()].flat(), ...leaf.always]) {
      const taken = candidate.taken;
      if (taken.failReason !== null) taken.failStop = failStopInto(leaves, taken.failReason, taken);
      taken.failureStops = failureStopsInto(leaves, taken);
    }
}
