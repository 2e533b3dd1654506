/**
 * Records written by schema version 1, kept as they were written (never regenerated): this loopstate must
 * still read them and continue the run. A run that stopped for approval after a lookup (with a snapshot).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type StoreRow } from '../../src/index.js';
import { reply, scriptedModel, virtualClock } from '../../src/testing/index.js';

const fixture = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'records-v1.json'), 'utf8')) as { run: string; snapshot: StoreRow; journal: StoreRow[] };

describe('schema version 1 records', () => {
  it('are read back and the run continues from its approval', async () => {
    const store = memoryStore();
    const lease = { owner: 'fixture-loader', until: Date.now() + 60_000 };
    await store.createRun('fixture-v1', fixture.run, lease);
    await store.append('fixture-v1', fixture.journal, lease);
    await store.writeSnapshot('fixture-v1', fixture.snapshot, lease);
    await store.releaseLease('fixture-v1', lease.owner);
    const refunds: string[] = [];
    const refund = defineTool({ name: 'refund', description: 'Refund an order.', input: z.object({ order_id: z.string() }), access: 'destructive', execute: ({ order_id }) => { refunds.push(order_id); return { refunded: order_id }; } });
    const lookup = defineTool({ name: 'lookup', description: 'Read an order.', input: z.object({ order_id: z.string() }), access: 'read', execute: () => { throw new Error('a completed lookup must not run again'); } });
    const loop = createLoop({ model: scriptedModel([reply('Refunded O-7.')]), tools: [lookup, refund], clock: virtualClock(), store });
    const waiting = await loop.resume('fixture-v1');
    expect(waiting.pendingApprovals.map(({ callId, tool }) => ({ callId, tool }))).toEqual([{ callId: 'call_1_0', tool: 'refund' }]);
    const done = await loop.resume('fixture-v1', { approvals: { call_1_0: { approve: true } } });
    expect(done.stopReason).toBe('completed');
    expect(refunds).toEqual(['O-7']);
    expect(done.usage.modelCalls).toBe(3);
    expect(done.messages.filter((message) => message.role === 'tool').map((message) => message.content)).toEqual(['{"order_id":"O-7","total":40}', '{"refunded":"O-7"}']);
  });
});
