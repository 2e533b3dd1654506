/** The `runTools` effect: run the decision's ready calls and summarise the round for the machine. */
import type { LoopContext, LoopEvent } from '../../../machines/types.js';
import { PLAN_TOOL_NAME } from '../plan/plan-tool.js';
import { idempotencyKey, runToolRound, type ToolHealth } from '../tools/index.js';
import { feedbackAllowanceChars } from './model-step.js';
import type { RunSession } from './run-session.js';
import { NOT_EXECUTED_ANSWER } from '../prompts.js';
import { withSignal } from './signal-property.js';

export async function performToolRound(
  session: RunSession,
  health: ToolHealth,
  context: LoopContext,
): Promise<LoopEvent> {
  const { config } = session;
  const pending = session.takePendingCalls();
  const ready = pending.filter(({ call, refusal }) => call.status === 'ready' && refusal === null);
  const { maxParallelTools, maxToolResultBytes } = context.limits;
  if (ready.length > maxParallelTools) {
    session.warn(
      `step ${context.steps}: the model requested ${ready.length} tool calls; ran at most ${maxParallelTools} at a time`,
      config.clock.now(),
    );
  }
  const refused = pending.filter(({ call, refusal }) => call.status !== 'ready' || refusal !== null);
  if (refused.length > 0) {
    session.warn(
      `step ${context.steps}: ${refused.length} tool call(s) answered, not run: ${refused.map(({ call, refusal }) => `${call.request.name} (${refusal?.reason ?? (call.status === 'denied' ? 'denied by the policy' : call.status)})`).join(', ')}`,
      config.clock.now(),
    );
  }
  const outcomes = await runToolRound(
    ready.map(({ call }) => call),
    // The signal is read only by a tool that asks for it: a run's own abort makes it then.
    withSignal(
      {
        runId: session.runId,
        stepId: String(context.steps),
        maxParallel: maxParallelTools,
        maxResultBytes: maxToolResultBytes,
        aborts: session.aborts,
        health,
        now: () => config.clock.now(),
        setTimer: (ms: number, callback: () => void) => config.clock.setTimer(ms, callback),
      },
      session,
    ),
  );
  // Even when cancel or the deadline cut the round short, its outcomes are reported: calls that
  // ran are counted, and side effects of unknown outcome are named before the run stops.
  const interrupted = session.aborts.aborted;
  const at = config.clock.now();
  // Results and refusals are answered in the reply's order, so the next request is complete. `ready` keeps
  // `pending`'s order, so its outcomes are met one after another (no map from entry to outcome per round).
  let readyIndex = 0;
  for (const entry of pending) {
    const outcome = entry === ready[readyIndex] ? outcomes[readyIndex++] : undefined;
    const content = outcome?.content ?? entry.refusal?.message ?? entry.call.error?.message ?? NOT_EXECUTED_ANSWER;
    session.transcript.append({ role: 'tool', toolCallId: entry.call.request.id, content });
  }
  let successes = 0,
    seenBefore = 0,
    maxRepeatCount = 0;
  // successes: calls whose answer is an observation (a result, a caller-fault error, a refusal).
  let repeatedTool: string | null = null;
  let failedCalls = 0,
    timedOutCalls = 0,
    unknownOutcomeCalls = 0;
  let planCalled = false;
  // A refusal is what the model learns from that call: refused again the same way, it is a repeat like any other.
  for (const { call, fingerprint, refusal } of refused) {
    const observation = session.progress.observeCall(fingerprint, refusal?.message ?? call.error?.message ?? '');
    successes++;
    if (observation.timesSeen > 1) seenBefore++;
    if (observation.timesSeen > maxRepeatCount) {
      maxRepeatCount = observation.timesSeen;
      repeatedTool = observation.timesSeen > 1 ? call.request.name : null;
    }
  }
  for (const [index, outcome] of outcomes.entries()) {
    let observationId = '';
    if (outcome.status === 'ok' && outcome.name === PLAN_TOOL_NAME) {
      // The plan is the model's own bookkeeping, not news about the world: the plan-stall signal watches it.
      planCalled = true;
    } else if (outcome.status === 'ok' || outcome.callerFault === true) {
      // A result is an observation, and so is an error the tool blames on its caller (the same bad call brings it
      // again); other failures belong to the retry layers and the circuit breaker.
      const observation = session.progress.observeCall(ready[index]?.fingerprint ?? outcome.name, outcome.content);
      observationId = observation.observationId;
      successes++;
      if (observation.timesSeen > 1) seenBefore++;
      if (observation.timesSeen > maxRepeatCount) {
        maxRepeatCount = observation.timesSeen;
        repeatedTool = observation.timesSeen > 1 ? outcome.name : null;
      }
    } else {
      session.progress.noteFailure();
      if (outcome.status === 'error') failedCalls++;
      else if (outcome.status === 'timeout') timedOutCalls++;
      else if (outcome.status === 'unknown_outcome') {
        // A call abandoned by cancel or the deadline is named in a warning; the interruption decides the stop.
        if (!interrupted) unknownOutcomeCalls++;
        const key = idempotencyKey(session.runId, String(context.steps), outcome.callId);
        session.warn(
          `tool ${outcome.name} (${outcome.callId}): outcome unknown; check it by idempotency key ${key} before calling it again`,
          at,
        );
      }
    }
    if (outcome.truncated)
      session.warn(
        `tool ${outcome.name} (${outcome.callId}): result cut from ${outcome.bytes} to ${maxToolResultBytes} bytes`,
        at,
      );
    session.record({
      type: 'tool-end',
      runId: session.runId,
      at,
      taskId: session.task.id,
      step: context.steps,
      callId: outcome.callId,
      name: outcome.name,
      status: outcome.status,
      // A short content hash names the observation without copying it into the trace.
      observationId,
      bytes: outcome.bytes,
      truncated: outcome.truncated,
      latencyMs: outcome.durationMs,
    });
  }
  if (outcomes.length > 0) session.recordToolHealth(health, context.steps, at);
  const planFacts = session.plan?.takeRoundFacts() ?? null;
  const requiredToolUnavailable = (session.task.requires ?? []).some((name) => health.isOpen(name));
  return {
    type: 'tools.completed',
    at,
    nextRequestTokens: session.estimateNextRequest(feedbackAllowanceChars(context)),
    round: {
      calls: outcomes.length,
      failedCalls,
      timedOutCalls,
      unknownOutcomeCalls,
      allObservationsSeen: successes > 0 && seenBefore === successes,
      maxRepeatCount,
      repeatedTool,
      requiredToolUnavailable,
      plan: planCalled ? planFacts : null,
    },
  };
}
