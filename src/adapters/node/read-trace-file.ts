/** Reading a JSON lines trace file from disk: the Node-only half of the trace format (the core parses text). */
import { readFileSync } from 'node:fs';
import { parseTraceText, type TraceFile } from '../../engine/trace/trace-file.js';

/**
 * Reads a JSON lines trace file and validates every line. A complete line that is not a valid event
 * throws `TraceFileError` naming its line and field; an unfinished last line (the writer died mid-line)
 * is reported as `truncatedLine` instead.
 * @example
 * const { events } = readTraceFile('run.jsonl');
 * const end = events.findLast((event) => event.type === 'run-end');
 * console.log(end ? end.stopReason : 'the run did not finish');
 */
export function readTraceFile(path: string): TraceFile {
  return parseTraceText(readFileSync(path, 'utf8'));
}
