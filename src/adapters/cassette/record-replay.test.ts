/**
 * Record a run through `createLoop`, replay it offline: the same result and trace, a changed run
 * failing closed with the nearest-field message, and secrets kept off the disk.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, evaluators, type LoopConfig, type Model, type RunResult } from '../../index.js';
import { modelError, reply, scriptedModel, toolCall, virtualClock, type VirtualClock } from '../../testing/index.js';
import { recordModel } from './record-model.js';
import { replayModel } from './replay-model.js';

let folder: string;
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'loopstate-cassette-'));
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

const SECRET = 'sk-live-4eC39HqLyjWDarjtT1zdp7dc';

function lookupTool(status: string) {
  return defineTool({
    name: 'get_order',
    description: 'Look up one order by id.',
    input: z.object({ order_id: z.string() }),
    access: 'read',
    execute: async ({ order_id }) => ({ order_id, status }),
  });
}

/** Two lookups, a 429 that is retried, an answer the evaluator rejects, then one it accepts. */
function script() {
  return scriptedModel(
    [
      toolCall('get_order', { order_id: 'O-101' }, { usage: { inputTokens: 200, outputTokens: 20 } }),
      modelError({ status: 429, retryAfterMs: 50, message: 'rate limited, slow down' }),
      toolCall('get_order', { order_id: 'O-102' }),
      reply('{"orders":["O-101"]}'),
      reply('{"orders":["O-101","O-102"],"status":"shipped"}', { usage: { inputTokens: 400, outputTokens: 30 } }),
    ],
    { id: 'gpt-4.1-mini' },
  );
}

function loopWith(model: Model, clock: VirtualClock, status = 'shipped', extra: Partial<LoopConfig> = {}) {
  return createLoop({
    model,
    instructions: 'Look both orders up, then answer in JSON.',
    tools: [lookupTool(status)],
    evaluate: [
      evaluators.schema(z.object({ orders: z.array(z.string()), status: z.string().optional() })),
      evaluators.rule((output: { status?: string }) => output.status !== undefined, 'say the status'),
    ],
    limits: { maxSteps: 8, maxRetries: 2 },
    clock,
    random: () => 0.5,
    generateRunId: () => 'run-1',
    ...extra,
  });
}

async function record(path: string, goal: string): Promise<RunResult> {
  const model = script();
  const clock = virtualClock();
  const recording = recordModel(model, path, { clock });
  const result = await loopWith(recording, clock).run({ goal });
  recording.close();
  model.assertComplete();
  return result;
}

describe('record → replay', () => {
  it('replays a multi-step run with a retried 429 and an evaluator retry to the same result and trace', async () => {
    const path = join(folder, 'order.json');
    const recorded = await record(path, 'Where are orders O-101 and O-102?');
    expect(recorded.stopReason).toBe('completed');
    expect(recorded.trace.filter((event) => event.type === 'model-error')).toHaveLength(1);
    expect(recorded.trace.some((event) => event.type === 'evaluation-end' && !event.passed)).toBe(true);

    const replaying = replayModel(path, { backoff: 'wait' });
    const replayed = await loopWith(replaying, virtualClock()).run({ goal: 'Where are orders O-101 and O-102?' });
    replaying.assertComplete();
    // Everything, the trace's times and latencies included: both runs are on a virtual clock, and the backoff is slept on it again.
    expect(replayed).toEqual(recorded);
    expect(replaying.id).toBe('gpt-4.1-mini');
  });

  it('keeps the cassette small and reviewable: each message stored once, calls referring to them', async () => {
    const path = join(folder, 'order.json');
    await record(path, 'Where are orders O-101 and O-102?');
    const text = readFileSync(path, 'utf8');
    const cassette = JSON.parse(text) as {
      schemaVersion: number;
      messages: unknown[];
      calls: { occurrence: number; request: { messages: number[] } }[];
    };
    expect(
      text.startsWith('{\n  "schemaVersion": 1,\n  "format": "loopstate-cassette",\n  "modelId": "gpt-4.1-mini",'),
    ).toBe(true);
    expect(cassette.calls).toHaveLength(5);
    // The 429 and its retry were the same request: occurrences 0 and 1 of one key.
    expect(cassette.calls.map((call) => call.occurrence)).toEqual([0, 0, 1, 0, 0]);
    expect(new Set(cassette.messages.map((message) => JSON.stringify(message))).size).toBe(cassette.messages.length);
    expect(cassette.calls.at(-1)?.request.messages).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(readdirSync(folder)).toEqual(['order.json']); // no temporary file left behind, and close() released the lock
  });

  it('reproduces recorded latency on the given clock, or answers at once by default', async () => {
    const path = join(folder, 'slow.json');
    const recordClock = virtualClock();
    const slow = scriptedModel([() => (recordClock.advance(250), reply('done'))]);
    const recorded = await createLoop({
      model: recordModel(slow, path, { clock: recordClock }),
      clock: recordClock,
      generateRunId: () => 'run-1',
    }).run({ goal: 'Go.' });
    const latency = (result: RunResult) =>
      result.trace.flatMap((event) => (event.type === 'step-end' ? [event.latencyMs] : []));
    expect(latency(recorded)).toEqual([250]);

    const replayClock = virtualClock();
    const timed = await createLoop({
      model: replayModel(path, { latency: 'recorded', clock: replayClock }),
      clock: replayClock,
      generateRunId: () => 'run-1',
    }).run({ goal: 'Go.' });
    expect(timed).toEqual(recorded);
    const instant = await createLoop({
      model: replayModel(path),
      clock: virtualClock(),
      generateRunId: () => 'run-1',
    }).run({ goal: 'Go.' });
    expect(latency(instant)).toEqual([0]);
  });

  it('retries a replayed 429 at once on the wall clock, whatever its recorded Retry-After, and ends as the recording did', async () => {
    const path = join(folder, 'rate-limited.json');
    const recordClock = virtualClock();
    const inner = scriptedModel([
      modelError({ status: 429, retryAfterMs: 30_000, message: 'slow down' }),
      reply('Done after the wait.'),
    ]);
    const recording = recordModel(inner, path, { clock: recordClock });
    const recorded = await createLoop({ model: recording, clock: recordClock, generateRunId: () => 'run-1' }).run({
      goal: 'Go.',
    });
    recording.close();
    const retryDelays = (result: RunResult) =>
      result.trace.flatMap((event) => (event.type === 'model-error' ? [event.retryDelayMs] : []));
    expect(retryDelays(recorded)).toEqual([30_000]);

    // No clock passed: the loop runs on the wall clock, with no fake timers, as a CLI replay does.
    const replaying = replayModel(path);
    const startedAt = performance.now();
    const replayed = await createLoop({ model: replaying, generateRunId: () => 'run-1' }).run({ goal: 'Go.' });
    expect(performance.now() - startedAt).toBeLessThan(3_000);
    replaying.assertComplete();
    expect([replayed.stopReason, replayed.output, replayed.messages]).toEqual([
      recorded.stopReason,
      recorded.output,
      recorded.messages,
    ]);
    expect([replayed.usage.modelCalls, retryDelays(replayed)]).toEqual([2, [30_000]]);
  });

  it('names a replay option it does not know', () => {
    const path = join(folder, 'any.json');
    expect(() => replayModel(path, { backoff: 'never' as 'skip' })).toThrow(
      "replayModel: backoff expected 'skip' or 'wait' or no value, got \"never\"",
    );
    expect(() => replayModel(path, { latency: 5 as unknown as 'instant' })).toThrow(
      "replayModel: latency expected 'instant' or 'recorded' or no value, got 5",
    );
  });

  it('fails a run that left the recording closed, naming the call and the first differing field', async () => {
    const path = join(folder, 'order.json');
    const recorded = await record(path, 'Where are orders O-101 and O-102?');
    const replaying = replayModel(path);
    // The tool now answers differently: the second request's tool result is not the recorded one.
    const result = await loopWith(replaying, virtualClock(), 'lost').run({ goal: 'Where are orders O-101 and O-102?' });
    expect(result.stopReason).toBe('fatal_error');
    expect(result.error?.code).toBe('cassette_mismatch');
    expect(result.detail).toContain(
      'model call 2 matches no recorded request; nearest is recorded call 2, first difference at messages[3].content',
    );
    expect(result.error?.message).toMatch(
      /recorded "\{\\"order_id\\":\\"O-101\\",\\"status\\":\\"shipped\\"\}", got "\{\\"order_id\\":\\"O-101\\",\\"status\\":\\"lost\\"\}"/,
    );
    // Failed closed: not retried as a transient error.
    expect(result.usage.modelCalls).toBe(2);
    expect(result.trace.filter((event) => event.type === 'model-error')).toHaveLength(1);
    expect(recorded.usage.modelCalls).toBe(5);
  });

  it('names a request replayed more often than it was recorded', async () => {
    const path = join(folder, 'once.json');
    await createLoop({ model: recordModel(scriptedModel([reply('done')]), path), clock: virtualClock() }).run({
      goal: 'Go.',
    });
    const replaying = replayModel(path);
    const request = {
      messages: [{ role: 'user' as const, content: 'Go.' }],
      tools: [],
      signal: new AbortController().signal,
    };
    await replaying.generate(request);
    await expect(replaying.generate(request)).rejects.toMatchObject({
      code: 'cassette_mismatch',
      call: 2,
      nearestCall: 1,
      field: null,
      message: expect.stringContaining(
        'model call 2 repeats the request of recorded call 1, which was replayed already: the recording made this request only 1 time(s)',
      ),
    });
  });

  it('keeps a secret of the goal and of a tool result out of the cassette, and still replays', async () => {
    const path = join(folder, 'secret.json');
    const goal = `Check the key ${SECRET} against order O-1.`;
    const vault = defineTool({
      name: 'read_config',
      description: 'Reads the config.',
      input: z.object({}),
      access: 'read',
      execute: async () => ({ database: 'postgres://ada:hunter2@db.example.com/orders', password: 'hunter2' }),
    });
    const run = (model: Model) =>
      createLoop({ model, tools: [vault], clock: virtualClock(), generateRunId: () => 'run-1' }).run({ goal });
    const recorded = await run(
      recordModel(scriptedModel([toolCall('read_config', {}), reply('The key is valid.')]), path),
    );
    const text = readFileSync(path, 'utf8');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain('hunter2');
    expect(text).toContain('Check the key [redacted] against order O-1.');

    const replaying = replayModel(path);
    expect(await run(replaying)).toEqual(recorded);
    replaying.assertComplete();
  });
});
