import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeSampleTrace } from '../../../test/support/sample-run.js';
import { parseTrace, readTraceFile, TraceFileError } from './read-trace.js';

let directory: string;
let samplePath: string;
let sampleLines: string[];
beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'loopstate-read-trace-'));
  samplePath = join(directory, 'run.jsonl');
  await writeSampleTrace(samplePath);
  sampleLines = (await import('node:fs')).readFileSync(samplePath, 'utf8').trimEnd().split('\n');
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const thrown = (run: () => unknown): TraceFileError => {
  try {
    run();
  } catch (error) {
    if (error instanceof TraceFileError) return error;
    throw error;
  }
  throw new Error('expected a TraceFileError');
};

describe('readTraceFile', () => {
  it('reads a real run: every event, in order, for its one run id', async () => {
    const run = await readTraceFile(samplePath);
    expect(run.runId).toBe('run-sample');
    expect(run.events.map((event) => event.type)).toEqual(sampleLines.map((line) => (JSON.parse(line) as { type: string }).type));
    expect(run.notices).toEqual([]);
  });

  it('keeps unknown event types and extra fields (a newer trace still opens)', () => {
    const lines = [...sampleLines];
    lines.splice(1, 0, JSON.stringify({ type: 'step-start', runId: 'run-sample', at: 1, step: 1 }));
    lines[0] = JSON.stringify({ ...(JSON.parse(lines[0]!) as object), schemaVersion: 2, promptVersion: 'abc', limits: { maxSteps: 6, maxCostUsd: null } });
    const run = parseTrace(lines.join('\n'), 'run.jsonl');
    expect(run.events[1]).toMatchObject({ type: 'step-start', step: 1 });
    expect(run.events[0]).toMatchObject({ schemaVersion: 2, limits: { maxSteps: 6, maxCostUsd: null } });
    // Limits of a shape the viewer does not know are left out, never an error.
    lines[0] = JSON.stringify({ ...(JSON.parse(lines[0]!) as object), limits: { maxSteps: 6, tenant: { maxCostUsd: 1 } }, noProgress: 'default' });
    expect(parseTrace(lines.join('\n'), 'run.jsonl').events[0]).toMatchObject({ limits: { maxSteps: 6 }, noProgress: undefined });
  });

  it('names the line and the field of a bad event', () => {
    const lines = [...sampleLines];
    const index = lines.findIndex((line) => line.includes('"step-end"'));
    lines[index] = lines[index]!.replace('"inputTokens":180', '"inputTokens":"180"');
    const error = thrown(() => parseTrace(lines.join('\n'), 'run.jsonl'));
    expect(error).toMatchObject({ code: 'invalid_trace', line: index + 1, field: 'inputTokens' });
    expect(error.message).toBe(`run.jsonl:${index + 1}: step-end event, field "inputTokens": Invalid input: expected number, received string`);
  });

  it('names a nested field by its path', () => {
    const lines = [...sampleLines];
    const index = lines.findIndex((line) => line.includes('"step-end"'));
    lines[index] = lines[index]!.replace('"name":"get_order_status"', '"name":7');
    expect(thrown(() => parseTrace(lines.join('\n'), 'run.jsonl')).message).toContain(`run.jsonl:${index + 1}: step-end event, field "toolCalls[0].name"`);
  });

  it('refuses a line that is not JSON, or has no type, naming the line', () => {
    expect(thrown(() => parseTrace(`${sampleLines[0]}\nnot json\n${sampleLines[1]}\n`, 'run.jsonl'))).toMatchObject({ line: 2 });
    expect(thrown(() => parseTrace(`${sampleLines[0]}\n{"runId":"x"}\n`, 'run.jsonl')).message).toBe('run.jsonl:2: field "type": expected the event type as a string, got nothing');
  });

  it('skips a last line cut off mid-write, with a notice', () => {
    const content = `${sampleLines.slice(0, 5).join('\n')}\n${sampleLines[5]!.slice(0, 40)}`;
    const run = parseTrace(content, 'run.jsonl');
    expect(run.events).toHaveLength(5);
    expect(run.notices).toEqual([expect.stringContaining('line 6 is incomplete'), expect.stringContaining('no run-end event')]);
  });

  it('reads the latest run of a file that holds several, lists the others, and reads the one named', () => {
    const other = sampleLines.map((line) => line.replaceAll('"run-sample"', '"run-other"'));
    const content = [...sampleLines, ...other].join('\n');
    const latest = parseTrace(content, 'run.jsonl');
    expect(latest).toMatchObject({ runId: 'run-other', otherRuns: [{ runId: 'run-sample', events: sampleLines.length, stopReason: 'completed' }] });
    expect(latest.events).toHaveLength(other.length);
    expect(latest.notices).toEqual(['the file holds 2 runs; this is the latest (the last to begin in the file); open another with --run <id>']);
    const named = parseTrace(content, 'run.jsonl', 'run-sample');
    expect(named).toMatchObject({ runId: 'run-sample', otherRuns: [{ runId: 'run-other' }], notices: [] });
    expect(thrown(() => parseTrace(content, 'run.jsonl', 'nope')).message).toBe('run.jsonl: no run "nope"; it holds "run-sample", "run-other"');
  });

  it('says so for a missing or empty file', async () => {
    await expect(readTraceFile(join(directory, 'missing.jsonl'))).rejects.toThrow(`${join(directory, 'missing.jsonl')}: no such file`);
    const empty = join(directory, 'empty.jsonl');
    writeFileSync(empty, '\n');
    await expect(readTraceFile(empty)).rejects.toThrow('no trace events (the file is empty)');
  });
});
