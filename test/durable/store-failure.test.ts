/**
 * A store that fails a journal write in the middle of an effect (a tool intent that could not be
 * recorded) or between effects (a step's commit before the next model call): the effect would have seen
 * the first as the tool's failure. It must not: the run rejects with the store's error, nothing
 * misattributed is journalled, and a resume once the store is back gives the result of a run that never
 * met the failure, with every call whose outcome was committed made once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, RunAccessError, type Model, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';

/** The store, failing once the `nth` append of a record of `kind` (1-based). */
function flaky(store: Store, kind: string, nth: number): Store {
  let seen = 0;
  return {
    ...store,
    append: (...args) => {
      if (args[1].some((row) => row.kind === kind) && ++seen === nth)
        return Promise.reject(new Error('SQLITE_IOERR: disk I/O error'));
      return store.append(...args);
    },
  };
}

/**
 * The store, its disk full from the `nth` append of a record of `kind` on: every write fails (freeing a
 * lease too) until `recover()`.
 */
function fillingDisk(store: Store, kind: string, nth: number): { store: Store; recover(): void } {
  let seen = 0;
  let full = false;
  const diskFull = () => Promise.reject(new Error('SQLITE_FULL: database or disk is full'));
  const write =
    <Args extends unknown[], Result>(method: (...args: Args) => Promise<Result>) =>
    (...args: Args): Promise<Result> =>
      full ? diskFull() : method(...args);
  return {
    store: {
      ...store,
      append: (...args) => {
        if (!full && args[1].some((row) => row.kind === kind) && ++seen === nth) full = true;
        return full ? diskFull() : store.append(...args);
      },
      writeSnapshot: write(store.writeSnapshot.bind(store)),
      acquireLease: write(store.acquireLease.bind(store)),
      releaseLease: write(store.releaseLease.bind(store)),
      requestCancel: write(store.requestCancel.bind(store)),
    },
    recover: () => {
      full = false;
    },
  };
}

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-store-failure-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** `idempotent: false`: the lookup is treated as a write (its intent is committed before it runs). */
function refundLoop(store: Store, calls: string[], idempotent = true) {
  const lookup = defineTool({
    name: 'lookup',
    description: 'Read an order',
    input: z.object({ id: z.string() }),
    access: idempotent ? 'read' : 'write',
    idempotent,
    execute: async ({ id }) => {
      calls.push(`lookup:${id}`);
      return { id, total: 40 };
    },
  });
  // Indexed by the replies already given, as a provider answers the same conversation the same way.
  const model: Model = {
    id: 'script',
    generate: async ({ messages }) => {
      calls.push('model');
      const usage = { inputTokens: 10, outputTokens: 5 };
      const given = messages.filter((message) => message.role === 'assistant').length;
      if (given >= 2) return { text: 'both read', toolCalls: [], usage };
      return {
        text: null,
        toolCalls: [
          { id: `c${given}`, name: 'lookup', arguments: JSON.stringify({ id: given === 0 ? 'O-7' : 'O-8' }) },
        ],
        usage,
      };
    },
  };
  return createLoop({
    model,
    tools: [lookup],
    store,
    clock: virtualClock(),
    // A commit before every model call (not grouped across steps): the commits the cases fail are those.
    durable: { maxUncommittedSteps: 1 },
    ...(idempotent ? {} : { policy: { allow: ['read', 'write'] as const } }),
  });
}

describe('a journal write that fails inside an effect or between effects', () => {
  it.each([
    [
      'the first tool intent, with the reply it is committed with (the tool never ran; the model is asked again)',
      'intent',
      1,
      false,
      { lookups: ['lookup:O-7', 'lookup:O-8'], modelCalls: 4 },
    ],
    [
      'the second tool intent (the first step is committed; the second reply is asked again)',
      'intent',
      2,
      false,
      { lookups: ['lookup:O-7', 'lookup:O-8'], modelCalls: 4 },
    ],
    [
      'the first step of idempotent lookups, committed before the next model call (the reply is asked again, the lookup runs again under its key)',
      'event',
      2,
      true,
      { lookups: ['lookup:O-7', 'lookup:O-7', 'lookup:O-8'], modelCalls: 4 },
    ],
  ] as const)(
    '%s: run() rejects with the store error, and resume gives the uninterrupted result',
    async (_name, kind, nth, idempotent, expected) => {
      const plain: string[] = [];
      const uninterrupted = await refundLoop(memoryStore(), plain, idempotent).run({
        goal: 'Read O-7 and O-8',
        runId: 'r',
      });

      const shared = memoryStore();
      const calls: string[] = [];
      await expect(
        refundLoop(flaky(shared, kind, nth), calls, idempotent).run({ goal: 'Read O-7 and O-8', runId: 'r' }),
      ).rejects.toThrow('SQLITE_IOERR: disk I/O error');
      // Nothing in the journal calls the lookup failed.
      const journal = (await shared.readJournal('r', 0)).map((row) => row.body).join('\n');
      expect(journal).not.toContain('disk I/O error');
      expect(journal).not.toMatch(/Tool lookup failed/);

      await freeLease(shared, 'r');
      const resumed = await refundLoop(shared, calls, idempotent).resume('r');
      expect(resumed.stopReason).toBe('completed');
      expect(resumed.output).toEqual(uninterrupted.output);
      expect(resumed.messages).toEqual(uninterrupted.messages);
      expect(resumed.usage).toEqual(uninterrupted.usage);
      expect(calls.filter((call) => call.startsWith('lookup:'))).toEqual(expected.lookups);
      expect(calls.filter((call) => call === 'model').length).toBe(expected.modelCalls);
    },
  );
});

describe('a disk that fills up mid-run and is freed again', () => {
  it('leaves no lease in the way: a resume from the same process goes on at once, not run_busy', async () => {
    const file = sqliteStore({ path: join(scratch, 'full.db') });
    // The disk fills at the second commit of an event: the first step's, before the second model call.
    const disk = fillingDisk(file, 'event', 2);
    const calls: string[] = [];
    await expect(refundLoop(disk.store, calls).run({ goal: 'Read O-7 and O-8', runId: 'r' })).rejects.toThrow(
      'SQLITE_FULL',
    );
    // The lease could not be freed while the disk was full: it is still written down as held.
    expect((await file.readRun('r'))?.leaseOwner).not.toBeNull();
    disk.recover();
    // Right away: no clock advance, the lease is nowhere near its expiry.
    const resumed = await refundLoop(disk.store, calls)
      .resume('r')
      .catch((error: unknown) => (error instanceof RunAccessError ? error.code : error));
    expect(resumed).toMatchObject({ stopReason: 'completed' });
    expect((await file.readRun('r'))?.leaseOwner).toBeNull();
    await file.close();
  });

  it('still keeps out a resume while the run is being driven', async () => {
    const store = memoryStore();
    let release: () => void = () => undefined;
    const hanging = new Promise<void>((resolve) => (release = resolve));
    const slow = defineTool({
      name: 'lookup',
      description: 'Read an order',
      input: z.object({ id: z.string() }),
      access: 'read',
      execute: async () => {
        await hanging;
        return 'ok';
      },
    });
    const model: Model = {
      id: 'script',
      generate: async ({ messages }) => ({
        text: messages.some((message) => message.role === 'tool') ? 'done' : null,
        toolCalls: messages.some((message) => message.role === 'tool')
          ? []
          : [{ id: 'c0', name: 'lookup', arguments: '{"id":"O-7"}' }],
        usage: { inputTokens: 1, outputTokens: 1 },
      }),
    };
    const make = () => createLoop({ model, tools: [slow], store, clock: virtualClock() });
    const running = make().run({ goal: 'Read O-7', runId: 'busy' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await expect(make().resume('busy')).rejects.toMatchObject({ code: 'run_busy' });
    release();
    expect((await running).stopReason).toBe('completed');
  });
});
