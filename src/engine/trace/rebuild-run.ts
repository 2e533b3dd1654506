/**
 * A run summarised from its trace alone (a file, or `result.trace`): usage summed from the model and
 * tool events, steps counted, and the stop reason when the run reached its end. A run killed mid-way
 * still summarises up to its last event.
 */
import type { RunStatus, StopReason, Usage } from '../../../machines/types.js';
import type { TraceEvent } from '../../contracts/trace-schema.js';

/**
 * What a trace says about one run.
 * @example
 * const run = rebuildRun(readTraceFile('run.jsonl').events);
 * console.log(run.stopReason ?? 'unfinished', run.steps, run.usage.costUsd);
 */
export interface RebuiltRun {
  runId: string;
  modelId: string | null;
  promptVersion: string | null;
  /** Model decisions: answered model calls of the main model. */
  steps: number;
  /**
   * Summed from the events: every answered model call (the main model's, context summaries and LLM
   * judges) and every tool call run. `modelCalls` counts failed calls of the main model and of judges too;
   * a context summary call that failed has no event of its own and is not counted.
   */
  usage: Usage;
  /** Null when the trace has no `run-end` (the process died, or the file was cut). */
  stopReason: StopReason | null;
  status: RunStatus | null;
  detail: string | null;
  /** The run-end's own totals, when there is one: they agree with `usage` for a complete trace. */
  reportedUsage: Usage | null;
  /** Retries by layer. */
  retries: { transport: number; reflection: number; argument_repair: number };
  warnings: string[];
}

/**
 * Summarises the run of `runId` in the events (the first run's when left out).
 * @example
 * const { usage, steps, stopReason } = rebuildRun(result.trace);
 */
export function rebuildRun(events: Iterable<TraceEvent>, runId?: string): RebuiltRun {
  let run: RebuiltRun | null = null;
  for (const event of events) {
    if (run === null) {
      if (runId !== undefined && event.runId !== runId) continue;
      run = emptyRun(event.runId);
    } else if (event.runId !== run.runId) {
      continue;
    }
    const usage = run.usage;
    switch (event.type) {
      case 'run-start':
        run.modelId = event.modelId;
        run.promptVersion = event.promptVersion;
        break;
      case 'step-end':
        run.steps++;
        addCall(usage, event);
        break;
      case 'model-error':
        // A failed call counts; so do the tokens it reported before it failed.
        if (event.inputTokens !== undefined && event.outputTokens !== undefined)
          addCall(usage, {
            inputTokens: event.inputTokens,
            outputTokens: event.outputTokens,
            costUsd: event.costUsd ?? 0,
          });
        else usage.modelCalls++;
        break;
      case 'context-trimmed':
        if (event.summaryUsage !== null) addCall(usage, event.summaryUsage);
        break;
      case 'evaluation-end':
        if (event.usage) {
          usage.inputTokens += event.usage.inputTokens;
          usage.outputTokens += event.usage.outputTokens;
          usage.costUsd += event.usage.costUsd;
        }
        usage.modelCalls += event.modelCalls ?? 0;
        break;
      case 'tool-end':
        usage.toolCalls++;
        break;
      case 'retry':
        run.retries[event.layer]++;
        break;
      case 'warning':
        run.warnings.push(event.message);
        break;
      case 'run-end':
        run.stopReason = event.stopReason;
        run.status = event.status;
        run.detail = event.detail;
        run.reportedUsage = event.usage;
        break;
      default:
        break;
    }
  }
  if (run === null)
    throw new Error(runId === undefined ? 'the trace has no events' : `the trace has no events of run ${runId}`);
  return run;
}

/** Adds one model call's tokens and cost to running totals (the viewer's timeline sums the same way). */
export function addCall(
  usage: Pick<Usage, 'inputTokens' | 'outputTokens' | 'costUsd' | 'modelCalls'>,
  call: { inputTokens: number; outputTokens: number; costUsd: number },
): void {
  usage.inputTokens += call.inputTokens;
  usage.outputTokens += call.outputTokens;
  usage.costUsd += call.costUsd;
  usage.modelCalls++;
}

function emptyRun(runId: string): RebuiltRun {
  return {
    runId,
    modelId: null,
    promptVersion: null,
    steps: 0,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, modelCalls: 0, toolCalls: 0 },
    stopReason: null,
    status: null,
    detail: null,
    reportedUsage: null,
    retries: { transport: 0, reflection: 0, argument_repair: 0 },
    warnings: [],
  };
}
