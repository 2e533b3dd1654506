/**
 * A store in PostgreSQL (through `pg`), for runs shared by the processes of many machines: the same
 * rows, lease compare-and-set and ledger compare-and-set as the SQLite store, each write one
 * transaction. Loaded on first use, so importing loopstate never loads `pg`.
 */
import { loadPeer } from '../../engine/peer-dependency.js';
import { createRequire } from 'node:module';
import type * as Pg from 'pg';
import type { Pool, PoolClient } from 'pg';
import { LoopConfigError } from '../../contracts/errors.js';
import type { Lease, RunControl, RunRow, Store, StoreRow } from '../../contracts/store.js';
import { StoreConflictError } from '../../engine/store/store-conflict-error.js';
import { postgresSchema } from './postgres-schema.js';

/**
 * Options of `postgresStore`.
 * @example
 * const options: PostgresStoreOptions = { connectionString: 'postgresql://app@db:5432/loops', schema: 'loopstate' };
 */
export interface PostgresStoreOptions {
  /** A `postgresql://` URL; the tables are created in `schema` when missing. */
  connectionString: string;
  /** The Postgres schema of the store's tables (default `loopstate`). */
  schema?: string;
  /** Connections in the pool (default 4). */
  maxConnections?: number;
  /** How often a paused run looks whether the pause was lifted, in ms (default 500). */
  pausePollMs?: number;
}

/** A Postgres store, with the worker heartbeats the distributed mode's reaper reads. */
export interface PostgresStore extends Store {
  /** Records that `executorId` is alive now. */
  heartbeat(executorId: string, now: number): Promise<void>;
  /**
   * Claims the executors (other than `self`) whose last heartbeat is older than `before` (epoch ms),
   * marking them claimed by `self` at `now`: of two reapers only one hands a dead executor's runs on.
   * A claim older than `before` is taken over, so a reaper that dies before `releaseExecutors` leaves
   * nothing stranded; a heartbeat of the executor itself clears the claim.
   */
  claimSilentExecutors(before: number, self: string, now?: number): Promise<string[]>;
  /** Forgets executors `self` claimed and whose runs it has handed on. */
  releaseExecutors(executorIds: readonly string[], self: string): Promise<void>;
  /** Runs `work` holding a database-wide advisory lock (`key`): concurrent first launches queue up. */
  exclusive<T>(key: number, work: () => Promise<T>): Promise<T>;
}

function checkOptions(options: PostgresStoreOptions): void {
  const issues: { path: string; message: string }[] = [];
  if (typeof options?.connectionString !== 'string' || !/^postgres(ql)?:\/\//.test(options.connectionString))
    issues.push({ path: 'connectionString', message: 'expected a postgresql:// URL' });
  if (options?.schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(options.schema))
    issues.push({ path: 'schema', message: 'expected a lower-case identifier' });
  for (const key of ['maxConnections', 'pausePollMs'] as const) {
    const value = options?.[key];
    if (value !== undefined && !(Number.isInteger(value) && value > 0))
      issues.push({ path: key, message: 'expected a positive integer' });
  }
  if (issues.length > 0) throw new LoopConfigError({ issues });
}

const conflict = (runId: string, seq: number | null, message: string, cause?: unknown) =>
  new StoreConflictError({ runId, seq, message, cause });
const lostLease = (runId: string, seq: number | null) =>
  conflict(runId, seq, `run ${runId} is held by another owner; this writer lost its lease`);

/**
 * A store in one PostgreSQL database, shared by every process that can reach it.
 * @example
 * const loop = createLoop({ model, tools, store: postgresStore({ connectionString: process.env.DATABASE_URL! }) });
 * const result = await loop.resume('order-O-101'); // on any machine
 */
export function postgresStore(options: PostgresStoreOptions): PostgresStore {
  checkOptions(options);
  const schema = `"${options.schema ?? 'loopstate'}"`;
  let pool: Pool | null = null;
  let ready: Promise<Pool> | null = null;
  const use = (): Promise<Pool> => {
    ready ??= (async () => {
      const require = createRequire(import.meta.url);
      const pg = loadPeer(() => require('pg') as typeof Pg, {
        packageName: 'pg',
        installCommand: 'npm install pg',
        feature: 'postgresStore',
      });
      pool = new pg.Pool({ connectionString: options.connectionString, max: options.maxConnections ?? 4 });
      const client = await pool.connect();
      try {
        // Concurrent first launches race on CREATE ... IF NOT EXISTS: an advisory lock serialises them.
        await client.query('SELECT pg_advisory_lock(7271001)');
        await client.query(postgresSchema(options.schema ?? 'loopstate'));
      } finally {
        await client.query('SELECT pg_advisory_unlock(7271001)').catch(() => undefined);
        client.release();
      }
      return pool;
    })();
    return ready;
  };
  const query = async (text: string, values: unknown[] = []) => (await use()).query(text, values);
  const transaction = async <T>(work: (client: PoolClient) => Promise<T>): Promise<T> => {
    const client = await (await use()).connect();
    try {
      await client.query('BEGIN');
      const value = await work(client);
      await client.query('COMMIT');
      return value;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  };
  const renew = (client: PoolClient, runId: string, lease: Lease, runBody: string | null) =>
    client.query(
      `UPDATE ${schema}.runs SET lease_until = $1, body = coalesce($2, body) WHERE run_id = $3 AND lease_owner = $4`,
      [lease.until, runBody, runId, lease.owner],
    );
  // $1 run, $2 owner, $3-$5 the rows; renewing also $6 lease until, $7 run body (null: kept), $8 finished at.
  const insertRows = (condition: string) =>
    `INSERT INTO ${schema}.journal (run_id, seq, kind, body) SELECT $1, * FROM unnest($3::int[], $4::text[], $5::text[]) WHERE ${condition} RETURNING 1`;
  const appendChecking = `WITH held AS (SELECT 1 FROM ${schema}.runs WHERE run_id = $1 AND lease_owner = $2 FOR SHARE),
    inserted AS (${insertRows('EXISTS (SELECT 1 FROM held)')})
    SELECT EXISTS (SELECT 1 FROM held) AS held, (SELECT count(*) FROM inserted) AS inserted`;
  const appendRenewing = `WITH held AS (UPDATE ${schema}.runs SET lease_until = $6, body = coalesce($7, body), finished_at = CASE WHEN $7::text IS NULL THEN finished_at ELSE $8::bigint END WHERE run_id = $1 AND lease_owner = $2 RETURNING 1),
    inserted AS (${insertRows('EXISTS (SELECT 1 FROM held)')})
    SELECT EXISTS (SELECT 1 FROM held) AS held, (SELECT count(*) FROM inserted) AS inserted`;
  return {
    pausePollMs: options.pausePollMs ?? 500,
    async createRun(runId, body, lease) {
      const result = await query(
        `INSERT INTO ${schema}.runs (run_id, body, lease_owner, lease_until) VALUES ($1, $2, $3, $4) ON CONFLICT (run_id) DO NOTHING`,
        [runId, body, lease.owner, lease.until],
      );
      return result.rowCount === 1;
    },
    async readRun(runId): Promise<RunRow | null> {
      const { rows } = await query(
        `SELECT body, lease_owner, lease_until, cancel_requested FROM ${schema}.runs WHERE run_id = $1`,
        [runId],
      );
      const row = rows[0] as
        { body: string; lease_owner: string | null; lease_until: string; cancel_requested: boolean } | undefined;
      return row
        ? {
            runId,
            body: row.body,
            leaseOwner: row.lease_owner,
            leaseUntil: Number(row.lease_until),
            cancelRequested: row.cancel_requested,
          }
        : null;
    },
    async acquireLease(runId, lease, now, takeOverFrom) {
      const result = await query(
        `UPDATE ${schema}.runs SET lease_owner = $1, lease_until = $2 WHERE run_id = $3 AND (lease_owner IS NULL OR lease_until < $4 OR lease_owner = $1 OR lease_owner = $5)`,
        [lease.owner, lease.until, runId, now, takeOverFrom ?? null],
      );
      return result.rowCount === 1;
    },
    async releaseLease(runId, owner) {
      await query(
        `UPDATE ${schema}.runs SET lease_owner = NULL, lease_until = 0 WHERE run_id = $1 AND lease_owner = $2`,
        [runId, owner],
      );
    },
    async append(runId, rows, lease, runBody, finishedAt) {
      // One statement, so one round trip and its own transaction: the lease is checked (or renewed with
      // the run body) and the rows inserted only where it holds. A named statement is prepared once per connection.
      const renews = rows.length === 0 || runBody !== undefined;
      const { rows: answer } = await (
        await use()
      )
        .query<{ held: boolean }>({
          name: `loopstate-append-${renews ? 'renew' : 'check'}-${schema}`,
          text: renews ? appendRenewing : appendChecking,
          values: [
            runId,
            lease.owner,
            rows.map((row) => row.seq),
            rows.map((row) => row.kind),
            rows.map((row) => row.body),
            ...(renews ? [lease.until, runBody ?? null, runBody === undefined ? null : (finishedAt ?? null)] : []),
          ],
        })
        .catch((error: unknown) => {
          if ((error as { code?: string }).code === '23505')
            throw conflict(
              runId,
              rows[0]?.seq ?? null,
              `run ${runId} already has a journal record at one of seqs ${rows.map((row) => row.seq).join(', ')}`,
              error,
            );
          throw error;
        });
      if (answer[0]?.held !== true) throw lostLease(runId, rows[0]?.seq ?? null);
    },
    async prune({ finishedBefore }) {
      return transaction(async (client) => {
        const { rows: finished } = await client.query<{ run_id: string }>(
          `DELETE FROM ${schema}.runs WHERE finished_at IS NOT NULL AND finished_at < $1 RETURNING run_id`,
          [finishedBefore],
        );
        const ids = finished.map((row) => row.run_id);
        if (ids.length > 0) {
          await client.query(`DELETE FROM ${schema}.journal WHERE run_id = ANY($1)`, [ids]);
          await client.query(`DELETE FROM ${schema}.snapshots WHERE run_id = ANY($1)`, [ids]);
        }
        return ids.length;
      });
    },
    async readJournal(runId, afterSeq) {
      const { rows } = await query(
        `SELECT seq, kind, body FROM ${schema}.journal WHERE run_id = $1 AND seq > $2 ORDER BY seq`,
        [runId, afterSeq],
      );
      return rows as StoreRow[];
    },
    async writeSnapshot(runId, row, lease) {
      await transaction(async (client) => {
        if ((await renew(client, runId, lease, null)).rowCount !== 1) throw lostLease(runId, row.seq);
        await client.query(
          `INSERT INTO ${schema}.snapshots (run_id, seq, kind, body) VALUES ($1, $2, $3, $4) ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, kind = excluded.kind, body = excluded.body WHERE excluded.seq >= ${schema}.snapshots.seq`,
          [runId, row.seq, row.kind, row.body],
        );
      });
    },
    async latestSnapshot(runId) {
      const { rows } = await query(`SELECT seq, kind, body FROM ${schema}.snapshots WHERE run_id = $1`, [runId]);
      return (rows[0] as StoreRow | undefined) ?? null;
    },
    async requestCancel(runId) {
      return (
        (await query(`UPDATE ${schema}.runs SET cancel_requested = TRUE WHERE run_id = $1`, [runId])).rowCount === 1
      );
    },
    async setPaused(reason) {
      await query(
        `INSERT INTO ${schema}.control (key, value) VALUES ('paused', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
        [reason],
      );
    },
    async readControl(runId): Promise<RunControl> {
      const { rows } = await query(
        `SELECT (SELECT value FROM ${schema}.control WHERE key = 'paused') AS paused, (SELECT cancel_requested FROM ${schema}.runs WHERE run_id = $1) AS cancel_requested`,
        [runId],
      );
      const row = rows[0] as { paused: string | null; cancel_requested: boolean | null } | undefined;
      return { paused: row?.paused ?? null, cancelRequested: row?.cancel_requested === true };
    },
    async readLedger(tenantId) {
      const { rows } = await query(`SELECT body, version FROM ${schema}.ledgers WHERE tenant_id = $1`, [tenantId]);
      return (rows[0] as { body: string; version: number } | undefined) ?? null;
    },
    async writeLedger(tenantId, body, expectedVersion) {
      if (expectedVersion === null)
        return (
          (
            await query(
              `INSERT INTO ${schema}.ledgers (tenant_id, body, version) VALUES ($1, $2, 1) ON CONFLICT (tenant_id) DO NOTHING`,
              [tenantId, body],
            )
          ).rowCount === 1
        );
      return (
        (
          await query(
            `UPDATE ${schema}.ledgers SET body = $1, version = version + 1 WHERE tenant_id = $2 AND version = $3`,
            [body, tenantId, expectedVersion],
          )
        ).rowCount === 1
      );
    },
    async heartbeat(executorId, now) {
      await query(
        `INSERT INTO ${schema}.workers (executor_id, heartbeat_at) VALUES ($1, $2) ON CONFLICT (executor_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, claimed_by = NULL, claimed_at = NULL`,
        [executorId, now],
      );
    },
    async claimSilentExecutors(before, self, now = Date.now()) {
      // One UPDATE: of two reapers racing, the second re-reads the row after the first commits and skips it.
      const { rows } = await query(
        `UPDATE ${schema}.workers SET claimed_by = $2, claimed_at = $3 WHERE heartbeat_at < $1 AND executor_id <> $2 AND (claimed_by IS NULL OR claimed_at < $1) RETURNING executor_id`,
        [before, self, now],
      );
      return rows.map((row) => (row as { executor_id: string }).executor_id);
    },
    async releaseExecutors(executorIds, self) {
      if (executorIds.length === 0) return;
      await query(`DELETE FROM ${schema}.workers WHERE executor_id = ANY($1) AND claimed_by = $2`, [
        [...executorIds],
        self,
      ]);
    },
    async exclusive(key, work) {
      const client = await (await use()).connect();
      try {
        // Polled, not waited for: a session blocked in pg_advisory_lock holds a snapshot that DBOS's
        // CREATE INDEX CONCURRENTLY (run by `work` in the lock holder) would wait for, a deadlock.
        while (
          !((await client.query('SELECT pg_try_advisory_lock($1) AS locked', [key])).rows[0] as { locked: boolean })
            .locked
        ) {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        return await work();
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [key]).catch(() => undefined);
        client.release();
      }
    },
    async close() {
      const open = pool;
      pool = null;
      ready = null;
      await open?.end();
    },
  };
}
