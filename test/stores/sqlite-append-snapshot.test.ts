/**
 * sqliteStore's `append` takes the snapshot the journal has waiting (`Store.append`'s `snapshot`) and writes it in
 * the rows' transaction: both are durable or neither is, so a snapshot is never durable without the events it covers.
 * A store that does not (memoryStore) resolves without `snapshotWritten`, and the journal gives it with `writeSnapshot`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { memoryStore, StoreConflictError, type StoreRow } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-append-snapshot-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let files = 0;
const lease = { owner: 'owner-a', until: Date.now() + 60_000 };
const event = (seq: number): StoreRow => ({ seq, kind: 'event', body: JSON.stringify({ seq, text: 'x'.repeat(300) }) });
const snapshot = (seq: number): StoreRow => ({ seq, kind: 'snapshot', body: JSON.stringify({ at: seq }) });

async function storeWithRun(durability?: 'full') {
  const store = sqliteStore({ path: join(scratch, `append-${files++}.db`), ...(durability ? { durability } : {}) });
  expect(await store.createRun('r', '{}', lease)).toBe(true);
  return store;
}

describe('sqliteStore append with a snapshot', () => {
  it.each([['normal'], ['full']] as const)(
    'writes it with the rows and says so (durability %s); without one, the control alone',
    async (durability) => {
      const store = await storeWithRun(durability === 'full' ? 'full' : undefined);
      try {
        expect(await store.append('r', [event(1), event(2)], lease)).toEqual({ paused: null, cancelRequested: false });
        expect(await store.latestSnapshot('r')).toBeNull();
        expect(await store.append('r', [event(3), event(4)], lease, undefined, undefined, snapshot(4))).toEqual({
          paused: null,
          cancelRequested: false,
          snapshotWritten: true,
        });
        expect(await store.latestSnapshot('r')).toEqual(snapshot(4));
        expect((await store.readJournal('r', 0)).map((row) => row.seq)).toEqual([1, 2, 3, 4]);
        // With the run's body too (the path that checks the lease by writing it).
        await store.append('r', [event(5)], lease, '{"state":"running"}', undefined, snapshot(5));
        expect(await store.latestSnapshot('r')).toEqual(snapshot(5));
      } finally {
        await store.close();
      }
    },
  );

  it('writes neither the rows nor the snapshot when the lease is lost', async () => {
    const store = await storeWithRun();
    try {
      await store.append('r', [event(1)], lease, undefined, undefined, snapshot(1));
      const other = { owner: 'owner-b', until: Date.now() + 60_000 };
      await expect(store.append('r', [event(2)], other, undefined, undefined, snapshot(2))).rejects.toBeInstanceOf(
        StoreConflictError,
      );
      expect(await store.latestSnapshot('r')).toEqual(snapshot(1));
      expect((await store.readJournal('r', 0)).map((row) => row.seq)).toEqual([1]);
    } finally {
      await store.close();
    }
  });

  it('writes no snapshot when a row of its append is refused (a seq taken): the append is one transaction', async () => {
    const store = await storeWithRun();
    try {
      await store.append('r', [event(1), event(2)], lease);
      await expect(store.append('r', [event(3), event(2)], lease, undefined, undefined, snapshot(3))).rejects.toThrow(
        'already has a journal record at seq 2',
      );
      expect(await store.latestSnapshot('r')).toBeNull();
      expect((await store.readJournal('r', 0)).map((row) => row.seq)).toEqual([1, 2]);
    } finally {
      await store.close();
    }
  });

  it('keeps a newer snapshot over an older one given later, as writeSnapshot does', async () => {
    const store = await storeWithRun();
    try {
      await store.append('r', [event(1), event(2), event(3)], lease, undefined, undefined, snapshot(3));
      await store.append('r', [event(4)], lease, undefined, undefined, snapshot(2));
      expect(await store.latestSnapshot('r')).toEqual(snapshot(3));
    } finally {
      await store.close();
    }
  });

  it('memoryStore takes no snapshot with an append: it resolves without snapshotWritten and writes none', async () => {
    const store = memoryStore();
    expect(await store.createRun('r', '{}', lease)).toBe(true);
    const outcome = await store.append('r', [event(1)], lease, undefined, undefined, snapshot(1));
    expect(outcome?.snapshotWritten).toBeUndefined();
    expect(await store.latestSnapshot('r')).toBeNull();
  });
});
