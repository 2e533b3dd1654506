/**
 * Stops recorded by loopstate at 6f34d57 (record schema 5): a finished run and a run waiting for approval, whose
 * run records hold the result's messages whole (schema 6 names the journal's transcript chunk instead). Kept as
 * written (never regenerated): this loopstate reads both results exactly, and approves the waiting run to the
 * same end 6f34d57 reached, its new record naming the chunk.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFileSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as current from 'loopstate';
import * as currentTesting from 'loopstate/testing';
import type { Message, Store, StoreRow } from 'loopstate';

const fixturePath = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'records-v5-stops.json');

type Library = Pick<typeof current, 'createLoop' | 'defineTool' | 'memoryStore'>;
type Testing = Pick<typeof currentTesting, 'scriptedModel' | 'toolCall' | 'reply' | 'virtualClock'>;

interface StoredRun {
  run: string;
  snapshot: StoreRow | null;
  journal: StoreRow[];
}

interface Fixture {
  finished: StoredRun;
  waiting: StoredRun;
  /** The live results' messages and trace lengths as 6f34d57 returned them. */
  expected: {
    finished: { messages: Message[]; traceLength: number };
    waiting: { messages: Message[] };
    approved: { messages: Message[] };
  };
}

/** Twelve lookups, then an answer. */
function lookupLoop(lib: Library, testing: Testing, store: Store) {
  const lookup = lib.defineTool({
    name: 'lookup',
    description: 'Look a key up',
    input: z.object({ key: z.string() }),
    access: 'read',
    idempotent: true,
    execute: ({ key }) => `value ${key}`,
  });
  return lib.createLoop({
    model: testing.scriptedModel([
      ...Array.from({ length: 12 }, (_, n) => testing.toolCall('lookup', { key: `k${n}` })),
      testing.reply('done'),
    ]),
    tools: [lookup],
    store,
    clock: testing.virtualClock(),
    limits: { maxSteps: 20, maxToolCalls: 20 },
    durable: { snapshotEvery: 2 },
  });
}

/** A refund that needs approval, then an answer. */
function refundLoop(lib: Library, testing: Testing, store: Store) {
  const refund = lib.defineTool({
    name: 'refund',
    description: 'Refund an order.',
    input: z.object({ order_id: z.string() }),
    access: 'destructive',
    execute: ({ order_id }) => ({ refunded: order_id }),
  });
  return lib.createLoop({
    // Asks for the refund until the conversation holds its outcome (so a resumed run's new model goes on from there).
    model: {
      id: 'scripted',
      generate: (request) => {
        const usage = { inputTokens: 10, outputTokens: 2 };
        return Promise.resolve(
          request.messages.some((message) => message.role === 'tool')
            ? { text: 'Refunded O-7.', toolCalls: [], usage }
            : {
                text: null,
                toolCalls: [{ id: 'call-refund', name: 'refund', arguments: '{"order_id":"O-7"}' }],
                usage,
              },
        );
      },
    },
    tools: [refund],
    store,
    clock: testing.virtualClock(),
    durable: { snapshotEvery: 1 },
  });
}

async function storedRun(store: Store, runId: string): Promise<StoredRun> {
  return {
    run: (await store.readRun(runId))!.body,
    snapshot: await store.latestSnapshot(runId),
    journal: await store.readJournal(runId, 0),
  };
}

async function load(stored: StoredRun, runId: string): Promise<Store> {
  const store = current.memoryStore();
  const lease = { owner: 'fixture-loader', until: Date.now() + 60_000 };
  await store.createRun(runId, stored.run, lease);
  await store.append(runId, stored.journal, lease);
  if (stored.snapshot !== null) await store.writeSnapshot(runId, stored.snapshot, lease);
  await store.releaseLease(runId, lease.owner);
  return store;
}

const fixture = (): Fixture => JSON.parse(readFileSync(fixturePath, 'utf8')) as Fixture;
const recordOf = async (store: Store, runId: string) =>
  JSON.parse((await store.readRun(runId))!.body) as { schemaVersion: number; result: { messages: Message[] } } & {
    resultMessages?: unknown;
  };

describe('stops recorded by loopstate at 6f34d57 (result messages whole in the run record)', () => {
  // LOOPSTATE_FIXTURE_BUILD=/tmp/before-s5 (a build of 6f34d57): its own library runs the loops and stores the rows.
  it.runIf(process.env.LOOPSTATE_FIXTURE_BUILD !== undefined)('(writes the fixture)', async () => {
    const root = process.env.LOOPSTATE_FIXTURE_BUILD!;
    const lib = (await import(join(root, 'dist/src/index.js'))) as Library;
    const testing = (await import(join(root, 'dist/src/testing/index.js'))) as Testing;
    const finishedStore = lib.memoryStore();
    const finished = await lookupLoop(lib, testing, finishedStore).run({ goal: 'go', runId: 'finished' });
    const waitingStore = lib.memoryStore();
    const waiting = await refundLoop(lib, testing, waitingStore).run({ goal: 'Refund O-7', runId: 'waiting' });
    const stored: Pick<Fixture, 'finished' | 'waiting'> = {
      finished: await storedRun(finishedStore, 'finished'),
      waiting: await storedRun(waitingStore, 'waiting'),
    };
    const approved = await refundLoop(lib, testing, waitingStore).resume('waiting', {
      approvals: { [waiting.pendingApprovals[0]!.callId]: { approve: true } },
    });
    const written: Fixture = {
      ...stored,
      expected: {
        finished: { messages: finished.messages, traceLength: finished.trace.length },
        waiting: { messages: waiting.messages },
        approved: { messages: approved.messages },
      },
    };
    writeFileSync(fixturePath, `${JSON.stringify(written, null, 1)}\n`);
  });

  it('are records of schema 5 holding the messages whole', () => {
    const { finished, waiting, expected } = fixture();
    for (const [stored, messages] of [
      [finished, expected.finished.messages],
      [waiting, expected.waiting.messages],
    ] as const) {
      const record = JSON.parse(stored.run) as { schemaVersion: number; result: { messages: unknown[] } };
      expect(record.schemaVersion).toBe(5);
      expect(record.result.messages).toEqual(messages);
      expect(messages.length).toBeGreaterThan(1);
    }
  });

  it('a finished run reads back exactly, its record left as it was', async () => {
    const { finished, expected } = fixture();
    const store = await load(finished, 'finished');
    const result = await lookupLoop(current, currentTesting, store).resume('finished');
    expect(result.stopReason).toBe('completed');
    expect(result.messages).toEqual(expected.finished.messages);
    expect(result.trace).toHaveLength(expected.finished.traceLength);
    expect((await store.readRun('finished'))!.body).toBe(finished.run);
  });

  it('a waiting run reads back exactly, and approved it ends as 6f34d57 ended it, its record naming the chunk', async () => {
    const { waiting, expected } = fixture();
    const store = await load(waiting, 'waiting');
    const loop = refundLoop(current, currentTesting, store);
    const stopped = await loop.resume('waiting');
    expect(stopped.status).toBe('needs_human');
    expect(stopped.messages).toEqual(expected.waiting.messages);
    const approved = await loop.resume('waiting', {
      approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } },
    });
    expect(approved.stopReason).toBe('completed');
    expect(approved.messages).toEqual(expected.approved.messages);
    const record = await recordOf(store, 'waiting');
    expect(record.schemaVersion).toBe(6);
    expect(record.result.messages).toEqual([]);
    expect(record.resultMessages).toMatchObject({ messages: expected.approved.messages.length });
    expect((await loop.resume('waiting')).messages).toEqual(expected.approved.messages);
  });
});
