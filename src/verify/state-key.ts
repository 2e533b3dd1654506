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
 */
import type { LoopSnapshot } from '../../machines/pending-effect.js';
import type { LoopLimits } from '../../machines/types.js';

export interface KeyOptions {
  keepSteps: boolean;
  keepTaskSteps: boolean;
  keepToolCalls: boolean;
  keepRetries: boolean;
}

export function keyOptionsFor(limits: LoopLimits): KeyOptions {
  const keepSteps = Number.isFinite(limits.maxSteps);
  return {
    keepSteps,
    keepTaskSteps: Number.isFinite(limits.maxStepsPerTask) && (!keepSteps || limits.maxStepsPerTask < limits.maxSteps),
    keepToolCalls: toolCallsCanBind(limits),
    keepRetries: Number.isFinite(limits.maxRetries),
  };
}

/** Whether the run's tool-call budget can stop a run before its step limit does (rounds ≤ maxSteps − 1). */
export function toolCallsCanBind(limits: LoopLimits): boolean {
  if (!Number.isFinite(limits.maxToolCalls)) return false;
  return !Number.isFinite(limits.maxSteps) || limits.maxToolCalls < (limits.maxSteps - 1) * limits.maxToolCallsPerReply;
}

const clamp = (value: number, threshold: number) => Math.min(value, threshold);

export function stateKey(snapshot: LoopSnapshot, options: KeyOptions): string {
  const { context } = snapshot;
  if (snapshot.status === 'done') return `done:${context.stop?.reason ?? 'none'}`;
  const { progress, noProgress, usage, task } = context;
  const digestFamily = progress.lastStateDigest === null ? '' : progress.lastStateDigest.slice(0, progress.lastStateDigest.lastIndexOf('-'));
  const nudge = progress.nudgedAtStep === null ? 'n' : progress.nudgedAtStep < context.steps ? 'e' : 'c';
  const parts = [
    JSON.stringify(snapshot.value),
    context.taskIndex,
    // Clamped at their limits (a no-op for the loop machine, whose counters never pass them): a machine whose
    // step guard is broken shows up as a cycle, not as a space that never ends.
    options.keepSteps ? clamp(context.steps, context.limits.maxSteps) : '',
    options.keepTaskSteps ? clamp(task.steps, context.limits.maxStepsPerTask) : '',
    // A task's first decision cannot repeat a digest: "has the task decided yet" is kept either way.
    task.steps > 0 ? 1 : 0,
    options.keepRetries ? clamp(task.transportRetries, context.limits.maxRetries) : '',
    options.keepRetries ? clamp(task.reflectionRetries, context.limits.maxRetries) : '',
    task.argumentRepairs,
    usage.inputTokens,
    usage.outputTokens,
    usage.costUsd,
    options.keepToolCalls ? clamp(usage.toolCalls, context.limits.maxToolCalls) : '',
    context.nextRequestTokens,
    context.startedAt === null ? 0 : 1,
    context.lastEventAt,
    context.retryAt === null ? 0 : 1,
    context.feedback?.kind ?? '',
    context.failedTasks,
    digestFamily,
    clamp(progress.unchangedStateStreak, Math.max(noProgress.unchangedState, 2)),
    progress.lastEvaluatorReason === null ? 0 : 1,
    progress.lastOutputDigest === null ? 0 : 1,
    clamp(progress.sameReasonStreak, noProgress.sameEvaluatorReason),
    clamp(progress.duplicateObservationStreak, noProgress.duplicateObservation),
    clamp(progress.repeatCount, Math.max(noProgress.repeatedToolCall, 1)),
    progress.planActive ? 1 : 0,
    clamp(progress.planStallSteps, noProgress.planStall),
    progress.lastParseError ?? '',
    clamp(progress.sameParseErrorStreak, noProgress.sameParseError),
    nudge,
    progress.lastSignal === 'plan_stall' ? 'p' : progress.lastSignal === null ? '' : 's',
  ];
  return parts.join('|');
}
