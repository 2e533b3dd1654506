/**
 * A reply's metadata (response id, model, finish reason) through a run: the `step-end` that records it,
 * the warning a `length` cut gives (once per call), argument repair of the tool call such a cut
 * truncated, and a durable run that dies after the reply arrived: a reply in the journal's tail (as
 * loopstate 0.1 wrote it) is served, metadata included; one not committed yet is asked again. Either way
 * the run ends exactly as the uninterrupted one.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createLoop,
  defineTool,
  evaluators,
  memoryStore,
  traceEventSchema,
  type Model,
  type ModelResponse,
  type RunResult,
  type Store,
} from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock, type ScriptStep } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';

const CUT_WARNING =
  'model call 1 (task main) was cut at the output limit (finish reason length; maxOutputTokens 800): the reply may be incomplete';

/** Call 1 is cut mid-arguments at the output limit; call 2 repairs it; call 3 answers. */
const SCRIPT: ScriptStep[] = [
  toolCall('lookup', '{"id": "A', {
    metadata: { id: 'resp_1', model: 'gpt-4.1-mini-2025-04-14', finishReason: 'length', rawFinishReason: 'length' },
  }),
  toolCall('lookup', { id: 'A' }, { metadata: { id: 'resp_2', finishReason: 'tool_calls' } }),
  reply('{"answer":"A"}', { metadata: { id: 'resp_3', finishReason: 'stop' } }),
];

/** A model over the script whose position lives in `world`, as a provider's would: a resumed process goes on from it. */
function modelFrom(world: { modelCalls: number; replies?: ModelResponse[] }): Model {
  const settings = { maxOutputTokens: 800 };
  return {
    id: 'gpt-4.1-mini',
    settings,
    generate: async (request) => {
      const response = await scriptedModel([SCRIPT[world.modelCalls++]!], { settings }).generate(request);
      world.replies?.push(response);
      return response;
    },
  };
}

function loopOn(store: Store | undefined, world: { modelCalls: number; lookups: number; replies?: ModelResponse[] }) {
  return createLoop({
    model: modelFrom(world),
    name: 'metadata-test',
    // A commit before every model call (not grouped across steps): the crash windows the cases name.
    durable: { maxUncommittedSteps: 1 },
    tools: [
      defineTool({
        name: 'lookup',
        description: 'Look an id up',
        input: z.object({ id: z.string() }),
        access: 'read',
        execute: async ({ id }) => {
          world.lookups++;
          return { id, found: true };
        },
      }),
    ],
    evaluate: evaluators.schema(z.object({ answer: z.string() })),
    clock: virtualClock(),
    random: () => 0.5,
    ...(store === undefined ? {} : { store }),
  });
}

const comparable = (result: RunResult) => ({
  ...result,
  trace: result.trace.filter((event) => event.type !== 'run-resume'),
});

describe('response metadata through a run', () => {
  it('step-end records it, a length cut warns once, and the truncated arguments go to argument repair', async () => {
    const world = { modelCalls: 0, lookups: 0 };
    const loop = loopOn(undefined, world);
    expect(loop.name).toBe('metadata-test');
    const result = await loop.run({ goal: 'Find A' });
    expect(result.stopReason).toBe('completed');
    expect(result.output).toEqual({ answer: 'A' });
    expect(result.warnings.filter((warning) => warning.includes('output limit'))).toEqual([CUT_WARNING]);
    const stepEnds = result.trace.filter((event) => event.type === 'step-end');
    expect(stepEnds.map((event) => event.metadata)).toEqual([
      { id: 'resp_1', model: 'gpt-4.1-mini-2025-04-14', finishReason: 'length', rawFinishReason: 'length' },
      { id: 'resp_2', finishReason: 'tool_calls' },
      { id: 'resp_3', finishReason: 'stop' },
    ]);
    // The cut call's arguments ended mid-string: the model was told and fixed them; the tool ran once, on the fixed call.
    const repairs = result.trace.filter((event) => event.type === 'retry' && event.layer === 'argument_repair');
    expect(repairs).toHaveLength(1);
    expect(world.lookups).toBe(1);
    const start = result.trace.find((event) => event.type === 'run-start');
    expect(start).toMatchObject({ name: 'metadata-test', settings: { maxOutputTokens: 800 } });
    // Every event still fits the published schema, and old readers' fields are unchanged.
    for (const event of result.trace) expect(traceEventSchema.safeParse(event).success).toBe(true);
  });

  it('a model without settings or metadata: the warning names no limit, and step-end has no metadata', async () => {
    const loop = createLoop({
      model: scriptedModel([reply('partial answ', { metadata: { finishReason: 'length' } }), reply('done')]),
      evaluate: evaluators.rule((output) => output === 'done', 'not done yet'),
      clock: virtualClock(),
    });
    const result = await loop.run({ goal: 'Answer' });
    expect(result.stopReason).toBe('completed');
    expect(loop.name).toBe('loopstate');
    expect(result.warnings).toContain(
      'model call 1 (task main) was cut at the output limit (finish reason length): the reply may be incomplete',
    );
    const stepEnds = result.trace.filter((event) => event.type === 'step-end');
    expect(stepEnds[1]).not.toHaveProperty('metadata');
    expect(result.warnings.filter((warning) => warning.includes('output limit'))).toHaveLength(1);
  });

  it('a reply journalled before a crash is served on resume with its metadata: same trace, same warning, no call made twice', async () => {
    const reference = await loopOn(memoryStore(), { modelCalls: 0, lookups: 0 }).run({
      goal: 'Find A',
      runId: 'run',
    });

    const store = memoryStore();
    const world = { modelCalls: 0, lookups: 0, replies: [] as ModelResponse[] };
    let hung!: () => void;
    const reachedHang = new Promise<void>((resolve) => (hung = resolve));
    // The process "dies" as the first reply's event is committed. A reply is committed with its event now, so
    // its own record is never in a journal's tail; loopstate 0.1 committed it on arrival, and its journals
    // (which a resume still reads) hold it: written here as that version wrote it, in the seq left free for it.
    let lastEventSeq = 0;
    const dying: Store = new Proxy(store, {
      get(target, property, receiver) {
        if (property !== 'append') return Reflect.get(target, property, receiver) as unknown;
        return async (...args: Parameters<Store['append']>) => {
          const [runId, rows, lease] = args;
          const replied = rows.find((row) => row.kind === 'event' && row.body.includes('"model.responded"'));
          if (replied !== undefined) {
            const { text, toolCalls, usage, metadata } = world.replies[0]!;
            const response = { text, toolCalls, usage, metadata };
            const record = {
              schemaVersion: 3,
              kind: 'model',
              runId,
              seq: replied.seq - 1,
              afterEvent: lastEventSeq,
              index: 0,
              response,
            };
            await target.append(runId, [{ seq: record.seq, kind: 'model', body: JSON.stringify(record) }], lease);
            hung();
            return new Promise<never>(() => undefined);
          }
          for (const row of rows) if (row.kind === 'event') lastEventSeq = row.seq;
          return target.append(...args);
        };
      },
    });
    void loopOn(dying, world).run({ goal: 'Find A', runId: 'run' });
    await reachedHang;
    expect(world.modelCalls).toBe(1);
    await freeLease(store, 'run');
    const resumed = await loopOn(store, world).resume('run');
    // The journalled reply was served: the script's first step was not asked again.
    expect(world.modelCalls).toBe(3);
    expect(resumed.warnings.filter((warning) => warning.includes('output limit'))).toEqual([CUT_WARNING]);
    expect(comparable(resumed)).toEqual(comparable(reference));
  });

  it('a reply not yet committed when the process dies is asked again: the same trace and warning, the call paid twice', async () => {
    const reference = await loopOn(memoryStore(), { modelCalls: 0, lookups: 0 }).run({
      goal: 'Find A',
      runId: 'run',
    });
    const store = memoryStore();
    const world = { modelCalls: 0, lookups: 0 };
    let hung!: () => void;
    const reachedHang = new Promise<void>((resolve) => (hung = resolve));
    // The commit of the first reply's event never completes.
    const dying: Store = new Proxy(store, {
      get(target, property, receiver) {
        if (property !== 'append') return Reflect.get(target, property, receiver) as unknown;
        return async (...args: Parameters<Store['append']>) => {
          if (args[1].some((row) => row.kind === 'event' && row.body.includes('"model.responded"'))) {
            hung();
            return new Promise<never>(() => undefined);
          }
          return target.append(...args);
        };
      },
    });
    void loopOn(dying, world).run({ goal: 'Find A', runId: 'run' });
    await reachedHang;
    expect(world.modelCalls).toBe(1);
    await freeLease(store, 'run');
    // A provider answers the same conversation the same way: the script goes back one step.
    world.modelCalls = 0;
    const resumed = await loopOn(store, world).resume('run');
    expect(world.modelCalls).toBe(3);
    expect(resumed.warnings.filter((warning) => warning.includes('output limit'))).toEqual([CUT_WARNING]);
    expect(comparable(resumed)).toEqual(comparable(reference));
  });
});
