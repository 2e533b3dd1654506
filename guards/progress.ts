/**
 * No-progress guards. The driver sends incremental facts (repeat counts of (call, result) triples,
 * digests, plan facts); reducers keep constant-size streaks; these guards compare streaks to
 * thresholds. A signal nudges the model once, and stops the run if one fires again before the model
 * made progress.
 */
import type { GuardArgs } from './event-time.js';
import type { LoopContext, LoopEvent, NoProgressSignal } from '../machines/types.js';

/** The signal a model decision raises, read after `recordModelResponse` updated the streaks. */
export function decisionSignal(context: LoopContext, event: LoopEvent): NoProgressSignal | null {
  if (event.type !== 'model.responded') return null;
  const thresholds = context.noProgress;
  if (context.progress.sameParseErrorStreak >= thresholds.sameParseError) return 'same_parse_error';
  if (context.progress.unchangedStateStreak >= thresholds.unchangedState) return 'unchanged_state';
  return null;
}

/**
 * The signal a tool round raises, read after `recordToolRound`: a round that brought only what the task had
 * seen, with one call repeating itself or rounds like it in a row. A round with anything new raises none.
 */
export function roundSignal(context: LoopContext, event: LoopEvent): NoProgressSignal | null {
  if (event.type !== 'tools.completed' || !event.round.allObservationsSeen) return null;
  if (context.progress.repeatCount >= context.noProgress.repeatedToolCall) return 'repeated_tool_call';
  if (context.progress.duplicateObservationStreak >= context.noProgress.duplicateObservation)
    return 'duplicate_observation';
  return null;
}

export function hasDecisionSignal({ context, event }: GuardArgs): boolean {
  return decisionSignal(context, event) !== null;
}

export function hasRoundSignal({ context, event }: GuardArgs): boolean {
  return roundSignal(context, event) !== null;
}

/** The same output was rejected for the same reason: the fed-back reason changed nothing. */
export function isSameEvaluatorReasonSignal({ context }: GuardArgs): boolean {
  return context.progress.sameReasonStreak >= context.noProgress.sameEvaluatorReason;
}

/** Only an explicit plan can stall: decisions since an item was last completed or removed. */
export function isPlanStalled({ context }: GuardArgs): boolean {
  // A pending reflection, repair or note is information the next request must carry: the plan nudge can wait a step.
  return (
    context.progress.planActive &&
    context.progress.planStallSteps >= context.noProgress.planStall &&
    context.feedback === null
  );
}

export function canNudge({ context }: GuardArgs): boolean {
  return context.progress.nudgedAtStep === null;
}

/** Nudged at an earlier step: the model has had its chance, so the next signal stops the run. */
export function wasNudgedEarlier({ context }: GuardArgs): boolean {
  return context.progress.nudgedAtStep !== null && context.progress.nudgedAtStep < context.steps;
}
