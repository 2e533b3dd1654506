import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop } from '../loop.js';
import { memoryStore } from '../store/memory-store.js';
import { sqliteStore } from '../../adapters/sqlite/sqlite-store.js';
import type { Store } from '../../contracts/store.js';
import { reply, scriptedModel, toolCall } from '../../testing/index.js';
import { virtualClock } from '../../testing/virtual-clock.js';
import { defineTool } from '../tools/define-tool.js';
import { RunAccessError } from './durable-errors.js';
import { spawnSync } from 'node:child_process';
import { deadOwner, describeLeaseHolder, leaseOwnerPrefix, newLeaseOwner } from './lease-owner.js';

const folder = mkdtempSync(join(tmpdir(), 'loopstate-lease-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('describeLeaseHolder', () => {
  it('names the process, the host, the owner id and until when the lease holds', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(describeLeaseHolder('web-1:4242:1a2b3c4d', now + 30_000, now)).toBe(
      'held by process 4242 on web-1 (lease owner "web-1:4242:1a2b3c4d") until 2026-01-01T00:00:30.000Z, 30 s from now',
    );
    expect(describeLeaseHolder('worker-7', now - 5_000, now)).toBe(
      'held by lease owner "worker-7" until 2025-12-31T23:59:55.000Z, 5 s ago',
    );
    expect(describeLeaseHolder(null, 0, now)).toBe('its holder released the lease while this call tried to take it');
  });
});

describe('deadOwner, from the runtime probe', () => {
  it("judges a finished process of this host dead, and a live one, another host's or this process's own live owner not", () => {
    const finished = spawnSync(process.execPath, ['-e', '']).pid!;
    expect(deadOwner(`${hostname()}:${finished}:0a1b2c3d`)).toBe(`${hostname()}:${finished}:0a1b2c3d`);
    expect(deadOwner(`${hostname()}:${process.ppid}:0a1b2c3d`)).toBeUndefined();
    expect(deadOwner(`elsewhere-${hostname()}:${finished}:0a1b2c3d`)).toBeUndefined();
    expect(deadOwner(newLeaseOwner())).toBeUndefined();
    expect(newLeaseOwner()).toMatch(
      new RegExp(`^${hostname().replace(/[.]/g, '\\.')}:${process.pid}:[0-9a-f]{8}\\.[0-9a-f]{8}$`),
    );
    // Every owner of this process starts with its prefix (a reaper frees a dead worker's leases by it).
    expect(newLeaseOwner().startsWith(leaseOwnerPrefix())).toBe(true);
    expect(newLeaseOwner()).not.toBe(newLeaseOwner());
  });
});

/** A loop that stops for approval of a destructive refund. */
function refundLoop(store: Store) {
  const refund = defineTool({
    name: 'refund',
    description: 'Refund an order.',
    input: z.object({ order_id: z.string() }),
    access: 'destructive',
    execute: ({ order_id }) => ({ refunded: order_id }),
  });
  return createLoop({
    model: scriptedModel([toolCall('refund', { order_id: 'O-7' }), reply('Refunded O-7.')]),
    tools: [refund],
    clock: virtualClock(),
    store,
  });
}

describe('run_busy names who holds the run', () => {
  it.each([
    ['memory', () => memoryStore()],
    ['SQLite file', () => sqliteStore({ path: join(folder, 'runs.db') })],
  ])(
    'the loser of two racing resumes (%s store) learns the holder and its lease expiry, never "(unknown)"',
    async (_name, makeStore) => {
      const store = makeStore();
      const loop = refundLoop(store);
      const stopped = await loop.run({ goal: 'Refund O-7', runId: 'race' });
      const approvals = { [stopped.pendingApprovals[0]!.callId]: { approve: true as const } };
      const outcomes = await Promise.allSettled([
        loop.resume('race', { approvals }),
        loop.resume('race', { approvals }),
      ]);
      const busy = outcomes.flatMap((outcome) =>
        outcome.status === 'rejected' && outcome.reason instanceof RunAccessError && outcome.reason.code === 'run_busy'
          ? [outcome.reason]
          : [],
      );
      expect(busy).toHaveLength(1);
      expect(busy[0]?.message).toMatch(
        new RegExp(
          `^run race is being driven by another resume or process: held by process ${process.pid} on ${hostname().replace(/[.]/g, '\\.')} \\(lease owner "[^"]+"\\) until \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z, \\d+ s from now; try again when it stops or its lease expires$`,
        ),
      );
      expect(busy[0]?.message).not.toContain('unknown');
      await (store as { close?: () => Promise<void> }).close?.();
    },
  );
});
