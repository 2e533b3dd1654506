/**
 * Trace events (DESIGN §11): enough to rebuild a run — inputs in summary, model, tool
 * choices with argument summaries, observation ids, state changes, tokens, cost, latency,
 * retries, verdicts and the stop reason. No private reasoning text; secrets redacted.
 */
import type { CallUsage, RunStatus, StopReason, Usage } from '../../machines/types.js';

interface TraceBase {
  runId: string;
  /** Wall-clock ms from the run's clock. */
  at: number;
}

/**
 * One trace record; a run's trace rebuilds what happened and why it stopped.
 * @example
 * const toolCalls = result.trace.filter((event) => event.type === 'tool-end');
 */
export type TraceEvent =
  | (TraceBase & { type: 'run-start'; goalSummary: string; tasks: string[]; modelId: string })
  | (TraceBase & { type: 'transition'; event: string; from: string; to: string })
  | (TraceBase & {
      type: 'step-end';
      step: number;
      taskId: string;
      modelId: string;
      latencyMs: number;
      inputTokens: number;
      outputTokens: number;
      costUsd: number;
      decision: string;
      toolCalls: { callId: string; name: string; argumentsSummary: string }[];
      replySummary: string | null;
    })
  | (TraceBase & { type: 'model-error'; taskId: string; errorKind: string; message: string; retryDelayMs: number })
  | (TraceBase & {
      type: 'tool-end';
      taskId: string;
      callId: string;
      name: string;
      status: string;
      observationId: string;
      bytes: number;
      truncated: boolean;
      latencyMs: number;
    })
  | (TraceBase & { type: 'evaluation-end'; taskId: string; passed: boolean; reason: string; evaluator: string | null })
  | (TraceBase & {
      /** The next request was over `context.maxInputTokensPerCall`: what was condensed or dropped to make room. */
      type: 'context-trimmed';
      taskId: string;
      /** `summarize` when a summary replaced older turns, else `trim`. */
      strategy: 'trim' | 'summarize';
      ceilingTokens: number;
      tokensBefore: number;
      tokensAfter: number;
      messagesSummarized: number;
      /** Tool results replaced by a marker naming their observation id. */
      resultsDropped: number;
      /** Messages of whole turns dropped. */
      messagesDropped: number;
      dropped: { callId: string; tool: string; observationId: string }[];
      /** Usage of the summary call, when one was answered. */
      summaryUsage: CallUsage | null;
      /** Why `summarize` did not condense (refused by a budget, failed); null otherwise. */
      summarySkipped: string | null;
    })
  | (TraceBase & { type: 'warning'; message: string })
  | (TraceBase & { type: 'run-end'; status: RunStatus; stopReason: StopReason; detail: string; usage: Usage; steps: number });

export type TraceEventType = TraceEvent['type'];

/**
 * Where trace events go: kept in memory on the result (default) and/or handed to `onEvent`.
 * @example
 * createLoop({ model, trace: { onEvent: (event) => process.stdout.write(`${JSON.stringify(event)}\n`) } });
 */
export interface TraceOptions {
  /** Keep events on `result.trace` (default true). */
  inMemory?: boolean;
  /** Called synchronously with every event, e.g. to write JSON lines. */
  onEvent?: (event: TraceEvent) => void;
}

// Anchored at the end so `accessToken`, `tokens` and `x-api-key` match but `maxTokens` and `tokenizer` do not.
const SECRET_KEY_SOURCE =
  '(?:api[_-]?key|token|(?:^|auth|access|refresh|bearer|session|api)[_-]?tokens|secret|password|passwd|authorization|cookie|credentials?|private[_-]?key)';
const SECRET_KEY = new RegExp(`${SECRET_KEY_SOURCE}$`, 'i');
/** `"api_key": "value"` inside raw text (e.g. malformed tool arguments that never parsed). */
const SECRET_IN_TEXT = new RegExp(`("[^"]*${SECRET_KEY_SOURCE}"\\s*:\\s*)"[^"]*"?`, 'gi');
const SUMMARY_CHARS = 200;

function render(value: unknown): string {
  if (typeof value === 'string') return value.replace(SECRET_IN_TEXT, '$1"[redacted]"');
  try {
    return (
      JSON.stringify(value, (key, inner: unknown) =>
        key !== '' && SECRET_KEY.test(key) ? '[redacted]' : typeof inner === 'bigint' ? inner.toString() : inner,
      ) ?? 'undefined'
    );
  } catch {
    // Circular structures and the like: a summary must never throw.
    return Object.prototype.toString.call(value);
  }
}

/**
 * A short, redacted rendering of a value for traces: secret-looking keys are masked.
 * @example
 * summarize({ order_id: 'O-1', api_key: 'sk-123' }) // '{"order_id":"O-1","api_key":"[redacted]"}'
 */
export function summarize(value: unknown): string {
  const text = render(value);
  if (text.length <= SUMMARY_CHARS) return text;
  // Never cut between the two halves of a surrogate pair.
  const cut = /[\uD800-\uDBFF]/.test(text.charAt(SUMMARY_CHARS - 1)) ? SUMMARY_CHARS - 1 : SUMMARY_CHARS;
  return `${text.slice(0, cut)}…(${text.length} chars)`;
}
