/**
 * The live progress of a run in the terminal, driven by trace events (`trace.onEvent`). Notable events
 * (each step's decision, tool results, verdicts, retries, no-progress signals, circuit changes, warnings)
 * are printed as plain lines; on a TTY a status line below them is redrawn in place: the state, step n of
 * max, tokens and cost against their budgets, elapsed time against the deadline, the arguments being
 * repaired, the tool running.
 * It writes to stderr in the CLI, so stdout stays clean for `--json`.
 */
import type { TraceEvent } from '../../index.js';
import { terminalSafe } from './terminal-safe.js';

/** What the status line shows, folded from the events so far. */
export interface ProgressState {
  runId: string | null;
  /** The machine's state, as the last transition names it (`RUNNING.deciding`). */
  state: string;
  taskId: string | null;
  step: number;
  maxSteps: number | null;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  maxInputTokens: number | null;
  maxOutputTokens: number | null;
  maxCostUsd: number | null;
  deadlineMs: number | null;
  runStartedAt: number | null;
  /** The time of the latest event, in the run's clock. */
  lastAt: number | null;
  /** Tools of the last reply still running. */
  runningTools: string[];
  /** Characters streamed so far in the current model call (a streaming model). */
  streamedChars: number;
  /** Each tool's circuit as last reported, to say when one changes. */
  circuits: Record<string, string>;
  /** The field errors sent back to the model (`lookup_order: argument repair (orderId: …)`), until its next reply; null when none. */
  argumentRepair: string | null;
}

export function initialProgress(): ProgressState {
  return {
    runId: null,
    state: 'READY',
    taskId: null,
    step: 0,
    maxSteps: null,
    inputTokens: 0,
    outputTokens: 0,
    costUsd: 0,
    maxInputTokens: null,
    maxOutputTokens: null,
    maxCostUsd: null,
    deadlineMs: null,
    runStartedAt: null,
    lastAt: null,
    runningTools: [],
    streamedChars: 0,
    circuits: {},
    argumentRepair: null,
  };
}

/**
 * The state after `event`, and the line to print for it (null when the event only moves the status line).
 * Pure, so both are tested without a terminal. The line is safe to print: a reply's or a tool's control
 * characters are escaped, never sent to the terminal.
 * @example
 * let state = initialProgress();
 * for (const event of result.trace) { const step = progressStep(state, event); state = step.state; if (step.line) console.error(step.line); }
 */
export function progressStep(
  previous: ProgressState,
  event: TraceEvent,
): { state: ProgressState; line: string | null } {
  const step = describeEvent(previous, event);
  return step.line === null ? step : { state: step.state, line: terminalSafe(step.line) };
}

function describeEvent(previous: ProgressState, event: TraceEvent): { state: ProgressState; line: string | null } {
  const state: ProgressState = { ...previous, lastAt: event.at };
  switch (event.type) {
    case 'run-start': {
      const { limits } = event;
      Object.assign(state, {
        runId: event.runId,
        runStartedAt: event.at,
        maxSteps: limits.maxSteps,
        maxInputTokens: limits.maxInputTokens,
        maxOutputTokens: limits.maxOutputTokens,
        maxCostUsd: limits.maxCostUsd,
        deadlineMs: limits.deadlineMs,
      });
      const tasks = event.tasks.length > 1 ? `, tasks ${event.tasks.join(' → ')}` : '';
      const budgets = [
        `${limits.maxSteps ?? '∞'} steps`,
        limits.maxRetries === null ? null : `${limits.maxRetries} reflections per task`,
        limits.maxTransportAttempts == null ? null : `${limits.maxTransportAttempts} attempts per model call`,
        limits.maxCostUsd === null ? null : `$${limits.maxCostUsd}`,
        limits.deadlineMs === null ? null : `${seconds(limits.deadlineMs)} deadline`,
      ]
        .filter(Boolean)
        .join(', ');
      return { state, line: `run ${event.runId}: model ${event.modelId}${tasks}; budgets ${budgets}` };
    }
    case 'transition':
      state.state = event.to;
      return { state, line: null };
    case 'step-start':
      Object.assign(state, {
        step: event.step,
        taskId: event.taskId,
        inputTokens: event.usage.inputTokens,
        outputTokens: event.usage.outputTokens,
        costUsd: event.usage.costUsd,
        streamedChars: 0,
        runningTools: [],
      });
      return { state, line: null };
    case 'model-delta':
      state.streamedChars += event.text.length;
      return { state, line: null };
    case 'step-end': {
      Object.assign(state, {
        inputTokens: state.inputTokens + event.inputTokens,
        outputTokens: state.outputTokens + event.outputTokens,
        costUsd: state.costUsd + event.costUsd,
      });
      state.runningTools = event.toolCalls.map((call) => call.name);
      state.argumentRepair = null;
      const what =
        event.toolCalls.length > 0
          ? `tool call${event.toolCalls.length > 1 ? 's' : ''} ${event.toolCalls.map((call) => `${call.name} ${call.argumentsSummary}`).join(', ')}`
          : event.decision === 'final'
            ? `reply ${clip(event.replySummary ?? '', 80)}`
            : `${event.decision.replaceAll('_', ' ')}${event.replySummary ? ` ${clip(event.replySummary, 60)}` : ''}`;
      return {
        state,
        line: `step ${event.step}/${state.maxSteps ?? '∞'} [${event.taskId}] ${what}  (${event.inputTokens}+${event.outputTokens} tokens, $${event.costUsd.toFixed(6)}, ${event.latencyMs} ms)`,
      };
    }
    case 'tool-end': {
      const index = state.runningTools.indexOf(event.name);
      if (index >= 0) state.runningTools = state.runningTools.filter((_, at) => at !== index);
      return {
        state,
        line: `  tool ${event.name} → ${event.status}${event.truncated ? ' (cut to fit)' : ''}  (${event.bytes} bytes, ${event.latencyMs} ms)`,
      };
    }
    case 'tool-health': {
      const changes: string[] = [];
      const circuits = { ...state.circuits };
      for (const tool of event.tools) {
        if ((circuits[tool.name] ?? 'closed') !== tool.circuit) {
          changes.push(
            `  circuit ${tool.name}: ${tool.circuit.replace('_', '-')}${tool.circuit === 'open' ? ` after ${tool.consecutiveFailures} failures in a row; withheld while it cools down` : tool.circuit === 'half_open' ? '; offered again on probation' : ''}`,
          );
        }
        circuits[tool.name] = tool.circuit;
      }
      state.circuits = circuits;
      return { state, line: changes.length > 0 ? changes.join('\n') : null };
    }
    case 'evaluation-end':
      return {
        state,
        line: `  evaluation [${event.taskId}]: ${event.passed ? 'passed' : `failed${event.evaluator ? ` (${event.evaluator})` : ''}: ${clip(event.reason, 120)}`}`,
      };
    case 'retry': {
      const delay = event.delayMs > 0 ? `, after ${event.delayMs} ms` : '';
      // An argument repair runs none of the reply's calls: they are all answered and asked for again.
      if (event.layer === 'argument_repair') state.runningTools = [];
      // Traces written before the field errors were recorded say only which layer retried.
      if (
        event.layer !== 'argument_repair' ||
        event.argumentErrors === undefined ||
        event.argumentErrors.length === 0
      ) {
        return { state, line: `  retry ${event.counter} (${retryLayer(event.layer)})${delay}` };
      }
      state.argumentRepair = event.argumentErrors
        .map((entry) => `${entry.name}: argument repair (${clip(entry.error, 100)})`)
        .join('; ');
      return { state, line: `  retry ${event.counter} · ${state.argumentRepair}, sent back to the model${delay}` };
    }
    case 'no-progress':
      return {
        state,
        line: `  no progress${event.signal ? ` (${event.signal})` : ''}: ${event.action === 'nudge' ? 'nudging the model' : 'stopping'} — ${clip(event.detail, 120)}`,
      };
    case 'model-error':
      return { state, line: `  model error (${event.errorKind}): ${clip(event.message, 120)}` };
    case 'context-trimmed':
      return {
        state,
        line: `  context ${event.strategy === 'trim' ? 'trimmed' : 'summarized'}: ${event.tokensBefore} → ${event.tokensAfter} tokens`,
      };
    case 'warning':
      return { state, line: `  warning: ${clip(event.message, 160)}` };
    case 'run-end':
      Object.assign(state, {
        state: 'TERMINATED',
        runningTools: [],
        argumentRepair: null,
        inputTokens: event.usage.inputTokens,
        outputTokens: event.usage.outputTokens,
        costUsd: event.usage.costUsd,
      });
      // The blank line sets the result printed after it apart from the progress.
      return { state, line: `run ended: ${event.stopReason} after ${event.steps} step(s)\n` };
    default:
      return { state, line: null };
  }
}

function retryLayer(layer: 'transport' | 'reflection' | 'argument_repair'): string {
  if (layer === 'transport') return 'transport: the model call failed, trying again';
  if (layer === 'reflection') return "reflection: the evaluator's reason is fed back to the model";
  return 'argument repair: the field errors are sent back to the model';
}

/**
 * The status line: state, step against the step limit, tokens and cost against their budgets, time
 * against the deadline, the arguments being repaired, the tool running; cut to `columns`.
 * @example
 * process.stderr.write(`\r${renderStatusLine(state, process.stderr.columns)}`);
 */
export function renderStatusLine(state: ProgressState, columns = 120): string {
  const parts = [
    state.state,
    `step ${state.step}/${state.maxSteps ?? '∞'}${state.taskId !== null && state.taskId !== 'main' ? ` [${state.taskId}]` : ''}`,
    `tokens ${state.inputTokens}${budget(state.maxInputTokens)} in, ${state.outputTokens}${budget(state.maxOutputTokens)} out`,
    `$${state.costUsd.toFixed(4)}${state.maxCostUsd === null ? '' : `/$${state.maxCostUsd}`}`,
  ];
  if (state.runStartedAt !== null && state.lastAt !== null)
    parts.push(
      `${seconds(state.lastAt - state.runStartedAt)}${state.deadlineMs === null ? '' : `/${seconds(state.deadlineMs)}`}`,
    );
  if (state.argumentRepair !== null) parts.push(state.argumentRepair);
  if (state.runningTools.length > 0) parts.push(`running ${state.runningTools.join(', ')}`);
  else if (state.streamedChars > 0) parts.push(`streaming ${state.streamedChars} chars`);
  const line = terminalSafe(parts.join(' · '));
  return line.length > columns - 1 ? `${line.slice(0, Math.max(0, columns - 2))}…` : line;
}

const budget = (limit: number | null) => (limit === null ? '' : `/${limit}`);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const clip = (text: string, chars: number) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > chars ? `${flat.slice(0, chars - 1)}…` : flat;
};

/** Where the view writes, and whether it may redraw a line in place. */
export interface ProgressViewOptions {
  write(text: string): void;
  /** A terminal: keep a status line redrawn in place. Otherwise plain lines only, no control codes. */
  tty: boolean;
  columns?: number;
  /** Wall time for throttling redraws of streamed text; defaults to `Date.now`. */
  now?: () => number;
}

const CLEAR_LINE = '\r\u001B[2K';
/** Streamed deltas can arrive by the hundred per second; the status line is redrawn at most this often for them. */
const STREAM_REDRAW_MS = 80;

/**
 * A progress view to pass as `trace.onEvent`; call `finish()` when the run is over to clear the status line.
 * @example
 * const view = createProgressView({ write: (text) => process.stderr.write(text), tty: process.stderr.isTTY === true });
 * await createLoop({ ...config, trace: { onEvent: view.onEvent } }).run({ goal });
 * view.finish();
 */
export function createProgressView(options: ProgressViewOptions): {
  onEvent(event: TraceEvent): void;
  finish(): void;
  readonly state: ProgressState;
} {
  let state = initialProgress();
  let statusShown = false;
  let lastDraw = -Infinity;
  const now = options.now ?? Date.now;
  const clearStatus = () => {
    if (statusShown) options.write(CLEAR_LINE);
    statusShown = false;
  };
  return {
    get state() {
      return state;
    },
    onEvent(event) {
      const step = progressStep(state, event);
      state = step.state;
      if (!options.tty) {
        if (step.line !== null) options.write(`${step.line}\n`);
        return;
      }
      if (event.type === 'model-delta' && now() - lastDraw < STREAM_REDRAW_MS) return;
      clearStatus();
      if (step.line !== null) options.write(`${step.line}\n`);
      if (event.type === 'run-end') return;
      options.write(renderStatusLine(state, options.columns));
      statusShown = true;
      lastDraw = now();
    },
    finish: clearStatus,
  };
}
