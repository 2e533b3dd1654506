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
    usage: addUsage(context.usage, event.usage, event.modelCalls ?? 1),
    feedback: null,
    task: {
      ...context.task,
      steps: context.task.steps + 1,
      argumentRepairs: isValidDecision ? 0 : context.task.argumentRepairs,
    },
    // The call got through: the next one has every transport attempt again (unchanged on the common path).
    ...(context.transport.consecutiveFailures === 0 && !event.transportRetries
      ? {}
      : { transport: { consecutiveFailures: 0, retries: context.transport.retries + (event.transportRetries ?? 0) } }),
    progress: {
      ...progress,
      lastStateDigest: event.stateDigest,
      // Counted like every other streak: the first occurrence is 1.
      unchangedStateStreak: sameDigest ? progress.unchangedStateStreak + 1 : 1,
      lastParseError: parseError,
      sameParseErrorStreak: parseError === null ? 0 : sameParseError ? progress.sameParseErrorStreak + 1 : 1,
      planStallSteps: progress.planActive ? progress.planStallSteps + 1 : 0,
    },
  };
}

export function recordModelFailure({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'model.failed');
  const modelCalls = event.modelCalls ?? 1;
  return {
    lastEventAt: Math.max(context.lastEventAt, event.at),
    usage:
      event.usage === undefined
        ? { ...context.usage, modelCalls: context.usage.modelCalls + modelCalls }
        : addUsage(context.usage, event.usage, modelCalls),
    feedback: null,
    transport: {
      consecutiveFailures: context.transport.consecutiveFailures + 1,
      retries: context.transport.retries + (event.transportRetries ?? 0),
    },
  };
}

export function recordToolRound({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'tools.completed');
  const { round } = event;
  const progress = context.progress;
  // A round that brought something new without repeating itself answers an earlier nudge (a plan-stall nudge
  // only by moving the plan): the next signal nudges again instead of stopping.
  const broughtNews = round.maxRepeatCount > 0 && !round.allObservationsSeen;
  const planProgressed = round.plan?.progressed === true;
  const answeredNudge =
    (broughtNews || planProgressed) && progress.nudgedAtStep !== null && progress.nudgedAtStep < context.steps;
  // A plan-stall nudge answered with new results starts the count over: the plan is nudged again later, never stopped while work goes on.
  const restartPlanCount = planProgressed || (answeredNudge && progress.lastSignal === 'plan_stall');
  return {
    lastEventAt: Math.max(context.lastEventAt, event.at),
    nextRequestTokens: event.nextRequestTokens,
    usage: { ...context.usage, toolCalls: context.usage.toolCalls + round.calls },
    progress: {
      ...progress,
      duplicateObservationStreak: round.allObservationsSeen ? progress.duplicateObservationStreak + 1 : 0,
      repeatCount: round.maxRepeatCount,
      repeatedTool: round.repeatedTool,
      planActive: round.plan === null ? progress.planActive : round.plan.openItems > 0,
      planStallSteps: restartPlanCount ? 0 : progress.planStallSteps,
      ...(answeredNudge ? { nudgedAtStep: null } : {}),
    },
  };
}

export function recordEvaluation({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'evaluation.completed');
  const progress = context.progress;
  // An answer that changes is improving (bounded by maxRetries); only the same answer with the same reason is stuck.
  const sameRejection =
    !event.passed && event.reason === progress.lastEvaluatorReason && event.outputDigest === progress.lastOutputDigest;
  const usage = event.usage === null ? context.usage : addUsage(context.usage, event.usage, 0);
  return {
    lastEventAt: Math.max(context.lastEventAt, event.at),
    nextRequestTokens: event.nextRequestTokens,
    usage: { ...usage, modelCalls: usage.modelCalls + event.modelCalls },
    // Each judge call had its own attempts; the run's total still counts them.
    transport:
      event.transportRetries === 0
        ? context.transport
        : { ...context.transport, retries: context.transport.retries + event.transportRetries },
    progress: {
      ...progress,
      lastEvaluatorReason: event.passed ? null : event.reason,
      lastOutputDigest: event.passed ? null : event.outputDigest,
      sameReasonStreak: event.passed ? 0 : sameRejection ? progress.sameReasonStreak + 1 : 1,
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
  if (event.type === 'tool.withheld') return { lastEventAt };
  const modelCalls = event.modelCalls ?? (event.usage === undefined ? 0 : 1);
  if (event.usage === undefined && modelCalls === 0) return { lastEventAt };
  const noUsage = { inputTokens: 0, outputTokens: 0, costUsd: 0 };
  return { lastEventAt, usage: addUsage(context.usage, event.usage ?? noUsage, modelCalls) };
}
