/**
 * A store that fails a journal write in the middle of an effect (a model response or a tool intent that
 * could not be recorded): the effect would have seen it as the model's or the tool's failure. It must
 * not: the run rejects with the store's error, nothing misattributed is journalled, and a resume once
 * the store is back gives the result of a run that never met the failure, with every completed call
 * made once.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type Model, type Store } from '../../src/index.js';
import { virtualClock } from '../../src/testing/index.js';
import { freeLease } from './dead-owner.js';

/** The store, failing once the `nth` append of a record of `kind` (1-based). */
function flaky(store: Store, kind: string, nth: number): Store {
  let seen = 0;
  return {
    ...store,
    append: (...args) => {
      if (args[1].some((row) => row.kind === kind) && ++seen === nth) return Promise.reject(new Error('SQLITE_IOERR: disk I/O error'));
      return store.append(...args);
    },
  };
}

function refundLoop(store: Store, calls: string[]) {
  const lookup = defineTool({
    name: 'lookup', description: 'Read an order', input: z.object({ id: z.string() }), access: 'read', idempotent: true,
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
      return { text: null, toolCalls: [{ id: `c${given}`, name: 'lookup', arguments: JSON.stringify({ id: given === 0 ? 'O-7' : 'O-8' }) }], usage };
    },
  };
  return createLoop({ model, tools: [lookup], store, clock: virtualClock() });
}

describe('a journal write that fails inside an effect', () => {
  it.each([
    ['the first tool intent (the lookup never ran)', 'intent', 1, { lookups: ['lookup:O-7', 'lookup:O-8'], modelCalls: 3 }],
    ['the second model response (the model was called; it is asked again)', 'model', 2, { lookups: ['lookup:O-7', 'lookup:O-8'], modelCalls: 4 }],
    ['the first tool result (the lookup ran; an idempotent tool runs again under its key)', 'tool-result', 1, { lookups: ['lookup:O-7', 'lookup:O-7', 'lookup:O-8'], modelCalls: 3 }],
  ] as const)('%s: run() rejects with the store error, and resume gives the uninterrupted result', async (_name, kind, nth, expected) => {
    const plain: string[] = [];
    const uninterrupted = await refundLoop(memoryStore(), plain).run({ goal: 'Read O-7 and O-8', runId: 'r' });

    const shared = memoryStore();
    const calls: string[] = [];
    await expect(refundLoop(flaky(shared, kind, nth), calls).run({ goal: 'Read O-7 and O-8', runId: 'r' })).rejects.toThrow('SQLITE_IOERR: disk I/O error');
    // Nothing in the journal calls the lookup failed.
    const journal = (await shared.readJournal('r', 0)).map((row) => row.body).join('\n');
    expect(journal).not.toContain('disk I/O error');
    expect(journal).not.toMatch(/Tool lookup failed/);

    await freeLease(shared, 'r');
    const resumed = await refundLoop(shared, calls).resume('r');
    expect(resumed.stopReason).toBe('completed');
    expect(resumed.output).toEqual(uninterrupted.output);
    expect(resumed.messages).toEqual(uninterrupted.messages);
    expect(resumed.usage.toolCalls).toBe(uninterrupted.usage.toolCalls);
    expect(calls.filter((call) => call.startsWith('lookup:'))).toEqual(expected.lookups);
    expect(calls.filter((call) => call === 'model').length).toBe(expected.modelCalls);
  });
});
