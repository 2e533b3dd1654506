/**
 * Trace events (DESIGN §11): enough to rebuild a run — inputs in summary, model, tool
 * choices with argument summaries, observation ids, state changes, tokens, cost, latency,
 * retries, verdicts and the stop reason. No private reasoning text; secrets redacted.
 */
import type { RunStatus, StopReason, Usage } from '../../machines/types.js';

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

const SECRET_KEY = /(api[_-]?key|token|secret|password|passwd|authorization|cookie|credential)/i;
const SUMMARY_CHARS = 200;

/** A short, redacted rendering of a value for traces: secret-looking keys are masked. */
export function summarize(value: unknown): string {
  const text =
    typeof value === 'string'
      ? value
      : JSON.stringify(value, (key, inner: unknown) => (key !== '' && SECRET_KEY.test(key) ? '[redacted]' : inner)) ?? 'undefined';
  return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS)}…(${text.length} chars)` : text;
}
