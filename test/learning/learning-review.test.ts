/**
 * Learning with human review: a request for a person's review is no verdict on the task; the person's
 * decision is (an accept a pass, a reject a failure with the person's reason).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, evaluators, memoryStore, type Store, type TraceEvent } from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';

const Refund = z.object({ order: z.string(), amount: z.number() });
const big = '{"order":"O-7","amount":250}';
const small = '{"order":"O-7","amount":90}';

function refundLoop(store: Store, replies: string[]) {
  return createLoop({
    model: scriptedModel(replies.map((text) => reply(text))),
    name: 'refunds',
    store,
    clock: virtualClock(0),
    learning: {},
    evaluate: evaluators.chain(
      evaluators.schema(Refund),
      evaluators.review({ when: (refund) => refund.amount > 100, reason: 'refunds over 100 need a person' }),
    ),
  });
}

async function storedTask(store: Store) {
  const row = await store.readLearning('["refunds",null]');
  return row === null
    ? undefined
    : (JSON.parse(row.body) as { tasks: Record<string, { passes: number; failures: number; reasons: object }> }).tasks
        .main;
}

describe('learning and human review', () => {
  it('counts an accepted review as a pass, and the review request as nothing', async () => {
    const store = memoryStore();
    const loop = refundLoop(store, [big]);
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r1' });
    expect(stopped.stopReason).toBe('needs_human');
    // Waiting for a person: nothing is known about the output yet.
    expect(await storedTask(store)).toBeUndefined();
    const done = await loop.resume('r1', { review: { accept: true } });
    expect(done.stopReason).toBe('completed');
    expect(await storedTask(store)).toEqual({ passes: 1, failures: 0, passRate: 1, reasons: {} });
  });

  it("counts a rejected review as a failure with the person's reason", async () => {
    const store = memoryStore();
    const loop = refundLoop(store, [big, small]);
    await loop.run({ goal: 'Refund O-7', runId: 'r2' });
    const done = await loop.resume('r2', { review: { accept: false, reason: 'the order total is only 90' } });
    expect(done.stopReason).toBe('completed');
    const task = await storedTask(store);
    expect(task).toMatchObject({ passes: 1, failures: 1, reasons: { 'the order total is only 90': 1 } });
  });
});

describe('the trace of a run resumed after a stop', () => {
  it("keeps the first leg's last learning-saved (written after the event it stopped on) before run-resume", async () => {
    const store = memoryStore();
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks up.',
      input: z.object({}),
      access: 'read',
      execute: () => 'O-7: 250',
    });
    const loop = createLoop({
      model: scriptedModel([toolCall('lookup', {}), reply(big), reply(small)]),
      name: 'refunds',
      tools: [lookup],
      store,
      clock: virtualClock(0),
      learning: {},
      evaluate: evaluators.chain(
        evaluators.schema(Refund),
        evaluators.review({ when: (refund) => refund.amount > 100 }),
      ),
    });
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r3' });
    expect(stopped.stopReason).toBe('needs_human');
    const types = (trace: readonly TraceEvent[]) =>
      trace.map((event) => event.type).filter((type) => type.startsWith('learning-') || type === 'run-resume');
    expect(types(stopped.trace)).toEqual(['learning-loaded', 'learning-saved']);
    const done = await loop.resume('r3', { review: { accept: false, reason: 'too much' } });
    expect(done.stopReason).toBe('completed');
    expect(types(done.trace)).toEqual([
      'learning-loaded',
      'learning-saved',
      'run-resume',
      'learning-loaded',
      'learning-saved',
    ]);
    const version = (trace: readonly TraceEvent[]) =>
      trace.flatMap((event) => (event.type === 'learning-saved' ? [event.version] : []));
    expect(version(stopped.trace)).toEqual([1]);
    expect(version(done.trace)).toEqual([1, 2]);
  });

  it('keeps each stop’s last learning-saved across two stops, and the journal replays it', async () => {
    const store = memoryStore();
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks up.',
      input: z.object({}),
      access: 'read',
      execute: () => 'O-7: 250',
    });
    const loop = createLoop({
      model: scriptedModel([toolCall('lookup', {}), reply(big), toolCall('lookup', {}), reply(big), reply(small)]),
      name: 'refunds',
      tools: [lookup],
      store,
      clock: virtualClock(0),
      learning: {},
      evaluate: evaluators.chain(
        evaluators.schema(Refund),
        evaluators.review({ when: (refund) => refund.amount > 100 }),
      ),
    });
    expect((await loop.run({ goal: 'Refund O-7', runId: 'r4' })).stopReason).toBe('needs_human');
    const second = await loop.resume('r4', { review: { accept: false, reason: 'look it up again' } });
    expect(second.stopReason).toBe('needs_human');
    // The second stop's journal holds the first stop's batch in an event's delta: a resume replays it.
    const done = await loop.resume('r4', { review: { accept: true } });
    expect(done.stopReason).toBe('completed');
    expect(done.trace.flatMap((event) => (event.type === 'learning-saved' ? [event.version] : []))).toEqual([1, 2, 3]);
  });
});
