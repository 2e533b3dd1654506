/**
 * Retry-layer guards: every layer has its own counter, so retries never multiply. Reflection counts per
 * task (`maxRetries`); transport attempts count per call, with an optional cap on the run's total.
 */
import type { GuardArgs } from './event-time.js';
import type { LoopContext } from '../machines/types.js';

export function isFatalModelFailure({ event }: GuardArgs): boolean {
  return event.type === 'model.failed' && event.failure === 'fatal';
}

/** The failed call has attempts left (`maxTransportAttempts`, per call): its failures so far, this one included, are fewer. */
export function hasTransportAttemptsLeft({ context }: { context: LoopContext }): boolean {
  return context.transport.consecutiveFailures < context.limits.maxTransportAttempts;
}

/** The run's transport retries in total reached `maxTransportRetries` (a cost cap, off by default). */
export function isTransportRetryBudgetSpent({ context }: { context: LoopContext }): boolean {
  return context.transport.retries >= context.limits.maxTransportRetries;
}

/** A transport failure may be retried: the call has attempts left and the run has retries left. */
export function canRetryTransport({ context }: GuardArgs): boolean {
  return hasTransportAttemptsLeft({ context }) && !isTransportRetryBudgetSpent({ context });
}

export function canReflect({ context }: GuardArgs): boolean {
  return context.task.reflectionRetries < context.limits.maxRetries;
}

export function canRepairArguments({ context }: GuardArgs): boolean {
  return context.task.argumentRepairs < context.limits.maxArgumentRepairs;
}

export function isEvaluationPassed({ event }: GuardArgs): boolean {
  return event.type === 'evaluation.completed' && event.passed && event.needsReview !== true;
}

/** An evaluator asked a person to review the output: neither a pass nor a reason to reflect. */
export function isReviewRequested({ event }: GuardArgs): boolean {
  return event.type === 'evaluation.completed' && event.needsReview === true;
}
