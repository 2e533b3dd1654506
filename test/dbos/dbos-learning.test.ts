/**
 * Learning on a DBOS worker whose legs hand the run to successor workflows: each leg writes the outcomes
 * it committed before it hands over, so nothing is lost at a handoff and nothing is counted twice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoop } from 'loopstate';
import { dbosWorker, type DbosWorker } from 'loopstate/dbos';
import { postgresStore, type PostgresStore } from 'loopstate/postgres';
import { orderLookups } from '../support/order-lookups.js';
import { testPostgres, type TestPostgres } from '../support/test-postgres.js';

let server: TestPostgres;
let store: PostgresStore;
let worker: DbosWorker;
const lookups: string[] = [];

beforeAll(async () => {
  server = await testPostgres();
  store = postgresStore({ connectionString: server.url });
  // Looks up O-1, O-2, O-3, then answers: seven effects (four model calls, three tool rounds) and an evaluation.
  const { lookup, model } = orderLookups(['O-1', 'O-2', 'O-3'], lookups, 'all read');
  const loop = createLoop({ model, name: 'orders', tools: [lookup], store, learning: {} });
  worker = await dbosWorker({
    loop,
    store,
    systemDatabaseUrl: server.url,
    executorId: 'learning-worker',
    version: 'learning-test',
    stepsPerWorkflow: 2,
  });
}, 120_000);
afterAll(async () => {
  await worker?.shutdown();
  await store?.close();
  await server?.stop();
}, 60_000);

describe('learning on a DBOS worker', () => {
  it('writes each leg’s committed outcomes at its handoff: every lookup and the verdict count once', async () => {
    await worker.enqueue({ goal: 'Read O-1, O-2 and O-3', runId: 'legs' });
    const done = await worker.result('legs');
    expect(done.stopReason, done.detail).toBe('completed');
    expect(lookups).toEqual(['O-1', 'O-2', 'O-3']);
    const row = await store.readLearning('["orders",null]');
    const record = JSON.parse(row!.body) as {
      tools: Record<string, { successes: number; failures: number }>;
      tasks: Record<string, { passes: number; failures: number }>;
    };
    // The batch window (20 outcomes) never filled: without a write at each handoff, only the last leg's would count.
    expect(record.tools.lookup?.successes).toBeCloseTo(3, 3);
    expect(record.tools.lookup?.failures).toBe(0);
    expect(record.tasks.main?.passes).toBeCloseTo(1, 3);
  }, 120_000);
});
