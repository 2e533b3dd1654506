/**
 * The `callModel` effect: add the feedback the machine asked for, call the model, classify
 * its reply (tool lookup, policy, argument validation, fingerprints) into a `model.responded`
 * event, or a transport failure into `model.failed`.
 */
import { ModelCallError } from '../errors.js';
import type { Feedback, LoopContext, LoopEvent, ModelDecision, NoProgressSignal } from '../../machines/types.js';
import type { ModelResponse } from '../model/types.js';
import { toolCallFingerprint } from '../progress/index.js';
import { prepareToolCalls, type PreparedCall, type ToolHealth } from '../tools/index.js';
import { summarize } from '../trace/trace-event.js';
import { untilAborted } from './interruption.js';
import { costOf } from './pricing.js';
import { backoffDelay } from './retry-policy.js';
import type { RunSession } from './run-session.js';

const NUDGES: Record<NoProgressSignal, string> = {
  repeated_tool_call: 'You are repeating a tool call you already made with the same arguments; its result is above. Use it, try something different, or give your final answer.',
  unchanged_state: 'Your last replies have not changed anything. Take a different approach or give your final answer.',
  same_evaluator_reason: 'Your answer keeps failing evaluation for the same reason. Address that reason directly, differently from before.',
  duplicate_observation: 'Your recent tool calls only returned information you already have. Stop gathering and answer, or look for something new.',
  plan_stall: 'This task has taken many steps without finishing. Give your best final answer now.',
  same_parse_error: 'You keep making the same formatting mistake. Read the error carefully and correct it.',
};

/** Tool calls of a reply that were not run still need an answer before the next request. */
function answerUnrunCalls(session: RunSession, feedback: Feedback | null): void {
  for (const call of session.pendingCalls) {
    const content =
      call.error?.message ??
      (feedback?.kind === 'nudge'
        ? `Not executed: this exact call (${call.request.name} with the same arguments) was already made; its result is above.`
        : 'Not executed: another call in the same reply was invalid. Fix it and call again.');
    session.transcript.append({ role: 'tool', toolCallId: call.request.id, content });
  }
  session.pendingCalls = [];
}

function applyFeedback(session: RunSession, feedback: Feedback | null): void {
  answerUnrunCalls(session, feedback);
  if (feedback === null) return;
  switch (feedback.kind) {
    case 'reflection':
      session.transcript.append({ role: 'user', content: `Your previous answer did not pass evaluation: ${feedback.reason}\nFix exactly that and answer again.` });
      break;
    case 'parse_error':
      session.transcript.append({ role: 'user', content: `Your previous reply could not be used (${feedback.parseError}). Reply with your final answer as text, or call one of the offered tools.` });
      break;
    case 'nudge':
      session.transcript.append({ role: 'user', content: NUDGES[feedback.signal] });
      break;
    case 'argument_repair':
    case 'transport_retry':
      // The tool results already carry the field errors; a transport retry re-sends as is.
      break;
  }
}

function classify(session: RunSession, health: ToolHealth, response: ModelResponse): { decision: ModelDecision; prepared: PreparedCall[]; reply: string } {
  const text = response.text !== null && response.text.trim() !== '' ? response.text : null;
  if (response.toolCalls.length === 0) {
    return text === null
      ? { decision: { kind: 'unparseable', parseError: 'empty_reply' }, prepared: [], reply: '' }
      : { decision: { kind: 'final' }, prepared: [], reply: text };
  }
  const prepared = prepareToolCalls(response.toolCalls, { tools: session.config.tools, policy: session.config.policy, health });
  let invalidCalls = 0, deniedCalls = 0, approvalCalls = 0, unavailableCalls = 0, maxRepeatCount = 0;
  let parseError: string | null = null;
  const fingerprints: string[] = [];
  for (const call of prepared) {
    const fingerprint = toolCallFingerprint(call.request.name, call.status === 'invalid' ? call.request.arguments : call.args);
    fingerprints.push(fingerprint);
    maxRepeatCount = Math.max(maxRepeatCount, session.progress.countToolCall(fingerprint));
    if (call.status === 'invalid') {
      invalidCalls++;
      parseError ??= call.error?.key ?? 'invalid_arguments';
    } else if (call.status === 'denied') deniedCalls++;
    else if (call.status === 'needs_approval') approvalCalls++;
    else if (call.status === 'unavailable') unavailableCalls++;
  }
  return {
    decision: { kind: 'tool_calls', calls: prepared.length, invalidCalls, parseError, deniedCalls, approvalCalls, unavailableCalls, maxRepeatCount },
    prepared,
    reply: `${text ?? ''}\n${fingerprints.join('\n')}`,
  };
}

export async function performModelCall(session: RunSession, health: ToolHealth, context: LoopContext, feedback: Feedback | null): Promise<LoopEvent> {
  const { config } = session;
  applyFeedback(session, feedback);
  const startedAt = config.clock.now();
  let response: ModelResponse;
  try {
    response = await untilAborted(
      config.model.generate({ messages: session.transcript.messages, tools: session.offeredTools(health), signal: session.signal }),
      session.signal,
    );
  } catch (error) {
    if (session.signal.aborted) throw session.signal.reason;
    return modelFailure(session, context, error, config.clock.now());
  }
  const at = config.clock.now();
  const { decision, prepared, reply } = classify(session, health, response);
  session.pendingCalls = prepared;
  const text = decision.kind === 'unparseable' ? null : response.text;
  if (text !== null || response.toolCalls.length > 0) {
    session.transcript.append({ role: 'assistant', content: text, toolCalls: response.toolCalls.length > 0 ? response.toolCalls : undefined });
  }
  if (text !== null && text.trim() !== '') session.lastReply = text;
  const stateDigest = session.progress.advanceState({ taskIndex: session.taskIndex, observations: [], reply });
  const costUsd = costOf(config.prices[config.model.id], response.usage);
  session.record({
    type: 'step-end', runId: session.runId, at, step: context.steps + 1, taskId: session.task.id, modelId: config.model.id,
    latencyMs: at - startedAt, inputTokens: response.usage.inputTokens, outputTokens: response.usage.outputTokens, costUsd,
    decision: decision.kind,
    toolCalls: prepared.map((call) => ({ callId: call.request.id, name: call.request.name, argumentsSummary: summarize(call.args ?? call.request.arguments) })),
    replySummary: text === null ? null : summarize(text),
  });
  return {
    type: 'model.responded', at, decision, stateDigest,
    usage: { inputTokens: response.usage.inputTokens, outputTokens: response.usage.outputTokens, costUsd },
    nextRequestTokens: session.transcript.estimateTokens(),
  };
}

function modelFailure(session: RunSession, context: LoopContext, error: unknown, at: number): LoopEvent {
  const { config } = session;
  const transient = error instanceof ModelCallError && error.retryable;
  const retryDelayMs = transient
    ? backoffDelay({ attempt: context.task.transportRetries, retryAfterMs: error.retryAfterMs, options: config.backoff, random: config.random })
    : 0;
  const message = error instanceof Error ? error.message : String(error);
  if (!transient) session.fatalError = error instanceof Error ? error : new Error(message);
  session.record({
    type: 'model-error', runId: session.runId, at, taskId: session.task.id,
    errorKind: error instanceof ModelCallError ? error.kind : error instanceof Error ? error.name : 'unknown', message, retryDelayMs,
  });
  return { type: 'model.failed', at, failure: transient ? 'transient' : 'fatal', message, retryDelayMs };
}
