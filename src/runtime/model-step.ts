/**
 * The `callModel` effect: add the feedback the machine asked for, call the model, classify
 * its reply (tool lookup, policy, argument validation, fingerprints) into a `model.responded`
 * event, or a transport failure into `model.failed`.
 */
import { fitContextWindow, withContextUsage } from '../context/context-window.js';
import { ModelCallError } from '../errors.js';
import type { LoopContext, LoopEvent, ModelDecision, NoProgressSignal } from '../../machines/types.js';
import { modelResponseSchema, shapeProblems } from '../model/response-schema.js';
import type { ModelResponse } from '../model/types.js';
import { toolCallFingerprint } from '../progress/index.js';
import { prepareToolCalls, type PreparedCall, type ToolHealth } from '../tools/index.js';
import { summarize } from '../trace/trace-event.js';
import { untilAborted } from './interruption.js';
import { costOf, priceOf } from './pricing.js';
import { backoffDelay } from './retry-policy.js';
import type { PendingCall, RunSession } from './run-session.js';

/** A model adapter's reply of the wrong shape is a fatal error naming the field, never a crash. */
function checkModelResponse(response: unknown): Error | null {
  const problems = shapeProblems(modelResponseSchema, response);
  return problems === null ? null : new ModelCallError({ kind: 'unknown', message: `the model returned a malformed response: ${problems}` });
}

const NUDGES: Record<NoProgressSignal, string> = {
  repeated_tool_call: 'You are repeating a tool call you already made with the same arguments; its result is above. Use it, try something different, or give your final answer.',
  unchanged_state: 'Your last replies have not changed anything. Take a different approach or give your final answer.',
  same_evaluator_reason: 'Your answer keeps failing evaluation for the same reason. Address that reason directly, differently from before.',
  duplicate_observation: 'Your recent tool calls only returned information you already have. Stop gathering and answer, or look for something new.',
  plan_stall: 'This task has taken many steps without finishing. Give your best final answer now.',
  same_parse_error: 'You keep making the same formatting mistake. Read the error carefully and correct it.',
};

/** Tool calls of a reply that were not run still need an answer before the next request. */
function answerUnrunCalls(session: RunSession, context: LoopContext): void {
  const repeatThreshold = context.noProgress.repeatedToolCall;
  for (const { call, priorRuns, timesRequested } of session.pendingCalls) {
    const repeated = `Not executed: this exact call (${call.request.name} with the same arguments)`;
    const content =
      call.error?.message ??
      (timesRequested >= repeatThreshold
        ? priorRuns > 0
          ? `${repeated} already ran ${priorRuns} time(s); its result is above.`
          : `${repeated} was asked for more than once in this reply.`
        : context.feedback?.kind === 'nudge'
          ? 'Not executed: this reply was held back because the loop is not making progress (see the note below). Call it again if you still need it.'
          : 'Not executed: another call in the same reply was invalid. Fix that call and call this one again.');
    session.transcript.append({ role: 'tool', toolCallId: call.request.id, content });
  }
  session.pendingCalls = [];
}

/** The nudge names what is repeating, so the model gets the information along with the push. */
function nudgeText(context: LoopContext, signal: NoProgressSignal): string {
  const { lastEvaluatorReason, lastParseError } = context.progress;
  if (signal === 'same_evaluator_reason' && lastEvaluatorReason !== null) return `${NUDGES[signal]}\nThe reason: ${lastEvaluatorReason}`;
  if (signal === 'same_parse_error' && lastParseError !== null) return `${NUDGES[signal]}\nThe error: ${lastParseError}`;
  return NUDGES[signal];
}

function applyFeedback(session: RunSession, context: LoopContext): void {
  const feedback = context.feedback;
  answerUnrunCalls(session, context);
  if (feedback === null) return;
  switch (feedback.kind) {
    case 'reflection':
      session.transcript.append({ role: 'user', content: `Your previous answer did not pass evaluation: ${feedback.reason}\nFix exactly that and answer again.` });
      break;
    case 'parse_error':
      session.transcript.append({ role: 'user', content: `Your previous reply could not be used (${feedback.parseError}). Reply with your final answer as text, or call one of the offered tools.` });
      break;
    case 'nudge':
      session.transcript.append({ role: 'user', content: nudgeText(context, feedback.signal) });
      break;
    case 'argument_repair':
    case 'transport_retry':
      // The tool results already carry the field errors; a transport retry re-sends as is.
      break;
  }
}

/** Canonical arguments when they canonicalise (not e.g. nested 20,000 deep), else the raw text. */
function safeFingerprint(call: PreparedCall): string {
  if (call.status !== 'invalid') {
    try {
      return toolCallFingerprint(call.request.name, call.args);
    } catch {
      // Falls through to the raw text, which is still deterministic for the same call.
    }
  }
  return toolCallFingerprint(call.request.name, call.request.arguments);
}

interface Classified {
  decision: ModelDecision;
  calls: PendingCall[];
  reply: string;
}

function classify(session: RunSession, health: ToolHealth, response: ModelResponse): Classified {
  const text = response.text !== null && response.text.trim() !== '' ? response.text : null;
  if (response.toolCalls.length === 0) {
    return text === null
      ? { decision: { kind: 'unparseable', parseError: 'empty_reply' }, calls: [], reply: '' }
      : { decision: { kind: 'final' }, calls: [], reply: `final\n${text}` };
  }
  const prepared = prepareToolCalls(response.toolCalls, { tools: session.config.tools, policy: session.config.policy, health });
  let invalidCalls = 0, deniedCalls = 0, approvalCalls = 0, unavailableCalls = 0, maxRepeatCount = 0;
  let parseError: string | null = null;
  const required = session.task.requires;
  const calls: PendingCall[] = [];
  const inThisReply = new Map<string, number>();
  for (const call of prepared) {
    const fingerprint = safeFingerprint(call);
    // Runs that happened, plus the same call asked for earlier in this reply; a held-back call never ran.
    const priorRuns = session.progress.timesCounted(fingerprint);
    const earlierInReply = inThisReply.get(fingerprint) ?? 0;
    inThisReply.set(fingerprint, earlierInReply + 1);
    const timesRequested = priorRuns + earlierInReply + 1;
    calls.push({ call, fingerprint, priorRuns, timesRequested });
    maxRepeatCount = Math.max(maxRepeatCount, timesRequested);
    // A withheld tool stops the run only when the task needs it (it is in `requires`, or the task
    // names no requirements); otherwise the model hears it is unavailable and may choose another way.
    const needed = call.status === 'unavailable' && (required === undefined || required.includes(call.request.name));
    if (call.status === 'invalid' || (call.status === 'unavailable' && !needed)) {
      invalidCalls++;
      parseError ??= call.error?.key ?? 'invalid_arguments';
    } else if (call.status === 'denied') deniedCalls++;
    else if (call.status === 'needs_approval') approvalCalls++;
    else if (needed) unavailableCalls++;
  }
  return {
    decision: { kind: 'tool_calls', calls: prepared.length, invalidCalls, parseError, deniedCalls, approvalCalls, unavailableCalls, maxRepeatCount },
    calls,
    // The kind prefix keeps a text that happens to look like fingerprints from sharing their digest.
    reply: `tool_calls\n${text ?? ''}\n${calls.map((pending) => pending.fingerprint).join('\n')}`,
  };
}

export async function performModelCall(session: RunSession, health: ToolHealth, context: LoopContext): Promise<LoopEvent> {
  const { config } = session;
  applyFeedback(session, context);
  const contextFit = await fitContextWindow(session, context);
  if (contextFit.stop !== null) return contextFit.stop;
  const startedAt = config.clock.now();
  let response: ModelResponse;
  try {
    response = await untilAborted(
      Promise.resolve().then(() =>
        config.model.generate({ messages: session.transcript.messages, tools: session.offeredTools(health), signal: session.signal }),
      ),
      session.signal,
    );
  } catch (error) {
    if (session.signal.aborted) throw session.signal.reason;
    return modelFailure(session, context, error, config.clock.now());
  }
  const malformed = checkModelResponse(response);
  if (malformed !== null) return modelFailure(session, context, malformed, config.clock.now());
  const at = config.clock.now();
  const costUsd = costOf(priceOf(config.prices, config.model.id), response.usage);
  const usage = withContextUsage({ inputTokens: response.usage.inputTokens, outputTokens: response.usage.outputTokens, costUsd }, contextFit);
  let classified: Classified;
  try {
    classified = classify(session, health, response);
  } catch (error) {
    // A policy hook threw on this reply: the run faults, but the call was made and is paid for.
    const fault = error instanceof Error ? error : new Error(String(error));
    session.fatalError = fault;
    return { type: 'run.faulted', at, message: `${fault.name}: ${fault.message}`, usage };
  }
  const { decision, calls, reply } = classified;
  session.pendingCalls = calls;
  const text = decision.kind === 'unparseable' ? null : response.text;
  if (text !== null || response.toolCalls.length > 0) {
    session.transcript.append({ role: 'assistant', content: text, toolCalls: response.toolCalls.length > 0 ? response.toolCalls : undefined });
  }
  if (text !== null && text.trim() !== '') session.lastReply = text;
  const stateDigest = session.progress.advanceState({ taskIndex: session.taskIndex, observations: [], reply });
  session.record({
    type: 'step-end', runId: session.runId, at, step: context.steps + 1, taskId: session.task.id, modelId: config.model.id,
    latencyMs: at - startedAt, inputTokens: response.usage.inputTokens, outputTokens: response.usage.outputTokens, costUsd,
    decision: decision.kind,
    toolCalls: calls.map(({ call }) => ({ callId: call.request.id, name: call.request.name, argumentsSummary: summarize(call.args ?? call.request.arguments) })),
    replySummary: text === null ? null : summarize(text),
  });
  return {
    type: 'model.responded', at, decision, stateDigest, usage,
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
