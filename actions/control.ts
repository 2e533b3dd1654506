/**
 * Reducers for the machine's decisions: which retry layer runs, what feedback the next
 * request carries, and why the run or a task stopped.
 */
import { assertEvent } from 'xstate';
import { decisionSignal, roundSignal } from '../guards/progress.js';
import { FRESH_PROGRESS, FRESH_TASK_COUNTERS } from './initial-context.js';
import { describeStop } from './stop-detail.js';
import type { ReducerArgs } from './record.js';
import type { LoopContext, NoProgressSignal, StopReason } from '../machines/types.js';

export function scheduleBackoff({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'model.failed');
  return {
    retryAt: event.at + event.retryDelayMs,
    transport: { ...context.transport, retries: context.transport.retries + 1 },
  };
}

export function requestArgumentRepair({ context }: ReducerArgs): Partial<LoopContext> {
  return {
    feedback: { kind: 'argument_repair' },
    task: { ...context.task, argumentRepairs: context.task.argumentRepairs + 1 },
  };
}

export function requestParseRepair({ event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'model.responded');
  const parseError = event.decision.kind === 'unparseable' ? event.decision.parseError : 'unparseable_reply';
  return { feedback: { kind: 'parse_error', parseError } };
}

export function requestReflection({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'evaluation.completed');
  return {
    feedback: { kind: 'reflection', reason: event.reason },
    task: { ...context.task, reflectionRetries: context.task.reflectionRetries + 1 },
  };
}

function nudgeWith(context: LoopContext, signal: NoProgressSignal): Partial<LoopContext> {
  return {
    feedback: { kind: 'nudge', signal },
    progress: { ...context.progress, nudgedAtStep: context.steps, lastSignal: signal },
  };
}

export function nudge({ context }: ReducerArgs, params: { signal: NoProgressSignal }): Partial<LoopContext> {
  return nudgeWith(context, params.signal);
}

/** Nudge on the signal a model decision raised; tool calls of that decision are not run. */
export function nudgeOnDecision({ context, event }: ReducerArgs): Partial<LoopContext> {
  return nudgeWith(context, decisionSignal(context, event) ?? 'unchanged_state');
}

/** Nudge on the signal a tool round raised; its calls ran and their results are in the transcript. */
export function nudgeOnRound({ context, event }: ReducerArgs): Partial<LoopContext> {
  return nudgeWith(context, roundSignal(context, event) ?? 'repeated_tool_call');
}

export function stopRun(
  { context, event }: ReducerArgs,
  params: { reason: StopReason; signal?: NoProgressSignal },
): Partial<LoopContext> {
  const signal =
    params.reason === 'no_progress'
      ? (params.signal ?? decisionSignal(context, event) ?? roundSignal(context, event) ?? context.progress.lastSignal)
      : null;
  return {
    stop: { reason: params.reason, detail: describeStop(params.reason, context, event, signal) },
    feedback: null,
  };
}

export function failTask({ context, event }: ReducerArgs, params: { reason: StopReason }): Partial<LoopContext> {
  return {
    failure: { reason: params.reason, detail: describeStop(params.reason, context, event, null) },
    failedTasks: context.failedTasks + 1,
    feedback: null,
  };
}

/** Move the stop cause of a task that failed for good onto the run. */
export function stopWithTaskFailure({ context }: ReducerArgs): Partial<LoopContext> {
  return { stop: context.failure ?? { reason: 'fatal_error', detail: 'task failed without a recorded cause' } };
}

function advanceTask(context: LoopContext): Partial<LoopContext> {
  return {
    taskIndex: context.taskIndex + 1,
    task: FRESH_TASK_COUNTERS,
    // A call that failed for good ended the task; the next task's first call starts afresh (the run's total stays).
    transport: { ...context.transport, consecutiveFailures: 0 },
    // The plan shrank: streaks and the nudge start over for the next task.
    progress: { ...FRESH_PROGRESS, lastStateDigest: context.progress.lastStateDigest },
    feedback: null,
  };
}

export function completeTask({ context }: ReducerArgs): Partial<LoopContext> {
  return { ...advanceTask(context), completedTasks: context.completedTasks + 1 };
}

/** A task failed for good under the `continue` policy (already counted by `failTask`): move on; the driver adds a warning. */
export function skipFailedTask({ context }: ReducerArgs): Partial<LoopContext> {
  return advanceTask(context);
}
