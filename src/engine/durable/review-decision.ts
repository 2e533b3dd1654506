/**
 * A person's review decision turned into the verdict the machine would have seen had an evaluator given it:
 * accepted, the task passes with the reviewed output; rejected, the output failed with the person's reason,
 * which the model is told as a reflection (counted against `maxRetries`). The rewritten
 * `evaluation.completed` replaces the one that stopped the run.
 */
import type { LoopEvent } from '../../../machines/types.js';
import { reviewRejectedReason } from '../prompts.js';
import { nextRequestEstimate } from '../runtime/evaluation-step.js';
import type { RunSession } from '../runtime/run-session.js';
import type { ReviewDecision } from './records.js';
import type { PendingReviewRecord } from './run-record.js';

export function applyReview(
  session: RunSession,
  stopEvent: LoopEvent,
  decision: ReviewDecision,
  pending: PendingReviewRecord,
): LoopEvent {
  if (stopEvent.type !== 'evaluation.completed' || stopEvent.needsReview !== true) {
    throw new Error(`a run waiting for review stopped on ${stopEvent.type}, not on an evaluation that asked for one`);
  }
  session.record({
    type: 'review-decided',
    runId: session.runId,
    at: stopEvent.at,
    taskId: pending.taskId,
    outputHash: pending.outputHash,
    accepted: decision.accept,
    reason: decision.accept ? null : decision.reason,
  });
  const formatted = session.lastEvaluation?.formatted ?? null;
  const { needsReview: _asked, ...verdict } = stopEvent;
  const passed = decision.accept;
  const reason = decision.accept ? 'accepted by a person' : reviewRejectedReason(decision.reason);
  session.recordEvaluation({ passed, parsed: pending.output, formatted });
  // The person's verdict is what learning counts for the task (the review request itself counted nothing).
  session.noteReviewVerdict?.(pending.taskId, decision.accept, decision.accept ? '' : decision.reason);
  return { ...verdict, passed, reason, nextRequestTokens: nextRequestEstimate(session, passed, reason) };
}
