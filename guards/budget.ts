/**
 * Budget guards: each runs before the next spend. A budget crossed by the call
 * in hand is let stand; the next call is refused, so no budget is overrun by more than one call.
 */
import { eventTime, type GuardArgs } from './event-time.js';
import type { LoopContext } from '../machines/types.js';

/** Budgets read the context only, so the pending-effect reader can ask them too. */
interface ContextArgs {
  context: LoopContext;
  event?: unknown;
}

export function isDeadlineExceeded({ context, event }: GuardArgs): boolean {
  if (context.startedAt === null) return false;
  return eventTime(context, event) - context.startedAt >= context.limits.deadlineMs;
}

export function isStepLimitReached({ context }: ContextArgs): boolean {
  return context.steps >= context.limits.maxSteps;
}

/** The next request's estimate would take cumulative input tokens past the limit. */
export function isInputBudgetExhausted({ context }: ContextArgs): boolean {
  return context.usage.inputTokens + context.nextRequestTokens > context.limits.maxInputTokens;
}

export function isOutputBudgetExhausted({ context }: ContextArgs): boolean {
  return context.usage.outputTokens >= context.limits.maxOutputTokens;
}

/** Float sums of prices drift (0.7 + 0.1 < 0.8); a micro-cent of slack keeps the limit exact. */
const COST_EPSILON_USD = 1e-9;

export function isCostBudgetExhausted({ context }: ContextArgs): boolean {
  return context.usage.costUsd >= context.limits.maxCostUsd - COST_EPSILON_USD;
}

export function isSpendBudgetExhausted(args: ContextArgs): boolean {
  return isInputBudgetExhausted(args) || isOutputBudgetExhausted(args) || isCostBudgetExhausted(args);
}

/** A transport retry would wake up after the deadline: stop now instead of sleeping into it. */
export function isRetryPastDeadline({ context, event }: GuardArgs): boolean {
  if (event.type !== 'model.failed' || context.startedAt === null) return false;
  return event.at + event.retryDelayMs - context.startedAt >= context.limits.deadlineMs;
}

/** The current task has had its share of decisions (`maxStepsPerTask`): a budget, not a no-progress signal. */
export function isTaskStepLimitReached({ context }: ContextArgs): boolean {
  return context.task.steps >= context.limits.maxStepsPerTask;
}

/** The reply asks for tool calls but the run's tool-call budget is spent. */
export function isToolCallBudgetExhausted({ context, event }: GuardArgs): boolean {
  return (
    event.type === 'model.responded' &&
    event.decision.kind === 'tool_calls' &&
    event.decision.calls > 0 &&
    context.usage.toolCalls >= context.limits.maxToolCalls
  );
}
