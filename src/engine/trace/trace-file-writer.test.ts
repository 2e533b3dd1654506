import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { LoopConfigError } from '../../contracts/errors.js';
import { createLoop } from '../loop.js';
import { reply, scriptedModel } from '../../testing/index.js';
import { traceFileProblem, TraceFileWriter } from './trace-file-writer.js';

const folder = mkdtempSync(join(tmpdir(), 'loopstate-trace-writer-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

describe('the trace file sink, through the runtime probe', () => {
  it("writes one line per event with Node's fs, which the probe finds without an import", () => {
    const path = join(folder, 'run.jsonl');
    expect(traceFileProblem(path)).toBeNull();
    const writer = new TraceFileWriter(path);
    writer.write({ type: 'warning', runId: 'r', at: 0, message: 'hi' });
    writer.close();
    expect(readFileSync(path, 'utf8')).toBe('{"type":"warning","runId":"r","at":0,"message":"hi"}\n');
  });

  it('refuses trace.file when the loop is created in a runtime that hands out no file system, saying what instead', () => {
    vi.spyOn(process, 'getBuiltinModule').mockReturnValue(undefined as never);
    expect(traceFileProblem(join(folder, 'run.jsonl'))).toMatch(/no file system.*trace\.onEvent/);
    let thrown: unknown;
    try {
      createLoop({ model: scriptedModel([reply('done')]), trace: { file: join(folder, 'never.jsonl') } });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(LoopConfigError);
    expect((thrown as LoopConfigError).issues).toEqual([
      expect.objectContaining({ path: 'trace.file', message: expect.stringMatching(/no file system/) as unknown }),
    ]);
  });
});
