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
import {
  markAppendTakesSnapshot,
  type RunControl,
  type RunRow,
  type Store,
  type StoreRow,
} from '../../contracts/store.js';
import { StoreConflictError } from '../../engine/store/store-conflict-error.js';
import { postgresSchema } from './postgres-schema.js';
import { postgresLearning, postgresLearningSchema } from './postgres-learning.js';

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
  /**
   * How long a call keeps trying to reach the database while it is down (a restart, a dropped
   * connection), in ms (default 15 000): reads and writes that are safe to send again are retried,
   * a write whose fate is unknown is not. Then the error reaches the caller.
   */
  reconnectForMs?: number;
  /** Called with each error of an idle connection or of the pool (default: one warning on stderr per outage). */
  onConnectionError?: (error: Error) => void;
}

/** A worker of the distributed mode as its heartbeat left it. */
export interface WorkerRow {
  executorId: string;
  heartbeatAt: number;
  /** The `applicationVersion` of its DBOS workflows, when it said. */
  applicationVersion: string | null;
}

/** A Postgres store, with the worker heartbeats the distributed mode's reaper reads. */
export interface PostgresStore extends Store {
  /**
   * Records that `executorId` is alive now; `about` says which version it runs and the prefix of the
   * lease owners of its process (so a reaper that finds it dead frees its leases at once).
   */
  heartbeat(
    executorId: string,
    now: number,
    about?: { applicationVersion?: string; leasePrefix?: string },
  ): Promise<void>;
  /**
   * The workers whose last heartbeat is at `since` (epoch ms) or later. Read-only: it creates no
   * table (none yet: no worker is known).
   */
  liveWorkers(since: number): Promise<WorkerRow[]>;
  /**
   * Frees the leases held by the processes of executors `self` claimed (their lease prefix), so their
   * runs are taken over at once on any host: the runs that were freed.
   */
  releaseLeasesOf(executorIds: readonly string[], self: string): Promise<string[]>;
  /** Marks `executorId` as gone (a worker that shut down): the next reaper hands its runs on at once. */
  retire(executorId: string): Promise<void>;
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
  if (options?.onConnectionError !== undefined && typeof options.onConnectionError !== 'function')
    issues.push({ path: 'onConnectionError', message: 'expected a function (error) => void' });
  const reconnect = options?.reconnectForMs;
  if (reconnect !== undefined && !(Number.isInteger(reconnect) && reconnect >= 0))
    issues.push({ path: 'reconnectForMs', message: 'expected a whole number of ms, 0 or more (0: no retry)' });
  for (const key of ['maxConnections', 'pausePollMs'] as const) {
    const value = options?.[key];
    if (value !== undefined && !(Number.isInteger(value) && value > 0))
      issues.push({ path: key, message: 'expected a positive integer' });
  }
  if (issues.length > 0) throw new LoopConfigError({ issues });
}

/**
 * Whether an error says the connection, not the statement, failed: the server went away (admin
 * shutdown, a crash, a restart), the socket broke, or no connection could be made.
 */
export function isConnectionError(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    // 57P01 admin_shutdown (pg_terminate_backend, a restart), 57P02 crash_shutdown, 57P03 cannot_connect_now,
    // class 08: connection exceptions.
    if (code === '57P01' || code === '57P02' || code === '57P03' || code.startsWith('08')) return true;
    if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTCONN', 'EHOSTUNREACH', 'ENETUNREACH'].includes(code))
      return true;
  }
  return (
    typeof message === 'string' &&
    /Connection terminated|connection is closed|Client has encountered a connection error|not queryable/i.test(message)
  );
}

/** A statement that failed before it reached the server: safe to send again whatever it does. */
class NotSent extends Error {
  constructor(override readonly cause: unknown) {
    super('not sent');
  }
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
  const reconnectForMs = options.reconnectForMs ?? 15_000;
  let warnedAt = 0;
  // Without a listener, an idle connection's error (a restart, pg_terminate_backend) is an unhandled
  // 'error' event that exits the process; the pool drops the connection and opens another on demand.
  const onConnectionError =
    options.onConnectionError ??
    ((error: Error) => {
      if (Date.now() - warnedAt < 10_000) return;
      warnedAt = Date.now();
      process.emitWarning(`loopstate postgresStore: ${error.message}; reconnecting on the next call`, {
        code: 'LOOPSTATE_POSTGRES_CONNECTION',
      });
    });
  let pool: Pool | null = null;
  let ready: Promise<Pool> | null = null;
  const poolOf = (): Pool => {
    if (pool !== null) return pool;
    const require = createRequire(import.meta.url);
    const pg = loadPeer(() => require('pg') as typeof Pg, {
      packageName: 'pg',
      installCommand: 'npm install pg',
      feature: 'postgresStore',
    });
    const created = new pg.Pool({ connectionString: options.connectionString, max: options.maxConnections ?? 4 });
    // pg-pool emits 'error' only for an idle client, which also reaches the client's own listener below.
    created.on('error', () => undefined);
    created.on('connect', (client) => client.on('error', (error: Error) => onConnectionError(error)));
    pool = created;
    return created;
  };
  const use = (): Promise<Pool> => {
    ready ??= (async () => {
      const open = poolOf();
      const client = await open.connect().catch((error: unknown) => Promise.reject(new NotSent(error)));
      let broken: unknown;
      try {
        // Concurrent first launches race on CREATE ... IF NOT EXISTS: an advisory lock serialises them.
        await client.query('SELECT pg_advisory_lock(7271001)');
        await client.query(postgresSchema(options.schema ?? 'loopstate'));
        await client.query(postgresLearningSchema(schema));
      } catch (error) {
        broken = error;
        // The DDL is idempotent: sent again after a dropped connection, it does what it did.
        throw isConnectionError(error) ? new NotSent(error) : error;
      } finally {
        await client.query('SELECT pg_advisory_unlock(7271001)').catch(() => undefined);
        client.release(isConnectionError(broken) ? (broken as Error) : undefined);
      }
      return open;
    })().catch((error: unknown) => {
      ready = null; // tried again by the next call, not remembered as a failure
      throw error;
    });
    return ready;
  };
  /**
   * Runs `work` on a connection, again on a new one while the database cannot be reached, for up to
   * `reconnectForMs`: always when nothing was sent (no connection, or a transaction that never
   * committed), and for `safe` work (a read, a write that does the same sent twice) whenever the
   * connection broke. A write whose fate is unknown (its COMMIT was lost) reaches the caller.
   */
  const attempt = async <T>(
    safe: boolean,
    work: (client: PoolClient) => Promise<T>,
    open: () => Promise<Pool> = use,
  ): Promise<T> => {
    const deadline = Date.now() + reconnectForMs;
    for (let tries = 0; ; tries++) {
      let failure: unknown;
      try {
        const client = await (await open()).connect().catch((error: unknown) => Promise.reject(new NotSent(error)));
        let broken: unknown;
        try {
          return await work(client);
        } catch (error) {
          broken = error instanceof NotSent ? error.cause : error;
          throw error;
        } finally {
          // A broken connection is destroyed rather than handed to the next caller.
          client.release(isConnectionError(broken) ? (broken as Error) : undefined);
        }
      } catch (error) {
        failure = error;
      }
      const cause = failure instanceof NotSent ? failure.cause : failure;
      const again = isConnectionError(cause) && (safe || failure instanceof NotSent) && Date.now() < deadline;
      if (!again) throw cause;
      await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 50 * 2 ** tries)));
    }
  };
  /** A connection of one's own (held across calls), made again while the database cannot be reached. */
  const connect = async (): Promise<PoolClient> => {
    const deadline = Date.now() + reconnectForMs;
    for (let tries = 0; ; tries++) {
      try {
        return await (await use()).connect();
      } catch (error) {
        const cause = error instanceof NotSent ? error.cause : error;
        if (!isConnectionError(cause) || Date.now() >= deadline) throw cause;
        await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 50 * 2 ** tries)));
      }
    }
  };
  const query = (text: string, values: unknown[] = [], safe = true) =>
    attempt(safe, (client) => client.query(text, values));
  const transaction = <T>(work: (client: PoolClient) => Promise<T>): Promise<T> =>
    attempt(false, async (client) => {
      let value: T;
      try {
        await client.query('BEGIN');
        value = await work(client);
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        // The server rolls back a transaction whose connection broke before COMMIT: nothing was written.
        throw isConnectionError(error) ? new NotSent(error) : error;
      }
      await client.query('COMMIT');
      return value;
    });
  // $1 run, $2 owner, $3-$5 the rows; renewing also $6 lease until, $7 run body (null: kept), $8 finished at.
  const insertRows = (condition: string) =>
    `INSERT INTO ${schema}.journal (run_id, seq, kind, body) SELECT $1, * FROM unnest($3::int[], $4::text[], $5::text[]) WHERE ${condition} RETURNING 1`;
  // What the owner checks before its next step, answered with each append ($1 the run): no second round trip.
  const controlColumns = `(SELECT value FROM ${schema}.control WHERE key = 'paused') AS paused, (SELECT cancel_requested FROM ${schema}.runs WHERE run_id = $1) AS cancel_requested`;
  // The snapshot given with an append (its seq, kind and body from `$first`), upserted in the append's statement (one
  // transaction: durable with its rows or not at all), kept if newer, as `writeSnapshot` does. Only in the statement
  // that renews the lease: `writeSnapshot` renewed it too.
  const snapshotWritten = (first: number) =>
    `, written AS (INSERT INTO ${schema}.snapshots (run_id, seq, kind, body) SELECT $1, $${first}, $${first + 1}, $${first + 2} WHERE EXISTS (SELECT 1 FROM held)
      ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, kind = excluded.kind, body = excluded.body WHERE excluded.seq >= ${schema}.snapshots.seq RETURNING 1)`;
  const appendChecking = `WITH held AS (SELECT 1 FROM ${schema}.runs WHERE run_id = $1 AND lease_owner = $2 FOR SHARE),
    inserted AS (${insertRows('EXISTS (SELECT 1 FROM held)')})
    SELECT EXISTS (SELECT 1 FROM held) AS held, (SELECT count(*) FROM inserted) AS inserted, ${controlColumns}`;
  const appendRenewing = (
    snapshot: boolean,
  ) => `WITH held AS (UPDATE ${schema}.runs SET lease_until = $6, body = coalesce($7, body), finished_at = CASE WHEN $7::text IS NULL THEN finished_at ELSE $8::bigint END WHERE run_id = $1 AND lease_owner = $2 RETURNING 1),
    inserted AS (${insertRows('EXISTS (SELECT 1 FROM held)')})${snapshot ? snapshotWritten(9) : ''}
    SELECT EXISTS (SELECT 1 FROM held) AS held, (SELECT count(*) FROM inserted) AS inserted, ${controlColumns}`;
  // $1 run, $2 owner, $3 lease until, $4-$6 the snapshot row: the lease renewed, the snapshot kept if newer.
  const writeSnapshot = `WITH held AS (UPDATE ${schema}.runs SET lease_until = $3 WHERE run_id = $1 AND lease_owner = $2 RETURNING 1),
    written AS (INSERT INTO ${schema}.snapshots (run_id, seq, kind, body) SELECT $1, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM held)
      ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, kind = excluded.kind, body = excluded.body WHERE excluded.seq >= ${schema}.snapshots.seq RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM held) AS held, (SELECT count(*) FROM written) AS written`;
  // Its append writes a snapshot given with the rows in their transaction (one commit, not two).
  return markAppendTakesSnapshot({
    pausePollMs: options.pausePollMs ?? 500,
    async createRun(runId, body, lease) {
      const result = await query(
        `INSERT INTO ${schema}.runs (run_id, body, lease_owner, lease_until) VALUES ($1, $2, $3, $4) ON CONFLICT (run_id) DO NOTHING`,
        [runId, body, lease.owner, lease.until],
        // Sent twice after a commit whose answer was lost, it would say the run exists: not retried.
        false,
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
    async append(runId, rows, lease, runBody, finishedAt, snapshot) {
      // One statement, so one round trip and its own transaction: the lease is checked (or renewed with
      // the run body) and the rows inserted only where it holds, with the snapshot when given (no round trip of its
      // own). A named statement is prepared once per connection.
      const withSnapshot = snapshot !== undefined;
      // With a snapshot, the lease is renewed as `writeSnapshot` renews it (a busy run's snapshots kept it fresh).
      const renews = rows.length === 0 || runBody !== undefined || withSnapshot;
      // Not safe to send again once sent (a lost reply may hide a commit: sent twice, it would conflict
      // with itself); retried only when it never reached the server.
      const { rows: answer } = await attempt(false, (client) =>
        client.query<{ held: boolean; paused: string | null; cancel_requested: boolean | null }>({
          name: `loopstate-append-${renews ? 'renew' : 'check'}${withSnapshot ? '-snapshot' : ''}-${schema}`,
          text: renews ? appendRenewing(withSnapshot) : appendChecking,
          values: [
            runId,
            lease.owner,
            rows.map((row) => row.seq),
            rows.map((row) => row.kind),
            rows.map((row) => row.body),
            ...(renews ? [lease.until, runBody ?? null, runBody === undefined ? null : (finishedAt ?? null)] : []),
            ...(withSnapshot ? [snapshot.seq, snapshot.kind, snapshot.body] : []),
          ],
        }),
      ).catch((error: unknown) => {
        if ((error as { code?: string }).code === '23505')
          throw conflict(
            runId,
            rows[0]?.seq ?? null,
            `run ${runId} already has a journal record at one of seqs ${rows.map((row) => row.seq).join(', ')}`,
            error,
          );
        throw error;
      });
      const [found] = answer;
      if (found?.held !== true) throw lostLease(runId, rows[0]?.seq ?? null);
      const control = { paused: found.paused ?? null, cancelRequested: found.cancel_requested === true };
      return withSnapshot ? { ...control, snapshotWritten: true } : control;
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
    async readJournal(runId, afterSeq, kinds) {
      if (kinds !== undefined && kinds.length === 0) return [];
      // The kinds in the text, not bound: the planner uses the partial index `journal_chunks` only for its own condition.
      const only =
        kinds === undefined
          ? ''
          : ` AND kind IN (${kinds.map((kind) => `'${String(kind).replaceAll("'", "''")}'`).join(', ')})`;
      const { rows } = await query(
        `SELECT seq, kind, body FROM ${schema}.journal WHERE run_id = $1 AND seq > $2${only} ORDER BY seq`,
        [runId, afterSeq],
      );
      return rows as StoreRow[];
    },
    async writeSnapshot(runId, row, lease) {
      // One statement (one round trip, its own transaction), like an append: not sent again once sent.
      const { rows: answer } = await attempt(false, (client) =>
        client.query<{ held: boolean }>({
          name: `loopstate-snapshot-${schema}`,
          text: writeSnapshot,
          values: [runId, lease.owner, lease.until, row.seq, row.kind, row.body],
        }),
      );
      if (answer[0]?.held !== true) throw lostLease(runId, row.seq);
    },
    async latestSnapshot(runId) {
      const { rows } = await query(`SELECT seq, kind, body FROM ${schema}.snapshots WHERE run_id = $1`, [runId]);
      return (rows[0] as StoreRow | undefined) ?? null;
    },
    // --- listing runs (collation "C": byte order, as the other stores list them)
    async listRuns({ limit, after }) {
      const { rows } = await query(
        `SELECT run_id, body, finished_at FROM ${schema}.runs WHERE $1::text IS NULL OR run_id COLLATE "C" > $1 ORDER BY run_id COLLATE "C" LIMIT $2`,
        [after ?? null, limit],
      );
      return (rows as { run_id: string; body: string; finished_at: string | null }[]).map((row) => ({
        runId: row.run_id,
        body: row.body,
        finishedAt: row.finished_at === null ? null : Number(row.finished_at),
      }));
    },
    // --- end of listing runs
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
      // Prepared once per connection: a running run asks before each step.
      const { rows } = await attempt(true, (client) =>
        client.query<{ paused: string | null; cancel_requested: boolean | null }>({
          name: `loopstate-control-${schema}`,
          text: `SELECT ${controlColumns}`,
          values: [runId],
        }),
      );
      const row = rows[0];
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
              false,
            )
          ).rowCount === 1
        );
      return (
        (
          await query(
            `UPDATE ${schema}.ledgers SET body = $1, version = version + 1 WHERE tenant_id = $2 AND version = $3`,
            [body, tenantId, expectedVersion],
            // A compare-and-set sent twice would fail the second time after the first committed.
            false,
          )
        ).rowCount === 1
      );
    },
    ...postgresLearning(schema, query),
    async heartbeat(executorId, now, about = {}) {
      await query(
        `INSERT INTO ${schema}.workers (executor_id, heartbeat_at, application_version, lease_prefix) VALUES ($1, $2, $3, $4) ON CONFLICT (executor_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, claimed_by = NULL, claimed_at = NULL, application_version = coalesce(excluded.application_version, ${schema}.workers.application_version), lease_prefix = coalesce(excluded.lease_prefix, ${schema}.workers.lease_prefix)`,
        [executorId, now, about.applicationVersion ?? null, about.leasePrefix ?? null],
      );
    },
    async liveWorkers(since) {
      // Read-only, with no DDL: a `dbosClient` asks this first, maybe as a role that may not create
      // tables, in a database where no worker has run. No table yet: no worker is known. The version
      // column is read through to_jsonb, so a table not yet migrated by a newer worker reads too.
      const { rows } = await attempt(
        true,
        async (client) =>
          (
            await client.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [
              `${schema}.workers`,
            ])
          ).rows[0]?.present === true
            ? client.query(
                `SELECT executor_id, heartbeat_at, to_jsonb(w) ->> 'application_version' AS application_version FROM ${schema}.workers w WHERE heartbeat_at >= $1 ORDER BY executor_id`,
                [since],
              )
            : { rows: [] },
        async () => poolOf(),
      );
      return (rows as { executor_id: string; heartbeat_at: string; application_version: string | null }[]).map(
        (row) => ({
          executorId: row.executor_id,
          heartbeatAt: Number(row.heartbeat_at),
          applicationVersion: row.application_version,
        }),
      );
    },
    async releaseLeasesOf(executorIds, self) {
      if (executorIds.length === 0) return [];
      // A prefix match, not LIKE: a host name may hold `_`.
      const { rows } = await query(
        `UPDATE ${schema}.runs SET lease_owner = NULL, lease_until = 0 WHERE lease_owner IS NOT NULL AND EXISTS (SELECT 1 FROM ${schema}.workers w WHERE w.executor_id = ANY($1) AND w.claimed_by = $2 AND w.lease_prefix IS NOT NULL AND left(${schema}.runs.lease_owner, length(w.lease_prefix)) = w.lease_prefix) RETURNING run_id`,
        [[...executorIds], self],
      );
      return rows.map((row) => (row as { run_id: string }).run_id);
    },
    async retire(executorId) {
      await query(
        `UPDATE ${schema}.workers SET heartbeat_at = 0, claimed_by = NULL, claimed_at = NULL WHERE executor_id = $1`,
        [executorId],
      );
    },
    async claimSilentExecutors(before, self, now = Date.now()) {
      // One UPDATE: of two reapers racing, the second re-reads the row after the first commits and skips it.
      const { rows } = await query(
        `UPDATE ${schema}.workers SET claimed_by = $2, claimed_at = $3 WHERE heartbeat_at < $1 AND executor_id <> $2 AND (claimed_by IS NULL OR claimed_at < $1) RETURNING executor_id`,
        [before, self, now],
        false,
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
      const client = await connect();
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
  });
}
