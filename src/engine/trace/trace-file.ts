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
    super({
      code: 'invalid_trace_line',
      message: `trace line ${line}${field === '' ? '' : `, field ${field}`}: ${message}`,
      cause,
    });
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
  return validatedEvent(value, line);
}

/** A parsed line checked against the trace schema; throws `TraceFileError` naming the line and the field. */
function validatedEvent(value: unknown, line: number): TraceEvent {
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
 * How `parseTraceText` treats lines it cannot take as they are. `lenient: true` is for readers that must
 * open a trace written by another version (a viewer): a line of an event type this version does not know
 * is skipped and counted, a field it does not know is dropped and counted, and a line that is not a valid
 * event is skipped and reported with its line number, instead of throwing.
 * @example
 * const read = parseTraceText(text, { lenient: true });
 */
export interface TraceParseOptions {
  /** Default false: the first line that is not a valid event throws `TraceFileError`. */
  lenient?: boolean;
}

/**
 * A trace read leniently: the events this version knows, and what was left out, so a reader can say so.
 * @example
 * const { events, unknownTypes, invalidLines } = parseTraceText(text, { lenient: true });
 * for (const error of invalidLines) console.warn(error.message); // 'trace line 7, field inputTokens: ...'
 */
export interface LenientTraceFile extends TraceFile {
  /** Lines of an event type this version does not know (a newer trace), skipped: how many, by type. */
  unknownTypes: Record<string, number>;
  /** Top-level fields this version does not know, dropped from the events that had them: how many, by `type.field`. */
  unknownFields: Record<string, number>;
  /** Complete lines that are not valid events (not JSON, no type, a known type with a bad field), skipped; each names its line and field. */
  invalidLines: TraceFileError[];
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(traceEventSchema.options.map((option) => option.shape.type.value));

/**
 * `readTraceFile` for text already in memory; `{ lenient: true }` reads what it can and reports the rest.
 * @example
 * const { events } = parseTraceText(await (await fetch('/run.jsonl')).text());
 */
export function parseTraceText(text: string, options?: { lenient?: false }): TraceFile;
export function parseTraceText(text: string, options: { lenient: true }): LenientTraceFile;
export function parseTraceText(text: string, options: TraceParseOptions = {}): TraceFile | LenientTraceFile {
  const lenient = options.lenient === true;
  const lines = text.split('\n');
  const endsCleanly = text === '' || text.endsWith('\n');
  // After a final newline, split leaves one empty string: not a line.
  if (endsCleanly) lines.pop();
  const events: TraceEvent[] = [];
  const skipped: Omit<LenientTraceFile, keyof TraceFile> = { unknownTypes: {}, unknownFields: {}, invalidLines: [] };
  let truncatedLine: TraceFile['truncatedLine'] = null;
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    const isLast = index === lines.length - 1;
    if (isLast && !endsCleanly && !isJson(line)) {
      truncatedLine = { line: index + 1, text: line };
      break;
    }
    if (!lenient) events.push(parseTraceLine(line, index + 1));
    else readLeniently(line, index + 1, events, skipped);
  }
  return lenient ? { events, truncatedLine, ...skipped } : { events, truncatedLine };
}

/** One line in lenient mode: its event appended, or what kept it out counted in `skipped`. */
function readLeniently(
  text: string,
  line: number,
  events: TraceEvent[],
  skipped: Omit<LenientTraceFile, keyof TraceFile>,
): void {
  let event: TraceEvent;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    skipped.invalidLines.push(
      new TraceFileError({ line, field: '', message: `not JSON (${(error as Error).message})`, cause: error }),
    );
    return;
  }
  const type = typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined;
  if (typeof type === 'string' && !KNOWN_TYPES.has(type)) {
    skipped.unknownTypes[type] = (skipped.unknownTypes[type] ?? 0) + 1;
    return;
  }
  try {
    event = validatedEvent(value, line);
  } catch (error) {
    if (!(error instanceof TraceFileError)) throw error;
    skipped.invalidLines.push(error);
    return;
  }
  for (const field of Object.keys(value as object)) {
    if (Object.hasOwn(event, field)) continue;
    const key = `${event.type}.${field}`;
    skipped.unknownFields[key] = (skipped.unknownFields[key] ?? 0) + 1;
  }
  events.push(event);
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
