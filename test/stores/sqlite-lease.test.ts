/**
 * A SQLite run's lease is kept by its writes. A journal append and a snapshot check the lease and renew it only
 * when over half of it has gone (not the runs table's page rewritten at every commit), and a run that makes no
 * I/O (a scripted model, tools that return at once) never gives the heartbeat timer a turn: its writes must keep
 * its lease, or another process could take the run over while it runs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createLoop, defineTool, type Message, type Model } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-sqlite-lease-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A `work` call a step until step `total`, then the answer: no timer, no I/O of its own. */
function model(total: number): Model {
  return {
    id: 'scripted',
    generate(request) {
      const calls = request.messages.filter((message: Message) => message.role === 'assistant').length;
      const usage = { inputTokens: 5, outputTokens: 5 };
      if (calls + 1 < total)
        return Promise.resolve({
          text: null,
          toolCalls: [{ id: `c${calls + 1}`, name: 'work', arguments: `{"n":${calls + 1}}` }],
          usage,
        });
      return Promise.resolve({ text: '{"done":true}', toolCalls: [], usage });
    },
  };
}

describe('a SQLite run that makes no I/O', () => {
  it('keeps its lease ahead of the clock at every step, renewing it far less often than it commits', async () => {
    // The wall clock is moved by the tool alone (5 ms a step, as a CPU-bound tool's work): Date only is faked, so
    // the store and the loop see the time pass exactly so, and a pause of this process under load changes nothing.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const leaseMs = 400;
      const total = 300;
      const store = sqliteStore({ path: join(scratch, 'lease.db'), foldWalWhenIdle: false });
      const behind: number[] = [];
      const leases = new Set<number>();
      let probes = 0;
      const loop = createLoop({
        model: model(total),
        tools: [
          defineTool({
            name: 'work',
            description: 'Work a while.',
            input: z.object({ n: z.number() }),
            access: 'read',
            // Works 5 ms, then reads the run's lease as the store holds it (better-sqlite3 answers at once).
            execute: async ({ n }) => {
              vi.setSystemTime(Date.now() + 5);
              const run = await store.readRun('r');
              probes++;
              leases.add(run!.leaseUntil);
              const lag = Date.now() - run!.leaseUntil;
              if (lag >= 0) behind.push(lag);
              return `done ${n}`;
            },
          }),
        ],
        limits: { maxSteps: total + 1, maxToolCalls: total },
        durable: { leaseMs },
        store,
      });
      const started = Date.now();
      const result = await loop.run({ goal: 'go', runId: 'r' });
      const took = Date.now() - started;
      await store.close();
      expect(result.stopReason).toBe('completed');
      expect(probes).toBe(total - 1);
      // The run outlasts its lease several times over (else this proves nothing), without the lease ever lapsing.
      expect(took).toBe(5 * (total - 1));
      expect(behind).toEqual([]);
      // Renewed about twice per lease (when half of it has gone), not at each of its ~600 commits.
      expect(leases.size).toBeLessThanOrEqual(Math.ceil((2 * took) / leaseMs) + 2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('renews a stale lease with a journal append or a snapshot, never shortens one, and still refuses another owner', async () => {
    const store = sqliteStore({ path: join(scratch, 'direct.db') });
    const leaseUntil = async () => (await store.readRun('a'))!.leaseUntil;
    // Created with a lease that has 1 s of 60 left: over half gone, so the next write renews it.
    await store.createRun('a', '{}', { owner: 'me', until: Date.now() + 1_000 });
    const renewed = { owner: 'me', until: Date.now() + 60_000 };
    await store.append('a', [{ seq: 1, kind: 'event', body: '{}' }], renewed);
    expect(await leaseUntil()).toBe(renewed.until);
    // Fresh: a later `until` is not written (the runs table's page is left as it is).
    await store.append('a', [{ seq: 2, kind: 'event', body: '{}' }], { owner: 'me', until: renewed.until + 5 });
    await store.writeSnapshot('a', { seq: 2, kind: 'snapshot', body: '{}' }, { owner: 'me', until: renewed.until + 9 });
    expect(await leaseUntil()).toBe(renewed.until);
    // A lease the owner took short (1 s) is renewed by a snapshot alone; a shorter `until` never replaces a longer one.
    await store.acquireLease('a', { owner: 'me', until: Date.now() + 1_000 }, Date.now());
    const bySnapshot = { owner: 'me', until: Date.now() + 60_000 };
    await store.writeSnapshot('a', { seq: 2, kind: 'snapshot', body: '{"again":true}' }, bySnapshot);
    expect(await leaseUntil()).toBe(bySnapshot.until);
    await store.append('a', [{ seq: 3, kind: 'event', body: '{}' }], { owner: 'me', until: Date.now() + 10 });
    expect(await leaseUntil()).toBe(bySnapshot.until);
    const other = { owner: 'other', until: Date.now() + 60_000 };
    await expect(store.append('a', [{ seq: 4, kind: 'event', body: '{}' }], other)).rejects.toThrow(
      /held by another owner/,
    );
    await expect(store.writeSnapshot('a', { seq: 3, kind: 'snapshot', body: '{}' }, other)).rejects.toThrow(
      /held by another owner/,
    );
    expect(await leaseUntil()).toBe(bySnapshot.until);
    expect((await store.readJournal('a', 0)).map((row) => row.seq)).toEqual([1, 2, 3]);
    await store.close();
  });
});
