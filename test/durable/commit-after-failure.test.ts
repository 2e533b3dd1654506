/**
 * After a commit fails, the journal appends no intent (its tool would run with an outcome that could not be kept),
 * but it keeps the outcome of a call already running, whose intent was durable before the failure: a resume serves
 * that outcome instead of finding an intent without one.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type Model, type Store } from 'loopstate';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';

/** The store, its first append of a tool's outcome failing (a connection reset). */
function failFirstOutcomeAppend(store: Store): { store: Store; failed: number[] } {
  const failed: number[] = [];
  return {
    failed,
    store: {
      ...store,
      append: (...args) => {
        if (failed.length === 0 && args[1].some((row) => row.kind === 'tool-result')) {
          failed.push(args[1][0]!.seq);
          return Promise.reject(new Error('connection reset by peer'));
        }
        return store.append(...args);
      },
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One reply asks for three calls at once: A (a write with a lookup), B (a write without one), C (a slow read). */
function parallelWritesLoop(store: Store, made: string[]) {
  const usage = { inputTokens: 1, outputTokens: 1 };
  const model: Model = {
    id: 'script',
    generate: async ({ messages }) => {
      if (messages.some((message) => message.role === 'tool')) return { text: 'done', toolCalls: [], usage };
      return {
        text: null,
        toolCalls: [
          { id: 'a', name: 'refundA', arguments: '{"id":"A"}' },
          { id: 'b', name: 'chargeB', arguments: '{"id":"B"}' },
          { id: 'c', name: 'readC', arguments: '{"id":"C"}' },
        ],
        usage,
      };
    },
  };
  const refundA = defineTool({
    name: 'refundA',
    description: 'Refund',
    input: z.object({ id: z.string() }),
    access: 'write',
    execute: async ({ id }) => {
      made.push(`A:${id}`);
      return 'refunded';
    },
    // Its lost outcome is found again on resume.
    checkOutcome: async () => ({ status: 'done', result: 'refunded' }),
  });
  const chargeB = defineTool({
    name: 'chargeB',
    description: 'Charge',
    input: z.object({ id: z.string() }),
    access: 'write',
    // Finishes after A's outcome commit failed, while C still runs: its outcome gets a commit of its own.
    execute: async ({ id }) => {
      await sleep(10);
      made.push(`B:${id}`);
      return 'charged';
    },
  });
  const readC = defineTool({
    name: 'readC',
    description: 'Read',
    input: z.object({ id: z.string() }),
    access: 'read',
    idempotent: true,
    execute: async ({ id }) => {
      await sleep(40);
      made.push(`C:${id}`);
      return 'read';
    },
  });
  return createLoop({
    model,
    tools: [refundA, chargeB, readC],
    store,
    clock: virtualClock(),
    policy: { allow: ['read', 'write'] },
    limits: { maxParallelTools: 4 },
  });
}

describe('a commit that fails in a round of parallel write calls', () => {
  it('keeps the outcome of a write that finished after it: a resume serves it and charges nothing twice', async () => {
    const store = memoryStore();
    const flaky = failFirstOutcomeAppend(store);
    const made: string[] = [];
    await expect(parallelWritesLoop(flaky.store, made).run({ goal: 'go', runId: 'r' })).rejects.toThrow(
      'connection reset by peer',
    );
    expect(flaky.failed).toHaveLength(1);
    const kinds = (await store.readJournal('r', 0)).map((row) => row.kind);
    expect(kinds.filter((kind) => kind === 'intent')).toHaveLength(2);
    // B's outcome, committed after A's failed.
    expect(kinds.filter((kind) => kind === 'tool-result')).toHaveLength(1);
    await freeLease(store, 'r');
    const resumed = await parallelWritesLoop(store, made).resume('r');
    expect(resumed.stopReason).toBe('completed');
    expect(made.filter((entry) => entry.startsWith('B:'))).toEqual(['B:B']);
    expect(made.filter((entry) => entry.startsWith('A:'))).toEqual(['A:A']);
  });
});
