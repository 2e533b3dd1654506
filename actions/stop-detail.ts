/**
 * Human-readable detail for a stop reason, built from the context at the moment it stopped. Each
 * detail names what hit the limit, the threshold, and the option that controls it.
 */
import {
  isCostBudgetExhausted,
  isDeadlineExceeded,
  isOutputBudgetExhausted,
  isTaskStepLimitReached,
  isToolCallBudgetExhausted,
} from '../guards/budget.js';
import { hasTransportAttemptsLeft } from '../guards/retry.js';
import type { LoopContext, LoopEvent, NoProgressSignal, StopReason } from '../machines/types.js';

export function describeStop(
  reason: StopReason,
  context: LoopContext,
  event: LoopEvent,
  signal: NoProgressSignal | null,
): string {
  const { limits, usage } = context;
  const task = context.tasks[context.taskIndex]?.id ?? '?';
  switch (reason) {
    case 'completed':
      return describeCompleted(context);
    case 'max_steps':
      if (context.steps < limits.maxSteps && isTaskStepLimitReached({ context })) {
        return `task ${task} reached maxStepsPerTask (${limits.maxStepsPerTask}) before it passed evaluation; raise limits.maxStepsPerTask`;
      }
      return `reached maxSteps (${limits.maxSteps}) before the task passed evaluation; raise limits.maxSteps`;
    case 'deadline_exceeded':
      // A failure whose backoff would end past the deadline stops before the deadline: say which wait it was.
      if (event.type === 'model.failed' && !isDeadlineExceeded({ context, event }))
        return describeBackoffPastDeadline(context, event);
      return `the run passed its deadline (${limits.deadlineMs} ms); raise limits.deadlineMs`;
    case 'budget_exhausted':
      if (isCostBudgetExhausted({ context, event }))
        return `cost $${usage.costUsd.toFixed(6)} reached maxCostUsd ($${limits.maxCostUsd}); raise limits.maxCostUsd`;
      if (isOutputBudgetExhausted({ context, event }))
        return `output tokens ${usage.outputTokens} reached maxOutputTokens (${limits.maxOutputTokens}); raise limits.maxOutputTokens`;
      if (
        context.usage.inputTokens + context.nextRequestTokens <= limits.maxInputTokens &&
        isToolCallBudgetExhausted({ context, event })
      ) {
        return `the model asked for more tool calls after ${usage.toolCalls} ran, the run's maxToolCalls (${limits.maxToolCalls}); raise limits.maxToolCalls`;
      }
      return `the next request (~${context.nextRequestTokens} input tokens) would take input tokens past maxInputTokens (${limits.maxInputTokens}; used ${usage.inputTokens}); raise limits.maxInputTokens`;
    case 'no_progress':
      return `no progress after ${signal === 'same_evaluator_reason' ? 'the reason was fed back' : 'a nudge'}: ${describeSignal(context, signal)}`;
    case 'permission_denied':
      return `the policy denied tool "${blockedToolOf(event)}"; it is never retried (set policy.onDeny to 'tell_model' to let the model work around denials)`;
    case 'tool_unavailable':
      if (event.type === 'tool.withheld')
        return `the task requires tool "${event.tool}", which is unavailable (circuit breaker open)`;
      return event.type === 'model.responded'
        ? `tool "${blockedToolOf(event)}", which the task needs, is unavailable (circuit breaker open)`
        : 'a tool the task needs is unavailable (circuit breaker open)';
    case 'cancelled':
      return event.type === 'run.cancelRequested' && event.message ? `cancelled: ${event.message}` : 'cancelled';
    case 'needs_human':
      if (event.type === 'evaluation.completed')
        return `task ${task}: the output waits for a person's review (see pendingReview): ${event.reason}`;
      return event.type === 'tools.completed'
        ? 'a side-effecting tool call timed out and its outcome cannot be known; a person must check it'
        : `tool "${blockedToolOf(event)}" needs a person's approval (see pendingApprovals)`;
    case 'retries_exhausted':
      return describeRetriesExhausted(context, event);
    case 'fatal_error':
      if (event.type === 'model.failed') return `model call failed: ${event.message}`;
      return event.type === 'run.faulted' ? `run faulted: ${event.message}` : 'fatal error';
  }
}

/** How many tasks completed, and which of them no evaluator checked: completing unchecked is no pass. */
function describeCompleted(context: LoopContext): string {
  const { tasks, completedTasks } = context;
  const unchecked = tasks.filter((task) => task.evaluated === false).map((task) => task.id);
  if (unchecked.length === 0) return `${completedTasks} of ${tasks.length} task(s) passed evaluation`;
  if (tasks.length === 1) return 'completed; no evaluator configured';
  if (unchecked.length === tasks.length)
    return `${completedTasks} of ${tasks.length} task(s) completed; no evaluator configured`;
  return `${completedTasks} of ${tasks.length} task(s) completed; no evaluator configured for ${unchecked.join(', ')}`;
}

function blockedToolOf(event: LoopEvent): string {
  if (event.type === 'model.responded' && event.decision.kind === 'tool_calls')
    return event.decision.blockedTool ?? '?';
  return '?';
}

/** The signal, what it counted, and the option that controls it. */
function describeSignal(context: LoopContext, signal: NoProgressSignal | null): string {
  const { progress, noProgress } = context;
  switch (signal) {
    case 'repeated_tool_call':
      return `repeated_tool_call: ${progress.repeatedTool ?? 'a tool'} was called with the same arguments and brought the same result ${progress.repeatCount} times in this task (threshold ${noProgress.repeatedToolCall}); raise noProgress.repeatedToolCall`;
    case 'duplicate_observation':
      return `duplicate_observation: ${progress.duplicateObservationStreak} tool rounds in a row brought only (call, result) pairs already seen in this task (threshold ${noProgress.duplicateObservation}); raise noProgress.duplicateObservation`;
    case 'unchanged_state':
      return `unchanged_state: nothing new for ${progress.unchangedStateStreak} decisions in a row (threshold ${noProgress.unchangedState}); raise noProgress.unchangedState`;
    case 'same_evaluator_reason':
      return `same_evaluator_reason: the same output was rejected ${progress.sameReasonStreak} times for the same reason (threshold ${noProgress.sameEvaluatorReason}): ${progress.lastEvaluatorReason ?? '?'}; raise noProgress.sameEvaluatorReason`;
    case 'plan_stall':
      return `plan_stall: ${progress.planStallSteps} steps without a plan item done or removed (threshold ${noProgress.planStall}); raise noProgress.planStall`;
    case 'same_parse_error':
      return `same_parse_error: ${progress.lastParseError ?? '?'} ${progress.sameParseErrorStreak} times in a row (threshold ${noProgress.sameParseError}); raise noProgress.sameParseError`;
    case null:
      return 'unknown signal';
  }
}

/**
 * "1st", "2nd", "3rd", "11th", "22nd": how the stop details count attempts.
 * @example
 * ordinal(3) // '3rd'
 */
export function ordinal(count: number): string {
  const lastTwo = count % 100;
  const suffix = lastTwo >= 11 && lastTwo <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][count % 10] ?? 'th');
  return `${count}${suffix}`;
}

type ModelFailedEvent = Extract<LoopEvent, { type: 'model.failed' }>;

/**
 * What failed, as short as a detail can say it: `HTTP 503`, else the adapter's kind (`timeout`, `connection`).
 * @example
 * failureLabel(503, 'server') // 'HTTP 503'
 */
export function failureLabel(status: number | undefined, kind: string | undefined): string {
  return status !== undefined ? `HTTP ${status}` : (kind ?? 'transient');
}

/** The run's ordinal of the failed model call, counting each call once however many attempts it took (judges and summaries included). */
const callNumber = (context: LoopContext): number => Math.max(1, context.usage.modelCalls - context.transport.retries);

function describeBackoffPastDeadline(context: LoopContext, event: ModelFailedEvent): string {
  const { deadlineMs } = context.limits;
  const deadline = (context.startedAt ?? event.at) + deadlineMs;
  const wait =
    event.retryAfterMs === undefined
      ? `its backoff is ${event.retryDelayMs} ms`
      : `the server asked to wait ${event.retryAfterMs} ms (Retry-After)${event.retryDelayMs === event.retryAfterMs ? '' : `, the backoff is ${event.retryDelayMs} ms`}`;
  const lower = event.retryAfterMs === undefined ? '' : ' (or lower retry.maxRetryAfterMs)';
  return `model call ${callNumber(context)} failed (${failureLabel(event.status, event.errorKind)}) and ${wait}: the retry would start ${event.at + event.retryDelayMs - deadline} ms after the deadline (${deadlineMs} ms; ${Math.max(0, deadline - event.at)} ms were left), so the run stopped without waiting; raise limits.deadlineMs${lower}`;
}

function describeTransportFailure(context: LoopContext, event: ModelFailedEvent, task: string): string {
  const { limits, transport } = context;
  const call = `model call ${callNumber(context)}`;
  // The provider's message goes last: it is free text, and may end in a redacted value that runs to the end.
  if (!hasTransportAttemptsLeft({ context })) {
    return `task ${task}: ${ordinal(transport.consecutiveFailures)} consecutive transport failure of ${call} (${failureLabel(event.status, event.errorKind)}); raise limits.maxTransportAttempts (${limits.maxTransportAttempts}). Last error: ${event.message}`;
  }
  return `task ${task}: ${call} failed (${failureLabel(event.status, event.errorKind)}) with the run's transport retries spent (${transport.retries} of maxTransportRetries ${limits.maxTransportRetries}); raise limits.maxTransportRetries. Last error: ${event.message}`;
}

function describeRetriesExhausted(context: LoopContext, event: LoopEvent): string {
  const task = context.tasks[context.taskIndex]?.id ?? '?';
  if (event.type === 'model.failed') return describeTransportFailure(context, event, task);
  if (event.type === 'evaluation.completed')
    return `task ${task}: evaluation still failing after ${context.task.reflectionRetries} reflection retries: ${event.reason}; raise limits.maxRetries`;
  return `task ${task}: tool arguments still invalid after ${context.task.argumentRepairs} repair(s); raise limits.maxArgumentRepairs`;
}
