/**
 * What `loopstate run` prints when a run is over: status, the stop reason in words, output, steps and
 * retries, usage and cost against the budget, warnings, the tools' health, and where the trace went.
 */
import type { StopReason } from '../../../machines/types.js';
import type { RunResult } from '../../index.js';
import { rebuildRun } from '../../index.js';
import type { TraceEvent } from '../../index.js';
import { terminalSafe } from './terminal-safe.js';

/** Each stop reason said as a sentence a newcomer understands. */
export const STOP_REASON_WORDS: Readonly<Record<StopReason, string>> = Object.freeze({
  // The detail below says whether evaluators checked it: a task without one completes on its first answer.
  completed: 'every task finished with an answer',
  max_steps: 'the step limit (maxSteps) was reached before an answer passed',
  deadline_exceeded: 'the deadline (deadlineMs) passed',
  budget_exhausted: 'a token, cost or tool-call budget ran out before the next call',
  no_progress: 'the loop stopped making progress (a doom loop was caught)',
  permission_denied: 'the policy denied a tool call',
  tool_unavailable: 'a tool the task needs is unavailable (its circuit breaker is open)',
  cancelled: 'the run was cancelled',
  needs_human: 'a person must decide: a call waits for approval',
  retries_exhausted:
    'a retry layer ran out (transport attempts of a call, reflections, argument repairs) without a passing answer',
  fatal_error: 'an error that retrying cannot fix',
});

export interface RunReportContext {
  /** The example name or the loop file as given. */
  target: string;
  /** How the model runs, e.g. `offline, scripted model` or `openai:gpt-4.1-mini`. */
  modelLabel: string;
  /** The trace file written, or null when none could be. */
  traceFile: string | null;
  /** The step limit, for "3 of 4". */
  maxSteps: number | null;
  maxCostUsd: number | null;
  /** Where the model was asked to connect (for the hint when it could not). */
  baseUrl?: string | undefined;
}

/** The tools' health as the last `tool-health` event of the trace reports it; null when no tool ran. */
export function lastToolHealth(trace: readonly TraceEvent[]): Extract<TraceEvent, { type: 'tool-health' }> | null {
  for (let index = trace.length - 1; index >= 0; index--) {
    const event = trace[index];
    if (event?.type === 'tool-health') return event;
  }
  return null;
}

/**
 * The report, one field a line, safe to print: control characters in the output, details and warnings are escaped.
 * @example
 * io.out(formatRunReport(result, { target: 'order-status', modelLabel: 'offline, scripted model', traceFile, maxSteps: 4, maxCostUsd: 0.05 }));
 */
export function formatRunReport(result: RunResult, context: RunReportContext): string {
  const { usage } = result;
  const rebuilt = rebuildRun(result.trace);
  const retries = Object.entries(rebuilt.retries)
    .filter(([, count]) => count > 0)
    .map(([layer, count]) => `${count} ${layer.replace('_', ' ')}`);
  const lines = [
    `loopstate run: ${context.target} (${context.modelLabel})`,
    '',
    `status:      ${result.status}`,
    `stop reason: ${result.stopReason}: ${STOP_REASON_WORDS[result.stopReason]}`,
    `             ${result.detail}`,
    `output:      ${JSON.stringify(result.output)}`,
    // A run that stopped early may have text that did not parse: show it rather than a bare null.
    ...(result.output === null && result.rawOutput !== null
      ? [`raw output:  ${JSON.stringify(result.rawOutput)}`]
      : []),
    `steps:       ${result.steps}${context.maxSteps === null ? '' : ` of ${context.maxSteps}`}; retries: ${retries.length === 0 ? 'none' : retries.join(', ')}`,
    `usage:       ${usage.inputTokens} input + ${usage.outputTokens} output tokens, ${usage.modelCalls} model call(s), ${usage.toolCalls} tool call(s)`,
    `cost:        $${usage.costUsd.toFixed(6)}${context.maxCostUsd === null ? '' : ` of a $${context.maxCostUsd} budget`}`,
    `warnings:    ${result.warnings.length === 0 ? 'none' : result.warnings.join('\n             ')}`,
    ...toolHealthLines(result.trace),
    ...connectionHint(result, context),
    ...(context.traceFile === null
      ? ['trace:       not written (see the warnings)']
      : [
          `trace:       ${context.traceFile} (${result.trace.length} events)`,
          `             open it with: loopstate inspect ${context.traceFile}`,
        ]),
  ];
  return terminalSafe(lines.join('\n'));
}

function toolHealthLines(trace: readonly TraceEvent[]): string[] {
  const health = lastToolHealth(trace);
  if (health === null) return [];
  const width = Math.max(4, ...health.tools.map((tool) => tool.name.length));
  const header = `${'tool'.padEnd(width)}  calls  success  mean latency  weight  circuit`;
  const rows = health.tools.map(
    (tool) =>
      `${tool.name.padEnd(width)}  ${String(tool.calls).padStart(5)}  ${`${Math.round(tool.successRate * 100)}%`.padStart(7)}  ${`${Math.round(tool.meanLatencyMs)} ms`.padStart(12)}  ${tool.weight.toFixed(2).padStart(6)}  ${tool.circuit.replace('_', '-')}`,
  );
  return [
    `tools:       ${header}`,
    ...rows.map((row) => `             ${row}`),
    `             offered next, in this order: ${health.offered.join(', ') || '(none)'}`,
  ];
}

function connectionHint(result: RunResult, context: RunReportContext): string[] {
  if (result.status === 'succeeded') return [];
  const failedToConnect = result.trace.some(
    (event) => event.type === 'model-error' && event.errorKind === 'connection',
  );
  if (!failedToConnect) return [];
  return [
    `hint:        could not connect to the model server${context.baseUrl ? ` at ${context.baseUrl}` : ''}; is it running, and is the address right (--base-url)?`,
  ];
}
