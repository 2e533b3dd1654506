/**
 * A run's limits are recorded when it starts and are the ones that apply whenever it is resumed: a loop
 * with other limits (a deploy in between) changes nothing but a warning, and whether a snapshot had been
 * written before the stop (it carries the machine's limits; the events after it do not) changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type Model, type Store } from 'loopstate';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';

/** Model call 3 asks for a refund (destructive: a stop for approval); every other call is a new lookup, for ever. */
function endlessModel(hangAt: number | null = null): Model & { made: number } {
  const model = {
    id: 'scripted',
    made: 0,
    generate() {
      model.made += 1;
      const call = model.made;
      const usage = { inputTokens: 20, outputTokens: 5 };
      if (call === hangAt) return new Promise<never>(() => undefined);
      if (call === 3)
        return Promise.resolve({
          text: null,
          toolCalls: [{ id: 'refund_1', name: 'refund', arguments: '{"order_id":"O-7"}' }],
          usage,
        });
      return Promise.resolve({
        text: null,
        toolCalls: [{ id: `lookup_${call}`, name: 'lookup', arguments: `{"key":"k${call}"}` }],
        usage,
      });
    },
  };
  return model;
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up.',
  input: z.object({ key: z.string() }),
  access: 'read',
  execute: ({ key }) => `value of ${key}`,
});
const refund = defineTool({
  name: 'refund',
  description: 'Refund an order.',
  input: z.object({ order_id: z.string() }),
  access: 'destructive',
  execute: ({ order_id }) => ({ refunded: order_id }),
});

function loopOn(store: Store, model: Model, maxSteps: number, snapshotEvery: number) {
  return createLoop({
    model,
    tools: [lookup, refund],
    store,
    clock: virtualClock(),
    limits: { maxSteps, maxToolCalls: 100 },
    // maxUncommittedSteps 1: a commit before every model call (the journal these cases hang or crash on).
    durable: { snapshotEvery, maxUncommittedSteps: 1 },
  });
}

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a run resumed by a loop with higher limits', () => {
  it.each([
    ['before any snapshot', 1_000],
    ['after snapshots', 1],
  ] as const)('stopped for approval %s: it keeps maxSteps 4 and says so', async (_when, snapshotEvery) => {
    const store = memoryStore();
    const stopped = await loopOn(store, endlessModel(), 4, snapshotEvery).run({
      goal: 'Look up and refund',
      runId: 'r',
    });
    expect(stopped.stopReason).toBe('needs_human');
    expect((await store.latestSnapshot('r')) !== null).toBe(snapshotEvery === 1);

    const model = endlessModel();
    model.made = 3;
    const done = await loopOn(store, model, 14, snapshotEvery).resume('r', {
      approvals: { refund_1: { approve: true } },
    });
    expect(done.stopReason, done.detail).toBe('max_steps');
    expect(done.steps).toBe(4);
    expect(model.made).toBe(4);
    // maxStepsPerTask follows maxSteps when not given, so it differs too.
    expect(done.warnings).toContain(
      'resumed by a loop with other limits; the run keeps the limits it started with: maxSteps 4 (this loop: 14), maxStepsPerTask 4 (this loop: 14)',
    );
  });

  it.each([
    ['before any snapshot', 1_000],
    ['after snapshots', 1],
  ] as const)('crashed %s: it keeps maxSteps 4', async (_when, snapshotEvery) => {
    const store = memoryStore();
    // Hangs at its third model call: as good as a crash once the lease is freed.
    void loopOn(store, endlessModel(3), 4, snapshotEvery).run({ goal: 'Look up', runId: 'r' });
    await tick(50);
    await freeLease(store, 'r');

    const model = endlessModel();
    model.made = 2;
    const resumed = await loopOn(store, model, 14, snapshotEvery).resume('r');
    expect(resumed.stopReason).toBe('needs_human');
    const done = await loopOn(store, model, 14, snapshotEvery).resume('r', {
      approvals: { refund_1: { approve: true } },
    });
    expect(done.stopReason, done.detail).toBe('max_steps');
    expect(done.steps).toBe(4);
    expect(model.made).toBe(4);
  });

  it('names every limit that differs, and warns of nothing when none does', async () => {
    const store = memoryStore();
    await loopOn(store, endlessModel(), 4, 1_000).run({ goal: 'Look up and refund', runId: 'same' });
    const same = await loopOn(store, Object.assign(endlessModel(), { made: 3 }), 4, 1_000).resume('same', {
      approvals: { refund_1: { approve: true } },
    });
    expect(same.warnings.filter((warning) => warning.includes('other limits'))).toEqual([]);

    await loopOn(store, endlessModel(), 4, 1_000).run({ goal: 'Look up and refund', runId: 'other' });
    const other = createLoop({
      model: Object.assign(endlessModel(), { made: 3 }),
      tools: [lookup, refund],
      store,
      clock: virtualClock(),
      limits: { maxSteps: 4, maxToolCalls: 100, deadlineMs: Infinity, maxCostUsd: 2 },
    });
    const done = await other.resume('other', { approvals: { refund_1: { approve: true } } });
    const [warning] = done.warnings.filter((text) => text.includes('other limits'));
    expect(warning).toMatch(/deadlineMs \d+ \(this loop: Infinity\)/);
    expect(warning).toMatch(/maxCostUsd [\d.]+ \(this loop: 2\)/);
    expect(warning).not.toMatch(/maxSteps/);
    // Said in the trace too, once.
    expect(done.trace.filter((event) => event.type === 'warning' && event.message === warning)).toHaveLength(1);
  });
});
