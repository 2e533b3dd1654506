import { describe, expect, it } from 'vitest';
import { parseTraceText, TraceFileError } from './trace-file.js';

const warning = (at: number, extra: object = {}) =>
  JSON.stringify({ type: 'warning', runId: 'r1', at, message: `w${at}`, ...extra });

describe('parseTraceText', () => {
  it('throws on the first line that is not a valid event, by default', () => {
    expect(() => parseTraceText(`${warning(1)}\n{"type":"memory-recalled","runId":"r1","at":2}\n`)).toThrow(
      TraceFileError,
    );
    expect(() => parseTraceText(`${warning(1)}\n{"type":"memory-recalled","runId":"r1","at":2}\n`)).toThrow(
      /^trace line 2, field type: Invalid discriminator value/,
    );
  });

  it('in lenient mode, skips and counts unknown event types, drops and counts unknown fields, and reports bad lines by number', () => {
    const text = [
      warning(1, { severity: 'low' }),
      '{"type":"memory-recalled","runId":"r1","at":2}',
      'not json',
      JSON.stringify({ type: 'warning', runId: 'r1', at: 'late', message: 'm' }),
      '{"type":"memory-recalled","runId":"r1","at":3}',
      warning(4, { severity: 'high' }),
      '{"type":"warn',
    ].join('\n');
    const read = parseTraceText(text, { lenient: true });
    expect(read.events).toEqual([
      { type: 'warning', runId: 'r1', at: 1, message: 'w1' },
      { type: 'warning', runId: 'r1', at: 4, message: 'w4' },
    ]);
    expect(read.unknownTypes).toEqual({ 'memory-recalled': 2 });
    expect(read.unknownFields).toEqual({ 'warning.severity': 2 });
    expect(read.invalidLines.map((error) => [error.line, error.field, error.code])).toEqual([
      [3, '', 'invalid_trace_line'],
      [4, 'at', 'invalid_trace_line'],
    ]);
    expect(read.invalidLines[1]?.message).toBe(
      'trace line 4, field at: Invalid input: expected number, received string',
    );
    // The unfinished last line is the writer dying mid-line, as in strict mode.
    expect(read.truncatedLine).toEqual({ line: 7, text: '{"type":"warn' });
  });

  it('in lenient mode, a line whose type is not a string is a bad line, not an unknown type', () => {
    const read = parseTraceText('{"type":7,"runId":"r1","at":1}\n[1,2]\n', { lenient: true });
    expect(read.unknownTypes).toEqual({});
    expect(read.invalidLines.map((error) => [error.line, error.field])).toEqual([
      [1, 'type'],
      [2, ''],
    ]);
  });
});
