/**
 * Ids are whatever the model, the caller or the user chose, so ids that name `Object.prototype` members
 * (`constructor`, `__proto__`, `toString`, `hasOwnProperty`) must work like any other: a call id's
 * approval is neither taken for granted nor lost, a run id's tenant hold is kept and settled, and every
 * record keyed by id reads back whole, in memory and in a SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApprovalError, createLoop, defineTool, memoryStore, readTenantLedger, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';
import { refundTool } from '../support/refund-tool.js';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-prototype-ids-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty'] as const;
const STORES: readonly [string, (name: string) => Store][] = [
  ['memoryStore', () => memoryStore()],
  ['sqliteStore', (name) => sqliteStore({ path: join(scratch, `${name}.db`) })],
];

function refundLoop(
  store: Store,
  callId: string,
  tenant?: { id: string; maxInputTokens: number },
  script = [toolCall('refund', { order_id: 'O-7' }, { id: callId }), reply('Done.')],
) {
  const refunds: string[] = [];
  const refund = refundTool(refunds);
  const model = scriptedModel(script);
  return {
    loop: createLoop({
      model,
      tools: [refund],
      clock: virtualClock(),
      store,
      ...(tenant === undefined ? {} : { tenant }),
    }),
    refunds,
    model,
  };
}

const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    (result) => `resolved: ${(result as { stopReason: string }).stopReason}`,
    (error: unknown) => (error instanceof ApprovalError ? error.code : String(error)),
  );

describe.each(STORES)('ids that name Object.prototype members, on %s', (_storeName, makeStore) => {
  it.each(PROTOTYPE_NAMES)(
    '%s: no decision is taken for granted; an approval from a JSON body runs the call once',
    async (callId) => {
      const store = makeStore(`approve-${callId}`);
      const { loop, refunds, model } = refundLoop(store, callId);
      const stopped = await loop.run({ goal: 'Refund O-7', runId: 'r' });
      expect(stopped.pendingApprovals.map((approval) => approval.callId)).toEqual([callId]);
      // Nobody decided on it: refused, and nothing changed.
      expect(await codeOf(loop.resume('r', { approvals: {} }))).toBe('approvals_incomplete');
      expect(await codeOf(loop.resume('r', { approvals: { other: { approve: true } } }))).toBe('approval_unknown_call');
      expect(refunds).toEqual([]);
      // As an HTTP approval endpoint receives it: JSON.parse makes `__proto__` an own key.
      const approvals = JSON.parse(`{${JSON.stringify(callId)}: {"approve": true}}`) as Record<
        string,
        { approve: true }
      >;
      const done = await loop.resume('r', { approvals });
      expect(done.stopReason, done.detail).toBe('completed');
      expect(refunds).toEqual(['O-7']);
      expect(model.calls.at(-1)?.messages.at(-1)).toEqual({
        role: 'tool',
        toolCallId: callId,
        content: '{"refunded":"O-7"}',
      });
      expect(done.trace.filter((event) => event.type === 'approval-decided')).toEqual([
        expect.objectContaining({ callId, approved: true, reason: null }),
      ]);
      // The decision is in the journal under its id: the same request again is a retry.
      expect((await loop.resume('r', { approvals })).stopReason).toBe('completed');
      expect(refunds).toEqual(['O-7']);
      await store.close();
    },
  );

  it.each(PROTOTYPE_NAMES)('%s: a rejection reaches the model with its reason', async (callId) => {
    const store = makeStore(`reject-${callId}`);
    const { loop, refunds, model } = refundLoop(store, callId);
    await loop.run({ goal: 'Refund O-7', runId: 'r' });
    const done = await loop.resume('r', {
      approvals: { [callId]: { approve: false, reason: 'over the refund limit' } },
    });
    expect(done.stopReason).toBe('completed');
    expect(refunds).toEqual([]);
    expect(model.calls.at(-1)?.messages.at(-1)).toEqual({
      role: 'tool',
      toolCallId: callId,
      content: 'Not executed: a person rejected this call of refund. Their reason: over the refund limit',
    });
    await store.close();
  });

  it('run ids: each run holds its tenant share under its own id until it finishes', async () => {
    const store = makeStore('tenant');
    const tenant = { id: 'acme', maxInputTokens: 1_000_000 };
    for (const runId of PROTOTYPE_NAMES)
      expect((await refundLoop(store, 'call_1', tenant).loop.run({ goal: 'Refund O-7', runId })).stopReason).toBe(
        'needs_human',
      );
    const holding = await readTenantLedger(store, 'acme');
    expect(Object.keys(holding?.holds ?? {}).sort()).toEqual([...PROTOTYPE_NAMES].sort());
    for (const runId of PROTOTYPE_NAMES) expect(Object.hasOwn(holding!.holds, runId)).toBe(true);
    let spent = 0;
    for (const runId of PROTOTYPE_NAMES) {
      const done = await refundLoop(store, 'call_1', tenant, [reply('Done.')]).loop.resume(runId, {
        approvals: { call_1: { approve: true } },
      });
      expect(done.stopReason, `${runId}: ${done.detail}`).toBe('completed');
      spent += done.usage.inputTokens;
    }
    const settled = await readTenantLedger(store, 'acme');
    expect(Object.keys(settled?.holds ?? {})).toEqual([]);
    expect(settled?.spent.inputTokens).toBe(spent);
    await store.close();
  });

  it('tool names: a tool named __proto__ keeps its open circuit across a stop for approval', async () => {
    const store = makeStore('tool-name');
    let attempts = 0;
    const flaky = defineTool({
      name: '__proto__',
      description: 'Always down.',
      input: z.object({ n: z.number() }),
      access: 'read',
      execute: () => {
        attempts++;
        throw new Error('service down');
      },
    });
    const refund = defineTool({
      name: 'refund',
      description: 'Refund an order.',
      input: z.object({ order_id: z.string() }),
      access: 'destructive',
      execute: () => 'refunded',
    });
    const make = (script: Parameters<typeof scriptedModel>[0]) =>
      createLoop({ model: scriptedModel(script), tools: [flaky, refund], clock: virtualClock(), store });
    const stopped = await make(
      [1, 2, 3]
        .map((n) => toolCall('__proto__', { n }))
        .concat(toolCall('refund', { order_id: 'O-7' }, { id: 'call_r' })),
    ).run({ goal: 'Try, then refund', runId: 'r' });
    expect(stopped.stopReason).toBe('needs_human');
    expect(attempts).toBe(3);
    // Its three failures in a row opened its circuit; the resumed run still knows, and withholds it.
    const done = await make([toolCall('__proto__', { n: 4 })]).resume('r', {
      approvals: { call_r: { approve: true } },
    });
    expect(done.stopReason, done.detail).toBe('tool_unavailable');
    expect(done.detail).toMatch(/"__proto__".*circuit breaker open/);
    expect(attempts).toBe(3);
    await store.close();
  });
});
