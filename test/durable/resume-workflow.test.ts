/**
 * Exact rebuild of a richer run: two tasks (the second's prompt reads the first's output), the plan
 * tool, a no-progress nudge and context trimming (which replaces the transcript rather than appending
 * to it). The run hangs before each model call in turn; a second loop on the same store resumes it and
 * must produce exactly the uninterrupted result.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, evaluators, memoryStore, type Model, type RunResult, type Store } from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock, type ScriptStep } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';

const SCRIPT: ScriptStep[] = [
  toolCall('update_plan', { items: [{ id: 'look', title: 'Look A up', status: 'in_progress' }] }),
  toolCall('lookup', { id: 'A' }),
  toolCall('lookup', { id: 'A' }),
  toolCall('update_plan', { items: [{ id: 'look', title: 'Look A up', status: 'done' }] }),
  reply('{"found":"A"}'),
  toolCall('lookup', { id: 'B' }),
  toolCall('lookup', { id: 'C' }),
  reply('{"report":"A, B and C"}'),
];

function loopOver(
  store: Store,
  world: { modelCalls: number; lookups: string[] },
  hangAt: number | null,
  onHang: () => void,
) {
  const model: Model = {
    id: 'scripted',
    generate: async (request) => {
      const index = world.modelCalls++;
      if (index === hangAt) return new Promise<never>(() => onHang());
      return scriptedModel([SCRIPT[index]!]).generate(request);
    },
  };
  const lookup = defineTool({
    name: 'lookup',
    description: 'Look a record up',
    input: z.object({ id: z.string() }),
    access: 'read',
    idempotent: true,
    execute: ({ id }) => {
      world.lookups.push(id);
      return { id, notes: `record ${id}: ${'details '.repeat(60)}` };
    },
  });
  return createLoop({
    model,
    tools: [lookup],
    plan: true,
    clock: virtualClock(),
    store,
    // maxUncommittedSteps 1: a commit before every model call (the journal these cases hang or crash on).
    durable: { snapshotEvery: 4, maxUncommittedSteps: 1 },
    context: { maxInputTokensPerCall: 600, keepTurns: 1 },
    tasks: [
      { id: 'collect', prompt: 'Collect A', evaluate: evaluators.schema(z.object({ found: z.string() })) },
      {
        id: 'report',
        prompt: ({ outputs }) => `Report on ${JSON.stringify(outputs)}`,
        evaluate: evaluators.schema(z.object({ report: z.string() })),
      },
    ],
  });
}

async function runOnce(
  hangAt: number | null,
): Promise<{ result: RunResult; world: { modelCalls: number; lookups: string[] } }> {
  const store = memoryStore();
  const world = { modelCalls: 0, lookups: [] as string[] };
  if (hangAt === null)
    return {
      result: await loopOver(store, world, null, () => undefined).run({ goal: 'Report on A, B, C', runId: 'w' }),
      world,
    };
  let hung!: () => void;
  const reached = new Promise<void>((resolve) => (hung = resolve));
  const first = loopOver(store, world, hangAt, hung).run({ goal: 'Report on A, B, C', runId: 'w' });
  const ended = await Promise.race([reached.then(() => null), first]);
  if (ended !== null)
    throw new Error(`the run ended (${ended.stopReason}: ${ended.detail}) before model call ${hangAt}`);
  world.modelCalls -= 1;
  await freeLease(store, 'w');
  return { result: await loopOver(store, world, null, () => undefined).resume('w'), world };
}

const comparable = (result: RunResult) => ({
  ...result,
  trace: result.trace.filter((event) => event.type !== 'run-resume'),
});

describe('exact rebuild of a workflow with the plan tool, a nudge and context trimming', () => {
  it('the uninterrupted run goes through everything the test is about', async () => {
    const { result } = await runOnce(null);
    expect(result.stopReason, result.detail).toBe('completed');
    expect(Object.keys(result.taskOutputs)).toEqual(['collect', 'report']);
    expect(result.trace.some((event) => event.type === 'context-trimmed')).toBe(true);
    expect(result.warnings.some((warning) => warning.includes('nudge'))).toBe(true);
  });

  for (let hangAt = 1; hangAt < SCRIPT.length; hangAt++) {
    it(`hung before model call ${hangAt}: the same result, each lookup made once`, async () => {
      const expected = await runOnce(null);
      const { result, world } = await runOnce(hangAt);
      expect(comparable(result)).toEqual(comparable(expected.result));
      expect(world.lookups).toEqual(expected.world.lookups);
    });
  }
});
