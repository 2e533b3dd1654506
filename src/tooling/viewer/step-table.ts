/**
 * The step table: one row per model decision, from the trace's own records of it (step-end, the tool-end of
 * its calls, the evaluation-end of its answer, the model errors retried before it, the field errors of an
 * argument repair). Nothing here is inferred; the machine's state after each step comes from the frames.
 */
import type { TraceEvent } from '../../index.js';

export interface StepToolCall {
  callId: string;
  name: string;
  argumentsSummary: string;
  status: string | null;
  latencyMs: number | null;
  bytes: number | null;
  /** What was wrong with the arguments, when the call was sent back to the model to fix them (not run). */
  argumentError: string | null;
}

export interface StepRow {
  step: number;
  taskId: string;
  at: number;
  /** The resting state the step's decision led to; null when the trace ends before the machine took it. */
  stateAfter: string | null;
  decision: string;
  replySummary: string | null;
  toolCalls: StepToolCall[];
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  latencyMs: number;
  verdict: { passed: boolean; reason: string; evaluator: string | null } | null;
  /** Failed model calls retried before this step's call succeeded. */
  retriesBefore: { errorKind: string; message: string; retryDelayMs: number | null }[];
  /** The timeline frame of the decision (its `model.responded`); -1 when there is none. */
  frame: number;
}

/** Where a frame's event sits among the run's events, and the state it reached. */
export interface FramePlace {
  position: number;
  event: string | null;
  state: string;
}

/**
 * The rows of a run's steps; `frames` (in order) link each row to the frame of its decision.
 * @example
 * const rows = stepTable(trace.events, timeline.frames);
 */
export function stepTable(
  events: readonly TraceEvent[],
  frames: readonly FramePlace[],
): { rows: StepRow[]; unansweredErrors: StepRow['retriesBefore'] } {
  const rows: StepRow[] = [];
  const positions: number[] = [];
  let pendingErrors: StepRow['retriesBefore'] = [];
  events.forEach((event, position) => {
    switch (event.type) {
      case 'step-end':
        positions.push(position);
        rows.push({
          step: event.step,
          taskId: event.taskId,
          at: event.at,
          stateAfter: null,
          decision: event.decision,
          replySummary: event.replySummary,
          toolCalls: event.toolCalls.map((call) => ({
            callId: call.callId,
            name: call.name,
            argumentsSummary: call.argumentsSummary,
            status: null,
            latencyMs: null,
            bytes: null,
            argumentError: null,
          })),
          inputTokens: event.inputTokens,
          outputTokens: event.outputTokens,
          costUsd: event.costUsd,
          latencyMs: event.latencyMs,
          verdict: null,
          retriesBefore: pendingErrors,
          frame: -1,
        });
        pendingErrors = [];
        break;
      case 'model-error':
        pendingErrors.push({ errorKind: event.errorKind, message: event.message, retryDelayMs: event.retryDelayMs });
        break;
      case 'tool-end': {
        const call = rows.at(-1)?.toolCalls.find((candidate) => candidate.callId === event.callId);
        if (call) Object.assign(call, { status: event.status, latencyMs: event.latencyMs, bytes: event.bytes });
        break;
      }
      case 'evaluation-end': {
        const row = rows.at(-1);
        if (row && row.verdict === null)
          row.verdict = { passed: event.passed, reason: event.reason, evaluator: event.evaluator };
        break;
      }
      case 'retry': {
        const calls = rows.at(-1)?.toolCalls ?? [];
        for (const entry of event.argumentErrors ?? []) {
          const call = calls.find((candidate) => candidate.callId === entry.callId);
          if (call) call.argumentError = entry.error;
        }
        break;
      }
      default:
        break;
    }
  });
  rows.forEach((row, index) => {
    const position = positions[index] ?? 0;
    row.frame = frames.findIndex((frame) => frame.position > position && frame.event === 'model.responded');
    row.stateAfter = frames[row.frame]?.state ?? null;
  });
  return { rows, unansweredErrors: pendingErrors };
}
