/** The `runTools` effect: run the decision's ready calls and summarise the round for the machine. */
import type { LoopContext, LoopEvent } from '../../machines/types.js';
import { idempotencyKey, runToolRound, type ToolHealth } from '../tools/index.js';
import type { RunSession } from './run-session.js';

export async function performToolRound(session: RunSession, health: ToolHealth, context: LoopContext): Promise<LoopEvent> {
  const { config } = session;
  const ready = session.pendingCalls.filter(({ call }) => call.status === 'ready');
  session.pendingCalls = [];
  const { maxParallelTools, maxToolResultBytes } = context.limits;
  if (ready.length > maxParallelTools) {
    session.warn(`step ${context.steps}: the model requested ${ready.length} tool calls; ran at most ${maxParallelTools} at a time`, config.clock.now());
  }
  const outcomes = await runToolRound(ready.map(({ call }) => call), {
    runId: session.runId, stepId: String(context.steps), maxParallel: maxParallelTools, maxResultBytes: maxToolResultBytes,
    signal: session.signal, health, now: () => config.clock.now(), setTimer: (ms, callback) => config.clock.setTimer(ms, callback),
  });
  // Even when cancel or the deadline cut the round short, its outcomes are reported: calls that
  // ran are counted, and side effects of unknown outcome are named before the run stops.
  const interrupted = session.signal.aborted;
  const at = config.clock.now();
  for (const { fingerprint } of ready) session.progress.countToolCall(fingerprint);
  let allObservationsSeen = outcomes.length > 0;
  let failedCalls = 0, timedOutCalls = 0, unknownOutcomeCalls = 0;
  for (const outcome of outcomes) {
    session.transcript.append({ role: 'tool', toolCallId: outcome.callId, content: outcome.content });
    const seen = session.progress.observe(outcome.content);
    allObservationsSeen &&= seen;
    if (outcome.status === 'error') failedCalls++;
    else if (outcome.status === 'timeout') timedOutCalls++;
    else if (outcome.status === 'unknown_outcome') {
      // A call abandoned by cancel or the deadline is named in a warning; the interruption decides the stop.
      if (!interrupted) unknownOutcomeCalls++;
      const key = idempotencyKey(session.runId, String(context.steps), outcome.callId);
      session.warn(`tool ${outcome.name} (${outcome.callId}): outcome unknown; check it by idempotency key ${key} before calling it again`, at);
    }
    if (outcome.truncated) session.warn(`tool ${outcome.name} (${outcome.callId}): result cut from ${outcome.bytes} to ${maxToolResultBytes} bytes`, at);
    session.record({
      type: 'tool-end', runId: session.runId, at, taskId: session.task.id, callId: outcome.callId, name: outcome.name, status: outcome.status,
      // A short content hash names the observation without copying it into the trace.
      observationId: session.progress.lastObservationHash.slice(0, 12), bytes: outcome.bytes, truncated: outcome.truncated, latencyMs: outcome.durationMs,
    });
  }
  const requiredToolUnavailable = (session.task.requires ?? []).some((name) => health.isOpen(name));
  return {
    type: 'tools.completed', at, nextRequestTokens: session.transcript.estimateTokens(),
    round: { calls: outcomes.length, failedCalls, timedOutCalls, unknownOutcomeCalls, allObservationsSeen, requiredToolUnavailable },
  };
}
