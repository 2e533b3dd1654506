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
  /**
   * A non-negative number that names `valueKey` one for one within an exploration (the compiled step's leaf), when
   * the caller has one: a key table encodes it instead of looking the string up. The joined key never shows it.
   */
  valueId?: number;
}

/**
 * Where `writeKeyParts` puts the parts of a key, in order: an array to join (`keyParts`), or a key table that
 * encodes them as they come, with no array made per successor (see key-table.ts).
 */
export interface KeyPartSink {
  add(part: string | number): void;
  /** The state value's part: `valueKey` in the joined key; `valueId`, when given, is the same part by number. */
  addValue(valueKey: string, valueId: number | undefined): void;
}

/** Collects the parts into an array. */
class PartList implements KeyPartSink {
  readonly parts: Array<string | number> = [];
  add(part: string | number): void {
    this.parts.push(part);
  }
  addValue(valueKey: string): void {
    this.parts.push(valueKey);
  }
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

/** `REDUCTION`'s bits as constants: read without a property load, which a cold run would first do late (see below). */
const { stepLimitOutOfReach: STEP_LIMIT_OUT_OF_REACH, feedbackKind: FEEDBACK_KIND } = REDUCTION;
const { earlierTaskDigest: EARLIER_TASK_DIGEST, spentEvaluation: SPENT_EVALUATION } = REDUCTION;
const LAST_DECISION_EVALUATED = REDUCTION.lastDecisionEvaluated;

/**
 * The reductions (bits of `REDUCTION`) the key of `state` applies. Every state runs the same code here (each test is
 * asked, each bit is a constant): a path first taken late in a cold run, by the first evaluating state, would send
 * the optimised lookup back to the interpreter (`--trace-deopt`).
 */
export function reductionsOf(state: KeyedState, options: KeyOptions): number {
  const { context, evaluating } = state;
  if (!options.reduce || state.status === 'done') return 0;
  if (evaluating && isSpendBudgetExhausted({ context })) return SPENT_EVALUATION;
  let bits = 0;
  bits |= options.keepSteps && isStepLimitOutOfReach(context) ? STEP_LIMIT_OUT_OF_REACH : 0;
  bits |= context.feedback !== null ? FEEDBACK_KIND : 0;
  bits |= context.task.steps === 0 && context.progress.lastStateDigest !== null ? EARLIER_TASK_DIGEST : 0;
  bits |= isLastDecisionEvaluated(context) && evaluating ? LAST_DECISION_EVALUATED : 0;
  return bits;
}

export function stateKey(snapshot: KeyedSnapshot, options: KeyOptions): string {
  const state = keyedState(snapshot);
  return keyParts(state, options, reductionsOf(state, options)).join('|');
}

/** Digest → its family (the digest up to its last `-`), remembered: one string object per family, no slice per key. */
const families = new Map<string, string>();

/** The last digest asked about and its family: a successor's digest is mostly its source's. */
let lastDigest = '';
let lastFamily = '';

function familyOf(digest: string): string {
  if (digest === lastDigest) return lastFamily;
  let family = families.get(digest);
  if (family === undefined) {
    family = digest.slice(0, digest.lastIndexOf('-'));
    // Verify's digests are a handful per loop; the bound keeps a long process from holding every one it saw.
    if (families.size >= 1024) families.clear();
    families.set(digest, family);
  }
  lastDigest = digest;
  lastFamily = family;
  return family;
}

/**
 * The parts of a state's key, which joined with `|` are the key: `reduced` is `reductionsOf(state, options)`.
 * The exploration looks states up by the parts themselves (see `key-table.ts`) and joins them only when asked for the keys.
 */
export function keyParts(state: KeyedState, options: KeyOptions, reduced: number): Array<string | number> {
  const list = new PartList();
  writeKeyParts(state, options, reduced, list);
  return list.parts;
}

/**
 * What a finished run's key reads: its stop reason alone (`'none'` without one). Two finished states with the same
 * reason have the same key, so the exploration can look them up by it.
 */
export function finalKeyReason(context: LoopContext): string {
  return context.stop?.reason ?? 'none';
}

/** The done states' keys by stop reason: one string each, not one per successor. */
const doneKeys = new Map<string, string>();

function doneKey(reason: string): string {
  let key = doneKeys.get(reason);
  if (key === undefined) doneKeys.set(reason, (key = `done:${reason}`));
  return key;
}

/**
 * `keyParts`, each part handed to `sink` in order: the exploration's key table encodes them as they come, with
 * no array made per successor (it asks for hundreds of thousands).
 */
export function writeKeyParts(state: KeyedState, options: KeyOptions, reduced: number, sink: KeyPartSink): void {
  const { context } = state;
  if (state.status === 'done') {
    sink.add(doneKey(finalKeyReason(context)));
    return;
  }
  const { progress, noProgress, usage, task, transport, limits } = context;
  if (reduced === SPENT_EVALUATION) {
    // The evaluation's every outcome ends the run: a failure meets the spend check, a pass the next gate's (after
    // its step check) or completes the run; no judge may run. Only these and the clock are read.
    sink.add('evaluating, budget spent');
    sink.add(context.taskIndex + 1 < context.tasks.length ? 1 : 0);
    sink.add(context.steps >= limits.maxSteps ? 1 : 0);
    sink.add(context.startedAt === null ? 0 : 1);
    sink.add(context.lastEventAt);
    return;
  }
  // No decision left in the task: its evaluation passes to the next task (which starts these afresh) or fails it.
  const lastDecision = (reduced & LAST_DECISION_EVALUATED) !== 0;
  sink.addValue(state.valueKey, state.valueId);
  sink.add(context.taskIndex);
  // Clamped at their limits (a no-op for the loop machine, whose counters never pass them): a machine whose
  // step guard is broken shows up as a cycle, not as a space that never ends.
  sink.add(
    !options.keepSteps ? '' : (reduced & STEP_LIMIT_OUT_OF_REACH) !== 0 ? 'far' : clamp(context.steps, limits.maxSteps),
  );
  sink.add(options.keepTaskSteps ? clamp(task.steps, limits.maxStepsPerTask) : '');
  // A task's first decision cannot repeat a digest: "has the task decided yet" is kept either way.
  sink.add(task.steps > 0 ? 1 : 0);
  // Reset by every reply: zero wherever a decision was recorded, so it never splits an evaluation's states.
  sink.add(options.keepCallFailures ? clamp(transport.consecutiveFailures, limits.maxTransportAttempts) : '');
  sink.add(options.keepRunRetries ? clamp(transport.retries, limits.maxTransportRetries) : '');
  sink.add(options.keepRetries ? clamp(task.reflectionRetries, limits.maxRetries) : '');
  sink.add(lastDecision ? '' : task.argumentRepairs);
  // Once spent, which budget it was is never read: the machine asks only whether any is (and it stays so).
  if (options.reduce && isSpendBudgetExhausted({ context })) sink.add('spent');
  else {
    sink.add(usage.inputTokens);
    sink.add(usage.outputTokens);
    sink.add(usage.costUsd);
  }
  sink.add(options.keepToolCalls ? clamp(usage.toolCalls, limits.maxToolCalls) : '');
  sink.add(lastDecision ? '' : context.nextRequestTokens);
  sink.add(context.startedAt === null ? 0 : 1);
  sink.add(context.lastEventAt);
  sink.add(context.retryAt === null ? 0 : 1);
  // Only "is there feedback" is read (a stalled plan waits for it); its kind goes into the prompt alone.
  sink.add(options.reduce ? (context.feedback === null ? '' : 'f') : (context.feedback?.kind ?? ''));
  sink.add(context.failedTasks);
  // A task's first decision always changes the digest, whatever the last task left: only later ones compare.
  const digest = progress.lastStateDigest;
  sink.add((reduced & EARLIER_TASK_DIGEST) !== 0 || lastDecision || digest === null ? '' : familyOf(digest));
  sink.add(clamp(progress.unchangedStateStreak, Math.max(noProgress.unchangedState, 2)));
  sink.add(progress.lastEvaluatorReason === null ? 0 : 1);
  sink.add(progress.lastOutputDigest === null ? 0 : 1);
  sink.add(clamp(progress.sameReasonStreak, noProgress.sameEvaluatorReason));
  // What only later decisions read: blank when none is left (see `isLastDecisionEvaluated`). Part by part, so the
  // same calls run for every key (a first blank late in a cold run would deoptimise the lookup: `--trace-deopt`).
  sink.add(lastDecision ? '' : clamp(progress.duplicateObservationStreak, noProgress.duplicateObservation));
  sink.add(lastDecision ? '' : clamp(progress.repeatCount, Math.max(noProgress.repeatedToolCall, 1)));
  sink.add(lastDecision ? '' : progress.planActive ? 1 : 0);
  sink.add(lastDecision ? '' : clamp(progress.planStallSteps, noProgress.planStall));
  sink.add(lastDecision ? '' : (progress.lastParseError ?? ''));
  sink.add(lastDecision ? '' : clamp(progress.sameParseErrorStreak, noProgress.sameParseError));
  sink.add(
    lastDecision ? '' : progress.nudgedAtStep === null ? 'n' : progress.nudgedAtStep < context.steps ? 'e' : 'c',
  );
  sink.add(lastDecision ? '' : progress.lastSignal === 'plan_stall' ? 'p' : progress.lastSignal === null ? '' : 's');
}
