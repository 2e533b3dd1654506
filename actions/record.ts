/**
 * Reducers that fold an effect's outcome into the context. Pure: they return the changed
 * fields only, and every update is O(1) — no history is copied, so per-step cost stays flat.
 */
import { assertEvent } from 'xstate';
import type { CallUsage, LoopContext, LoopEvent, Usage } from '../machines/types.js';
import { copyProgress } from './record-copy.js';

export interface ReducerArgs {
  context: LoopContext;
  event: LoopEvent;
}

/** `call` added to `usage`; a call that reported no usage (`undefined` or `null`) leaves the sums as they were. */
function addUsage(usage: Usage, call: CallUsage | null | undefined, modelCalls: number): Usage {
  if (call === undefined || call === null)
    return {
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      costUsd: usage.costUsd,
      modelCalls: usage.modelCalls + modelCalls,
      toolCalls: usage.toolCalls,
    };
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

/**
 * The run's usage once `event` (a reply) is recorded into `context`: the reply's call added to it. `recordModelResponse`
 * records exactly this; `verify` reads it alone for a reply that ends the run on a stop it already knows.
 * @example
 * replyUsage(context, event).modelCalls // context.usage.modelCalls + (event.modelCalls ?? 1)
 */
export function replyUsage(context: LoopContext, event: Extract<LoopEvent, { type: 'model.responded' }>): Usage {
  return addUsage(context.usage, event.usage, event.modelCalls ?? 1);
}

export function recordModelResponse({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'model.responded');
  const { decision } = event;
  const parseError =
    decision.kind === 'unparseable' ? decision.parseError : decision.kind === 'tool_calls' ? decision.parseError : null;
  const before = context.progress;
  const isValidDecision = decision.kind === 'final' || (decision.kind === 'tool_calls' && decision.invalidCalls === 0);
  // Copied field by field, then changed in place: cheaper than spreading the records (see record-copy.ts).
  const progress = copyProgress(before);
  // Counted like every other streak: the first occurrence is 1.
  progress.unchangedStateStreak = before.lastStateDigest === event.stateDigest ? before.unchangedStateStreak + 1 : 1;
  progress.lastStateDigest = event.stateDigest;
  progress.lastParseError = parseError;
  progress.sameParseErrorStreak =
    parseError === null ? 0 : parseError === before.lastParseError ? before.sameParseErrorStreak + 1 : 1;
  progress.planStallSteps = before.planActive ? before.planStallSteps + 1 : 0;
  const task = context.task;
  const update: Partial<LoopContext> = {
    steps: context.steps + 1,
    lastEventAt: Math.max(context.lastEventAt, event.at),
    nextRequestTokens: event.nextRequestTokens,
    usage: replyUsage(context, event),
    feedback: null,
    task: {
      steps: task.steps + 1,
      reflectionRetries: task.reflectionRetries,
      argumentRepairs: isValidDecision ? 0 : task.argumentRepairs,
    },
    progress,
  };
  // The call got through: the next one has every transport attempt again (unchanged on the common path).
  if (context.transport.consecutiveFailures !== 0 || event.transportRetries)
    update.transport = { consecutiveFailures: 0, retries: context.transport.retries + (event.transportRetries ?? 0) };
  return update;
}

/**
 * The run's usage once `event` (a failed call) is recorded into `context`: what the call spent added to it.
 * `recordModelFailure` records exactly this; `verify` reads it alone for a failure that ends the run at once.
 * @example
 * failureUsage(context, event).modelCalls // context.usage.modelCalls + (event.modelCalls ?? 1)
 */
export function failureUsage(context: LoopContext, event: Extract<LoopEvent, { type: 'model.failed' }>): Usage {
  return addUsage(context.usage, event.usage, event.modelCalls ?? 1);
}

export function recordModelFailure({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'model.failed');
  return {
    lastEventAt: Math.max(context.lastEventAt, event.at),
    usage: failureUsage(context, event),
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
  const before = context.progress;
  // A round that brought something new without repeating itself answers an earlier nudge (a plan-stall nudge
  // only by moving the plan): the next signal nudges again instead of stopping.
  const broughtNews = round.maxRepeatCount > 0 && !round.allObservationsSeen;
  const planProgressed = round.plan?.progressed === true;
  const answeredNudge =
    (broughtNews || planProgressed) && before.nudgedAtStep !== null && before.nudgedAtStep < context.steps;
  // A plan-stall nudge answered with new results starts the count over: the plan is nudged again later, never stopped while work goes on.
  const restartPlanCount = planProgressed || (answeredNudge && before.lastSignal === 'plan_stall');
  const progress = copyProgress(before);
  progress.duplicateObservationStreak = round.allObservationsSeen ? before.duplicateObservationStreak + 1 : 0;
  progress.repeatCount = round.maxRepeatCount;
  progress.repeatedTool = round.repeatedTool;
  progress.planActive = round.plan === null ? before.planActive : round.plan.openItems > 0;
  progress.planStallSteps = restartPlanCount ? 0 : before.planStallSteps;
  if (answeredNudge) progress.nudgedAtStep = null;
  const usage = context.usage;
  return {
    lastEventAt: Math.max(context.lastEventAt, event.at),
    nextRequestTokens: event.nextRequestTokens,
    usage: {
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      costUsd: usage.costUsd,
      modelCalls: usage.modelCalls,
      toolCalls: usage.toolCalls + round.calls,
    },
    progress,
  };
}

export function recordEvaluation({ context, event }: ReducerArgs): Partial<LoopContext> {
  assertEvent(event, 'evaluation.completed');
  const before = context.progress;
  // An answer that changes is improving (bounded by maxRetries); only the same answer with the same reason is stuck.
  const sameRejection =
    !event.passed && event.reason === before.lastEvaluatorReason && event.outputDigest === before.lastOutputDigest;
  const progress = copyProgress(before);
  progress.lastEvaluatorReason = event.passed ? null : event.reason;
  progress.lastOutputDigest = event.passed ? null : event.outputDigest;
  progress.sameReasonStreak = event.passed ? 0 : sameRejection ? before.sameReasonStreak + 1 : 1;
  return {
    lastEventAt: Math.max(context.lastEventAt, event.at),
    nextRequestTokens: event.nextRequestTokens,
    usage: addUsage(context.usage, event.usage, event.modelCalls),
    // Each judge call had its own attempts; the run's total still counts them.
    transport:
      event.transportRetries === 0
        ? context.transport
        : {
            consecutiveFailures: context.transport.consecutiveFailures,
            retries: context.transport.retries + event.transportRetries,
          },
    progress,
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
  return { lastEventAt, usage: addUsage(context.usage, event.usage, modelCalls) };
}
