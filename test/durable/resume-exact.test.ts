/**
 * In-process interruptions: a run hangs at an effect boundary (its promise never settles, as if the
 * process died there), a second loop on the same store resumes it, and the result — transcript, trace,
 * warnings, usage, output — must equal the run that was never interrupted, with every completed model
 * and tool call made exactly once. The real-process SIGKILL tests are in crash.test.ts.
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
  type RunResult,
  type Store,
} from 'loopstate';
import { modelError, reply, scriptedModel, toolCall, virtualClock, type ScriptStep } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';

const SCRIPT: ScriptStep[] = [
  toolCall([
    { name: 'lookup', args: { id: 'A' } },
    { name: 'lookup', args: { id: 'B' } },
  ]),
  modelError({ status: 503 }),
  toolCall('write_note', { text: 'A and B found' }),
  reply('not json at all'),
  reply('{"answer":"A and B"}'),
];

interface Hang {
  modelCall?: number;
  toolCall?: number;
}

/** One "process": its own loop and clock over a shared store and world (the side-effect log). */
function process(
  store: Store,
  log: string[],
  hang: Hang,
  world: { modelCalls: number; toolCalls: number; notes: Set<string> },
  onHang: () => void,
  lookups = true,
) {
  const never = () => new Promise<never>(() => onHang());
  const steps = SCRIPT.map((step, index): ScriptStep => async (request) => {
    if (hang.modelCall === index) return never();
    log.push(`model:${index}`);
    return typeof step === 'function' ? step(request) : step;
  });
  const tool = (name: string, idempotent: boolean) =>
    defineTool({
      name,
      description: name,
      input: z.object({ id: z.string().optional(), text: z.string().optional() }),
      access: 'write',
      idempotent,
      execute: async (args, { idempotencyKey }) => {
        const index = world.toolCalls++;
        if (hang.toolCall === index) {
          log.push(`started:${name}:${idempotencyKey}`);
          if (name === 'write_note') world.notes.add(idempotencyKey);
          return never();
        }
        log.push(`tool:${name}:${idempotencyKey}`);
        if (name === 'write_note') world.notes.add(idempotencyKey);
        return { ok: true, ...args };
      },
      ...(lookups
        ? {
            checkOutcome: async (_args: unknown, { idempotencyKey }: { idempotencyKey: string }) =>
              world.notes.has(idempotencyKey)
                ? { status: 'done' as const, result: { ok: true, recovered: true } }
                : { status: 'not_done' as const },
          }
        : {}),
    });
  return createLoop({
    model: scriptedModelFrom(steps, world),
    tools: [tool('lookup', true), tool('write_note', false)],
    evaluate: evaluators.schema(z.object({ answer: z.string() })),
    clock: virtualClock(),
    random: () => 0.5,
    store,
    // maxUncommittedSteps 1: a commit before every model call (the journal these cases hang or crash on).
    durable: { snapshotEvery: 3, maxUncommittedSteps: 1 },
    policy: { allow: ['read', 'write'] },
  });
}

/** A scripted model whose position lives in the shared world, as a model provider's would. */
function scriptedModelFrom(steps: ScriptStep[], world: { modelCalls: number }): Model {
  return {
    id: 'scripted',
    generate: async (request) => {
      const index = world.modelCalls++;
      const inner = scriptedModel([steps[index]!]);
      return inner.generate(request);
    },
  };
}

async function reference(): Promise<{ result: RunResult; log: string[] }> {
  const log: string[] = [];
  const loop = process(memoryStore(), log, {}, { modelCalls: 0, toolCalls: 0, notes: new Set() }, () => undefined);
  return { result: await loop.run({ goal: 'Find A and B', runId: 'run' }), log };
}

/** `askedAgain`: model calls whose replies the interruption lost, which the next process makes again. */
async function interrupted(hang: Hang, lookups = true, askedAgain = 0): Promise<{ result: RunResult; log: string[] }> {
  const store = memoryStore();
  const log: string[] = [];
  const world = { modelCalls: 0, toolCalls: 0, notes: new Set<string>() };
  let hung!: () => void;
  const reachedHang = new Promise<void>((resolve) => (hung = resolve));
  void process(store, log, hang, world, hung, lookups).run({ goal: 'Find A and B', runId: 'run' });
  await reachedHang;
  // The hung call never completes: the next process redoes it (a model call) or settles it (a tool call).
  if (hang.modelCall !== undefined) world.modelCalls -= 1;
  world.modelCalls -= askedAgain;
  await freeLease(store, 'run');
  const result = await process(store, log, {}, world, () => undefined, lookups).resume('run');
  return { result, log };
}

/** The result without the resume's own trace event: everything else must be exactly the uninterrupted run's. */
const comparable = (result: RunResult) => ({
  ...result,
  trace: result.trace.filter((event) => event.type !== 'run-resume'),
});

describe('resume after an interruption at each effect boundary', () => {
  it('the uninterrupted run completes (the scenario is sound)', async () => {
    const { result, log } = await reference();
    expect(result.stopReason).toBe('completed');
    expect(log.filter((entry) => entry.startsWith('model:'))).toHaveLength(5);
  });

  for (const modelCall of [0, 1, 2, 3, 4]) {
    it(`hung at model call ${modelCall}: the same result, no completed call made twice`, async () => {
      const expected = await reference();
      const { result, log } = await interrupted({ modelCall });
      expect(comparable(result)).toEqual(comparable(expected.result));
      expect(result.trace.filter((event) => event.type === 'run-resume')).toHaveLength(1);
      for (const event of result.trace) expect(traceEventSchema.safeParse(event).error?.issues ?? []).toEqual([]);
      expect(log).toEqual(expected.log);
    });
  }

  it('hung inside a round of idempotent calls: the reply was not committed yet, so the model is asked again and the calls re-run under the same keys', async () => {
    const expected = await reference();
    // Nothing of the round is committed before it runs (no call in it needs an intent): the next process
    // asks the model again, and a provider answers the same conversation the same way.
    const { result, log } = await interrupted({ toolCall: 1 }, true, 1);
    expect(comparable(result)).toEqual(comparable(expected.result));
    expect(log.filter((entry) => entry === 'model:0')).toHaveLength(2);
    // lookup A ran, lookup B started and never finished; both ran again under their keys.
    expect(log.filter((entry) => entry.includes('lookup'))).toEqual([
      'tool:lookup:run:1:call_0_0',
      'started:lookup:run:1:call_0_1',
      'tool:lookup:run:1:call_0_0',
      'tool:lookup:run:1:call_0_1',
    ]);
  });

  it('hung inside a non-idempotent tool call: settled by checkOutcome, never run again', async () => {
    const { result, log } = await interrupted({ toolCall: 2 });
    expect(result.stopReason).toBe('completed');
    expect(log.filter((entry) => entry.includes('write_note'))).toEqual(['started:write_note:run:2:call_0_0']);
    expect(
      result.trace.some((event) => event.type === 'tool-end' && event.name === 'write_note' && event.status === 'ok'),
    ).toBe(true);
  });

  it('hung inside a non-idempotent tool call with no checkOutcome: stops with needs_human, never re-run blindly', async () => {
    const { result, log } = await interrupted({ toolCall: 2 }, false);
    expect(result.stopReason).toBe('needs_human');
    expect(result.warnings.join('\n')).toMatch(
      /write_note \(call_0_0\): outcome unknown; check it by idempotency key run:2:call_0_0/,
    );
    expect(log.filter((entry) => entry.includes('write_note'))).toEqual(['started:write_note:run:2:call_0_0']);
  });
});
