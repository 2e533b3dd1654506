/**
 * The store contract of `loopstate/testing`, run against the embedded stores: `memoryStore` and
 * `sqliteStore` on a real file (a new one per check, deleted after it). Postgres: contract-postgres.test.ts.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { memoryStore, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { storeContract } from 'loopstate/testing';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-contract-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('memoryStore keeps the store contract', () => {
  for (const check of storeContract(() => memoryStore())) it(check.name, check.run);
});

describe('sqliteStore keeps the store contract (a real file per check)', () => {
  const paths = new WeakMap<Store, string>();
  let made = 0;
  const checks = storeContract(
    () => {
      const path = join(scratch, `check-${++made}.db`);
      const store = sqliteStore({ path });
      paths.set(store, path);
      return store;
    },
    {
      cleanup: (store) => {
        const path = paths.get(store)!;
        // The check wrote to the file it was given: the store was real, not an in-memory database.
        expect(existsSync(path)).toBe(true);
        for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
      },
    },
  );
  for (const check of checks) it(check.name, check.run);

  it('left no database file behind (cleanup ran after every check)', () => {
    expect(made).toBe(checks.length);
    expect(readdirSync(scratch)).toEqual([]);
  });
});
