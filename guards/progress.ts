/**
 * No-progress guards (DESIGN §5). The driver sends incremental facts (repeat counts,
 * digests, seen-before flags); reducers keep constant-size streaks; these guards compare
 * streaks to thresholds. A signal nudges the model once, and stops the run if it fires
 * again after the model has had a step to react.
 */
import type { GuardArgs } from './event-time.js';
import type { LoopContext, LoopEvent, NoProgressSignal } from '../machines/types.js';

/** The signal a model decision raises, read after `recordModelResponse` updated the streaks. */
export function decisionSignal(context: LoopContext, event: LoopEvent): NoProgressSignal | null {
  if (event.type !== 'model.responded') return null;
  const thresholds = context.noProgress;
  if (context.progress.sameParseErrorStreak >= thresholds.sameParseError) return 'same_parse_error';
  if (event.decision.kind === 'tool_calls' && event.decision.maxRepeatCount >= thresholds.repeatedToolCall) {
    return 'repeated_tool_call';
  }
  if (context.progress.unchangedStateStreak >= thresholds.unchangedState) return 'unchanged_state';
  return null;
}

export function isDuplicateObservationSignal({ context }: GuardArgs): boolean {
  return context.progress.duplicateObservationStreak >= context.noProgress.duplicateObservation;
}

export function isSameEvaluatorReasonSignal({ context }: GuardArgs): boolean {
  return context.progress.sameReasonStreak >= context.noProgress.sameEvaluatorReason;
}

export function isPlanStalled({ context }: GuardArgs): boolean {
  return context.task.steps >= context.noProgress.planStall;
}

export function hasDecisionSignal({ context, event }: GuardArgs): boolean {
  return decisionSignal(context, event) !== null;
}

export function canNudge({ context }: GuardArgs): boolean {
  return context.progress.nudgedAtStep === null;
}

/** Nudged at an earlier step: the model has had its chance, so the next signal stops the run. */
export function wasNudgedEarlier({ context }: GuardArgs): boolean {
  return context.progress.nudgedAtStep !== null && context.progress.nudgedAtStep < context.steps;
}
