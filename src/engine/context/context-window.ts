/**
 * Keeps each model request inside a per-call input ceiling. Called just before the model call,
 * on the same estimate the input budget uses: when the next request would be over the ceiling,
 * the configured strategy makes room first, and a request that still cannot fit is not sent.
 */
import type { CallUsage, LoopContext, LoopEvent } from '../../../machines/types.js';
import { CHARS_PER_TOKEN_ESTIMATE, CONTEXT_SUMMARY_OUTPUT_TOKENS } from '../constants.js';
import { LoopstateError, retryableModelError } from '../../contracts/errors.js';
import { failureLabel } from '../../../actions/stop-detail.js';
import { modelResponseSchema, shapeProblems } from '../../contracts/model-response-schema.js';
import type { Message, ModelResponse } from '../../contracts/model.js';
import { safeNow } from '../hooks/guarded-clock.js';
import { callWithTimeout } from '../runtime/call-timeout.js';
import { withSignal } from '../runtime/signal-property.js';
import { interruptionEvent } from '../runtime/interruption.js';
import { describeRefusal, nextTransportAttempt } from '../runtime/transport-retry.js';
import { thrownMessage } from '../redaction/describe-thrown.js';
import { costOf, priceOf } from '../pricing/pricing.js';
import type { RunSession } from '../runtime/run-session.js';
import { splitOlderTurns, summaryRefusal, summaryRequest } from './summarize-transcript.js';
import { requestTokens, trimMessages } from './trim-transcript.js';

/**
 * What making room cost, and whether the request may go out.
 * @example
 * const fit = await fitContextWindow(session, context);
 * if (fit.stop !== null) return fit.stop;
 */
export interface ContextFit {
  /** Usage of the summary call, to add to the step's usage; null when none was answered. */
  usage: CallUsage | null;
  /** Model calls made to make room: the summary call's attempts, answered or failed (0 when none was made). */
  modelCalls: number;
  /** Transport retries of the summary call (it has its own attempts, like every model call). */
  transportRetries: number;
  /** The event that ends the run instead of sending a request over the ceiling; null when it fits. */
  stop: LoopEvent | null;
}

const FITS: ContextFit = Object.freeze({ usage: null, modelCalls: 0, transportRetries: 0, stop: null });
const warnedRefusal = new WeakSet<RunSession>();

interface SummaryOutcome {
  /** The run was cancelled or passed its deadline while the summary call was in flight. */
  interrupted?: boolean;
  usage: CallUsage | null;
  modelCalls: number;
  transportRetries: number;
  summarized: number;
  /** Why no summary replaced the older turns (refused or failed); null when one did. */
  skipped: string | null;
}

async function summarizeOlderTurns(session: RunSession, context: LoopContext): Promise<SummaryOutcome> {
  const { config, transcript } = session;
  const { keepTurns, maxInputTokensPerCall } = config.context;
  const split = splitOlderTurns(transcript.messages, { keepTurns, taskMessage: transcript.taskMessage });
  if (split.older.length === 0)
    return {
      usage: null,
      modelCalls: 0,
      transportRetries: 0,
      summarized: 0,
      skipped: 'nothing older than the last keepTurns turns to condense',
    };
  const request = summaryRequest(split.older, maxInputTokensPerCall);
  const reserve = 'x'.repeat(CONTEXT_SUMMARY_OUTPUT_TOKENS * CHARS_PER_TOKEN_ESTIMATE);
  const price = priceOf(config.prices, config.model.id);
  const refusal = summaryRefusal({
    usage: context.usage,
    limits: context.limits,
    price,
    summaryTokens: requestTokens(request),
    nextRequestTokens: requestTokens(split.rebuild(reserve), transcript.fixedChars),
  });
  if (refusal !== null)
    return { usage: null, modelCalls: 0, transportRetries: 0, summarized: 0, skipped: `refused: ${refusal}` };
  const called = await callSummaryModel(session, context, request);
  if (!('response' in called)) return { usage: null, summarized: 0, ...called };
  const { response, modelCalls, transportRetries } = called;
  const problems = shapeProblems(modelResponseSchema, response);
  if (problems !== null)
    return {
      usage: null,
      modelCalls,
      transportRetries,
      summarized: 0,
      skipped: `the summary call returned a malformed response: ${problems}`,
    };
  const usage = {
    inputTokens: response.usage.inputTokens,
    outputTokens: response.usage.outputTokens,
    costUsd: costOf(price, response.usage),
  };
  const summary = response.text?.trim() ?? '';
  if (summary === '' || response.toolCalls.length > 0)
    return {
      usage,
      modelCalls,
      transportRetries,
      summarized: 0,
      skipped: 'the summary call returned no plain-text summary',
    };
  transcript.replaceMessages(split.rebuild(summary));
  return { usage, modelCalls, transportRetries, summarized: split.older.length, skipped: null };
}

type SummaryCall =
  | { response: ModelResponse; modelCalls: number; transportRetries: number }
  | { interrupted?: boolean; modelCalls: number; transportRetries: number; skipped: string };

/** The summary call, its transient transport failures retried like any model call's (its own attempts, the run's total). */
async function callSummaryModel(session: RunSession, context: LoopContext, request: Message[]): Promise<SummaryCall> {
  const { config } = session;
  let failures = 0;
  for (;;) {
    const spent = { modelCalls: failures + 1, transportRetries: failures };
    try {
      // The summary is a model call like any other: it has its own timeout.
      const response = await callWithTimeout(
        session,
        context.limits.modelCallTimeoutMs,
        'the context summary call',
        (scope) => config.model.generate(withSignal({ messages: request, tools: [] }, scope)),
      );
      return { response, ...spent };
    } catch (error) {
      if (session.aborts.aborted) return { interrupted: true, ...spent, skipped: 'interrupted' };
      const transient = retryableModelError(error);
      if (transient === null) return { ...spent, skipped: `the summary call failed: ${thrownMessage(error)}` };
      failures++;
      const next = nextTransportAttempt({
        call: 'the summary call',
        context,
        failures,
        retriesSoFar: spent.transportRetries,
        retryAfterMs: transient.retryAfterMs,
        backoff: config.backoff,
        random: config.random,
      });
      const label = failureLabel(transient.status, transient.kind);
      if (!('delayMs' in next))
        return {
          ...spent,
          skipped: `the summary call failed: ${describeRefusal(next.refusal, label, thrownMessage(error))}`,
        };
      try {
        await session.aborts.race(config.clock.sleep(next.delayMs, session.signal));
      } catch (sleepError) {
        if (!session.aborts.aborted) throw sleepError;
        return { interrupted: true, ...spent, skipped: 'interrupted' };
      }
    }
  }
}

/**
 * Makes the next request fit `context.maxInputTokensPerCall` (see `ContextOptions`), recording a
 * `context-trimmed` trace event that says what was dropped or condensed. With `summarize`, the
 * older turns are condensed first (a summary the budgets cannot pay for, or that fails, falls back
 * to `trim` with a warning); then, if still needed, `trim` drops what it may. When even that is not
 * enough, the request is not sent: `stop` is a `run.faulted` event and the run ends `fatal_error`
 * with error code `context_overflow`.
 * @example
 * const fit = await fitContextWindow(session, context);
 * if (fit.stop !== null) return fit.stop;
 * const usage = withContextUsage(callUsage, fit);
 */
export async function fitContextWindow(session: RunSession, context: LoopContext): Promise<ContextFit> {
  const { config, transcript } = session;
  const { maxInputTokensPerCall: ceiling, keepTurns } = config.context;
  const tokensBefore = transcript.estimateTokens();
  if (tokensBefore <= ceiling) return FITS;
  let summary: SummaryOutcome = { usage: null, modelCalls: 0, transportRetries: 0, summarized: 0, skipped: null };
  if (config.context.strategy === 'summarize') {
    summary = await summarizeOlderTurns(session, context);
    // The summary call was made, even if the run stopped while it was in flight: it is counted.
    if (summary.interrupted === true)
      return {
        usage: null,
        modelCalls: summary.modelCalls,
        transportRetries: summary.transportRetries,
        stop: interruptionEvent(session.aborts, safeNow(config.clock), summary.modelCalls),
      };
    if (summary.skipped !== null && !(summary.skipped.startsWith('refused') && warnedRefusal.has(session))) {
      // A refusal repeats at every step while the budgets stay tight: said once, then only in the trace.
      if (summary.skipped.startsWith('refused')) warnedRefusal.add(session);
      session.warn(
        `context: summarize ${summary.skipped.startsWith('refused') ? 'was refused' : 'did not run'} (${summary.skipped}); trimmed instead`,
        config.clock.now(),
      );
    }
  }
  const trimmed = trimMessages(transcript.messages, {
    ceilingTokens: ceiling,
    keepTurns,
    fixedChars: transcript.fixedChars,
    taskMessage: transcript.taskMessage,
    observationIdOf: (content) => session.progress.observationIdOf(content),
  });
  if (trimmed.resultsDropped.length > 0 || trimmed.messagesDropped > 0) transcript.replaceMessages(trimmed.messages);
  const at = config.clock.now();
  const tokensAfter = transcript.estimateTokens();
  session.record({
    type: 'context-trimmed',
    runId: session.runId,
    at,
    taskId: session.task.id,
    strategy: summary.summarized > 0 ? 'summarize' : 'trim',
    ceilingTokens: ceiling,
    tokensBefore,
    tokensAfter,
    messagesSummarized: summary.summarized,
    resultsDropped: trimmed.resultsDropped.length,
    messagesDropped: trimmed.messagesDropped,
    dropped: trimmed.resultsDropped,
    summaryUsage: summary.usage,
    summarySkipped: summary.skipped,
  });
  const fit: ContextFit = {
    usage: summary.usage,
    modelCalls: summary.modelCalls,
    transportRetries: summary.transportRetries,
    stop: null,
  };
  if (tokensAfter <= ceiling) return fit;
  const fault = new LoopstateError({
    code: 'context_overflow',
    message:
      `the next model request needs ~${tokensAfter} input tokens, over the per-call ceiling of ${ceiling} even after making room ` +
      `(kept whole: the instructions, the task and the latest turn's tool results); raise context.maxInputTokensPerCall ` +
      `(or the model's contextWindowTokens) or lower limits.maxToolResultBytes`,
  });
  session.recordFatalError(fault);
  return {
    ...fit,
    stop: {
      type: 'run.faulted',
      at,
      message: `${fault.name}: ${fault.message}`,
      modelCalls: summary.modelCalls,
      ...(summary.usage === null ? {} : { usage: summary.usage }),
    },
  };
}

/**
 * A model call's usage with the summary call's added, so every budget pays for both.
 * @example
 * const usage = withContextUsage({ inputTokens: 900, outputTokens: 40, costUsd: 0.0004 }, fit);
 */
export function withContextUsage(usage: CallUsage, fit: ContextFit): CallUsage {
  if (fit.usage === null) return usage;
  return {
    inputTokens: usage.inputTokens + fit.usage.inputTokens,
    outputTokens: usage.outputTokens + fit.usage.outputTokens,
    costUsd: usage.costUsd + fit.usage.costUsd,
  };
}
