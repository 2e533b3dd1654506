/**
 * The `callModel` effect: add the feedback the machine asked for, call the model, classify
 * its reply (tool lookup, policy, argument validation, fingerprints) into a `model.responded`
 * event, or a transport failure into `model.failed`.
 */
import { fitContextWindow, withContextUsage, type ContextFit } from '../context/context-window.js';
import { isModelCallError, ModelCallError, retryableModelError } from '../../contracts/errors.js';
import type { CallUsage, LoopContext, LoopEvent, ModelDecision } from '../../../machines/types.js';
import {
  isWellFormedResponse,
  modelResponseSchema,
  modelUsageSchema,
  shapeProblems,
} from '../../contracts/model-response-schema.js';
import type { ModelProgress, ModelRequest, ModelResponse, ModelUsage, ResponseFormat } from '../../contracts/model.js';
import { knownMetadata, modelFacts } from '../trace/model-facts.js';
import { evaluatorList } from '../evaluators/index.js';
import { toolCallFingerprint } from '../progress/index.js';
import { assignUniqueCallIds, prepareToolCalls, type PreparedCall, type ToolHealth } from '../tools/index.js';
import { describeThrown, errorFields, thrownMessage, toError } from '../redaction/describe-thrown.js';
import { summarize } from '../trace/trace-event.js';
import { callWithTimeoutThen, type CallSettlement } from './call-timeout.js';
import { withSignal } from './signal-property.js';
import { MESSAGE_OVERHEAD_CHARS } from './transcript.js';
import { interruptionEvent } from './interruption.js';
import { costOf, priceOf } from '../pricing/pricing.js';
import { backoffDelay } from './retry-policy.js';
import type { PendingCall, RunSession } from './run-session.js';
import {
  duplicateInReplyAnswer,
  HELD_BACK_ANSWER,
  LONGEST_NUDGE_CHARS,
  NOT_RUN_BESIDE_INVALID_ANSWER,
  NUDGE_FRAMING_CHARS,
  nudgeNote,
  overPerReplyAnswer,
  parseErrorNote,
  reflectionNote,
  toolCallBudgetSpentAnswer,
} from '../prompts.js';

/** A model adapter's reply of the wrong shape is a fatal error naming the field, never a crash. */
function checkModelResponse(response: unknown): Error | null {
  if (isWellFormedResponse(response)) return null;
  const problems = shapeProblems(modelResponseSchema, response);
  return problems === null
    ? null
    : new ModelCallError({ kind: 'unknown', message: `the model returned a malformed response: ${problems}` });
}

/**
 * Characters the machine may still add to the next request on top of what the transcript holds:
 * a nudge (with the reason or parse error it names) or a parse-error note. The pre-call budget
 * check uses it, so a request is never sent bigger than its estimate.
 */
export function feedbackAllowanceChars(
  context: LoopContext,
  extra: { reason?: string; parseError?: string | null } = {},
): number {
  const named = Math.max(
    extra.reason?.length ?? 0,
    context.progress.lastEvaluatorReason?.length ?? 0,
    extra.parseError?.length ?? 0,
    context.progress.lastParseError?.length ?? 0,
  );
  const parseNote = extra.parseError ? parseErrorNote(extra.parseError).length : 0;
  // The framing of a nudge that names what repeats; the note is one more message.
  return Math.max(LONGEST_NUDGE_CHARS + named + NUDGE_FRAMING_CHARS, parseNote) + MESSAGE_OVERHEAD_CHARS;
}

/** What a call of the last reply that did not run is answered with. */
function unrunAnswer(pending: PendingCall, heldBack: boolean): string {
  return (
    pending.call.error?.message ??
    pending.refusal?.message ??
    (heldBack ? HELD_BACK_ANSWER : NOT_RUN_BESIDE_INVALID_ANSWER)
  );
}

/** Tool calls of a reply that were not run still need an answer before the next request. */
function answerUnrunCalls(session: RunSession, context: LoopContext): void {
  const heldBack = context.feedback?.kind === 'nudge';
  for (const pending of session.takePendingCalls()) {
    session.transcript.append({
      role: 'tool',
      toolCallId: pending.call.request.id,
      content: unrunAnswer(pending, heldBack),
    });
  }
}

function applyFeedback(session: RunSession, context: LoopContext): void {
  const feedback = context.feedback;
  answerUnrunCalls(session, context);
  if (feedback === null) return;
  switch (feedback.kind) {
    case 'reflection':
      session.transcript.append({ role: 'user', content: reflectionNote(feedback.reason) });
      break;
    case 'parse_error':
      session.transcript.append({ role: 'user', content: parseErrorNote(feedback.parseError) });
      break;
    case 'nudge':
      session.transcript.append({
        role: 'user',
        content: nudgeNote(feedback.signal, {
          evaluatorReason: context.progress.lastEvaluatorReason,
          parseError: context.progress.lastParseError,
        }),
      });
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

/** Room left under the run's and the reply's tool-call caps; calls past it are refused, not run. */
export function toolCallRoom(context: LoopContext): {
  room: number;
  refusal: (name: string) => NonNullable<PendingCall['refusal']>;
} {
  const { maxToolCalls, maxToolCallsPerReply } = context.limits;
  const runRoom = Math.max(0, maxToolCalls - context.usage.toolCalls);
  if (runRoom < maxToolCallsPerReply) {
    return {
      room: runRoom,
      refusal: (name) => ({ reason: 'maxToolCalls spent', message: toolCallBudgetSpentAnswer(name, maxToolCalls) }),
    };
  }
  return {
    room: maxToolCallsPerReply,
    refusal: (name) => ({
      reason: 'over maxToolCallsPerReply',
      message: overPerReplyAnswer(name, maxToolCallsPerReply),
    }),
  };
}

function classify(session: RunSession, health: ToolHealth, response: ModelResponse, context: LoopContext): Classified {
  const text = response.text !== null && response.text.trim() !== '' ? response.text : null;
  if (response.toolCalls.length === 0) {
    return text === null
      ? { decision: { kind: 'unparseable', parseError: 'empty_reply' }, calls: [], reply: '' }
      : { decision: { kind: 'final' }, calls: [], reply: `final\n${text}` };
  }
  const { policy } = session.config;
  const prepared = prepareToolCalls(response.toolCalls, { tools: session.tools, policy, health, runId: session.runId });
  const tellModelOnDeny = policy?.onDeny === 'tell_model';
  const cap = toolCallRoom(context);
  let invalidCalls = 0,
    deniedCalls = 0,
    approvalCalls = 0,
    unavailableCalls = 0,
    refusedCalls = 0,
    taken = 0;
  let parseError: string | null = null;
  let blockedTool: string | null = null;
  const required = session.task.requires;
  const calls: PendingCall[] = [];
  const takenFingerprints = new Set<string>();
  for (const call of prepared) {
    let refusal: PendingCall['refusal'] = null;
    const fingerprint = safeFingerprint(call);
    // A withheld tool stops the run only when the task needs it (it is in `requires`, or the task
    // names no requirements); otherwise the model hears it is unavailable and may choose another way.
    const needed = call.status === 'unavailable' && (required === undefined || required.includes(call.request.name));
    if (call.status === 'invalid' || (call.status === 'unavailable' && !needed)) {
      invalidCalls++;
      parseError ??= call.error?.key ?? 'invalid_arguments';
    } else if (call.status === 'denied') {
      if (tellModelOnDeny) {
        refusedCalls++;
      } else {
        deniedCalls++;
        blockedTool ??= call.request.name;
      }
    } else if (call.status === 'needs_approval') {
      approvalCalls++;
      blockedTool ??= call.request.name;
    } else if (needed) {
      unavailableCalls++;
      blockedTool ??= call.request.name;
    } else if (takenFingerprints.has(fingerprint)) {
      // A duplicate inside one reply would repeat a side effect for nothing: run it once.
      refusedCalls++;
      refusal = { reason: 'duplicate in the reply', message: duplicateInReplyAnswer(call.request.name) };
    } else if (taken >= cap.room) {
      refusedCalls++;
      refusal = cap.refusal(call.request.name);
    } else {
      taken++;
      takenFingerprints.add(fingerprint);
    }
    calls.push({ call, fingerprint, refusal });
  }
  return {
    decision: {
      kind: 'tool_calls',
      calls: prepared.length,
      invalidCalls,
      parseError,
      deniedCalls,
      approvalCalls,
      unavailableCalls,
      refusedCalls,
      blockedTool,
    },
    calls,
    // The kind prefix keeps a text that happens to look like fingerprints from sharing their digest.
    reply: `tool_calls\n${text ?? ''}\n${calls.map((pending) => pending.fingerprint).join('\n')}`,
  };
}

/** The answer's JSON shape, from the first of the task's evaluators that knows one. */
function responseFormatOf(session: RunSession): ResponseFormat | undefined {
  const task = session.task;
  const list = task.evaluate === undefined ? session.config.evaluate : evaluatorList(task.evaluate);
  for (const evaluator of list) {
    const schema = evaluator.outputJsonSchema;
    if (schema !== undefined) return { type: 'json_schema', name: responseFormatName(evaluator.name), schema };
  }
  return undefined;
}

/** Providers accept `[A-Za-z0-9_-]{1,64}` as a schema name. */
const responseFormatName = (name: string): string => name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'answer';

/** A streaming model's progress, as live trace events of the step being taken; none when nobody listens. */
function progressReporter(session: RunSession, context: LoopContext): ((progress: ModelProgress) => void) | undefined {
  if (!session.wantsLiveEvents) return undefined;
  const base = { runId: session.runId, taskId: session.task.id, step: context.steps + 1 };
  return (progress) => {
    const at = session.config.clock.now();
    if (progress.type === 'text_delta') session.recordLive({ type: 'model-delta', at, ...base, text: progress.text });
    else
      session.recordLive({ type: 'model-tool-call-start', at, ...base, callId: progress.callId, name: progress.name });
  };
}

/** Cached and reasoning token counts, when the provider's usage carries them (never the reasoning text). */
function detailedUsage(usage: ModelUsage & { cachedInputTokens?: unknown; reasoningTokens?: unknown }): {
  cachedInputTokens?: number;
  reasoningTokens?: number;
} {
  const detail: { cachedInputTokens?: number; reasoningTokens?: number } = {};
  if (typeof usage.cachedInputTokens === 'number' && usage.cachedInputTokens >= 0)
    detail.cachedInputTokens = usage.cachedInputTokens;
  if (typeof usage.reasoningTokens === 'number' && usage.reasoningTokens >= 0)
    detail.reasoningTokens = usage.reasoningTokens;
  return detail;
}

/** The model call, bounded by the run's signal and its own timeout. */
function generateWithin(
  session: RunSession,
  health: ToolHealth,
  context: LoopContext,
  then: CallSettlement<ModelResponse, LoopEvent>,
): Promise<LoopEvent> {
  const responseFormat = responseFormatOf(session);
  const onProgress = progressReporter(session, context);
  const tools = session.offeredTools(health);
  if (session.prompts !== null) {
    const snapshot = session.prompts.next(session.transcript);
    session.record({
      type: 'prompt',
      runId: session.runId,
      at: session.config.clock.now(),
      step: context.steps + 1,
      taskId: session.task.id,
      ...snapshot,
      tools: tools.map((tool) => tool.name),
    });
  }
  return callWithTimeoutThen(
    session,
    context.limits.modelCallTimeoutMs,
    'the model call',
    (scope) => {
      // A frozen snapshot: a model that keeps or edits the array it was given cannot change the run's transcript.
      const request: ModelRequest = withSignal({ messages: session.transcript.snapshot(), tools }, scope);
      if (responseFormat !== undefined) request.responseFormat = responseFormat;
      if (onProgress !== undefined) request.onProgress = onProgress;
      return session.config.model.generate(request);
    },
    then,
  );
}

/**
 * The model step: the call, bounded by its timeout and the run's abort, and the event its reply or failure is.
 * No async frame is held while the model answers (a run's frame and await closures, held that long while other
 * runs take their turns, outlive young GCs): the reply is handled in a `.then` of the call.
 */
export function performModelCall(session: RunSession, health: ToolHealth, context: LoopContext): Promise<LoopEvent> {
  const { config } = session;
  const stepStartedAt = config.clock.now();
  session.record({
    type: 'step-start',
    runId: session.runId,
    at: stepStartedAt,
    step: context.steps + 1,
    taskId: session.task.id,
    // A copy: the machine's own context object must not reach a sink that might change it.
    estimatedInputTokens: context.nextRequestTokens,
    usage: { ...context.usage },
    elapsedMs: stepStartedAt - (context.startedAt ?? stepStartedAt),
  });
  applyFeedback(session, context);
  return fitContextWindow(session, context).then((contextFit) => callModel(session, health, context, contextFit));
}

/** The call itself, once the context fits (or the stop its fitting ended in). */
function callModel(
  session: RunSession,
  health: ToolHealth,
  context: LoopContext,
  contextFit: ContextFit,
): LoopEvent | Promise<LoopEvent> {
  if (contextFit.stop !== null) return contextFit.stop;
  const startedAt = session.config.clock.now();
  const then = new ModelCallOutcome(session, health, context, contextFit, startedAt);
  try {
    return generateWithin(session, health, context, then);
  } catch (error) {
    return callFailed(session, context, contextFit, startedAt, error);
  }
}

/**
 * What the model call ends in: the event of its reply or of its failure. One object with the step's state,
 * held while the model answers, in place of two closures over it (and a second promise).
 */
class ModelCallOutcome implements CallSettlement<ModelResponse, LoopEvent> {
  constructor(
    readonly session: RunSession,
    readonly health: ToolHealth,
    readonly context: LoopContext,
    readonly contextFit: ContextFit,
    readonly startedAt: number,
  ) {}

  fulfilled(response: ModelResponse): LoopEvent {
    return modelResponded(this.session, this.health, this.context, this.contextFit, this.startedAt, response);
  }

  failed(error: unknown): LoopEvent {
    return callFailed(this.session, this.context, this.contextFit, this.startedAt, error);
  }
}

/** A call that threw or rejected: the interruption if the run was aborted, else the model's failure. */
function callFailed(
  session: RunSession,
  context: LoopContext,
  contextFit: ContextFit,
  startedAt: number,
  error: unknown,
): LoopEvent {
  const { config } = session;
  // The call was made, even if nobody waits for its answer any more.
  if (session.aborts.aborted)
    return {
      ...interruptionEvent(session.aborts, config.clock.now(), 1 + contextFit.modelCalls),
      ...spentOn(contextFit),
    };
  return modelFailure(session, context, error, config.clock.now(), contextFit, startedAt);
}

/** The event a reply is: checked, classified, recorded in the transcript and the trace. */
function modelResponded(
  session: RunSession,
  health: ToolHealth,
  context: LoopContext,
  contextFit: ContextFit,
  startedAt: number,
  received: ModelResponse,
): LoopEvent {
  const { config } = session;
  let response = received;
  const malformed = checkModelResponse(response);
  if (malformed !== null) return modelFailure(session, context, malformed, config.clock.now(), contextFit, startedAt);
  // Empty or repeated ids would share an idempotency key; from here on every call has its own id.
  response = { ...response, toolCalls: assignUniqueCallIds(response.toolCalls) };
  const at = config.clock.now();
  const costUsd = costOf(priceOf(config.prices, config.model.id), response.usage);
  const usage = withContextUsage(
    { inputTokens: response.usage.inputTokens, outputTokens: response.usage.outputTokens, costUsd },
    contextFit,
  );
  let classified: Classified;
  try {
    classified = classify(session, health, response, context);
  } catch (error) {
    // A policy hook threw on this reply: the run faults, but the call was made and is paid for.
    session.recordFatalError(toError(error));
    return {
      type: 'run.faulted',
      at,
      message: config.redact.text(describeThrown(error)),
      usage,
      modelCalls: 1 + contextFit.modelCalls,
    };
  }
  const { decision, calls, reply } = classified;
  session.holdCalls(calls);
  const text = decision.kind === 'unparseable' ? null : response.text;
  if (text !== null || response.toolCalls.length > 0) {
    session.transcript.append({
      role: 'assistant',
      content: text,
      toolCalls: response.toolCalls.length > 0 ? response.toolCalls : undefined,
    });
  }
  if (text !== null && text.trim() !== '') session.noteReply(text);
  const stateDigest = session.progress.advanceState({ taskIndex: session.taskIndex, reply });
  const metadata = knownMetadata(response.metadata);
  session.record({
    type: 'step-end',
    runId: session.runId,
    at,
    step: context.steps + 1,
    taskId: session.task.id,
    modelId: config.model.id,
    latencyMs: at - startedAt,
    inputTokens: response.usage.inputTokens,
    outputTokens: response.usage.outputTokens,
    ...detailedUsage(response.usage),
    costUsd,
    decision: decision.kind,
    toolCalls: calls.map(({ call }) => ({
      callId: call.request.id,
      name: call.request.name,
      argumentsSummary: summarize(call.args ?? call.request.arguments, config.redact),
    })),
    replySummary: text === null ? null : summarize(text, config.redact),
    ...metadata,
  });
  if (metadata.metadata?.finishReason === 'length')
    session.warn(cutAtOutputLimit(session, context.usage.modelCalls + contextFit.modelCalls + 1), at);
  return {
    type: 'model.responded',
    at,
    decision,
    stateDigest,
    usage,
    ...(contextFit.modelCalls > 0 ? { modelCalls: 1 + contextFit.modelCalls } : {}),
    ...summaryRetries(contextFit),
    nextRequestTokens: session.estimateNextRequest(nextRequestExtraChars(session, context, decision)),
  };
}

/** The warning for a reply the output limit cut short: its text or a tool call's arguments may end mid-way. */
function cutAtOutputLimit(session: RunSession, call: number): string {
  const limit = modelFacts(session.config.model).settings?.maxOutputTokens;
  const why = limit === undefined ? 'finish reason length' : `finish reason length; maxOutputTokens ${limit}`;
  return `model call ${call} (task ${session.task.id}) was cut at the output limit (${why}): the reply may be incomplete`;
}

/**
 * What the next request adds beyond the transcript if no tool runs first: an answer to every call
 * of this reply (held back, refused or invalid) and the longest feedback the machine may choose.
 */
function nextRequestExtraChars(session: RunSession, context: LoopContext, decision: ModelDecision): number {
  let chars = 0;
  for (const pending of session.pendingCalls) {
    chars +=
      Math.max(unrunAnswer(pending, true).length, unrunAnswer(pending, false).length) +
      pending.call.request.id.length +
      MESSAGE_OVERHEAD_CHARS;
  }
  const parseError =
    decision.kind === 'unparseable' ? decision.parseError : decision.kind === 'tool_calls' ? decision.parseError : null;
  return chars + feedbackAllowanceChars(context, { parseError });
}

/** A context summary made before the step's own call: its usage, to count with whatever the step ends in. */
function spentOn(fit: ContextFit): { usage?: CallUsage } {
  return fit.usage === null ? {} : { usage: fit.usage };
}

/** The summary call's own transport retries, for the run's total. */
function summaryRetries(fit: ContextFit): { transportRetries?: number } {
  return fit.transportRetries > 0 ? { transportRetries: fit.transportRetries } : {};
}

function modelFailure(
  session: RunSession,
  context: LoopContext,
  error: unknown,
  at: number,
  fit: ContextFit,
  startedAt: number,
): LoopEvent {
  const { config } = session;
  // Branded, not instanceof: an error from another installed copy of loopstate is classified the same.
  const retryable = retryableModelError(error);
  const transient = retryable !== null;
  // The exponent restarts with each call: its earlier failures in a row, never the task's or the run's.
  const retryDelayMs = transient
    ? backoffDelay({
        attempt: context.transport.consecutiveFailures,
        retryAfterMs: retryable.retryAfterMs,
        options: config.backoff,
        random: config.random,
      })
    : 0;
  // Redacted before it reaches the machine: provider messages quote keys (`Incorrect API key provided: sk-…`).
  const message = config.redact.text(thrownMessage(error));
  // A model error from another installed copy may be a plain object: its own message is the one to show.
  if (!transient)
    session.recordFatalError(
      !(error instanceof Error) && isModelCallError(error) ? new Error(message) : toError(error),
    );
  // Tokens the provider reported before the call failed were billed: counted like a reply's.
  const reported = reportedUsage(error);
  const costUsd = reported === null ? 0 : costOf(priceOf(config.prices, config.model.id), reported);
  session.record({
    type: 'model-error',
    runId: session.runId,
    at,
    taskId: session.task.id,
    step: context.steps + 1,
    latencyMs: at - startedAt,
    errorKind: isModelCallError(error) ? error.kind : error instanceof Error ? errorFields(error).name : 'unknown',
    message,
    retryDelayMs,
    ...(reported === null ? {} : { inputTokens: reported.inputTokens, outputTokens: reported.outputTokens, costUsd }),
  });
  const usage =
    reported === null
      ? spentOn(fit)
      : {
          usage: withContextUsage(
            { inputTokens: reported.inputTokens, outputTokens: reported.outputTokens, costUsd },
            fit,
          ),
        };
  const spent = fit.modelCalls > 0 ? { ...usage, modelCalls: 1 + fit.modelCalls } : usage;
  // What the stop detail names: the status and the server's wait, when the error carried them.
  const facts = transient
    ? {
        errorKind: retryable.kind,
        ...(retryable.status === undefined ? {} : { status: retryable.status }),
        ...(retryable.retryAfterMs === undefined ? {} : { retryAfterMs: retryable.retryAfterMs }),
      }
    : {};
  return {
    type: 'model.failed',
    at,
    failure: transient ? 'transient' : 'fatal',
    message,
    retryDelayMs,
    ...facts,
    ...spent,
    ...summaryRetries(fit),
  };
}

/** The usage a failed call's error carries, when it is well formed (an error of another copy may carry anything). */
function reportedUsage(error: unknown): ModelUsage | null {
  if (!isModelCallError(error)) return null;
  try {
    const checked = modelUsageSchema.safeParse(error.usage);
    return checked.success ? checked.data : null;
  } catch {
    return null;
  }
}
