/**
 * Reducers that fold an effect's outcome into the context. Pure: they return the changed
 * fields only, and every update is O(1) — no history is copied, so per-step cost stays flat.
 */
import { assertEvent } from 'xstate';
import type { CallUsage, LoopContext, LoopEvent, Usage } from '../machines/types.js';

export interface ReducerArgs {
  context: LoopContext;
  event: LoopEvent;
}

function addUsage(usage: Usage, call: CallUsage, modelCalls: number): Usage {
  return {
    inputTokens: usage.inputTokens + call.inputTokens,
    outputTokens: usage.outputTokens + call.outputTokens,
    costUsd: usage.costUsd + call.costUsd,
    modelCalls: usage.modelCalls + modelCalls,
    toolCalls: usage.toolCalls,
  };
}

export function startRun({ event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'run.started');
  return { startedAt: event.at, lastEventAt: event.at, nextRequestTokens: event.nextRequestTokens };
}

export function recordModelResponse({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'model.responded');
  const { decision } = event;
  const parseError =
    decision.kind === 'unparseable' ? decision.parseError : decision.kind === 'tool_calls' ? decision.parseError : null;
  const progress = context.progress;
  const sameDigest = progress.lastStateDigest === event.stateDigest;
  const sameParseError = parseError !== null && parseError === progress.lastParseError;
  const isValidDecision = decision.kind === 'final' || (decision.kind === 'tool_calls' && decision.invalidCalls === 0);
  return {
    steps: context.steps + 1,
    lastEventAt: Math.max(context.lastEventAt, event.at),
    nextRequestTokens: event.nextRequestTokens,
    usage: addUsage(context.usage, event.usage, 1),
    feedback: null,
    task: {
      ...context.task,
      steps: context.task.steps + 1,
      argumentRepairs: isValidDecision ? 0 : context.task.argumentRepairs,
    },
    progress: {
      ...progress,
      lastStateDigest: event.stateDigest,
      // Counted like every other streak: the first occurrence is 1.
      unchangedStateStreak: sameDigest ? progress.unchangedStateStreak + 1 : 1,
      lastParseError: parseError,
      sameParseErrorStreak: parseError === null ? 0 : sameParseError ? progress.sameParseErrorStreak + 1 : 1,
    },
  };
}

export function recordModelFailure({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'model.failed');
  return {
    lastEventAt: Math.max(context.lastEventAt, event.at),
    usage: { ...context.usage, modelCalls: context.usage.modelCalls + 1 },
    feedback: null,
  };
}

export function recordToolRound({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'tools.completed');
  const { round } = event;
  return {
    lastEventAt: Math.max(context.lastEventAt, event.at),
    nextRequestTokens: event.nextRequestTokens,
    usage: { ...context.usage, toolCalls: context.usage.toolCalls + round.calls },
    progress: {
      ...context.progress,
      duplicateObservationStreak: round.allObservationsSeen ? context.progress.duplicateObservationStreak + 1 : 0,
    },
  };
}

export function recordEvaluation({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'evaluation.completed');
  const progress = context.progress;
  const sameReason = !event.passed && event.reason === progress.lastEvaluatorReason;
  return {
    lastEventAt: Math.max(context.lastEventAt, event.at),
    nextRequestTokens: event.nextRequestTokens,
    usage: event.usage === null ? context.usage : addUsage(context.usage, event.usage, 1),
    progress: {
      ...progress,
      lastEvaluatorReason: event.passed ? null : event.reason,
      sameReasonStreak: event.passed ? 0 : sameReason ? progress.sameReasonStreak + 1 : 1,
    },
  };
}

export function recordBackoffElapsed({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'backoff.elapsed');
  return { lastEventAt: Math.max(context.lastEventAt, event.at), retryAt: null, feedback: { kind: 'transport_retry' } };
}

/**
 * Interruptions move the clock, and a fault after a model call still counts that call's usage;
 * the stop itself is recorded by `stopRun`.
 */
export function recordInterruption({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, ['run.cancelRequested', 'run.deadlineReached', 'run.faulted', 'tool.withheld']);
  const lastEventAt = Math.max(context.lastEventAt, event.at);
  if (event.type === 'run.faulted' && event.usage !== undefined) return { lastEventAt, usage: addUsage(context.usage, event.usage, 1) };
  return { lastEventAt };
}
