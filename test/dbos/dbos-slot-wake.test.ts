/**
 * A freed slot takes the next queued run at once: a DBOS worker in this process whose queue is polled
 * only once a minute (its first poll a minute after launch) still drives three runs queued at once, one
 * at a time (`workerConcurrency: 1`): the first because this worker queued it, the next two because the
 * run before each freed the slot. Without the wake, none would start within the test's timeout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoop, type Model } from 'loopstate';
import { dbosWorker, type DbosWorker } from 'loopstate/dbos';
import { postgresStore, type PostgresStore } from 'loopstate/postgres';
import { testPostgres, type TestPostgres } from '../support/test-postgres.js';

let server: TestPostgres;
let store: PostgresStore;
let worker: DbosWorker;
/** What the model saw, in order: `start:<goal>`, `end:<goal>`. */
const calls: string[] = [];

beforeAll(async () => {
  server = await testPostgres();
  store = postgresStore({ connectionString: server.url });
  const model: Model = {
    id: 'slow-answer',
    generate: async ({ messages }) => {
      const goal = String(messages.find((message) => message.role === 'user')?.content ?? '');
      calls.push(`start:${goal}`);
      // Long enough that every run is queued while the first one holds the only slot.
      await new Promise((resolve) => setTimeout(resolve, 300));
      calls.push(`end:${goal}`);
      return { text: `done: ${goal}`, toolCalls: [], usage: { inputTokens: 10, outputTokens: 2 } };
    },
  };
  worker = await dbosWorker({
    loop: createLoop({ model, tools: [], store }),
    store,
    systemDatabaseUrl: server.url,
    executorId: 'slot-wake',
    version: 'slot-wake-test',
    workerConcurrency: 1,
    queuePollingIntervalMs: 60_000,
  });
}, 120_000);
afterAll(async () => {
  await worker?.shutdown();
  await store?.close();
  await server?.stop();
}, 60_000);

describe('a DBOS worker whose queue is polled once a minute', () => {
  it('starts a run it queued at once, and each freed slot takes the next queued run, one run at a time', async () => {
    const ids = ['wake-1', 'wake-2', 'wake-3'];
    await Promise.all(ids.map((runId) => worker.enqueue({ goal: `answer ${runId}`, runId })));
    const results = await Promise.all(ids.map((runId) => worker.result(runId)));
    expect(results.map((result) => [result.stopReason, result.output])).toEqual(
      ids.map((runId) => ['completed', `done: answer ${runId}`]),
    );
    // One slot: each run's model call ended before the next one's began.
    expect(calls).toHaveLength(6);
    for (let index = 0; index < calls.length; index += 2) {
      expect(calls[index]!.startsWith('start:'), calls.join(' ')).toBe(true);
      expect(calls[index + 1], calls.join(' ')).toBe(`end:${calls[index]!.slice('start:'.length)}`);
    }
  }, 45_000);
});
