/**
 * Reducers for the machine's decisions: which retry layer runs, what feedback the next
 * request carries, and why the run or a task stopped.
 */
import { assertEvent } from 'xstate';
import { decisionSignal, roundSignal } from '../guards/progress.js';
import { FRESH_PROGRESS, FRESH_TASK_COUNTERS } from './initial-context.js';
import { copyProgress } from './record-copy.js';
import { describeStop } from './stop-detail.js';
import type { ReducerArgs } from './record.js';
import type { LoopContext, NoProgressSignal, ProgressState, StopReason } from '../machines/types.js';

export function scheduleBackoff({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'model.failed');
  return {
    retryAt: event.at + event.retryDelayMs,
    transport: { consecutiveFailures: context.transport.consecutiveFailures, retries: context.transport.retries + 1 },
  };
}

export function requestArgumentRepair({ context }: ReducerArgs): Partial<LoopContext> {
  const { task } = context;
  return {
    feedback: { kind: 'argument_repair' },
    task: { steps: task.steps, reflectionRetries: task.reflectionRetries, argumentRepairs: task.argumentRepairs + 1 },
  };
}

export function requestParseRepair({ event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'model.responded');
  const parseError = event.decision.kind === 'unparseable' ? event.decision.parseError : 'unparseable_reply';
  return { feedback: { kind: 'parse_error', parseError } };
}

export function requestReflection({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'evaluation.completed');
  const { task } = context;
  return {
    feedback: { kind: 'reflection', reason: event.reason },
    task: { steps: task.steps, reflectionRetries: task.reflectionRetries + 1, argumentRepairs: task.argumentRepairs },
  };
}

function nudgeWith(context: LoopContext, signal: NoProgressSignal): Partial<LoopContext> {
  const progress = copyProgress(context.progress);
  progress.nudgedAtStep = context.steps;
  progress.lastSignal = signal;
  return { feedback: { kind: 'nudge', signal }, progress };
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

function freshProgressAfter(progress: ProgressState): ProgressState {
  const fresh = copyProgress(FRESH_PROGRESS);
  fresh.lastStateDigest = progress.lastStateDigest;
  return fresh;
}

function advanceTask(context: LoopContext): Partial<LoopContext> {
  return {
    taskIndex: context.taskIndex + 1,
    task: FRESH_TASK_COUNTERS,
    // A call that failed for good ended the task; the next task's first call starts afresh (the run's total stays).
    transport: { consecutiveFailures: 0, retries: context.transport.retries },
    // The plan shrank: streaks and the nudge start over for the next task.
    progress: freshProgressAfter(context.progress),
    feedback: null,
  };
}

export function completeTask({ context }: ReducerArgs): Partial<LoopContext> {
  const update = advanceTask(context);
  update.completedTasks = context.completedTasks + 1;
  return update;
}

/** A task failed for good under the `continue` policy (already counted by `failTask`): move on; the driver adds a warning. */
export function skipFailedTask({ context }: ReducerArgs): Partial<LoopContext> {
  return advanceTask(context);
}
