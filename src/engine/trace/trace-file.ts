/**
 * The JSON lines trace format, read back line by line through the trace schema, from text in any runtime
 * (`readTraceFile` of `loopstate/node` reads a file; the file sink is `trace-file-writer.ts`).
 */
import { z } from 'zod';
import { LoopstateError } from '../../contracts/errors.js';
import { traceEventSchema, type TraceEvent } from '../../contracts/trace-schema.js';

/**
 * A trace line that is not a valid event: names the line (1-based), the field and what was wrong.
 * @example
 * try { parseTraceLine('{"type":"run-end"}', 3) } catch (error) { if (error instanceof TraceFileError) console.error(error.line, error.field) }
 */
export class TraceFileError extends LoopstateError {
  readonly line: number;
  /** Dotted path of the bad field, `''` when the line is not JSON or not an object. */
  readonly field: string;
  constructor({ line, field, message, cause }: { line: number; field: string; message: string; cause?: unknown }) {
    super({ code: 'invalid_trace_line', message: `trace line ${line}${field === '' ? '' : `, field ${field}`}: ${message}`, cause });
    this.line = line;
    this.field = field;
  }
}

/**
 * Parses and validates one line of a trace file; throws `TraceFileError` naming the line and the field.
 * @example
 * const event = parseTraceLine('{"type":"warning","runId":"r1","at":0,"message":"hi"}', 1);
 */
export function parseTraceLine(text: string, line: number): TraceEvent {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new TraceFileError({ line, field: '', message: `not JSON (${(error as Error).message})`, cause: error });
  }
  const parsed = traceEventSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue === undefined ? '' : z.core.toDotPath(issue.path);
  throw new TraceFileError({ line, field, message: issue?.message ?? 'not a trace event', cause: parsed.error });
}

/**
 * A trace file, read: its events, and the last line when it was cut short (a process that died while
 * writing it), which is never an error.
 * @example
 * const { events, truncatedLine } = parseTraceText(text);
 */
export interface TraceFile {
  events: TraceEvent[];
  /** The 1-based number and text of an unfinished last line (no newline, not valid JSON); null when the file ends cleanly. */
  truncatedLine: { line: number; text: string } | null;
}

/**
 * `readTraceFile` for text already in memory.
 * @example
 * const { events } = parseTraceText(await (await fetch('/run.jsonl')).text());
 */
export function parseTraceText(text: string): TraceFile {
  const lines = text.split('\n');
  const endsCleanly = text === '' || text.endsWith('\n');
  // After a final newline, split leaves one empty string: not a line.
  if (endsCleanly) lines.pop();
  const events: TraceEvent[] = [];
  let truncatedLine: TraceFile['truncatedLine'] = null;
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    const isLast = index === lines.length - 1;
    if (isLast && !endsCleanly && !isJson(line)) {
      truncatedLine = { line: index + 1, text: line };
      break;
    }
    events.push(parseTraceLine(line, index + 1));
  }
  return { events, truncatedLine };
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
