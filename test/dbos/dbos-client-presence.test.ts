/**
 * The client's presence check only reads: in a database where no worker has run, it creates no
 * `loopstate` schema or table (a least-privilege role could not, and empty tables would appear).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbosClient } from 'loopstate/dbos';
import { postgresStore } from 'loopstate/postgres';
import { testPostgres, type TestPostgres } from '../support/test-postgres.js';

let server: TestPostgres;

beforeAll(async () => {
  server = await testPostgres();
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

const loopstateSchema = async (url: string) => {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ found: string | null }>("SELECT to_regnamespace('loopstate')::text AS found");
    return rows[0]?.found ?? null;
  } finally {
    await admin.end();
  }
};

describe('dbosClient presence check', () => {
  it('reads the heartbeats without creating the store: no table means no worker known, and the check passes', async () => {
    const store = postgresStore({ connectionString: server.url });
    try {
      expect(await store.liveWorkers(0)).toEqual([]);
      expect(await loopstateSchema(server.url), 'liveWorkers created nothing').toBeNull();
    } finally {
      await store.close();
    }
    const client = await dbosClient({ systemDatabaseUrl: server.url, version: 'presence-test' });
    try {
      // No workflow is queued here (no DBOS tables either): what matters is that the presence check
      // before it passed (no `no_live_worker`) and wrote nothing.
      const failure = await client.approve('nobody', {}).then(
        () => null,
        (error: unknown) => error as { code?: string },
      );
      expect(failure?.code).not.toBe('no_live_worker');
      expect(await loopstateSchema(server.url), 'the client created no loopstate schema').toBeNull();
    } finally {
      await client.close();
    }
  });

  it('still sees the workers once one has heartbeated', async () => {
    const store = postgresStore({ connectionString: server.url, schema: 'presence_seen' });
    try {
      await store.heartbeat('w1', 5_000, { applicationVersion: 'v1' });
      expect(await store.liveWorkers(1_000)).toEqual([
        { executorId: 'w1', heartbeatAt: 5_000, applicationVersion: 'v1' },
      ]);
      expect(await store.liveWorkers(6_000)).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
