/**
 * The Postgres store keeps the Store contract: lease compare-and-set, refused duplicate seqs, ledger
 * compare-and-set; and the embedded-mode journal and resume run on it unchanged.
 */
import { createServer, connect as connectTcp, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, evaluators, readTenantLedger, StoreConflictError } from 'loopstate';
import { postgresStore, type PostgresStore } from 'loopstate/postgres';
import { reply, scriptedModel, toolCall } from 'loopstate/testing';
import { testPostgres, type TestPostgres } from '../support/test-postgres.js';

let server: TestPostgres;
let store: PostgresStore;

beforeAll(async () => {
  server = await testPostgres();
  store = postgresStore({ connectionString: server.url });
}, 120_000);
afterAll(async () => {
  await store?.close();
  await server?.stop();
});

describe('postgresStore', () => {
  it('holds a lease for one owner at a time and refuses a journal seq written twice', async () => {
    const lease = { owner: 'a', until: Date.now() + 10_000 };
    expect(await store.createRun('r1', '{}', lease)).toBe(true);
    expect(await store.createRun('r1', '{}', lease)).toBe(false);
    expect(await store.acquireLease('r1', { owner: 'b', until: Date.now() + 10_000 }, Date.now())).toBe(false);
    await store.append('r1', [{ seq: 1, kind: 'event', body: 'x' }], lease);
    await expect(store.append('r1', [{ seq: 1, kind: 'event', body: 'y' }], lease)).rejects.toBeInstanceOf(
      StoreConflictError,
    );
    await expect(
      store.append('r1', [{ seq: 2, kind: 'event', body: 'y' }], { owner: 'b', until: 0 }),
    ).rejects.toBeInstanceOf(StoreConflictError);
    expect(await store.acquireLease('r1', { owner: 'b', until: Date.now() + 10_000 }, Date.now(), 'a')).toBe(true);
    expect((await store.readJournal('r1', 0)).map((row) => row.body)).toEqual(['x']);
    expect(await store.writeLedger('t', 'v1', null)).toBe(true);
    expect(await store.writeLedger('t', 'v2', 2)).toBe(false);
    expect(await store.writeLedger('t', 'v2', 1)).toBe(true);
    expect(await store.readLedger('t')).toEqual({ body: 'v2', version: 2 });
    await store.setPaused('maintenance');
    expect(await store.readControl('r1')).toEqual({ paused: 'maintenance', cancelRequested: false });
    await store.setPaused(null);
  });

  it('hands a silent executor to one reaper only, never the reaper itself', async () => {
    await store.heartbeat('dead', 1_000);
    await store.heartbeat('alive', 9_000);
    await store.heartbeat('self', 1_000);
    const claims = await Promise.all([
      store.claimSilentExecutors(5_000, 'self', 10_000),
      store.claimSilentExecutors(5_000, 'alive', 10_000),
    ]);
    expect(claims.flat().filter((id) => id === 'dead')).toEqual(['dead']);
    expect(await store.claimSilentExecutors(5_000, 'self', 10_000)).toEqual([]);
  });

  it("takes over a reaper's claim that it never released (it died handing the runs on), and forgets released ones", async () => {
    // The executors of the test before are in this store too: look at this test's own.
    const claim = async (before: number, self: string, now: number) =>
      (await store.claimSilentExecutors(before, self, now)).filter((id) => id === 'gone' || id === 'back');
    await store.heartbeat('gone', 1_000);
    expect(await claim(5_000, 'reaper-1', 10_000)).toEqual(['gone']);
    // reaper-1 dies here. While its claim is fresh, nobody else takes it...
    expect(await claim(9_000, 'reaper-2', 12_000)).toEqual([]);
    // ...once it is as old as a silent worker, another reaper does, and releases it.
    expect(await claim(11_000, 'reaper-2', 20_000)).toEqual(['gone']);
    await store.releaseExecutors(['gone'], 'reaper-1');
    expect(await claim(30_000, 'reaper-3', 40_000), 'not released by a reaper that no longer holds it').toEqual([
      'gone',
    ]);
    await store.releaseExecutors(['gone'], 'reaper-3');
    expect(await claim(50_000, 'reaper-4', 60_000), 'released: forgotten').toEqual([]);
    // A worker that comes back is not claimed (its heartbeat clears any claim on it).
    await store.heartbeat('back', 1_000);
    expect(await claim(5_000, 'reaper-1', 10_000)).toEqual(['back']);
    await store.heartbeat('back', 11_000);
    expect(await claim(10_500, 'reaper-2', 11_000)).toEqual([]);
  });

  it('runs and resumes a loop stopped for approval, as the embedded stores do', async () => {
    const refund = defineTool({
      name: 'refund',
      description: 'Refund.',
      input: z.object({ order_id: z.string() }),
      access: 'destructive',
      execute: async ({ order_id }) => ({ refunded: order_id }),
    });
    const loop = createLoop({
      model: scriptedModel([toolCall('refund', { order_id: 'O-7' }), reply('{"refunded":"O-7"}')]),
      tools: [refund],
      policy: { requireApproval: ['destructive'] },
      evaluate: evaluators.schema(z.object({ refunded: z.string() })),
      store,
    });
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'pg-refund' });
    expect(stopped.stopReason).toBe('needs_human');
    const done = await loop.resume('pg-refund', {
      approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } },
    });
    expect(done.stopReason).toBe('completed');
    expect(done.output).toEqual({ refunded: 'O-7' });
  });

  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty'])(
    'approves a call whose id is %s, and a run of that id holds its tenant share',
    async (id) => {
      const refunds: string[] = [];
      const refund = defineTool({
        name: 'refund',
        description: 'Refund.',
        input: z.object({ order_id: z.string() }),
        access: 'destructive',
        execute: async ({ order_id }) => {
          refunds.push(order_id);
          return { refunded: order_id };
        },
      });
      const make = (script: Parameters<typeof scriptedModel>[0]) =>
        createLoop({
          model: scriptedModel(script),
          tools: [refund],
          store,
          tenant: { id: `tenant-${id}`, maxInputTokens: 1_000_000 },
        });
      const stopped = await make([toolCall('refund', { order_id: 'O-7' }, { id })]).run({
        goal: 'Refund O-7',
        runId: id,
      });
      expect(stopped.pendingApprovals.map(({ callId }) => callId)).toEqual([id]);
      expect(Object.keys((await readTenantLedger(store, `tenant-${id}`))?.holds ?? {})).toEqual([id]);
      await expect(make([]).resume(id, { approvals: {} })).rejects.toMatchObject({ code: 'approvals_incomplete' });
      const done = await make([reply('Refunded.')]).resume(id, {
        approvals: JSON.parse(`{${JSON.stringify(id)}: {"approve": true}}`) as Record<string, { approve: true }>,
      });
      expect(done.stopReason, done.detail).toBe('completed');
      expect(refunds).toEqual(['O-7']);
      expect(Object.keys((await readTenantLedger(store, `tenant-${id}`))?.holds ?? {})).toEqual([]);
    },
  );

  it('outlives its connections being terminated, idle or busy: no unhandled error, the calls go on', async () => {
    const errors: Error[] = [];
    const own = postgresStore({
      connectionString: server.url,
      maxConnections: 3,
      onConnectionError: (error) => errors.push(error),
    });
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    const others = () =>
      admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name <> 'keep'",
      );
    try {
      await own.setPaused(null);
      await Promise.all([own.readControl('x'), own.readControl('y'), own.readControl('z')]);
      // Idle: the pool's connections die between calls (what exited the process before).
      await others();
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(errors.length, 'the idle connections reported their end').toBeGreaterThan(0);
      expect(await own.readControl('x')).toEqual({ paused: null, cancelRequested: false });
      // Busy: a write blocked on a lock has its connection terminated under it, and is sent again.
      const locker = new pg.Client({ connectionString: server.url, application_name: 'keep' });
      await locker.connect();
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE loopstate.control IN ACCESS EXCLUSIVE MODE');
      const write = own.setPaused('maintenance');
      await new Promise((resolve) => setTimeout(resolve, 300));
      await others();
      await locker.query('COMMIT');
      await locker.end();
      await write;
      expect((await own.readControl('x')).paused).toBe('maintenance');
      await own.setPaused(null);
    } finally {
      await admin.end();
      await own.close();
    }
  });

  it('sends again only what is safe: a compare-and-set whose connection broke reaches the caller', async () => {
    const own = postgresStore({ connectionString: server.url, onConnectionError: () => undefined });
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    const locker = new pg.Client({ connectionString: server.url });
    await locker.connect();
    try {
      expect(await own.writeLedger('cas-tenant', '{}', null)).toBe(true);
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE loopstate.ledgers IN ACCESS EXCLUSIVE MODE');
      const write = own.writeLedger('cas-tenant', '{"spent":1}', 1).then(
        () => null,
        (error: unknown) => error,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'UPDATE%ledgers%'",
      );
      const failure = await write;
      expect((failure as { code?: string }).code, String(failure)).toBe('57P01');
      await locker.query('COMMIT');
      expect((await own.readLedger('cas-tenant'))?.version, 'not written, and not sent again').toBe(1);
    } finally {
      await locker.end().catch(() => undefined);
      await admin.end();
      await own.close();
    }
  });

  it('sends an append again when no connection could be made (nothing sent), but not one whose reply was lost', async () => {
    // A proxy in front of the server: while `down`, every connection it gets is dropped at once.
    const target = new URL(server.url);
    let down = false;
    const sockets = new Set<Socket>();
    const proxy = createServer((socket) => {
      if (down) return void socket.destroy();
      const upstream = connectTcp(Number(target.port), target.hostname);
      for (const end of [socket, upstream]) {
        sockets.add(end);
        end.on('error', () => undefined);
        end.on('close', () => {
          sockets.delete(end);
          socket.destroy();
          upstream.destroy();
        });
      }
      socket.pipe(upstream).pipe(socket);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxied = new URL(server.url);
    proxied.port = String((proxy.address() as { port: number }).port);
    const own = postgresStore({ connectionString: proxied.toString(), onConnectionError: () => undefined });
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    const locker = new pg.Client({ connectionString: server.url });
    await locker.connect();
    try {
      const lease = { owner: 'a', until: Date.now() + 60_000 };
      expect(await own.createRun('append-outage', '{}', lease)).toBe(true);
      // The pool's connections are cut and no new one can be made for 300 ms: the append waits it out.
      down = true;
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => setTimeout(resolve, 100)); // the pool drops its dead idle connections
      setTimeout(() => (down = false), 300);
      await own.append('append-outage', [{ seq: 1, kind: 'event', body: 'x' }], lease);
      expect((await own.readJournal('append-outage', 0)).map((row) => row.body)).toEqual(['x']);
      // Sent, then its connection broke: it may have committed, so it reaches the caller, not sent twice.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE loopstate.journal IN ACCESS EXCLUSIVE MODE');
      const append = own.append('append-outage', [{ seq: 2, kind: 'event', body: 'y' }], lease).then(
        () => null,
        (error: unknown) => error,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'WITH held%'",
      );
      const failure = await append;
      expect((failure as { code?: string }).code, String(failure)).toBe('57P01');
      await locker.query('COMMIT');
      expect(
        (await own.readJournal('append-outage', 0)).map((row) => row.body),
        'not sent again',
      ).toEqual(['x']);
    } finally {
      await locker.end().catch(() => undefined);
      await admin.end();
      await own.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('waits for a database that is not there yet, up to reconnectForMs, then gives its error', async () => {
    const url = new URL(server.url);
    url.port = '1'; // nothing listens there
    const away = postgresStore({ connectionString: url.toString(), reconnectForMs: 300 });
    await expect(away.readRun('r')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await away.close();
  });
});
