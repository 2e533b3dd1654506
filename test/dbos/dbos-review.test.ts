/**
 * A run stopped for review on a DBOS worker: the decision goes through `enqueueResume(runId, { review })` (a run
 * stopped for review has no waiter), from the worker or a client, and is taken once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DBOSClient } from '@dbos-inc/dbos-sdk';
import { createLoop, evaluators, ReviewError, type Loop, type Model } from 'loopstate';
import { durableRunsOf } from '../../src/engine/loop.js';
import { dbosClient, dbosWorker, type DbosWorker, type LoopDbosClient } from 'loopstate/dbos';
import { postgresStore, type PostgresStore } from 'loopstate/postgres';
import { testPostgres, type TestPostgres } from '../support/test-postgres.js';

const REPLIES = ['{"order":"O-7","amount":250}', '{"order":"O-7","amount":90}'];
/** Three outputs a person must review, one after another, then one that passes. */
const REPLIES_O9 = [300, 301, 302, 90].map((amount) => `{"order":"O-9","amount":${amount}}`);
let modelCallsO9 = 0;
let server: TestPostgres;
let store: PostgresStore;
let worker: DbosWorker;
let client: LoopDbosClient;
let modelCalls = 0;
let steps: DBOSClient;
let loop: Loop;

beforeAll(async () => {
  server = await testPostgres();
  store = postgresStore({ connectionString: server.url });
  const model: Model = {
    id: 'review-test-model',
    generate: async ({ messages }) => {
      const step = messages.filter((message) => message.role === 'assistant').length;
      const o9 = messages.some((message) => String(message.content).includes('Refund O-9'));
      if (o9) modelCallsO9++;
      else modelCalls++;
      const text = (o9 ? REPLIES_O9 : REPLIES)[step] ?? 'none';
      return { text, toolCalls: [], usage: { inputTokens: 10, outputTokens: 5 } };
    },
  };
  loop = createLoop({
    model,
    store,
    evaluate: evaluators.chain(
      evaluators.schema(z.object({ order: z.string(), amount: z.number() })),
      evaluators.review({ when: (refund) => refund.amount > 100, reason: 'refunds over 100 need a person' }),
    ),
  });
  worker = await dbosWorker({
    loop,
    store,
    systemDatabaseUrl: server.url,
    executorId: 'review-worker',
    version: 'review-test',
  });
  client = await dbosClient({ systemDatabaseUrl: server.url, version: 'review-test', pollingIntervalMs: 50 });
  steps = await DBOSClient.create({ systemDatabaseUrl: server.url });
}, 120_000);
afterAll(async () => {
  await steps?.destroy();
  await client?.close();
  await worker?.shutdown();
  await store?.close();
  await server?.stop();
}, 60_000);

describe('review on a DBOS worker', () => {
  it('stops for review, a client sends the rejection, the run completes; a conflicting decision is refused', async () => {
    await worker.enqueue({ goal: 'Refund O-7', runId: 'dbos-review-1' });
    const stopped = await worker.result('dbos-review-1');
    expect(stopped.stopReason, stopped.detail).toBe('needs_human');
    expect(stopped.pendingReview).toMatchObject({ output: { order: 'O-7', amount: 250 }, evaluator: 'review' });
    const review = { accept: false as const, reason: 'the total is 90', outputHash: stopped.pendingReview!.outputHash };
    const { workflowId } = await client.enqueueResume('dbos-review-1', { review });
    const done = await client.result(workflowId);
    expect(done).toMatchObject({ stopReason: 'completed', output: { order: 'O-7', amount: 90 }, pendingReview: null });
    expect(modelCalls).toBe(2);
    // The same decision again (a retried request): the same workflow, the same result, no model call.
    const again = await worker.enqueueResume('dbos-review-1', { review });
    expect(again.workflowId).toBe(workflowId);
    expect((await worker.result(again.workflowId)).stopReason).toBe('completed');
    expect(modelCalls).toBe(2);
    // Another decision on the decided output: its leg refuses it (recorded as such) and changes nothing.
    const other = await worker.enqueueResume('dbos-review-1', {
      review: { accept: true, outputHash: stopped.pendingReview!.outputHash },
    });
    expect(await worker.result(other.workflowId)).toMatchObject({ stopReason: 'completed', output: { amount: 90 } });
    const legEnd = (await steps.listWorkflowSteps(other.workflowId))?.find(
      (step) => (step.output as { kind?: string } | undefined)?.kind === 'decisions',
    );
    expect(legEnd?.output).toMatchObject({ accepted: false, code: 'review_already_decided' });
    expect(modelCalls).toBe(2);
    // Checked directly, as the worker's leg checks it: the typed error.
    await expect(durableRunsOf(loop)!.checkReviewDecision('dbos-review-1', { accept: true })).rejects.toBeInstanceOf(
      ReviewError,
    );
  });

  it('a leg re-entered after the run stopped at new reviews takes its recorded verdict: the decision is not applied again', async () => {
    await worker.enqueue({ goal: 'Refund O-9', runId: 'dbos-review-2' });
    const first = await worker.result('dbos-review-2');
    expect(first.pendingReview?.reviewId).toMatch(/^\d+-[0-9a-f]{16}$/);
    // Unbound, as an older client sends it: the leg's verdict binds it to the stop it was checked against.
    const leg1 = await client.enqueueResume('dbos-review-2', { review: { accept: false, reason: 'too much' } });
    const second = await client.result(leg1.workflowId);
    expect(second.pendingReview?.rawOutput).toBe(REPLIES_O9[1]);
    const verdict = (await steps.listWorkflowSteps(leg1.workflowId))?.find(
      (step) => (step.output as { kind?: string } | undefined)?.kind === 'decisions',
    );
    expect(verdict?.output).toEqual({ kind: 'decisions', accepted: true, reviewId: first.pendingReview!.reviewId });
    const leg2 = await client.enqueueResume('dbos-review-2', {
      review: { accept: false, reason: 'still too much', reviewId: second.pendingReview!.reviewId! },
    });
    const third = await client.result(leg2.workflowId);
    expect(third.pendingReview?.rawOutput).toBe(REPLIES_O9[2]);
    expect(modelCallsO9).toBe(3);
    // The first leg executed again from just after its verdict, as DBOS re-enters a leg that died before its end.
    const forked = await steps.forkWorkflow(leg1.workflowId, verdict!.functionID + 1);
    const output = (await steps.retrieveWorkflow(forked).getResult()) as { kind: string; result: typeof third };
    expect(output.kind).toBe('stopped');
    expect(output.result.pendingReview).toEqual(third.pendingReview);
    expect(modelCallsO9).toBe(3);
    expect(await durableRunsOf(loop)!.latestResult('dbos-review-2')).toMatchObject({
      status: 'needs_human',
      pendingReview: third.pendingReview,
    });
  });
});
