/** Retry-layer guards: every layer has its own counter, so retries never multiply. */
import type { GuardArgs } from './event-time.js';

export function isFatalModelFailure({ event }: GuardArgs): boolean {
  return event.type === 'model.failed' && event.failure === 'fatal';
}

export function canRetryTransport({ context }: GuardArgs): boolean {
  return context.task.transportRetries < context.limits.maxRetries;
}

export function canReflect({ context }: GuardArgs): boolean {
  return context.task.reflectionRetries < context.limits.maxRetries;
}

export function canRepairArguments({ context }: GuardArgs): boolean {
  return context.task.argumentRepairs < context.limits.maxArgumentRepairs;
}

export function isEvaluationPassed({ event }: GuardArgs): boolean {
  return event.type === 'evaluation.completed' && event.passed;
}
