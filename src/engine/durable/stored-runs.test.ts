import { describe, expect, it } from 'vitest';
import { createLoop, memoryStore, type Store } from 'loopstate';
import { scriptedModel, reply, toolCall } from 'loopstate/testing';
import { refundTool } from '../../../test/support/refund-tool.js';
import { listStoredRuns, storedRunOf } from './stored-runs.js';

/** A store with `waiting` runs stopped for approval and `done` runs that completed, ids interleaved. */
async function storeWithRuns(waiting: number, done: number): Promise<Store> {
  const store = memoryStore();
  const refunds: string[] = [];
  for (let index = 0; index < Math.max(waiting, done); index++) {
    if (index < waiting) {
      const loop = createLoop({
        model: scriptedModel([toolCall('refund', { order_id: `O-${index}` })]),
        tools: [refundTool(refunds)],
        store,
      });
      await loop.run({ goal: 'refund', runId: `run-${String(index).padStart(3, '0')}-a` });
    }
    if (index < done) {
      const loop = createLoop({ model: scriptedModel([reply('done')]), store });
      await loop.run({ goal: 'answer', runId: `run-${String(index).padStart(3, '0')}-b` });
    }
  }
  return store;
}

describe('listStoredRuns', () => {
  it('summarises each run from its record: status, stop reason, pending calls, goal', async () => {
    const store = await storeWithRuns(1, 1);
    const { runs, unreadable, next } = await listStoredRuns(store);
    expect(unreadable).toEqual([]);
    expect(next).toBeNull();
    expect(runs).toMatchObject([
      {
        runId: 'run-000-a',
        status: 'needs_human',
        state: 'waiting',
        stopReason: 'needs_human',
        goal: 'refund',
        pendingReview: null,
      },
      { runId: 'run-000-b', status: 'succeeded', state: 'finished', stopReason: 'completed', pendingApprovals: [] },
    ]);
    expect(runs[0]!.pendingApprovals).toMatchObject([{ tool: 'refund', args: { order_id: 'O-0' } }]);
    expect(runs[1]!.finishedAt).toEqual(expect.any(Number));
  });

  it('filters by status across store pages, and pages on with next', async () => {
    // 250 runs of each kind: more than one scan page of the store for the filter.
    const store = await storeWithRuns(250, 250);
    const first = await listStoredRuns(store, { status: 'needs_human', limit: 200 });
    expect(first.runs).toHaveLength(200);
    expect(first.runs.every((run) => run.status === 'needs_human')).toBe(true);
    expect(first.next).toBe('run-199-a');
    const rest = await listStoredRuns(store, { status: 'needs_human', limit: 200, after: first.next! });
    expect(rest.runs.map((run) => run.runId)).toEqual(Array.from({ length: 50 }, (_, index) => `run-${200 + index}-a`));
    expect(rest.next).toBeNull();
    const unfiltered = await listStoredRuns(store, { limit: 3 });
    expect(unfiltered.runs.map((run) => run.runId)).toEqual(['run-000-a', 'run-000-b', 'run-001-a']);
    expect(unfiltered.next).toBe('run-001-a');
  }, 60_000);

  it('lists a run whose record is corrupt under unreadable, with the others intact', async () => {
    const store = await storeWithRuns(1, 1);
    await store.createRun('run-broken', '{"schemaVersion":3,"kind":"run"', { owner: 'x', until: 0 });
    const { runs, unreadable } = await listStoredRuns(store);
    expect(runs.map((run) => run.runId)).toEqual(['run-000-a', 'run-000-b']);
    expect(unreadable).toEqual([{ runId: 'run-broken', problem: expect.stringContaining('not valid JSON') }]);
    expect(() => storedRunOf({ runId: 'run-broken', body: '{}', finishedAt: null })).toThrow(/not a valid record/);
  });

  it('says so for a store without listRuns', async () => {
    const { listRuns: _listRuns, ...withoutList } = memoryStore();
    await expect(listStoredRuns(withoutList as Store)).rejects.toMatchObject({ code: 'store_cannot_list' });
  });
});
