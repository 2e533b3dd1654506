import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeSampleTrace } from '../../../test/support/sample-run.js';
import { LoopstateError, TRACE_SCHEMA_VERSION } from '../../index.js';
import { pickRun, readRunTrace } from './read-trace.js';

let directory: string;
let samplePath: string;
let sampleLines: string[];
beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'loopstate-read-trace-'));
  samplePath = join(directory, 'run.jsonl');
  await writeSampleTrace(samplePath);
  sampleLines = readFileSync(samplePath, 'utf8').trimEnd().split('\n');
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const thrown = (run: () => unknown): LoopstateError => {
  try {
    run();
  } catch (error) {
    if (error instanceof LoopstateError) return error;
    throw error;
  }
  throw new Error('expected a LoopstateError');
};
const indexOf = (type: string) => sampleLines.findIndex((line) => line.includes(`"type":"${type}"`));

describe('readRunTrace', () => {
  it('reads a real run: every event, in order, for its one run id', async () => {
    const run = await readRunTrace(samplePath);
    expect(run.runId).toBe('run-sample');
    expect(run.events.map((event) => event.type)).toEqual(
      sampleLines.map((line) => (JSON.parse(line) as { type: string }).type),
    );
    expect(run.notices).toEqual([]);
    expect(run.skipped).toEqual([]);
  });

  it('opens a newer trace: unknown event types skipped and counted, unknown fields left out and counted, the version named', () => {
    const lines = [...sampleLines];
    lines[0] = JSON.stringify({
      ...(JSON.parse(lines[0]!) as object),
      schemaVersion: TRACE_SCHEMA_VERSION + 1,
      sandbox: 'vm',
    });
    lines.splice(
      2,
      0,
      JSON.stringify({ type: 'memory-recalled', runId: 'run-sample', at: 1 }),
      JSON.stringify({ type: 'memory-recalled', runId: 'run-sample', at: 2 }),
    );
    const run = pickRun(lines.join('\n'), 'run.jsonl');
    expect(run.events).toHaveLength(sampleLines.length);
    expect(run.events[0]).not.toHaveProperty('sandbox');
    expect(run.skipped).toEqual([
      'events of types this viewer does not know were skipped (a newer trace?): memory-recalled ×2',
      'fields this viewer does not know were left out (a newer trace?): run-start.sandbox ×1',
    ]);
    expect(run.notices).toEqual([
      `written by a newer loopstate (trace schema ${TRACE_SCHEMA_VERSION + 1}; this viewer reads up to ${TRACE_SCHEMA_VERSION}): what it added is left out`,
    ]);
  });

  it('skips a bad line and says which line and field, keeping the rest of the run', () => {
    const lines = [...sampleLines];
    const index = indexOf('step-end');
    lines[index] = lines[index]!.replace('"inputTokens":180', '"inputTokens":"180"');
    lines.splice(index + 1, 0, 'not json', '{"runId":"run-sample"}');
    const run = pickRun(lines.join('\n'), 'run.jsonl');
    expect(run.events).toHaveLength(sampleLines.length - 1);
    expect(run.events.some((event) => event.type === 'step-end' && event.step === 1)).toBe(false);
    expect(run.notices).toEqual([]);
    expect(run.skipped).toEqual([
      `run.jsonl: trace line ${index + 1}, field inputTokens: Invalid input: expected number, received string (the line was skipped)`,
      expect.stringMatching(new RegExp(`^run\\.jsonl: trace line ${index + 2}: not JSON \\(Unexpected token`)),
      expect.stringMatching(
        new RegExp(
          `^run\\.jsonl: trace line ${index + 3}, field type: Invalid discriminator value\\. Expected 'run-start' \\| .* \\(the line was skipped\\)$`,
        ),
      ),
    ]);
  });

  it('skips a last line cut off mid-write, with a notice', () => {
    const content = `${sampleLines.slice(0, 5).join('\n')}\n${sampleLines[5]!.slice(0, 40)}`;
    const run = pickRun(content, 'run.jsonl');
    expect(run.events).toHaveLength(5);
    expect(run.skipped).toEqual([expect.stringContaining('line 6 is incomplete')]);
    expect(run.notices).toEqual([expect.stringContaining('no run-end event')]);
  });

  it('reads the latest run of a file that holds several, lists the others, and reads the one named', () => {
    const other = sampleLines.map((line) => line.replaceAll('"run-sample"', '"run-other"'));
    const content = [...sampleLines, ...other].join('\n');
    const latest = pickRun(content, 'run.jsonl');
    expect(latest).toMatchObject({
      runId: 'run-other',
      otherRuns: [{ runId: 'run-sample', events: sampleLines.length, stopReason: 'completed' }],
    });
    expect(latest.events).toHaveLength(other.length);
    expect(latest.notices).toEqual([
      'the file holds 2 runs; this is the latest (the last to begin in the file); open another with --run <id>',
    ]);
    const named = pickRun(content, 'run.jsonl', 'run-sample');
    expect(named).toMatchObject({ runId: 'run-sample', otherRuns: [{ runId: 'run-other' }], notices: [] });
    expect(thrown(() => pickRun(content, 'run.jsonl', 'nope'))).toMatchObject({
      code: 'invalid_trace',
      message: 'run.jsonl: no run "nope"; it holds "run-sample", "run-other"',
    });
  });

  it('refuses a missing file, an empty one, and one with no line it can read', async () => {
    await expect(readRunTrace(join(directory, 'missing.jsonl'))).rejects.toMatchObject({
      code: 'invalid_trace',
      message: `${join(directory, 'missing.jsonl')}: no such file`,
    });
    const empty = join(directory, 'empty.jsonl');
    writeFileSync(empty, '\n');
    await expect(readRunTrace(empty)).rejects.toThrow('no trace events (the file is empty)');
    expect(thrown(() => pickRun('{"type":"step-end"}\n', 'bad.jsonl')).message).toBe(
      'bad.jsonl: no trace events it can read (trace line 1, field runId: Invalid input: expected string, received undefined)',
    );
  });
});
