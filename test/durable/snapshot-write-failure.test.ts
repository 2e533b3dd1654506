/**
 * A snapshot is written right after the commit that holds its events (run-journal.ts `pendingSnapshot`). A
 * snapshot write that fails must cost no more than it did when the snapshot had a commit of its own: a write
 * tool whose intent is not yet durable runs on resume (its outcome is not "unknown").
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type Model, type Store } from 'loopstate';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';

/** The store, its `writeSnapshot` failing once (a connection reset) for the snapshot chosen by `fails`. */
function snapshotFailingOnce(store: Store, fails: (seq: number) => boolean): { store: Store; failedAt: number[] } {
  const failedAt: number[] = [];
  return {
    failedAt,
    store: {
      ...store,
      writeSnapshot: (runId, row, lease) => {
        if (failedAt.length === 0 && fails(row.seq)) {
          failedAt.push(row.seq);
          return Promise.reject(new Error('connection reset by peer'));
        }
        return store.writeSnapshot(runId, row, lease);
      },
    },
  };
}

/** Three `charge` calls, one a step, each reply long enough that a snapshot follows it. */
function chargingLoop(store: Store, charged: string[]) {
  const model: Model = {
    id: 'script',
    generate: async ({ messages }) => {
      const step = messages.filter((message) => message.role === 'assistant').length;
      const usage = { inputTokens: 1, outputTokens: 1 };
      if (step >= 3) return { text: 'done', toolCalls: [], usage };
      const call = { id: `c${step}`, name: 'charge', arguments: JSON.stringify({ id: `s${step}` }) };
      return { text: 'thinking '.repeat(3_000), toolCalls: [call], usage };
    },
  };
  return chargingLoopOf(model, store, charged, 1);
}

/** A loop of `model` with one write tool, `charge`, that records each card it charges. */
function chargingLoopOf(model: Model, store: Store, charged: string[], snapshotEvery: number) {
  const charge = defineTool({
    name: 'charge',
    description: 'Charge a card',
    input: z.object({ id: z.string() }),
    access: 'write',
    execute: async ({ id }) => {
      charged.push(id);
      return `charged ${id}`;
    },
  });
  return createLoop({
    model,
    tools: [charge],
    store,
    clock: virtualClock(),
    policy: { allow: ['write'] },
    durable: { snapshotEvery },
  });
}

describe('a snapshot write that fails', () => {
  it('before a write tool runs: the run stops with the intent not durable, and a resume charges each card once', async () => {
    const store = memoryStore();
    const flaky = snapshotFailingOnce(store, (seq) => seq > 3);
    const charged: string[] = [];
    await expect(chargingLoop(flaky.store, charged).run({ goal: 'go', runId: 'r' })).rejects.toThrow(
      'connection reset by peer',
    );
    expect(flaky.failedAt).toHaveLength(1);
    const kinds = (await store.readJournal('r', 0)).map((row) => row.kind);
    // The call whose commit failed never ran, and no intent of it is left without an outcome.
    expect(kinds.filter((kind) => kind === 'intent')).toHaveLength(charged.length);
    await freeLease(store, 'r');
    const resumed = await chargingLoop(store, charged).resume('r');
    expect(resumed.stopReason).toBe('completed');
    expect(charged).toEqual(['s0', 's1', 's2']);
  });
});

/**
 * A store whose writes are round trips (Postgres): the snapshot taken in a model call's wait is still being written
 * when the reply comes, then fails. The reply's write tool queues its intent behind that commit.
 */
function slowFailingSnapshotOnce(store: Store): { store: Store; failedAt: number[] } {
  const failedAt: number[] = [];
  return {
    failedAt,
    store: {
      ...store,
      writeSnapshot: async (runId, row, lease) => {
        if (failedAt.length > 0) return store.writeSnapshot(runId, row, lease);
        failedAt.push(row.seq);
        // Longer than the model's reply below: timers fire in the order they are due.
        await new Promise((resolve) => setTimeout(resolve, 30));
        throw new Error('connection reset by peer');
      },
    },
  };
}

/** Four `charge` calls, one a step, from a model that answers after 5 ms (its wait's commit is out meanwhile). */
function hostedChargingLoop(store: Store, charged: string[]) {
  const model: Model = {
    id: 'hosted',
    generate: ({ messages }) =>
      new Promise((resolve) =>
        setTimeout(() => {
          const step = messages.filter((message) => message.role === 'assistant').length;
          const usage = { inputTokens: 1, outputTokens: 1 };
          if (step >= 4) return resolve({ text: 'done', toolCalls: [], usage });
          const call = { id: `c${step}`, name: 'charge', arguments: JSON.stringify({ id: `s${step}` }) };
          resolve({ text: null, toolCalls: [call], usage });
        }, 5),
      ),
  };
  return chargingLoopOf(model, store, charged, 4);
}

describe('a snapshot write in a model call wait that fails after the reply came', () => {
  it('appends nothing after it: no tool runs on an intent whose outcome could not be kept; a resume charges each card once', async () => {
    const store = memoryStore();
    const flaky = slowFailingSnapshotOnce(store);
    const charged: string[] = [];
    await expect(hostedChargingLoop(flaky.store, charged).run({ goal: 'go', runId: 'r' })).rejects.toThrow(
      'connection reset by peer',
    );
    expect(flaky.failedAt).toHaveLength(1);
    const rows = await store.readJournal('r', 0);
    const intents = rows.filter((row) => row.kind === 'intent').length;
    // Every intent committed has its outcome: a charge made is known to be made.
    expect(intents).toBe(charged.length);
    await freeLease(store, 'r');
    const resumed = await hostedChargingLoop(store, charged).resume('r');
    expect(resumed.stopReason).toBe('completed');
    expect(charged).toEqual(['s0', 's1', 's2', 's3']);
  });
});
