import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLoop, type Model, type ModelRequest, type ModelResponse } from '../../index.js';
import { reply, scriptedModel, virtualClock } from '../../testing/index.js';
import { readCassette } from './cassette-format.js';
import { recordModel } from './record-model.js';
import { replayModel } from './replay-model.js';

let folder: string;
let path: string;
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'loopstate-record-'));
  path = join(folder, 'run.json');
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

const signal = new AbortController().signal;
const ask = (content: string, extra: Record<string, unknown> = {}): ModelRequest =>
  ({ messages: [{ role: 'user', content }], tools: [], signal, ...extra }) as ModelRequest;

function modelOf(generate: (request: ModelRequest) => Promise<ModelResponse>): Model {
  return { id: 'adapter', generate };
}

describe('recordModel', () => {
  it('leaves a complete cassette on disk after every call, so a crash mid-run loses nothing answered', async () => {
    const model = recordModel(scriptedModel([reply('one'), reply('two')]), path);
    await model.generate(ask('first'));
    expect(readCassette(path).calls).toHaveLength(1);
    await model.generate(ask('second'));
    expect(readCassette(path).calls).toHaveLength(2);
    expect(model.recordedCalls).toBe(2);
    expect(replayModel(path).remaining).toBe(2);
  });

  it('keys on every plain-data field of the request, never on the signal or callbacks, with secrets redacted', async () => {
    const model = recordModel(scriptedModel([reply('json'), reply('text')]), path);
    const onProgress = () => undefined;
    await model.generate(
      ask('same', { responseFormat: { type: 'json' }, settings: { temperature: 0, apiKey: 'abc123' }, onProgress }),
    );
    await model.generate(ask('same', { responseFormat: { type: 'text' }, onProgress }));
    const cassette = readCassette(path);
    expect(cassette.calls.map((call) => call.request.fields)).toEqual([
      { responseFormat: { type: 'json' }, settings: { apiKey: '[redacted]', temperature: 0 } },
      { responseFormat: { type: 'text' } },
    ]);
    expect(cassette.calls[0]?.key).not.toBe(cassette.calls[1]?.key);
    expect(readFileSync(path, 'utf8')).not.toContain('abc123');

    const replaying = replayModel(path);
    expect(
      await replaying.generate(ask('same', { responseFormat: { type: 'text' }, onProgress: () => 'another callback' })),
    ).toMatchObject({ text: 'text' });
    // The second recorded request is nearer: the first also had settings.
    await expect(replaying.generate(ask('same', { responseFormat: { type: 'xml' } }))).rejects.toMatchObject({
      code: 'cassette_mismatch',
      call: 2,
      nearestCall: 2,
      field: 'responseFormat.type',
      message: expect.stringContaining('recorded "text", got "xml"'),
    });
  });

  it('records a call the loop timed out as that timeout, and replays it with its latency', async () => {
    const recordClock = virtualClock();
    const hangsPastTimeout = () => new Promise<never>(() => recordClock.advance(1_000));
    const inner = scriptedModel([hangsPastTimeout, reply('done')]);
    const run = (model: Model, clock = virtualClock()) =>
      createLoop({
        model,
        clock,
        random: () => 0.5,
        generateRunId: () => 'run-1',
        limits: { modelCallTimeoutMs: 1_000 },
      }).run({ goal: 'Go.' });
    const recorded = await run(recordModel(inner, path, { clock: recordClock }), recordClock);
    expect(recorded.stopReason).toBe('completed');
    expect(readCassette(path).calls.map((call) => [call.error?.kind ?? 'response', call.latencyMs])).toEqual([
      ['timeout', 1_000],
      ['response', 0],
    ]);

    const replayClock = virtualClock();
    expect(await run(replayModel(path, { latency: 'recorded', clock: replayClock }), replayClock)).toEqual(recorded);
  });

  it('records a call the deadline cut short as interrupted: replayed on the loop clock it ends the run the same way', async () => {
    const recordClock = virtualClock();
    const hangsPastDeadline = () => new Promise<never>(() => recordClock.advance(5_000));
    const run = (model: Model, clock = virtualClock()) =>
      createLoop({ model, clock, generateRunId: () => 'run-1', limits: { deadlineMs: 5_000 } }).run({ goal: 'Go.' });
    const recorded = await run(
      recordModel(scriptedModel([hangsPastDeadline]), path, { clock: recordClock }),
      recordClock,
    );
    expect(recorded.stopReason).toBe('deadline_exceeded');
    expect(readCassette(path).calls.map((call) => [call.interrupted, call.latencyMs])).toEqual([['deadline', 5_000]]);

    const replayClock = virtualClock();
    expect(await run(replayModel(path, { latency: 'recorded', clock: replayClock }), replayClock)).toEqual(recorded);
    const instant = await run(replayModel(path));
    expect(instant.stopReason).toBe('fatal_error');
    expect(instant.error?.message).toContain(
      "model call 1 was cut short (deadline) after 5000 ms when recorded, but not in this replay; replay with latency: 'recorded'",
    );
  });

  it('records an adapter error that is no ModelCallError and a malformed reply so that replay fails the same way', async () => {
    const run = (model: Model) =>
      createLoop({ model, clock: virtualClock(), generateRunId: () => 'run-1' }).run({ goal: 'Go.' });
    const throwing = modelOf(async () => {
      throw Object.assign(new TypeError('socket closed by Bearer sk-live-4eC39HqLyjWDarjtT1zdp7dc'), {
        code: 'ECONNRESET',
      });
    });
    const first = recordModel(throwing, path);
    const thrown = await run(first);
    first.close();
    expect(thrown.error).toEqual({
      name: 'TypeError',
      message: 'socket closed by Bearer [redacted]',
      code: 'ECONNRESET',
    });
    expect(await run(replayModel(path))).toEqual(thrown);

    const malformed = modelOf(async () => ({ text: 5 }) as unknown as ModelResponse);
    const broken = await run(recordModel(malformed, path));
    expect(broken.error?.message).toMatch(
      /^the model returned a malformed response: text: Invalid input: expected string, received number; /,
    );
    expect(await run(replayModel(path))).toEqual(broken);
  });

  it('fails the call when the cassette cannot be written, naming the path', async () => {
    writeFileSync(join(folder, 'file'), 'not a folder');
    const blocked = join(folder, 'file', 'run.json');
    const result = await createLoop({
      model: recordModel(scriptedModel([reply('done')]), blocked),
      clock: virtualClock(),
    }).run({ goal: 'Go.' });
    expect(result.stopReason).toBe('fatal_error');
    expect(result.error).toMatchObject({
      name: 'CassetteFileError',
      code: 'cassette_write_failed',
      message: expect.stringContaining(`cassette ${blocked}: could not be written`),
    });
  });

  it('refuses to write a call nested deeper than a cassette may be, naming the field, so it never writes a cassette replay would refuse', async () => {
    let parameters: Record<string, unknown> = { type: 'string' };
    for (let level = 0; level < 300; level++) parameters = { a: parameters };
    const request = { ...ask('deep'), tools: [{ name: 'deep', description: 'Nested.', parameters }] };
    const model = recordModel(scriptedModel([reply('one')]), path);
    await expect(model.generate(request)).rejects.toMatchObject({
      name: 'CassetteFileError',
      code: 'cassette_write_failed',
      message: `cassette ${path}: call 1 was not written: tools[0].parameters.a.a.a… nests more than 256 levels deep`,
    });
    expect(existsSync(path)).toBe(false);
    // Failed for good: the lock is released for a recorder that can write.
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('reports the wrapped model id and context window, and so does the replay', async () => {
    const model = recordModel(
      { ...scriptedModel([reply('done')], { id: 'gpt-4.1-mini' }), contextWindowTokens: 8_000 },
      path,
    );
    expect([model.id, model.contextWindowTokens]).toEqual(['gpt-4.1-mini', 8_000]);
    await model.generate(ask('hi'));
    const replaying = replayModel(path);
    expect([replaying.id, replaying.contextWindowTokens]).toEqual(['gpt-4.1-mini', 8_000]);
  });
});
