/**
 * The store contract of `loopstate/testing`, run against `postgresStore` on a real PostgreSQL
 * (`LOOPSTATE_TEST_POSTGRES_URL`, or a throwaway server): a fresh database for this file, a fresh schema
 * per check, dropped after it.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from 'loopstate';
import { postgresStore } from 'loopstate/postgres';
import { storeContract } from 'loopstate/testing';
import { testPostgres, type TestPostgres } from '../support/test-postgres.js';

let server: TestPostgres;
let admin: pg.Client;

beforeAll(async () => {
  server = await testPostgres();
  admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
}, 120_000);
afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

const schemas = new WeakMap<Store, string>();
let made = 0;
const checks = storeContract(
  () => {
    const schema = `contract_${++made}`;
    const store = postgresStore({ connectionString: server.url, schema });
    schemas.set(store, schema);
    return store;
  },
  {
    cleanup: async (store) => {
      const schema = schemas.get(store)!;
      // The check wrote to the schema it was given before it is dropped.
      const { rows } = await admin.query(
        'SELECT count(*)::int AS runs FROM information_schema.tables WHERE table_schema = $1',
        [schema],
      );
      expect((rows[0] as { runs: number }).runs).toBeGreaterThan(0);
      await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
    },
  },
);

describe('postgresStore keeps the store contract (a schema per check)', () => {
  for (const check of checks) it(check.name, check.run);

  it('takes the snapshot given with an append, in its statement (one round trip), renewing the lease as writeSnapshot did', async () => {
    const schema = `contract_${++made}`;
    const store = postgresStore({ connectionString: server.url, schema });
    const lease = { owner: 'owner-a', until: Date.now() + 60_000 };
    const later = { ...lease, until: lease.until + 5_000 };
    const snapshot = (seq: number) => ({ seq, kind: 'snapshot', body: `{"at":${seq}}` });
    const event = (seq: number) => ({ seq, kind: 'event', body: '{}' });
    try {
      expect(await store.createRun('r', '{}', lease)).toBe(true);
      expect(await store.append('r', [event(1)], lease, undefined, undefined, snapshot(1))).toEqual({
        paused: null,
        cancelRequested: false,
        snapshotWritten: true,
      });
      expect(await store.latestSnapshot('r')).toEqual(snapshot(1));
      // An append without a snapshot checks the lease; one with a snapshot renews it.
      expect(await store.append('r', [event(2)], later)).toEqual({ paused: null, cancelRequested: false });
      expect((await store.readRun('r'))?.leaseUntil).toBe(lease.until);
      await store.append('r', [event(3)], later, undefined, undefined, snapshot(3));
      expect((await store.readRun('r'))?.leaseUntil).toBe(later.until);
      expect(await store.latestSnapshot('r')).toEqual(snapshot(3));
      // With the run's body.
      const outcome = await store.append('r', [event(4)], later, '{"s":1}', undefined, snapshot(4));
      expect(outcome?.snapshotWritten).toBe(true);
      expect(await store.latestSnapshot('r')).toEqual(snapshot(4));
      expect((await store.readRun('r'))?.body).toBe('{"s":1}');
    } finally {
      await store.close();
      await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
    }
  });

  it('left no schema behind (cleanup ran after every check)', async () => {
    expect(made).toBe(checks.length + 1);
    const { rows } = await admin.query(
      "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'contract\\_%'",
    );
    expect(rows).toEqual([]);
  });
});
