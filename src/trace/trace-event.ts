/**
 * Trace events: enough to rebuild a run — inputs in summary, model, tool
 * choices with argument summaries, observation ids, state changes, tokens, cost, latency,
 * retries, verdicts and the stop reason. No private reasoning text; secrets redacted.
 */
import type { CallUsage, RunStatus, StopReason, Usage } from '../../machines/types.js';
import { DEFAULT_REDACTOR, type Redactor } from '../redaction/redact.js';

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
  /** A person's decision on a call that waited for approval, as a durable run continued with it. */
  | (TraceBase & { type: 'approval-decided'; callId: string; tool: string; approved: boolean; reason: string | null })
  /** A durable run taken up again from its journal (after a crash, an approval or a cancel). */
  | (TraceBase & { type: 'run-resume'; fromSeq: number; replayedEvents: number })
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
  /** Called synchronously with every event, already redacted, e.g. to write JSON lines. */
  onEvent?: (event: TraceEvent) => void;
}

const SUMMARY_CHARS = 200;
/** Patterns run on the shown part plus this margin, so a secret cut at the edge is still recognised whole. */
const SECRET_MARGIN_CHARS = 1024;

/**
 * A short, redacted rendering of a value for traces: values under secret-looking keys and values that
 * look like secrets become `[redacted]` (a loop passes its own redactor, with its `redact` option).
 * @example
 * summarize({ order_id: 'O-1', api_key: 'sk-123' }) // '{"order_id":"O-1","api_key":"[redacted]"}'
 */
export function summarize(value: unknown, redactor: Redactor = DEFAULT_REDACTOR): string {
  const rendered = redactor.render(value);
  const shown = rendered.slice(0, SUMMARY_CHARS + SECRET_MARGIN_CHARS);
  const text = redactor.text(shown);
  if (text.length <= SUMMARY_CHARS) return shown.length === rendered.length ? text : `${text}…(${rendered.length} chars)`;
  // Never cut between the two halves of a surrogate pair.
  const cut = /[\uD800-\uDBFF]/.test(text.charAt(SUMMARY_CHARS - 1)) ? SUMMARY_CHARS - 1 : SUMMARY_CHARS;
  return `${text.slice(0, cut)}…(${rendered.length} chars)`;
}
