/**
 * A model call's timeout on a virtual clock: the timeout is handled when its timer fires, so the trace says
 * the call failed at its due time (1,000 ms), whatever the test's `advance` went on to (5,000 ms). Before the
 * call was held as one object (issue 18, engine6), the handling came a microtask later and read the clock
 * after the whole advance.
 */
import { describe, expect, it } from 'vitest';
import type { Model } from 'loopstate';
import { createTestLoop } from './helpers.js';

describe("a model call's timeout on a virtual clock", () => {
  it('is traced at the timer’s due time, with that latency', async () => {
    let calls = 0;
    let firstAsked: () => void = () => {};
    const asked = new Promise<void>((resolve) => (firstAsked = resolve));
    const model: Model = {
      id: 'hangs-once',
      generate: ({ signal }) => {
        calls++;
        if (calls > 1)
          return Promise.resolve({ text: 'done', toolCalls: [], usage: { inputTokens: 5, outputTokens: 1 } });
        firstAsked();
        // Hangs until the call is given up.
        return new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason)));
      },
    };
    const { loop, clock } = createTestLoop({ model, limits: { modelCallTimeoutMs: 1_000, deadlineMs: 60_000 } });
    const running = loop.run({ goal: 'go' });
    await asked;
    clock.advance(5_000);
    const result = await running;
    expect(result.stopReason).toBe('completed');
    const failed = result.trace.filter((event) => event.type === 'model-error');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ at: 1_000, errorKind: 'timeout', latencyMs: 1_000 });
  });
});
