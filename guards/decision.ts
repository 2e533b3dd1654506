/** Guards over the model's classified decision (`model.responded`). */
import type { GuardArgs } from './event-time.js';
import type { ModelDecision } from '../machines/types.js';

function decisionOf({ event }: GuardArgs): ModelDecision | null {
  return event.type === 'model.responded' ? event.decision : null;
}

export function isFinalReply(args: GuardArgs): boolean {
  return decisionOf(args)?.kind === 'final';
}

export function isUnparseableReply(args: GuardArgs): boolean {
  return decisionOf(args)?.kind === 'unparseable';
}

export function hasDeniedToolCall(args: GuardArgs): boolean {
  const decision = decisionOf(args);
  return decision?.kind === 'tool_calls' && decision.deniedCalls > 0;
}

export function hasToolCallNeedingApproval(args: GuardArgs): boolean {
  const decision = decisionOf(args);
  return decision?.kind === 'tool_calls' && decision.approvalCalls > 0;
}

export function hasUnavailableToolCall(args: GuardArgs): boolean {
  const decision = decisionOf(args);
  return decision?.kind === 'tool_calls' && decision.unavailableCalls > 0;
}

export function hasInvalidToolCall(args: GuardArgs): boolean {
  const decision = decisionOf(args);
  return decision?.kind === 'tool_calls' && decision.invalidCalls > 0;
}

/** Read after `completeTask` advanced the index: another task is still queued. */
export function hasQueuedTask({ context }: GuardArgs): boolean {
  return context.taskIndex < context.tasks.length;
}

/** The failed task lets the run go on (its policy is `continue`) and another task is queued. */
export function canContinueAfterTaskFailure({ context }: GuardArgs): boolean {
  return context.tasks[context.taskIndex]?.onFailure === 'continue' && context.taskIndex + 1 < context.tasks.length;
}

export function hasRunStarted({ context }: GuardArgs): boolean {
  return context.startedAt !== null;
}

export function hasUnknownToolOutcome({ event }: GuardArgs): boolean {
  return event.type === 'tools.completed' && event.round.unknownOutcomeCalls > 0;
}

export function isRequiredToolUnavailable({ event }: GuardArgs): boolean {
  return event.type === 'tools.completed' && event.round.requiredToolUnavailable;
}
