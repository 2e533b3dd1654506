/**
 * A run stopped for approval after several snapshots (so its transcript is in chunks) and resumed with the
 * decision, on a real SQLite file and a real Postgres: the requests after the approval and the result are
 * the ones the same run makes on the in-memory store (its transcript folded from the store's chunks).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type Model, type ModelRequest, type Store } from 'loopstate';
import { postgresStore } from 'loopstate/postgres';
import { sqliteStore } from 'loopstate/sqlite';
import { virtualClock } from 'loopstate/testing';
import { testPostgres, type TestPostgres } from '../support/test-postgres.js';
import { withoutResumes } from './same-end.js';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-transcript-chunks-'));
let server: TestPostgres;
beforeAll(async () => {
  server = await testPostgres();
}, 120_000);
afterAll(async () => {
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** Six lookups, a refund (which needs approval), then an answer: by the replies already in the conversation. */
const model = (requests: ModelRequest[]): Model => ({
  id: 'scripted',
  async generate(request) {
    requests.push(request);
    const given = request.messages.filter((message) => message.role === 'assistant').length;
    const usage = { inputTokens: 10, outputTokens: 2 };
    if (given === 6)
      return { text: null, toolCalls: [{ id: 'refund-1', name: 'refund', arguments: '{"order_id":"O-7"}' }], usage };
    if (given > 6) return { text: 'refunded', toolCalls: [], usage };
    return {
      text: null,
      toolCalls: [{ id: `c${given}`, name: 'lookup', arguments: JSON.stringify({ key: `k${given}` }) }],
      usage,
    };
  },
});

async function stopAndApprove(store: Store, refunds: string[]) {
  const lookup = defineTool({
    name: 'lookup',
    description: 'Look a key up',
    input: z.object({ key: z.string() }),
    access: 'read',
    execute: ({ key }) => `value ${key}`,
  });
  const refund = defineTool({
    name: 'refund',
    description: 'Refund an order',
    input: z.object({ order_id: z.string() }),
    access: 'destructive',
    execute: ({ order_id }) => {
      refunds.push(order_id);
      return `refunded ${order_id}`;
    },
  });
  const loop = (requests: ModelRequest[]) =>
    createLoop({
      model: model(requests),
      tools: [lookup, refund],
      policy: { requireApproval: ['destructive'] },
      store,
      clock: virtualClock(),
      durable: { snapshotEvery: 2 },
    });
  const stopped = await loop([]).run({ goal: 'look up, then refund O-7', runId: 'r' });
  expect(stopped.stopReason).toBe('needs_human');
  const requests: ModelRequest[] = [];
  const done = await loop(requests).resume('r', { approvals: { 'refund-1': { approve: true } } });
  return { done, requests };
}

describe.each([
  ['sqliteStore', () => sqliteStore({ path: join(scratch, 'runs.db') })],
  ['postgresStore', () => postgresStore({ connectionString: server.url, schema: `chunks_${process.pid}` })],
])('a run stopped for approval after several snapshots, on %s', (_name, make) => {
  it('resumes with the decision to the requests and result of the same run in memory', async () => {
    const expectedRefunds: string[] = [];
    const expected = await stopAndApprove(memoryStore(), expectedRefunds);
    const store = make();
    try {
      const refunds: string[] = [];
      const { done, requests } = await stopAndApprove(store, refunds);
      const chunks = (await store.readJournal('r', 0, ['transcript'])).filter((row) => row.kind === 'transcript');
      expect(chunks.length).toBeGreaterThan(2);
      expect(JSON.parse((await store.latestSnapshot('r'))!.body).session.transcriptChunk).toBeGreaterThan(0);
      expect(requests.map((request) => request.messages)).toEqual(expected.requests.map((request) => request.messages));
      expect(done.stopReason).toBe('completed');
      expect(done.messages).toEqual(expected.done.messages);
      expect(withoutResumes(done)).toEqual(withoutResumes(expected.done));
      expect(refunds).toEqual(['O-7']);
    } finally {
      await store.close();
    }
  });
});
