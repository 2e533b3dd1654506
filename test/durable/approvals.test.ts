import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ApprovalError,
  createLoop,
  defineTool,
  memoryStore,
  RunAccessError,
  traceEventSchema,
  type Store,
} from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';

function refundLoop(
  store: Store,
  script = [toolCall('refund', { order_id: 'O-7', amount: 40 }), reply('Refunded O-7.')],
  options: { approvalExpiresAfterMs?: number } = {},
) {
  const refunds: string[] = [];
  const refund = defineTool({
    name: 'refund',
    description: 'Refund an order.',
    input: z.object({ order_id: z.string(), amount: z.number() }),
    access: 'destructive',
    execute: ({ order_id, amount }) => {
      refunds.push(`${order_id}:${amount}`);
      return { refunded: order_id };
    },
  });
  const clock = virtualClock();
  const model = scriptedModel(script);
  const loop = createLoop({ model, tools: [refund], clock, store, durable: options });
  return { loop, refunds, model, clock };
}

describe('approvals across a stop', () => {
  it('stops with needs_human, then an approval continues exactly there and the call runs once', async () => {
    const store = memoryStore();
    const { loop, refunds, model } = refundLoop(store);
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r1' });
    expect(stopped.status).toBe('needs_human');
    expect(refunds).toEqual([]);
    const [pending] = stopped.pendingApprovals;
    expect(pending).toMatchObject({ tool: 'refund', args: { order_id: 'O-7', amount: 40 }, expiresAt: null });
    expect(pending?.argumentsHash).toMatch(/^[0-9a-f]{16}$/);
    // Resuming without decisions returns the recorded stop.
    expect((await loop.resume('r1')).status).toBe('needs_human');
    const done = await loop.resume('r1', {
      approvals: { [pending!.callId]: { approve: true, argumentsHash: pending!.argumentsHash } },
    });
    expect(done.stopReason).toBe('completed');
    expect(refunds).toEqual(['O-7:40']);
    expect(done.usage.modelCalls).toBe(2);
    expect(done.usage.toolCalls).toBe(1);
    model.assertComplete();
    expect(done.trace.filter((event) => event.type === 'approval-decided')).toEqual([
      expect.objectContaining({ callId: pending!.callId, tool: 'refund', approved: true, reason: null }),
    ]);
    expect(done.pendingApprovals).toEqual([]);
    // A resumed run's trace, its own events included, is the documented format.
    for (const event of done.trace) expect(traceEventSchema.safeParse(event).error?.issues ?? []).toEqual([]);
    // Finished: resuming again returns the recorded result and runs nothing.
    const again = await loop.resume('r1');
    expect(again.stopReason).toBe('completed');
    expect(refunds).toEqual(['O-7:40']);
  });

  it('tells the model a rejection and its reason; the call never runs', async () => {
    const { loop, refunds, model } = refundLoop(memoryStore(), [
      toolCall('refund', { order_id: 'O-7', amount: 40 }),
      reply('I could not refund O-7.'),
    ]);
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r2' });
    const callId = stopped.pendingApprovals[0]!.callId;
    const done = await loop.resume('r2', {
      approvals: { [callId]: { approve: false, reason: 'over the refund limit' } },
    });
    expect(done.stopReason).toBe('completed');
    expect(refunds).toEqual([]);
    const lastRequest = model.calls.at(-1)!;
    expect(lastRequest.messages.at(-1)).toMatchObject({ role: 'tool', toolCallId: callId });
    expect(lastRequest.messages.at(-1)?.content).toContain('over the refund limit');
  });

  it('fails closed with typed errors', async () => {
    const { loop, clock } = refundLoop(memoryStore(), undefined, { approvalExpiresAfterMs: 60_000 });
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r3' });
    const { callId, argumentsHash } = stopped.pendingApprovals[0]!;
    const codeOf = async (promise: Promise<unknown>) =>
      promise.then(
        () => 'resolved',
        (error: unknown) =>
          error instanceof ApprovalError || error instanceof RunAccessError ? error.code : String(error),
      );
    expect(await codeOf(loop.resume('r3', { approvals: { nope: { approve: true } } }))).toBe('approval_unknown_call');
    expect(await codeOf(loop.resume('r3', { approvals: {} }))).toBe('approvals_incomplete');
    expect(
      await codeOf(loop.resume('r3', { approvals: { [callId]: { approve: true, argumentsHash: '0'.repeat(64) } } })),
    ).toBe('approval_arguments_changed');
    expect(await codeOf(loop.resume('missing'))).toBe('run_not_found');
    await expect(loop.resume('r3', { approvals: { [callId]: { approve: false } as never } })).rejects.toThrow(
      /Invalid run input:\n {2}- approvals\./,
    );
    clock.advance(60_001);
    expect(await codeOf(loop.resume('r3', { approvals: { [callId]: { approve: true, argumentsHash } } }))).toBe(
      'approval_expired',
    );
  });

  it("answers the same decision sent again with the run's result, and refuses another decision on a decided call", async () => {
    const { loop, refunds } = refundLoop(memoryStore());
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r4' });
    const { callId, argumentsHash } = stopped.pendingApprovals[0]!;
    const done = await loop.resume('r4', { approvals: { [callId]: { approve: true, argumentsHash } } });
    // A retried HTTP request: the run's result, nothing run again (with or without the hash it was bound to).
    const retried = await loop.resume('r4', { approvals: { [callId]: { approve: true, argumentsHash } } });
    expect(retried).toEqual(done);
    expect((await loop.resume('r4', { approvals: { [callId]: { approve: true } } })).stopReason).toBe('completed');
    expect(refunds).toEqual(['O-7:40']);
    await expect(
      loop.resume('r4', { approvals: { [callId]: { approve: false, reason: 'changed my mind' } } }),
    ).rejects.toMatchObject({ name: 'ApprovalError', code: 'approval_already_decided', callId });
    const other = refundLoop(memoryStore(), [reply('nothing to do')]);
    await other.loop.run({ goal: 'x', runId: 'r5' });
    await expect(other.loop.resume('r5', { approvals: { c: { approve: true } } })).rejects.toMatchObject({
      code: 'run_not_waiting',
    });
  });

  it('answers a decision sent again after the run stopped for the next approval with that stop', async () => {
    const script = [
      toolCall('refund', { order_id: 'O-7', amount: 40 }, { id: 'first' }),
      toolCall('refund', { order_id: 'O-8', amount: 10 }, { id: 'second' }),
      reply('Refunded both.'),
    ];
    const { loop, refunds } = refundLoop(memoryStore(), script);
    await loop.run({ goal: 'Refund O-7 and O-8', runId: 'r7' });
    const next = await loop.resume('r7', { approvals: { first: { approve: true } } });
    expect(next.pendingApprovals.map(({ callId }) => callId)).toEqual(['second']);
    const retried = await loop.resume('r7', { approvals: { first: { approve: true } } });
    expect(retried.stopReason).toBe('needs_human');
    expect(retried.pendingApprovals).toEqual(next.pendingApprovals);
    // A repeat mixed with a new decision is not a retry: refused whole.
    await expect(
      loop.resume('r7', { approvals: { first: { approve: true }, second: { approve: true } } }),
    ).rejects.toMatchObject({ code: 'approval_already_decided', callId: 'first' });
    expect(refunds).toEqual(['O-7:40']);
    expect((await loop.resume('r7', { approvals: { second: { approve: true } } })).stopReason).toBe('completed');
    expect(refunds).toEqual(['O-7:40', 'O-8:10']);
  });

  it('checks a decision sent again by reading only the event rows, latest first, and none for an undecided call', async () => {
    const store = memoryStore();
    // Every readJournal call (its kinds) and every row body read, counted.
    const reads: { kinds: readonly string[] | undefined; bodies: number }[] = [];
    const counting = new Proxy(store, {
      get(target, key) {
        if (key !== 'readJournal') {
          const value = Reflect.get(target, key) as unknown;
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        }
        return async (runId: string, afterSeq: number, kinds?: readonly string[]) => {
          const read = { kinds, bodies: 0 };
          reads.push(read);
          return (await target.readJournal(runId, afterSeq, kinds)).map((row) => ({
            seq: row.seq,
            kind: row.kind,
            get body() {
              read.bodies += 1;
              return row.body;
            },
          }));
        };
      },
    });
    const refund = defineTool({
      name: 'refund',
      description: 'Refund an order.',
      input: z.object({ order_id: z.string() }),
      access: 'destructive',
      execute: ({ order_id }) => ({ refunded: order_id }),
    });
    const lookup = defineTool({
      name: 'lookup',
      description: 'Look a key up.',
      input: z.object({ key: z.string() }),
      access: 'read',
      execute: ({ key }) => `value of ${key}`,
    });
    const script = [
      toolCall('refund', { order_id: 'O-7' }, { id: 'first' }),
      ...Array.from({ length: 60 }, (_, step) => toolCall('lookup', { key: `k${step}` })),
      toolCall('refund', { order_id: 'O-8' }, { id: 'second' }),
      ...Array.from({ length: 10 }, (_, step) => toolCall('lookup', { key: `j${step}` })),
      reply('Done.'),
    ];
    const limits = { maxSteps: 200, maxToolCalls: 200 };
    const loop = createLoop({ model: scriptedModel(script), tools: [refund, lookup], store: counting, limits });
    await loop.run({ goal: 'Refund O-7 and O-8', runId: 'r8' });
    expect((await loop.resume('r8', { approvals: { first: { approve: true } } })).stopReason).toBe('needs_human');
    const done = await loop.resume('r8', { approvals: { second: { approve: false, reason: 'over the limit' } } });
    expect(done.stopReason).toBe('completed');
    const events = (await store.readJournal('r8', 0)).filter((row) => row.kind === 'event').length;
    expect(events).toBeGreaterThan(140);

    reads.length = 0;
    expect(await loop.resume('r8', { approvals: { second: { approve: false, reason: 'over the limit' } } })).toEqual(
      done,
    );
    // The event rows only, from the end back to the decision on `second` (10 steps of events), not all of
    // them (the recorded result then reads its own rows: not the events).
    const eventReads = reads.filter(({ kinds }) => kinds?.includes('event') ?? true);
    expect(eventReads.map(({ kinds }) => kinds)).toEqual([['event']]);
    expect(eventReads[0]!.bodies).toBeGreaterThan(0);
    expect(eventReads[0]!.bodies).toBeLessThan(events / 4);
    // Another reason on the same call is found, compared and refused.
    await expect(
      loop.resume('r8', { approvals: { second: { approve: false, reason: 'another reason' } } }),
    ).rejects.toMatchObject({ code: 'approval_already_decided', callId: 'second' });
    // Both decisions sent again: read back to the first one, and taken as a retry.
    expect(
      (
        await loop.resume('r8', {
          approvals: { first: { approve: true }, second: { approve: false, reason: 'over the limit' } },
        })
      ).stopReason,
    ).toBe('completed');

    // A call the record lists as undecided was never taken: refused without reading the journal.
    const other = createLoop({
      model: scriptedModel([toolCall('refund', { order_id: 'O-9' }, { id: 'third' }), reply('Done.')]),
      tools: [refund, lookup],
      store: counting,
    });
    await other.run({ goal: 'Refund O-9', runId: 'r9' });
    await other.resume('r9', { approvals: { third: { approve: true } } });
    reads.length = 0;
    await expect(
      other.resume('r9', { approvals: { third: { approve: true }, unknown: { approve: true } } }),
    ).rejects.toMatchObject({ code: 'approval_already_decided', callId: 'third' });
    expect(reads).toEqual([]);
  });

  it('lets exactly one of two racing resumes drive the run', async () => {
    const { loop, refunds } = refundLoop(memoryStore());
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r6' });
    const approvals = { [stopped.pendingApprovals[0]!.callId]: { approve: true as const } };
    const outcomes = await Promise.allSettled([loop.resume('r6', { approvals }), loop.resume('r6', { approvals })]);
    const won = outcomes.filter(
      (outcome): outcome is PromiseFulfilledResult<Awaited<ReturnType<typeof loop.resume>>> =>
        outcome.status === 'fulfilled',
    );
    const lost = outcomes.filter((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
    expect(won.length).toBeGreaterThanOrEqual(1);
    for (const outcome of won) expect(outcome.value.stopReason).toBe('completed');
    // The same decisions twice: the second finds the run busy, or (once it finished) returns its result.
    for (const outcome of lost) expect((outcome.reason as RunAccessError).code).toBe('run_busy');
    expect(refunds).toEqual(['O-7:40']);
  });
});

describe('durable run ids', () => {
  it('are unique across processes when none is given (a random part, not a per-process counter)', async () => {
    const store = memoryStore();
    const { loop } = refundLoop(store, [reply('a'), reply('b')]);
    const [first, second] = [await loop.run({ goal: 'x' }), await loop.run({ goal: 'y' })];
    expect(first.runId).toMatch(/^run_[0-9a-z]+_[0-9a-f]{8}$/);
    expect(second.runId).not.toBe(first.runId);
  });
});
