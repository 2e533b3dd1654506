/**
 * The WAL fold after a run's last drive is done in a later macrotask, off any caller's path: an error thrown
 * there (the checkpoint's own are caught inside; this is anything else) must not become an uncaught exception
 * that ends the process. The run's result and the store are untouched; the next fold or SQLite's own takes the WAL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createLoop } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { reply, scriptedModel } from 'loopstate/testing';

const folds = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../src/adapters/sqlite/wal-fold.js', () => ({
  foldWal: () => {
    folds.count++;
    throw new Error('the fold failed (a test double)');
  },
}));

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-fold-error-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('an error in the deferred WAL fold', () => {
  it('is kept off the process: the run returned, the store reads and closes', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.prependListener('uncaughtException', onUncaught);
    try {
      const store = sqliteStore({ path: join(scratch, 'fold-error.db') });
      const loop = createLoop({ model: scriptedModel([reply('done')]), store });
      expect((await loop.run({ goal: 'go', runId: 'a' })).stopReason).toBe('completed');
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      // The premise: the deferred fold ran (and threw).
      expect(folds.count).toBe(1);
      expect(uncaught).toEqual([]);
      expect(await store.readRun('a')).not.toBeNull();
      await store.close();
    } finally {
      process.removeListener('uncaughtException', onUncaught);
    }
  });
});
