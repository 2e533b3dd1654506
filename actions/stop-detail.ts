/** Human-readable detail for a stop reason, built from the context at the moment it stopped. */
import { isCostBudgetExhausted, isOutputBudgetExhausted } from '../guards/budget.js';
import type { LoopContext, LoopEvent, NoProgressSignal, StopReason } from '../machines/types.js';

export function describeStop(
  reason: StopReason,
  context: LoopContext,
  event: LoopEvent,
  signal: NoProgressSignal | null,
): string {
  const { limits, usage } = context;
  switch (reason) {
    case 'completed':
      return `${context.completedTasks} of ${context.tasks.length} task(s) passed evaluation`;
    case 'max_steps':
      return `reached maxSteps (${limits.maxSteps}) before the task passed evaluation`;
    case 'deadline_exceeded':
      return `the run passed its deadline (${limits.deadlineMs} ms)`;
    case 'budget_exhausted':
      if (isCostBudgetExhausted({ context, event })) return `cost $${usage.costUsd.toFixed(6)} reached maxCostUsd ($${limits.maxCostUsd})`;
      if (isOutputBudgetExhausted({ context, event })) return `output tokens ${usage.outputTokens} reached maxOutputTokens (${limits.maxOutputTokens})`;
      return `the next request (~${context.nextRequestTokens} input tokens) would take input tokens past maxInputTokens (${limits.maxInputTokens}; used ${usage.inputTokens})`;
    case 'no_progress':
      return `no progress after a nudge: ${signal ?? 'unknown signal'}`;
    case 'permission_denied':
      return 'the policy denied a requested tool call';
    case 'tool_unavailable':
      return event.type === 'tool.withheld'
        ? `the task requires tool "${event.tool}", which is unavailable (circuit breaker open)`
        : 'a tool the task needs is unavailable (circuit breaker open)';
    case 'cancelled':
      return event.type === 'run.cancelRequested' && event.message ? `cancelled: ${event.message}` : 'cancelled';
    case 'needs_human':
      return event.type === 'tools.completed'
        ? 'a side-effecting tool call timed out and its outcome cannot be known; a person must check it'
        : 'a tool call needs approval';
    case 'retries_exhausted':
      return describeRetriesExhausted(context, event);
    case 'fatal_error':
      if (event.type === 'model.failed') return `model call failed: ${event.message}`;
      return event.type === 'run.faulted' ? `run faulted: ${event.message}` : 'fatal error';
  }
}

function describeRetriesExhausted(context: LoopContext, event: LoopEvent): string {
  const task = context.tasks[context.taskIndex]?.id ?? '?';
  if (event.type === 'model.failed') return `task ${task}: model call failed after ${context.task.transportRetries} transport retries: ${event.message}`;
  if (event.type === 'evaluation.completed') return `task ${task}: evaluation still failing after ${context.task.reflectionRetries} reflection retries: ${event.reason}`;
  return `task ${task}: tool arguments still invalid after ${context.task.argumentRepairs} repair(s)`;
}
