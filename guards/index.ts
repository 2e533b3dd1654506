/** The guard record for `setup()`; every guard is pure, synchronous and deterministic. */
import * as budget from './budget.js';
import * as decision from './decision.js';
import * as progress from './progress.js';
import * as retry from './retry.js';

export const guards = {
  isDeadlineExceeded: budget.isDeadlineExceeded,
  isStepLimitReached: budget.isStepLimitReached,
  isSpendBudgetExhausted: budget.isSpendBudgetExhausted,
  isRetryPastDeadline: budget.isRetryPastDeadline,
  isTaskStepLimitReached: budget.isTaskStepLimitReached,
  isToolCallBudgetExhausted: budget.isToolCallBudgetExhausted,
  isFatalModelFailure: retry.isFatalModelFailure,
  canRetryTransport: retry.canRetryTransport,
  canReflect: retry.canReflect,
  canRepairArguments: retry.canRepairArguments,
  isEvaluationPassed: retry.isEvaluationPassed,
  isReviewRequested: retry.isReviewRequested,
  isFinalReply: decision.isFinalReply,
  isUnparseableReply: decision.isUnparseableReply,
  hasDeniedToolCall: decision.hasDeniedToolCall,
  hasToolCallNeedingApproval: decision.hasToolCallNeedingApproval,
  hasUnavailableToolCall: decision.hasUnavailableToolCall,
  hasInvalidToolCall: decision.hasInvalidToolCall,
  hasQueuedTask: decision.hasQueuedTask,
  canContinueAfterTaskFailure: decision.canContinueAfterTaskFailure,
  hasRunStarted: decision.hasRunStarted,
  hasUnknownToolOutcome: decision.hasUnknownToolOutcome,
  isRequiredToolUnavailable: decision.isRequiredToolUnavailable,
  hasDecisionSignal: progress.hasDecisionSignal,
  hasRoundSignal: progress.hasRoundSignal,
  isSameEvaluatorReasonSignal: progress.isSameEvaluatorReasonSignal,
  isPlanStalled: progress.isPlanStalled,
  canNudge: progress.canNudge,
  wasNudgedEarlier: progress.wasNudgedEarlier,
};

export type GuardName = keyof typeof guards;
