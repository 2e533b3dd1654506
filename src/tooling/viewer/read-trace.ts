/**
 * Reads a JSON lines trace for the viewer through the trace module's own parser, in its lenient mode: a
 * trace from a newer loopstate still opens (event types and fields this one does not know are left out and
 * counted), and a bad line is skipped with its line number instead of hiding the rest of the run. Then picks
 * the run to show, when the file holds several.
 */
import { readFile } from 'node:fs/promises';
import {
  LoopstateError,
  parseTraceText,
  TRACE_SCHEMA_VERSION,
  type LenientTraceFile,
  type TraceEvent,
} from '../../index.js';

/** The `code` of the error the viewer throws for a trace it cannot show at all (missing, empty, no such run). */
export const UNREADABLE_TRACE = 'invalid_trace';

/** One run of a trace file, as listed beside the one shown. */
export interface TracedRun {
  runId: string;
  /** Its events in the file. */
  events: number;
  /** How it stopped, from its run-end; null when the file has none for it. */
  stopReason: string | null;
}

/** One run's events, in file order, and what the reader had to leave out. */
export interface RunTrace {
  source: string;
  runId: string;
  events: TraceEvent[];
  /** The file's other runs, in the order they began in the file (a file a loop's `trace.file` appends to holds one per run). */
  otherRuns: TracedRun[];
  /** What the reader left out of the file, and why: bad lines by number, an unfinished last line, what a newer version added. */
  skipped: string[];
  /** What a reader should know about the run: other runs in the file, a missing run-start or run-end, a newer trace. */
  notices: string[];
}

const unreadable = (message: string) => new LoopstateError({ code: UNREADABLE_TRACE, message });

const tally = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([name, count]) => `${name} ×${count}`)
    .join(', ');

/** What the lenient parse left out, in words. */
function readNotices(read: LenientTraceFile, source: string): string[] {
  const notices = read.invalidLines.map((error) => `${source}: ${error.message} (the line was skipped)`);
  if (read.truncatedLine !== null)
    notices.push(
      `line ${read.truncatedLine.line} is incomplete (${read.truncatedLine.text.length} characters without a newline, likely cut off mid-write) and was skipped`,
    );
  if (Object.keys(read.unknownTypes).length > 0)
    notices.push(
      `events of types this viewer does not know were skipped (a newer trace?): ${tally(read.unknownTypes)}`,
    );
  if (Object.keys(read.unknownFields).length > 0)
    notices.push(`fields this viewer does not know were left out (a newer trace?): ${tally(read.unknownFields)}`);
  return notices;
}

/**
 * Parses JSON lines trace text and picks one run: `runId`, else the latest (the last to begin in the file,
 * since runs append to it). Lines it cannot read become notices; it throws (code `invalid_trace`) only when
 * there is nothing to show: no event at all, or no run `runId`.
 * @example
 * const run = pickRun(readFileSync('run.jsonl', 'utf8'), 'run.jsonl');
 */
export function pickRun(content: string, source: string, runId?: string): RunTrace {
  const read = parseTraceText(content, { lenient: true });
  const skipped = readNotices(read, source);
  const notices: string[] = [];
  const { events } = read;
  if (events.length === 0) {
    const first = read.invalidLines[0];
    throw unreadable(
      `${source}: no trace events${first === undefined ? ' (the file is empty)' : ` it can read (${first.message})`}`,
    );
  }
  const runs = tracedRuns(events);
  const chosen = runId ?? (runs.at(-1) as TracedRun).runId;
  if (!runs.some((run) => run.runId === chosen))
    throw unreadable(
      `${source}: no run ${JSON.stringify(chosen)}; it holds ${runs.map((run) => JSON.stringify(run.runId)).join(', ')}`,
    );
  const own = events.filter((event) => event.runId === chosen);
  const otherRuns = runs.filter((run) => run.runId !== chosen);
  if (runId === undefined && otherRuns.length > 0)
    notices.push(
      `the file holds ${runs.length} runs; this is the latest (the last to begin in the file); open another with --run <id>`,
    );
  const start = own[0];
  if (start?.type !== 'run-start')
    notices.push("the trace does not begin with this run's run-start event: what came before it is missing");
  else if (start.schemaVersion > TRACE_SCHEMA_VERSION)
    notices.push(
      `written by a newer loopstate (trace schema ${start.schemaVersion}; this viewer reads up to ${TRACE_SCHEMA_VERSION}): what it added is left out`,
    );
  if (!own.some((event) => event.type === 'run-end'))
    notices.push('the trace has no run-end event: the run was still going, or its process died');
  return { source, runId: chosen, events: own, otherRuns, skipped, notices };
}

/** Every run the events name, in the order each first appears. */
function tracedRuns(events: readonly TraceEvent[]): TracedRun[] {
  const runs = new Map<string, TracedRun>();
  for (const event of events) {
    let run = runs.get(event.runId);
    if (run === undefined) runs.set(event.runId, (run = { runId: event.runId, events: 0, stopReason: null }));
    run.events++;
    if (event.type === 'run-end') run.stopReason = event.stopReason;
  }
  return [...runs.values()];
}

/**
 * Reads a JSON lines trace file and picks one run; see `pickRun`.
 * @example
 * const run = await readRunTrace('run.jsonl');
 */
export async function readRunTrace(path: string, runId?: string): Promise<RunTrace> {
  let content: string;
  try {
    content = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new LoopstateError({
      code: UNREADABLE_TRACE,
      message:
        code === 'ENOENT' ? `${path}: no such file` : `${path}: cannot be read (${code ?? (error as Error).message})`,
      cause: error,
    });
  }
  return pickRun(content, path, runId);
}
