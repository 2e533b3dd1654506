/**
 * The model step on a real loop: what a step costs in promises (each one a run holds across its model call is
 * promoted to the old generation when a thousand runs are in flight).
 */
import { createHook } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Model } from '../../contracts/model.js';
import { createLoop } from '../loop.js';
import { defineTool } from '../tools/index.js';

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up.',
  input: z.object({ key: z.string() }),
  access: 'read',
  execute: ({ key }) => `value of ${key}`,
});

/** A loop whose model calls the tool until its `steps`-th call, then answers. */
function loopOf(steps: number) {
  let calls = 0;
  const model: Model = {
    id: 'counted',
    generate: async () =>
      ++calls % steps === 0
        ? { text: 'done', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 } }
        : {
            text: null,
            toolCalls: [{ id: `c${calls}`, name: 'lookup', arguments: `{"key":"k${calls}"}` }],
            usage: { inputTokens: 1, outputTokens: 1 },
          },
  };
  return createLoop({
    model,
    tools: [lookup],
    limits: { maxSteps: 1_000, maxToolCalls: 1_000 },
    noProgress: { planStall: 1_000, repeatedToolCall: 1_000 },
  });
}

describe('performModelCall', () => {
  it("makes at most 26 promises a step (27 when the call's promise was adopted by another before it was listened to, 28 when the step went on from the call in a .then of its promise)", async () => {
    let promises = 0;
    const hook = createHook({
      init(_id, type) {
        if (type === 'PROMISE') promises++;
      },
    });
    const promisesOfRun = async (steps: number) => {
      const loop = loopOf(steps);
      await loop.run({ goal: 'warm up' });
      promises = 0;
      hook.enable();
      try {
        const result = await loop.run({ goal: 'go' });
        expect(result.steps).toBe(steps);
      } finally {
        hook.disable();
      }
      return promises;
    };
    // Ten steps more, so what a run makes once cancels out.
    const perStep = ((await promisesOfRun(20)) - (await promisesOfRun(10))) / 10;
    expect(perStep).toBeGreaterThan(0);
    expect(perStep).toBeLessThanOrEqual(26);
  });
});
