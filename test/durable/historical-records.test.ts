/**
 * Records written by schema version 1, kept as they were written (never regenerated): this loopstate must
 * still read them and continue the run. A run that stopped for approval after a lookup (with a snapshot).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type LoopLimits, type Store, type StoreRow } from 'loopstate';
import { reply, scriptedModel, virtualClock } from 'loopstate/testing';
import { refundTool } from '../support/refund-tool.js';
import { RECORD_SCHEMA_VERSION } from '../../src/engine/durable/records.js';

const fixture = JSON.parse(
  readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'records-v1.json'), 'utf8'),
) as { run: string; snapshot: StoreRow; journal: StoreRow[] };

async function loadFixture(): Promise<Store> {
  const store = memoryStore();
  const lease = { owner: 'fixture-loader', until: Date.now() + 60_000 };
  await store.createRun('fixture-v1', fixture.run, lease);
  await store.append('fixture-v1', fixture.journal, lease);
  await store.writeSnapshot('fixture-v1', fixture.snapshot, lease);
  await store.releaseLease('fixture-v1', lease.owner);
  return store;
}

function fixtureLoop(store: Store, refunds: string[], limits?: Partial<LoopLimits>) {
  const refund = refundTool(refunds);
  const lookup = defineTool({
    name: 'lookup',
    description: 'Read an order.',
    input: z.object({ order_id: z.string() }),
    access: 'read',
    execute: () => {
      throw new Error('a completed lookup must not run again');
    },
  });
  return createLoop({
    model: scriptedModel([reply('Refunded O-7.')]),
    tools: [lookup, refund],
    clock: virtualClock(),
    store,
    ...(limits === undefined ? {} : { limits }),
  });
}

describe('schema version 1 records', () => {
  it('are read back and the run continues from its approval', async () => {
    const store = await loadFixture();
    const refunds: string[] = [];
    const loop = fixtureLoop(store, refunds);
    const waiting = await loop.resume('fixture-v1');
    expect(waiting.pendingApprovals.map(({ callId, tool }) => ({ callId, tool }))).toEqual([
      { callId: 'call_1_0', tool: 'refund' },
    ]);
    const done = await loop.resume('fixture-v1', { approvals: { call_1_0: { approve: true } } });
    expect(done.stopReason).toBe('completed');
    expect(refunds).toEqual(['O-7']);
    expect(done.usage.modelCalls).toBe(3);
    expect(done.messages.filter((message) => message.role === 'tool').map((message) => message.content)).toEqual([
      '{"order_id":"O-7","total":40}',
      '{"refunded":"O-7"}',
    ]);
  });

  it("have no limits on record: the resuming loop's apply to the whole run (not its snapshot's), recorded from then on", async () => {
    const store = await loadFixture();
    const refunds: string[] = [];
    // The snapshot was taken with maxSteps 10. The decision that stopped the run was its second: at
    // maxSteps 2 it is the last, so its approved call is not run either.
    const done = await fixtureLoop(store, refunds, { maxSteps: 2 }).resume('fixture-v1', {
      approvals: { call_1_0: { approve: true } },
    });
    expect(done.stopReason, done.detail).toBe('max_steps');
    expect(done.steps).toBe(2);
    expect(refunds).toEqual([]);
    const record = JSON.parse((await store.readRun('fixture-v1'))!.body) as {
      schemaVersion: number;
      limits?: Record<string, number | null>;
    };
    expect(record.schemaVersion).toBe(RECORD_SCHEMA_VERSION);
    expect(record.limits).toMatchObject({ maxSteps: 2 });
  });
});
