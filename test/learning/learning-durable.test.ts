/**
 * Learning in a durable run whose journal write fails (a store error, as a crash between two commits
 * would leave it): the outcomes of committed events are written anyway, and those of events the journal
 * lost are left to the resume, which performs them again, so nothing is lost or counted twice.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLoop, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from '../durable/dead-owner.js';
import { orderLookups } from '../support/order-lookups.js';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-learning-durable-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * The store, failing the `nth` append (1-based) that commits a tool round's outcome: the commit holding its
 * `tools.completed` event (a round of idempotent calls commits with that event, its result rows folded in).
 */
function flaky(store: Store, nth: number): Store {
  let seen = 0;
  return {
    ...store,
    append: (...args) => {
      if (args[1].some((row) => row.kind === 'event' && row.body.includes('"tools.completed"')) && ++seen === nth)
        return Promise.reject(new Error('SQLITE_IOERR: disk I/O error'));
      return store.append(...args);
    },
  };
}

/** Looks up O-7, then O-8, then answers. */
function lookupLoop(store: Store, calls: string[], outcomes: number) {
  const { lookup, model } = orderLookups(['O-7', 'O-8'], calls, 'both read');
  return createLoop({
    model,
    name: 'orders',
    tools: [lookup],
    store,
    // A commit before every model call (not grouped across steps): the commits the cases fail are those.
    durable: { maxUncommittedSteps: 1 },
    clock: virtualClock(),
    learning: { batchWindow: { outcomes } },
  });
}

async function stored(store: Store) {
  const row = await store.readLearning('["orders",null]');
  return JSON.parse(row!.body) as {
    tools: Record<string, { successes: number }>;
    tasks: Record<string, { passes: number }>;
  };
}

describe('learning when the journal fails to commit', () => {
  it('never counts an outcome twice: a batch waits for the commit of the events it came from', async () => {
    const file = sqliteStore({ path: join(scratch, 'twice.db') });
    const calls: string[] = [];
    // A batch per outcome; the commit of the first lookup's round fails after the lookup ran.
    await expect(lookupLoop(flaky(file, 1), calls, 1).run({ goal: 'Read', runId: 'r' })).rejects.toThrow(
      'SQLITE_IOERR',
    );
    expect(await file.readLearning('["orders",null]')).toBeNull();
    await freeLease(file, 'r');
    const resumed = await lookupLoop(file, calls, 1).resume('r');
    expect(resumed.stopReason).toBe('completed');
    // The lookup of O-7 ran twice (the journal lost the first), and counts once.
    expect(calls).toEqual(['O-7', 'O-7', 'O-8']);
    const record = await stored(file);
    expect(record.tools.lookup?.successes).toBeCloseTo(2, 6);
    expect(record.tasks.main?.passes).toBeCloseTo(1, 6);
  });

  it('writes the committed outcomes when the drive ends on a store error, short of a full batch', async () => {
    const file = sqliteStore({ path: join(scratch, 'lost.db') });
    const calls: string[] = [];
    // The second round's commit fails; the first round's lookup was committed.
    await expect(lookupLoop(flaky(file, 2), calls, 20).run({ goal: 'Read', runId: 'r' })).rejects.toThrow(
      'SQLITE_IOERR',
    );
    expect((await stored(file)).tools.lookup?.successes).toBeCloseTo(1, 6);
    await freeLease(file, 'r');
    const resumed = await lookupLoop(file, calls, 20).resume('r');
    expect(resumed.stopReason).toBe('completed');
    expect(calls).toEqual(['O-7', 'O-8', 'O-8']);
    const record = await stored(file);
    expect(record.tools.lookup?.successes).toBeCloseTo(2, 6);
    expect(record.tasks.main?.passes).toBeCloseTo(1, 6);
  });
});
