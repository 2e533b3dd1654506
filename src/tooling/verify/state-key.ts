/**
 * The abstract state of a loop snapshot: what its future can depend on, and nothing more.
 *
 * Two snapshots with the same key take the same transitions under the same abstract outcomes, so one
 * of them stands for both (the exploration expands each key once). Dropped or merged:
 * - counters no guard reads (`usage.modelCalls`), and counters whose limit cannot bind (`task.steps` when
 *   `maxStepsPerTask ≥ maxSteps`, `usage.toolCalls` when `maxToolCalls` allows every round, any counter whose
 *   limit is `Infinity`): the worst cases are summed along edges instead;
 * - counters past their limits, and streaks past their threshold (a guard only asks "at least the threshold");
 * - the step of a nudge, as "this step" or "earlier" (all `wasNudgedEarlier` asks);
 * - which of two interchangeable digests or evaluator reasons was last (outcomes only ask "same or other");
 * - a finished run's details: final states are keyed by their stop reason.
 * More rest on what the shipped guards and reducers read (`reduce`; off for a statechart given other guards or
 * actions, which might read them), each checked by the bisimulation test beside this file:
 * - the step count once the step limit is out of reach (`isStepLimitOutOfReach`);
 * - the kind of the pending feedback (only "is there any" is read);
 * - which spend budget is spent (only "is any" is read: `isSpendBudgetExhausted`, and it stays so);
 * - the digest the last task left, before the current task's first decision (which always changes it);
 * - an evaluation with a budget spent: all but what ends the run;
 * - an evaluation of a task's last decision: what only later decisions of the task read.
 */
import { isSpendBudgetExhausted } from '../../../guards/budget.js';
import type { LoopSnapshot } from '../../../machines/pending-effect.js';
import type { LoopContext, LoopLimits } from '../../../machines/types.js';

/** A state as a key reads it: its status, context, the JSON of its value and whether it is evaluating. */
export interface KeyedState {
  status: 'active' | 'done';
  context: LoopContext;
  /** `JSON.stringify` of the state value. */
  valueKey: string;
  /** In `RUNNING.evaluating`. */
  evaluating: boolean;
}

/** What a key reads of an XState snapshot, or of a state the compiled step reached (see compiled-step.ts). */
export type KeyedSnapshot = Pick<LoopSnapshot, 'status' | 'context' | 'value'> & {
  matches(value: { RUNNING: 'evaluating' }): boolean;
};

export function keyedState(snapshot: KeyedSnapshot): KeyedState {
  return {
    status: snapshot.status === 'done' ? 'done' : 'active',
    context: snapshot.context,
    valueKey: JSON.stringify(snapshot.value),
    evaluating: snapshot.matches({ RUNNING: 'evaluating' }),
  };
}

export interface KeyOptions {
  keepSteps: boolean;
  keepTaskSteps: boolean;
  keepToolCalls: boolean;
  keepRetries: boolean;
  /** The current call's transport failures in a row (`maxTransportAttempts` finite). */
  keepCallFailures: boolean;
  /** The run's transport retries in total (`maxTransportRetries` finite; off by default). */
  keepRunRetries: boolean;
  /** Apply the reductions that rest on what the shipped guards and reducers read. */
  reduce: boolean;
}

export function keyOptionsFor(limits: LoopLimits, reduce = false): KeyOptions {
  const keepSteps = Number.isFinite(limits.maxSteps);
  return {
    reduce,
    keepSteps,
    keepTaskSteps: Number.isFinite(limits.maxStepsPerTask) && (!keepSteps || limits.maxStepsPerTask < limits.maxSteps),
    keepToolCalls: toolCallsCanBind(limits),
    keepRetries: Number.isFinite(limits.maxRetries),
    keepCallFailures: Number.isFinite(limits.maxTransportAttempts),
    keepRunRetries: Number.isFinite(limits.maxTransportRetries),
  };
}

/** Whether the run's tool-call budget can stop a run before its step limit does (rounds ≤ maxSteps − 1). */
export function toolCallsCanBind(limits: LoopLimits): boolean {
  if (!Number.isFinite(limits.maxToolCalls)) return false;
  return !Number.isFinite(limits.maxSteps) || limits.maxToolCalls < (limits.maxSteps - 1) * limits.maxToolCallsPerReply;
}

const clamp = (value: number, threshold: number) => Math.min(value, threshold);

/**
 * Decisions the run can still make if the step limit were off: the current task's share and a full share
 * for each task after it. Never grows along a run (a task that ends gives up what it had left).
 */
export function decisionsLeft(context: LoopContext): number {
  const { limits, tasks, taskIndex, task } = context;
  return (
    Math.max(0, limits.maxStepsPerTask - task.steps) +
    limits.maxStepsPerTask * Math.max(0, tasks.length - taskIndex - 1)
  );
}

/**
 * Whether the run's step limit can no longer stop it: every decision it can still make leaves `steps` below
 * `maxSteps`, so `isStepLimitReached` is false in every state that follows and the count changes nothing
 * (the nudge, the only other reader, is keyed relative to it). It rests on the per-task guard, which is why the
 * reduction is for the shipped machine only.
 */
export function isStepLimitOutOfReach(context: LoopContext): boolean {
  const { limits } = context;
  if (!Number.isFinite(limits.maxStepsPerTask)) return false;
  return context.steps + decisionsLeft(context) < limits.maxSteps;
}

/** The reductions of `reduce` a key applied, as bits (see `REDUCTIONS`), to say in the report how often each did. */
export const REDUCTION = Object.freeze({
  stepLimitOutOfReach: 1,
  feedbackKind: 2,
  earlierTaskDigest: 4,
  spentEvaluation: 8,
  lastDecisionEvaluated: 16,
});

/**
 * An evaluation with no decision left in the task (its own bound, or the run's): what only later decisions read is
 * dead. (A judge that may run reads the run's transport retries, which the key keeps whatever the reduction.)
 */
function isLastDecisionEvaluated(context: LoopContext): boolean {
  const { limits, task, steps } = context;
  return task.steps >= limits.maxStepsPerTask || steps >= limits.maxSteps;
}

export function keyReductions(snapshot: KeyedSnapshot, options: KeyOptions): number {
  return reductionsOf(keyedState(snapshot), options);
}

/** The reductions (bits of `REDUCTION`) the key of `state` applies. */
export function reductionsOf(state: KeyedState, options: KeyOptions): number {
  const { context, evaluating } = state;
  if (!options.reduce || state.status === 'done') return 0;
  if (evaluating && isSpendBudgetExhausted({ context })) return REDUCTION.spentEvaluation;
  let bits = 0;
  if (options.keepSteps && isStepLimitOutOfReach(context)) bits |= REDUCTION.stepLimitOutOfReach;
  if (context.feedback !== null) bits |= REDUCTION.feedbackKind;
  if (context.task.steps === 0 && context.progress.lastStateDigest !== null) bits |= REDUCTION.earlierTaskDigest;
  if (evaluating && isLastDecisionEvaluated(context)) bits |= REDUCTION.lastDecisionEvaluated;
  return bits;
}

export function stateKey(snapshot: KeyedSnapshot, options: KeyOptions): string {
  const state = keyedState(snapshot);
  return keyParts(state, options, reductionsOf(state, options)).join('|');
}

/** Digest → its family (the digest up to its last `-`), remembered: one string object per family, no slice per key. */
const families = new Map<string, string>();

function familyOf(digest: string): string {
  let family = families.get(digest);
  if (family === undefined) {
    family = digest.slice(0, digest.lastIndexOf('-'));
    // Verify's digests are a handful per loop; the bound keeps a long process from holding every one it saw.
    if (families.size >= 1024) families.clear();
    families.set(digest, family);
  }
  return family;
}

/**
 * The parts of a state's key, which joined with `|` are the key: `reduced` is `reductionsOf(state, options)`.
 * The exploration looks states up by the parts themselves (see `key-table.ts`) and joins them for new states only.
 */
export function keyParts(state: KeyedState, options: KeyOptions, reduced: number): Array<string | number> {
  const { context } = state;
  if (state.status === 'done') return [`done:${context.stop?.reason ?? 'none'}`];
  const { progress, noProgress, usage, task, transport, limits } = context;
  if (reduced === REDUCTION.spentEvaluation) {
    // The evaluation's every outcome ends the run: a failure meets the spend check, a pass the next gate's (after
    // its step check) or completes the run; no judge may run. Only these and the clock are read.
    return [
      'evaluating, budget spent',
      context.taskIndex + 1 < context.tasks.length ? 1 : 0,
      context.steps >= limits.maxSteps ? 1 : 0,
      context.startedAt === null ? 0 : 1,
      context.lastEventAt,
    ];
  }
  // No decision left in the task: its evaluation passes to the next task (which starts these afresh) or fails it.
  const lastDecision = (reduced & REDUCTION.lastDecisionEvaluated) !== 0;
  const live = <T>(value: T): T | '' => (lastDecision ? '' : value);
  const digestFamily = progress.lastStateDigest === null ? '' : familyOf(progress.lastStateDigest);
  const nudge = progress.nudgedAtStep === null ? 'n' : progress.nudgedAtStep < context.steps ? 'e' : 'c';
  const parts: Array<string | number> = [
    state.valueKey,
    context.taskIndex,
    // Clamped at their limits (a no-op for the loop machine, whose counters never pass them): a machine whose
    // step guard is broken shows up as a cycle, not as a space that never ends.
    !options.keepSteps
      ? ''
      : (reduced & REDUCTION.stepLimitOutOfReach) !== 0
        ? 'far'
        : clamp(context.steps, limits.maxSteps),
    options.keepTaskSteps ? clamp(task.steps, limits.maxStepsPerTask) : '',
    // A task's first decision cannot repeat a digest: "has the task decided yet" is kept either way.
    task.steps > 0 ? 1 : 0,
    // Reset by every reply: zero wherever a decision was recorded, so it never splits an evaluation's states.
    options.keepCallFailures ? clamp(transport.consecutiveFailures, limits.maxTransportAttempts) : '',
    options.keepRunRetries ? clamp(transport.retries, limits.maxTransportRetries) : '',
    options.keepRetries ? clamp(task.reflectionRetries, limits.maxRetries) : '',
    live(task.argumentRepairs),
  ];
  // Once spent, which budget it was is never read: the machine asks only whether any is (and it stays so).
  if (options.reduce && isSpendBudgetExhausted({ context })) parts.push('spent');
  else parts.push(usage.inputTokens, usage.outputTokens, usage.costUsd);
  parts.push(
    options.keepToolCalls ? clamp(usage.toolCalls, limits.maxToolCalls) : '',
    live(context.nextRequestTokens),
    context.startedAt === null ? 0 : 1,
    context.lastEventAt,
    context.retryAt === null ? 0 : 1,
    // Only "is there feedback" is read (a stalled plan waits for it); its kind goes into the prompt alone.
    options.reduce ? (context.feedback === null ? '' : 'f') : (context.feedback?.kind ?? ''),
    context.failedTasks,
    // A task's first decision always changes the digest, whatever the last task left: only later ones compare.
    (reduced & REDUCTION.earlierTaskDigest) !== 0 ? '' : live(digestFamily),
    clamp(progress.unchangedStateStreak, Math.max(noProgress.unchangedState, 2)),
    progress.lastEvaluatorReason === null ? 0 : 1,
    progress.lastOutputDigest === null ? 0 : 1,
    clamp(progress.sameReasonStreak, noProgress.sameEvaluatorReason),
    live(clamp(progress.duplicateObservationStreak, noProgress.duplicateObservation)),
    live(clamp(progress.repeatCount, Math.max(noProgress.repeatedToolCall, 1))),
    live(progress.planActive ? 1 : 0),
    live(clamp(progress.planStallSteps, noProgress.planStall)),
    live(progress.lastParseError ?? ''),
    live(clamp(progress.sameParseErrorStreak, noProgress.sameParseError)),
    live(nudge),
    live(progress.lastSignal === 'plan_stall' ? 'p' : progress.lastSignal === null ? '' : 's'),
  );
  return parts;
}
