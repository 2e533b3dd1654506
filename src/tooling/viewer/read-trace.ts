/**
 * Reads a JSONL trace (one trace event per line) for the viewer. It checks only the fields the viewer
 * uses, of the event types it knows; other event types and extra fields pass through untouched, so
 * traces from newer versions still open. The one place that knows the file format: it can switch to
 * a shared trace-schema reader without the viewer noticing.
 */
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { LoopstateError } from '../../index.js';

const text = z.string();
const count = z.number().int().min(0);
const amount = z.number().min(0);
/**
 * Limits as JSON writes them (`Infinity` becomes null: "no limit"). Read leniently: their shape belongs
 * to the trace schema, so an entry that is not a number or null is left out, never an error.
 */
const limits = z.unknown().transform((value): Record<string, number | null> | undefined => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  return Object.fromEntries(Object.entries(value).filter((entry): entry is [string, number | null] => entry[1] === null || typeof entry[1] === 'number'));
});

const base = { runId: text, at: z.number() };
const usage = z.looseObject({ inputTokens: amount, outputTokens: amount, costUsd: amount, modelCalls: count.optional(), toolCalls: count.optional() });

const KNOWN_EVENTS = {
  'run-start': z.looseObject({
    ...base,
    type: z.literal('run-start'),
    goalSummary: text.optional(),
    tasks: z.array(text).optional(),
    modelId: text.optional(),
    limits: limits.optional(),
    noProgress: limits.optional(),
  }),
  transition: z.looseObject({ ...base, type: z.literal('transition'), event: text, from: text, to: text }),
  'step-end': z.looseObject({
    ...base,
    type: z.literal('step-end'),
    step: count,
    taskId: text,
    latencyMs: amount,
    inputTokens: amount,
    outputTokens: amount,
    costUsd: amount,
    decision: text,
    toolCalls: z.array(z.looseObject({ callId: text, name: text, argumentsSummary: text.optional() })),
    replySummary: text.nullable().optional(),
  }),
  'tool-end': z.looseObject({ ...base, type: z.literal('tool-end'), taskId: text, callId: text, name: text, status: text, observationId: text, bytes: amount.optional(), truncated: z.boolean().optional(), latencyMs: amount }),
  'evaluation-end': z.looseObject({ ...base, type: z.literal('evaluation-end'), taskId: text, passed: z.boolean(), reason: text, evaluator: text.nullable().optional() }),
  // Argument repairs name the calls sent back to the model; older traces have no argumentErrors.
  retry: z.looseObject({
    ...base,
    type: z.literal('retry'),
    layer: text,
    argumentErrors: z.array(z.looseObject({ callId: text, name: text, error: text })).optional(),
  }),
  'model-error': z.looseObject({
    ...base, type: z.literal('model-error'), taskId: text, errorKind: text, message: text, retryDelayMs: amount.optional(),
    inputTokens: amount.optional(), outputTokens: amount.optional(), costUsd: amount.optional(),
  }),
  'context-trimmed': z.looseObject({ ...base, type: z.literal('context-trimmed'), taskId: text, summaryUsage: usage.nullable().optional() }),
  warning: z.looseObject({ ...base, type: z.literal('warning'), message: text }),
  'run-end': z.looseObject({ ...base, type: z.literal('run-end'), status: text, stopReason: text, detail: text, usage, steps: count }),
} as const;

type KnownEvents = typeof KNOWN_EVENTS;
/** A trace event of a type the viewer reads, with the fields it uses checked. */
export type ViewerEvent = { [Type in keyof KnownEvents]: z.output<KnownEvents[Type]> }[keyof KnownEvents];
/** An event of a type the viewer does not read (kept, and ignored). */
export interface OtherEvent {
  type: string;
  runId?: unknown;
  [field: string]: unknown;
}
export type ReadEvent = ViewerEvent | OtherEvent;

export const isViewerEvent = (event: ReadEvent): event is ViewerEvent => Object.hasOwn(KNOWN_EVENTS, event.type);

/**
 * A trace file that cannot be read: missing, not JSON lines, or a known event with a bad field. The
 * message names the file, the line and the field.
 * @example
 * try { await readTraceFile('run.jsonl') } catch (error) { if (error instanceof TraceFileError) console.error(error.line, error.field) }
 */
export class TraceFileError extends LoopstateError {
  /** 1-based line number; null when the file as a whole is at fault. */
  readonly line: number | null;
  /** Dotted path of the bad field within the line's event; null when no one field is. */
  readonly field: string | null;
  constructor({ message, line = null, field = null, cause }: { message: string; line?: number | null; field?: string | null; cause?: unknown }) {
    super({ code: 'invalid_trace', message, cause });
    this.line = line;
    this.field = field;
  }
}

/** One run of a trace file, as listed beside the one shown. */
export interface TracedRun {
  runId: string;
  /** Its events in the file. */
  events: number;
  /** How it stopped, from its run-end; null when the file has none for it. */
  stopReason: string | null;
}

/** One run's events, in file order, and what the reader had to skip. */
export interface RunTrace {
  source: string;
  runId: string;
  events: ReadEvent[];
  /** The file's other runs, in the order they began in the file (a file a loop's `trace.file` appends to holds one per run). */
  otherRuns: TracedRun[];
  /** Things a reader should know: an incomplete last line skipped, a run without its run-start. */
  notices: string[];
}

const fieldPath = (path: readonly PropertyKey[]) => path.map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`)).join('').replace(/^\./, '');

function parseLine(line: string, lineNumber: number, source: string): ReadEvent {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    throw new TraceFileError({ message: `${source}:${lineNumber}: not a JSON object (${(error as Error).message})`, line: lineNumber, cause: error });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TraceFileError({ message: `${source}:${lineNumber}: expected a JSON object, got ${Array.isArray(value) ? 'an array' : JSON.stringify(value)}`, line: lineNumber });
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string') throw new TraceFileError({ message: `${source}:${lineNumber}: field "type": expected the event type as a string, got ${JSON.stringify(type) ?? 'nothing'}`, line: lineNumber, field: 'type' });
  if (!Object.hasOwn(KNOWN_EVENTS, type)) return value as OtherEvent;
  const parsed = KNOWN_EVENTS[type as keyof KnownEvents].safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue === undefined ? null : fieldPath(issue.path);
  throw new TraceFileError({ message: `${source}:${lineNumber}: ${type} event, field "${field ?? '?'}": ${issue?.message ?? 'invalid'}`, line: lineNumber, field, cause: parsed.error });
}

/**
 * Parses JSONL trace text and picks one run: `runId`, else the latest (the last to begin in the file, since
 * runs append to it). A last line cut short (a process killed mid-write) is skipped with a notice; any other
 * bad line throws `TraceFileError`.
 * @example
 * const run = parseTrace(readFileSync('run.jsonl', 'utf8'), 'run.jsonl');
 */
export function parseTrace(content: string, source: string, runId?: string): RunTrace {
  const lines = content.split('\n');
  const notices: string[] = [];
  const events: ReadEvent[] = [];
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    const isLast = index === lines.length - 1;
    try {
      events.push(parseLine(line, index + 1, source));
    } catch (error) {
      // Only an unterminated last line can be a write the process did not finish.
      if (!(isLast && error instanceof TraceFileError && error.field === null)) throw error;
      notices.push(`line ${index + 1} is incomplete (${line.length} characters without a newline, likely cut off mid-write) and was skipped`);
    }
  });
  if (events.length === 0) throw new TraceFileError({ message: `${source}: no trace events (the file is empty)` });
  const runs = tracedRuns(events);
  const runIds = runs.map((run) => run.runId);
  if (runIds.length === 0) throw new TraceFileError({ message: `${source}: no event names its run (field "runId")` });
  const chosen = runId ?? (runIds.at(-1) as string);
  if (!runIds.includes(chosen)) throw new TraceFileError({ message: `${source}: no run ${JSON.stringify(chosen)}; it holds ${runIds.map((id) => JSON.stringify(id)).join(', ')}` });
  const own = events.filter((event) => event.runId === chosen);
  const otherRuns = runs.filter((run) => run.runId !== chosen);
  if (runId === undefined && otherRuns.length > 0) notices.push(`the file holds ${runs.length} runs; this is the latest (the last to begin in the file); open another with --run <id>`);
  if (own[0]?.type !== 'run-start') notices.push('the trace does not begin with this run\'s run-start event: what came before it is missing');
  if (!own.some((event) => event.type === 'run-end')) notices.push('the trace has no run-end event: the run was still going, or its process died');
  return { source, runId: chosen, events: own, otherRuns, notices };
}

/** Every run the events name, in the order each first appears. */
function tracedRuns(events: readonly ReadEvent[]): TracedRun[] {
  const runs = new Map<string, TracedRun>();
  for (const event of events) {
    if (typeof event.runId !== 'string') continue;
    let run = runs.get(event.runId);
    if (run === undefined) runs.set(event.runId, (run = { runId: event.runId, events: 0, stopReason: null }));
    run.events++;
    if (event.type === 'run-end' && typeof event.stopReason === 'string') run.stopReason = event.stopReason;
  }
  return [...runs.values()];
}

/**
 * Reads and parses a JSONL trace file; see `parseTrace`.
 * @example
 * const run = await readTraceFile('run.jsonl');
 */
export async function readTraceFile(path: string, runId?: string): Promise<RunTrace> {
  let content: string;
  try {
    content = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new TraceFileError({ message: code === 'ENOENT' ? `${path}: no such file` : `${path}: cannot be read (${code ?? (error as Error).message})`, cause: error });
  }
  return parseTrace(content, path, runId);
}
