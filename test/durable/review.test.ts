import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ApprovalError,
  createLoop,
  defineTool,
  evaluators,
  LoopConfigError,
  memoryStore,
  ReviewError,
  traceEventSchema,
  type Store,
} from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';

const Refund = z.object({ order: z.string(), amount: z.number() });

/** A loop whose refunds over 100 wait for a person. */
function refundLoop(store: Store | undefined, replies: string[], options: { maxRetries?: number } = {}) {
  const model = scriptedModel(replies.map((text) => reply(text)));
  const loop = createLoop({
    model,
    clock: virtualClock(),
    ...(store === undefined ? {} : { store }),
    limits: { maxRetries: options.maxRetries ?? 2 },
    evaluate: evaluators.chain(
      evaluators.schema(Refund),
      evaluators.review({ when: (refund) => refund.amount > 100, reason: 'refunds over 100 need a person' }),
    ),
  });
  return { loop, model };
}

const big = '{"order":"O-7","amount":250}';
const small = '{"order":"O-7","amount":90}';

describe('human review of outputs', () => {
  it('stops needs_human with pendingReview, then an accept completes with that very output', async () => {
    const store = memoryStore();
    const { loop, model } = refundLoop(store, [big]);
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r1' });
    expect(stopped.status).toBe('needs_human');
    expect(stopped.stopReason).toBe('needs_human');
    expect(stopped.detail).toContain('refunds over 100 need a person');
    expect(stopped.pendingApprovals).toEqual([]);
    expect(stopped.pendingReview).toEqual({
      taskId: 'main',
      output: { order: 'O-7', amount: 250 },
      rawOutput: big,
      reason: 'refunds over 100 need a person',
      evaluator: 'review',
      outputHash: expect.stringMatching(/^[0-9a-f]{16}$/),
      reviewId: expect.stringMatching(/^\d+-[0-9a-f]{16}$/),
    });
    expect(stopped.trace.filter((event) => event.type === 'review-requested')).toEqual([
      expect.objectContaining({ taskId: 'main', evaluator: 'review', outputHash: stopped.pendingReview!.outputHash }),
    ]);
    // Resuming without a decision returns the recorded stop, pendingReview included.
    expect((await loop.resume('r1')).pendingReview).toEqual(stopped.pendingReview);
    const done = await loop.resume('r1', {
      review: { accept: true, outputHash: stopped.pendingReview!.outputHash },
    });
    expect(done.stopReason).toBe('completed');
    expect(done.output).toEqual({ order: 'O-7', amount: 250 });
    expect(done.pendingReview).toBeNull();
    expect(done.usage.modelCalls).toBe(1);
    model.assertComplete();
    expect(done.trace.filter((event) => event.type === 'review-decided')).toEqual([
      expect.objectContaining({ taskId: 'main', accepted: true, reason: null }),
    ]);
    for (const event of done.trace) expect(traceEventSchema.safeParse(event).error?.issues ?? []).toEqual([]);
    // The same decision again returns the result; another one is refused, and nothing runs.
    expect((await loop.resume('r1', { review: { accept: true } })).stopReason).toBe('completed');
    await expect(loop.resume('r1', { review: { accept: false, reason: 'no' } })).rejects.toMatchObject({
      name: 'ReviewError',
      code: 'review_already_decided',
      runId: 'r1',
    });
  });

  it('feeds a rejection back as a reflection, counted against maxRetries', async () => {
    const { loop, model } = refundLoop(memoryStore(), [big, small]);
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r2' });
    const done = await loop.resume('r2', { review: { accept: false, reason: 'the order total is only 90' } });
    expect(done.stopReason).toBe('completed');
    expect(done.output).toEqual({ order: 'O-7', amount: 90 });
    const lastRequest = model.calls.at(-1)!;
    const told = lastRequest.messages.at(-1)!;
    expect(told.role).toBe('user');
    expect(told.content).toContain('a person reviewed it and rejected it: the order total is only 90');
    expect(done.trace.filter((event) => event.type === 'review-decided')).toEqual([
      expect.objectContaining({ outputHash: stopped.pendingReview!.outputHash, accepted: false }),
    ]);
    model.assertComplete();
  });

  it('ends retries_exhausted when rejections outlast maxRetries', async () => {
    const { loop } = refundLoop(memoryStore(), [big, '{"order":"O-7","amount":251}'], { maxRetries: 1 });
    await loop.run({ goal: 'Refund O-7', runId: 'r3' });
    const second = await loop.resume('r3', { review: { accept: false, reason: 'too much' } });
    expect(second.status).toBe('needs_human');
    expect(second.pendingReview?.rawOutput).toBe('{"order":"O-7","amount":251}');
    const done = await loop.resume('r3', {
      review: { accept: false, reason: 'still too much', outputHash: second.pendingReview!.outputHash },
    });
    expect(done.stopReason).toBe('retries_exhausted');
    expect(done.pendingReview).toBeNull();
  });

  it('refuses decisions that do not fit, typed, before anything changes', async () => {
    const { loop, model } = refundLoop(memoryStore(), [big, small]);
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r4' });
    await expect(loop.resume('r4', { review: { accept: true, outputHash: '0000000000000000' } })).rejects.toMatchObject(
      { code: 'review_output_changed', outputHash: '0000000000000000' },
    );
    const malformed = await loop.resume('r4', { review: { accept: false } as never }).catch((error: unknown) => error);
    expect(malformed).toBeInstanceOf(LoopConfigError);
    expect((malformed as LoopConfigError).issues).toEqual([{ path: 'review.reason', message: expect.any(String) }]);
    const blank = await loop
      .resume('r4', { review: { accept: false, reason: '  ' } })
      .catch((error: unknown) => error as LoopConfigError);
    expect((blank as LoopConfigError).issues[0]?.path).toBe('review.reason');
    const extra = await loop
      .resume('r4', { review: { accept: true, approve: true } as never })
      .catch((error: unknown) => error as LoopConfigError);
    expect(extra).toBeInstanceOf(LoopConfigError);
    // Approvals for a run that waits for a review are refused too.
    const approvals = await loop
      .resume('r4', { approvals: { call_1: { approve: true } } })
      .catch((error: unknown) => error);
    expect(approvals).toBeInstanceOf(ApprovalError);
    expect(approvals).toMatchObject({ code: 'run_not_waiting' });
    // Nothing changed: the run still waits for the same output, and no model call was made.
    expect(model.calls).toHaveLength(1);
    expect((await loop.resume('r4')).pendingReview).toEqual(stopped.pendingReview);
    // A review for a run that never waited for one.
    const { loop: other } = refundLoop(memoryStore(), [small]);
    expect((await other.run({ goal: 'Refund O-7', runId: 'r5' })).stopReason).toBe('completed');
    const notPending = await other.resume('r5', { review: { accept: true } }).catch((error: unknown) => error);
    expect(notPending).toBeInstanceOf(ReviewError);
    expect(notPending).toMatchObject({ code: 'review_not_pending', outputHash: null });
  });

  it('without a store still stops needs_human with pendingReview (nothing to resume)', async () => {
    const { loop } = refundLoop(undefined, [big]);
    const stopped = await loop.run({ goal: 'Refund O-7' });
    expect(stopped.stopReason).toBe('needs_human');
    expect(stopped.pendingReview?.output).toEqual({ order: 'O-7', amount: 250 });
    expect(stopped.pendingReview?.reviewId).toBeNull();
    await expect(loop.resume(stopped.runId, { review: { accept: true } })).rejects.toMatchObject({ code: 'no_store' });
  });

  it('a failure after the review request wins: no person is asked about an output that fails anyway', async () => {
    const model = scriptedModel([reply(big), reply('{"order":"O-8","amount":250}')]);
    const loop = createLoop({
      model,
      evaluate: evaluators.chain(
        evaluators.schema(Refund),
        evaluators.review({ when: () => true }),
        evaluators.rule((refund) => refund.order === 'O-8', 'refund order O-8'),
      ),
    });
    const result = await loop.run({ goal: 'Refund O-8' });
    expect(result.stopReason).toBe('needs_human');
    expect(result.pendingReview).toMatchObject({
      reason: 'a person must review this output',
      output: { order: 'O-8' },
    });
    expect(model.calls[1]!.messages.at(-1)!.content).toContain('refund order O-8');
  });

  it('cancels a run waiting for a review', async () => {
    const { loop } = refundLoop(memoryStore(), [big]);
    await loop.run({ goal: 'Refund O-7', runId: 'r6' });
    const cancelled = await loop.cancel('r6');
    expect(cancelled?.stopReason).toBe('cancelled');
    expect(cancelled?.detail).toContain('waiting for a review');
    await expect(loop.resume('r6', { review: { accept: true } })).rejects.toMatchObject({ code: 'review_not_pending' });
  });

  it('an accepted output completes its task and the next task runs, with that output in taskOutputs', async () => {
    const model = scriptedModel([reply(big), reply('Done: refund of 250 for O-7 filed.')]);
    const loop = createLoop({
      model,
      clock: virtualClock(),
      store: memoryStore(),
      tasks: [
        {
          id: 'decide',
          prompt: 'Decide the refund.',
          evaluate: evaluators.chain(
            evaluators.schema(Refund),
            evaluators.review({ when: (refund) => refund.amount > 100 }),
          ),
        },
        { id: 'file', prompt: 'File it.' },
      ],
    });
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r7' });
    expect(stopped.pendingReview?.taskId).toBe('decide');
    const done = await loop.resume('r7', { review: { accept: true } });
    expect(done.stopReason).toBe('completed');
    expect(done.taskOutputs).toEqual({
      decide: { order: 'O-7', amount: 250 },
      file: 'Done: refund of 250 for O-7 filed.',
    });
    // The second task's request carries the accepted output.
    expect(JSON.stringify(model.calls[1]!.messages)).toContain('250');
    model.assertComplete();
  });

  it('a run waiting for approval refuses a review, also given with the approvals, and changes nothing', async () => {
    const refunds: string[] = [];
    const refund = defineTool({
      name: 'refund',
      description: 'Refund an order.',
      input: z.object({ order_id: z.string() }),
      access: 'destructive',
      execute: ({ order_id }) => {
        refunds.push(order_id);
        return { refunded: order_id };
      },
    });
    const loop = createLoop({
      model: scriptedModel([toolCall('refund', { order_id: 'O-7' }), reply('Refunded O-7.')]),
      tools: [refund],
      clock: virtualClock(),
      store: memoryStore(),
    });
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r8' });
    expect(stopped.pendingReview).toBeNull();
    const callId = stopped.pendingApprovals[0]!.callId;
    await expect(loop.resume('r8', { review: { accept: true } })).rejects.toMatchObject({ code: 'review_not_pending' });
    await expect(
      loop.resume('r8', { approvals: { [callId]: { approve: true } }, review: { accept: true } }),
    ).rejects.toBeInstanceOf(ReviewError);
    expect(refunds).toEqual([]);
    const done = await loop.resume('r8', { approvals: { [callId]: { approve: true } } });
    expect(done.stopReason).toBe('completed');
    expect(refunds).toEqual(['O-7']);
  });

  describe('a decision is bound to the stop it was taken on, never applied to the next one', () => {
    it('a rejection retried after the run stopped at a new review returns the result, B still waiting', async () => {
      const { loop, model } = refundLoop(memoryStore(), [big, '{"order":"O-7","amount":251}', small]);
      const first = await loop.run({ goal: 'Refund O-7', runId: 'b1' });
      const second = await loop.resume('b1', { review: { accept: false, reason: 'too much' } });
      expect(second.pendingReview?.rawOutput).toBe('{"order":"O-7","amount":251}');
      expect(second.pendingReview?.reviewId).not.toBe(first.pendingReview?.reviewId);
      // The same request again (a retry: no binding, as a client that forgot it sends): the result, nothing applied.
      const retried = await loop.resume('b1', { review: { accept: false, reason: 'too much' } });
      expect(retried.status).toBe('needs_human');
      expect(retried.pendingReview).toEqual(second.pendingReview);
      // Bound by the first stop's id or its output hash: the same.
      const byId = { accept: false, reason: 'too much', reviewId: first.pendingReview!.reviewId! } as const;
      expect((await loop.resume('b1', { review: byId })).pendingReview).toEqual(second.pendingReview);
      const byHash = { accept: false, reason: 'too much', outputHash: first.pendingReview!.outputHash } as const;
      expect((await loop.resume('b1', { review: byHash })).pendingReview).toEqual(second.pendingReview);
      // Another decision on the first stop is refused; an id of no stop of the run too.
      await expect(
        loop.resume('b1', { review: { accept: true, reviewId: first.pendingReview!.reviewId! } }),
      ).rejects.toMatchObject({ name: 'ReviewError', code: 'review_already_decided' });
      await expect(
        loop.resume('b1', { review: { accept: true, reviewId: '999-0000000000000000' } }),
      ).rejects.toMatchObject({ name: 'ReviewError', code: 'review_output_changed' });
      expect(model.calls).toHaveLength(2);
      // Bound to the stop that waits, the decision is taken.
      const done = await loop.resume('b1', {
        review: { accept: false, reason: 'only 90', reviewId: second.pendingReview!.reviewId! },
      });
      expect(done.stopReason).toBe('completed');
      expect(done.output).toEqual({ order: 'O-7', amount: 90 });
      model.assertComplete();
    });

    it('a model that repeats its output: the same hash-bound rejection sent twice is applied once', async () => {
      const { loop, model } = refundLoop(memoryStore(), [big, big, small]);
      const first = await loop.run({ goal: 'Refund O-7', runId: 'b2' });
      const decision = { accept: false, reason: 'too much', outputHash: first.pendingReview!.outputHash } as const;
      const second = await loop.resume('b2', { review: decision });
      expect(second.status).toBe('needs_human');
      expect(second.pendingReview?.outputHash).toBe(first.pendingReview?.outputHash);
      expect(second.pendingReview?.reviewId).not.toBe(first.pendingReview?.reviewId);
      const retried = await loop.resume('b2', { review: decision });
      expect(retried.status).toBe('needs_human');
      expect(retried.pendingReview).toEqual(second.pendingReview);
      expect(retried.usage.modelCalls).toBe(2);
      expect(model.calls).toHaveLength(2);
      // The person who saw the second stop decides it by its id.
      const done = await loop.resume('b2', {
        review: { accept: true, reviewId: second.pendingReview!.reviewId! },
      });
      expect(done.stopReason).toBe('completed');
      expect(done.output).toEqual({ order: 'O-7', amount: 250 });
      expect(done.trace.filter((event) => event.type === 'review-decided')).toHaveLength(2);
    });
  });
});
