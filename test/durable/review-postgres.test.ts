/**
 * Review decisions on `postgresStore` (a real PostgreSQL: `LOOPSTATE_TEST_POSTGRES_URL`, or a throwaway server):
 * decided once, also when two loops send their decisions at the same moment.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, evaluators, type Model, type RunResult } from 'loopstate';
import { postgresStore, type PostgresStore } from 'loopstate/postgres';
import { testPostgres, type TestPostgres } from '../support/test-postgres.js';

let server: TestPostgres;
const stores: PostgresStore[] = [];

beforeAll(async () => {
  server = await testPostgres();
}, 120_000);
afterAll(async () => {
  for (const store of stores) await store.close();
  await server?.stop();
});

const REPLIES = ['{"order":"O-7","amount":250}', '{"order":"O-7","amount":90}'];

/** A loop on its own connection pool, as another process would have; `calls` counts its model calls. */
function reviewLoop() {
  const store = postgresStore({ connectionString: server.url, schema: 'review_test' });
  stores.push(store);
  const counter = { calls: 0 };
  const model: Model = {
    id: 'review-test-model',
    generate: async ({ messages }) => {
      counter.calls++;
      const step = messages.filter((message) => message.role === 'assistant').length;
      return { text: REPLIES[step] ?? 'none', toolCalls: [], usage: { inputTokens: 10, outputTokens: 5 } };
    },
  };
  const loop = createLoop({
    model,
    store,
    evaluate: evaluators.chain(
      evaluators.schema(z.object({ order: z.string(), amount: z.number() })),
      evaluators.review({ when: (refund) => refund.amount > 100 }),
    ),
  });
  return { loop, counter };
}

describe('review decisions on postgresStore', () => {
  it('a reject continues once; an accept and a reject sent at the same moment: one is taken, the other refused', async () => {
    const first = reviewLoop();
    const stopped = await first.loop.run({ goal: 'Refund O-7', runId: 'pg-r1' });
    expect(stopped.pendingReview?.output).toEqual({ order: 'O-7', amount: 250 });
    const second = reviewLoop();
    const outcomes = await Promise.allSettled([
      first.loop.resume('pg-r1', { review: { accept: true, outputHash: stopped.pendingReview!.outputHash } }),
      second.loop.resume('pg-r1', {
        review: { accept: false, reason: 'the total is 90', outputHash: stopped.pendingReview!.outputHash },
      }),
    ]);
    const taken = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    const refused = outcomes.filter((outcome) => outcome.status === 'rejected');
    expect(taken).toHaveLength(1);
    expect(refused).toHaveLength(1);
    // The loser finds the lease taken, or the review decided: typed either way, and nothing of it ran.
    expect(['run_busy', 'review_already_decided']).toContain((refused[0]!.reason as { code: string }).code);
    const result = (taken[0] as PromiseFulfilledResult<RunResult>).value;
    expect(result.stopReason).toBe('completed');
    const final = await reviewLoop().loop.resume('pg-r1');
    expect(final.stopReason).toBe('completed');
    expect(final.output).toEqual(result.output);
    // Accepted: no further call; rejected: one more reply. Never both.
    expect(first.counter.calls + second.counter.calls).toBe(
      (result.output as { amount: number }).amount === 250 ? 1 : 2,
    );
    expect(final.trace.filter((event) => event.type === 'review-decided')).toHaveLength(1);
  });
});
