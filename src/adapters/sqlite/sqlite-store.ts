/**
 * The embedded default store on better-sqlite3: one file, WAL journal, `synchronous=NORMAL` (a commit
 * survives a process crash; an OS crash or power loss may lose the last commits, never corrupt the
 * file), or `durability: 'full'` to fsync every journal commit. Loaded on first use, so importing loopstate
 * never loads the native module.
 */
import { loadPeer } from '../../engine/peer-dependency.js';
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import { LoopConfigError } from '../../contracts/errors.js';
import {
  markAppendTakesSnapshot,
  type AppendOutcome,
  type Lease,
  type RunControl,
  type RunRow,
  type Store,
  type StoreRow,
} from '../../contracts/store.js';
import { StoreConflictError } from '../../engine/store/store-conflict-error.js';
import { pack, packCommit, unpack, unpackRows, type PackedRow } from './row-packing.js';
import { SEQ_LIMIT, type JournalLayout } from './sqlite-schema.js';
import { sqliteLearning } from './sqlite-learning.js';
import { openDatabase } from './sqlite-opening.js';
import { prepareStoreStatements, readKinds, type StoreStatements } from './sqlite-statements.js';
import { clearImmediate, setImmediate } from 'node:timers';
import { foldWal } from './wal-fold.js';

/**
 * Options of `sqliteStore`.
 * @example
 * const options: SqliteStoreOptions = { path: 'loops.db', durability: 'full' };
 */
export interface SqliteStoreOptions {
  /** The database file; created with its tables when missing. */
  path: string;
  /**
   * `normal` (default): WAL with synchronous=NORMAL. `full`: synchronous=FULL, an fsync per journal commit (a
   * snapshot goes in its commit's transaction; one written apart with `writeSnapshot` is made durable by the next).
   */
  durability?: 'normal' | 'full';
  /** How long a writer waits for another process's write lock, in ms (default 5 000). */
  busyTimeoutMs?: number;
  /**
   * A checkpoint folds the WAL back into the database after this many appends (default 1 000; SQLite's
   * own checkpoint after 1 000 pages comes first on a busy run). A checkpoint costs two fsyncs.
   */
  checkpointEvery?: number;
  /** The WAL file is truncated to this size after a checkpoint (default 4 MiB). */
  journalSizeLimitBytes?: number;
  /**
   * When a run stops (finished, or waiting for a person), no other run of this store is under way and
   * the WAL holds over a quarter of the database and over 256 KiB, fold the WAL back into the database and
   * truncate it, so db + wal once `loop.run()` has returned stays within 1.25 × the database or the database +
   * 256 KiB, whichever is larger (default true). The WAL is then started again with one frame (4 KiB: SQLite
   * syncs a new WAL's header at its first frame, here rather than at the next run's or resume's first write).
   * That frame lasts while a connection keeps the file open (this store, or another process's) or when the
   * process is killed (or calls `process.exit()`) after the fold; `close()`, or the process ending by itself,
   * folds it and deletes the WAL, so the next process's first write pays that header's fsync as before. It never
   * waits: while another connection reads or writes, it folds what it can and leaves the rest to the next
   * checkpoint. The fold runs on the main thread (better-sqlite3 is synchronous) once the run's caller has its
   * result, in the next macrotask, not on the run's path (every record is committed before it): it copies the
   * frames not yet written back and makes 3 fsyncs at `durability: 'normal'` (the checkpoint's 2 and the new
   * WAL's header) and 4 at `'full'` (and that frame's commit), a few ms on a local disk and more on a slow one; a
   * `close()` after it with nothing written since makes 2 more (the frame folded). `close()` does a fold still
   * pending, without starting the WAL again. `false`: leave the WAL to `checkpointEvery` and SQLite's own
   * checkpoints.
   */
  foldWalWhenIdle?: boolean;
  /** How often a paused run looks whether the pause was lifted, in ms (default 500). */
  pausePollMs?: number;
}

type Database = BetterSqlite3.Database;

/** better-sqlite3 once loaded: a store made after the first does not resolve the package again. */
let driver: typeof BetterSqlite3 | undefined;

/**
 * better-sqlite3, loaded when the first store is made (so a missing package is said at once, not at the first
 * write), then kept: a `createRequire` and the package's resolution were ~0.01–0.1 ms of every fresh store (a CLI
 * command or a resume that opens its own). A load that fails is not kept: the next store tries again.
 */
function loadDriver(): typeof BetterSqlite3 {
  driver ??= loadPeer(() => createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3, {
    packageName: 'better-sqlite3',
    installCommand: 'npm install better-sqlite3@~12.11',
    feature: 'sqliteStore',
  });
  return driver;
}

function checkOptions(options: SqliteStoreOptions): void {
  const issues: { path: string; message: string }[] = [];
  if (typeof options?.path !== 'string' || options.path === '')
    issues.push({ path: 'path', message: 'expected a file path (or ":memory:")' });
  if (options?.durability !== undefined && options.durability !== 'normal' && options.durability !== 'full')
    issues.push({ path: 'durability', message: 'expected "normal" or "full"' });
  if (options?.foldWalWhenIdle !== undefined && typeof options.foldWalWhenIdle !== 'boolean')
    issues.push({ path: 'foldWalWhenIdle', message: 'expected true or false' });
  for (const key of ['busyTimeoutMs', 'checkpointEvery', 'journalSizeLimitBytes', 'pausePollMs'] as const) {
    const value = options?.[key];
    if (value !== undefined && !(Number.isInteger(value) && value > 0))
      issues.push({ path: key, message: 'expected a positive integer' });
  }
  if (issues.length > 0) throw new LoopConfigError({ issues });
}

/**
 * A store in one SQLite file, shared safely by the processes of one machine.
 * @example
 * const loop = createLoop({ model, tools, store: sqliteStore({ path: 'loops.db' }) });
 * const result = await loop.resume('order-O-101'); // after a crash, in a new process
 */
export function sqliteStore(options: SqliteStoreOptions): Store {
  checkOptions(options);
  const Driver = loadDriver();
  let db: Database | null = null;
  let layout: JournalLayout = 'keyed';
  let statements: StoreStatements | null = null;
  let writes: ReturnType<typeof prepareWrites> | null = null;
  let appendsSinceCheckpoint = 0;
  const checkpointEvery = options.checkpointEvery ?? 1_000;
  const busyTimeoutMs = options.busyTimeoutMs ?? 5_000;
  /**
   * The runs this store created or took a lease of and has not released, with the owner that holds each: while
   * one is, the WAL is left be. Only that owner's release ends the drive (not another owner's, nor one whose
   * lease another loop sharing this store took over).
   */
  const driving = new Map<string, string>();
  /**
   * The control the last `readControl` found, with the database's `data_version` read just before it: while that
   * number stands, no other connection (another process, or another store on the file) has committed since, and
   * this store wrote nothing meanwhile (each write method forgets it), so the control is as found: a later read
   * (a paused run's looks, a round with a write) reads that number alone, not the control's rows. Forgotten at
   * close: another connection's numbers are not comparable.
   */
  let controlSeen: { runId: string; version: number; control: RunControl } | null = null;
  const use = () => {
    if (db === null) ({ db, layout } = openDatabase(Driver, options));
    statements ??= prepareStoreStatements(db, layout);
    writes ??= prepareWrites(db, statements, layout);
    return { db, statements, writes };
  };
  /**
   * The fold at the end of the last drive, done once the caller has its result (the next macrotask) rather
   * than before: its checkpoint's fsyncs (1–10 ms) are not the run's. Every record is committed before it. It is
   * owed once the drive ended: a run the caller starts at once (before the next macrotask) does not put it off,
   * as it would the next run's whole length. `close` does a fold still pending.
   */
  let pendingFold: ReturnType<typeof setImmediate> | null = null;
  const foldOwed = (startNext: boolean) => {
    pendingFold = null;
    // No transaction spans an await on this connection; if one were open, the fold is left to the next.
    if (db === null || db.inTransaction) return;
    try {
      // The store stays open: the WAL is started again here, so the next drive's first write does not restart it
      // (and fsync its header) on its way to its first model call. Not at close: SQLite removes the WAL then.
      foldWal(db, busyTimeoutMs, false, startNext);
    } catch {
      // Best effort, off any caller's path: the WAL stays as it is and SQLite's next checkpoint takes it.
    }
    // A transaction the fold began (starting the WAL again) and could not end, its ROLLBACK refused too, is not
    // left open: the store's next writes would nest in it (better-sqlite3 makes a transaction within one a
    // savepoint) and none would be committed. The connection is closed (SQLite rolls the transaction back) and the
    // next call opens another.
    if (db.inTransaction) {
      try {
        db.close();
      } catch {
        // Closed or not, it is not used again.
      }
      db = null;
      statements = null;
      writes = null;
      controlSeen = null;
    }
  };
  const foldSoon = () => {
    pendingFold ??= setImmediate(foldOwed, true);
  };
  const learning = sqliteLearning(use);
  // Its append writes a snapshot given with the rows in their transaction (one commit, not two).
  return markAppendTakesSnapshot({
    pausePollMs: options.pausePollMs ?? 500,
    async createRun(runId, body, lease) {
      controlSeen = null;
      const row = pack(body);
      const created =
        use().statements.insertRun.run(runId, row.body, row.packed, lease.owner, lease.until).changes === 1;
      if (created) driving.set(runId, lease.owner);
      return created;
    },
    async readRun(runId): Promise<RunRow | null> {
      const row = use().statements.readRun.get(runId) as
        | {
            body: string;
            packed: Uint8Array | null;
            lease_owner: string | null;
            lease_until: number;
            cancel_requested: number;
          }
        | undefined;
      return row
        ? {
            runId,
            body: unpack(runId, null, row.body, row.packed),
            leaseOwner: row.lease_owner,
            leaseUntil: row.lease_until,
            cancelRequested: row.cancel_requested === 1,
          }
        : null;
    },
    async acquireLease(runId, lease: Lease, now, takeOverFrom) {
      controlSeen = null;
      const acquired =
        use().statements.acquireLease.run(lease.owner, lease.until, runId, now, lease.owner, takeOverFrom ?? null)
          .changes === 1;
      if (acquired) driving.set(runId, lease.owner);
      return acquired;
    },
    async releaseLease(runId, owner) {
      controlSeen = null;
      const { statements } = use();
      // A drive is over (the run finished, waits for a person, or failed): the last run out folds the WAL. A
      // release by an owner that does not hold the run here leaves its drive under way. Out of `driving` even
      // when the release throws (the store down), so the WAL is not kept from folding later; and when the
      // release changed no row (another process took the lease over), as this drive is over all the same.
      const ended = driving.get(runId) === owner;
      try {
        statements.releaseLease.run(runId, owner);
      } finally {
        if (ended) driving.delete(runId);
      }
      if (ended && driving.size === 0 && options.foldWalWhenIdle !== false) foldSoon();
    },
    async append(runId, rows, lease, runBody, finishedAt, snapshot) {
      controlSeen = null;
      const { db, writes } = use();
      // Deflated before the transaction (the write lock is held for the inserts only), the rows in one group.
      const run = runBody === undefined ? undefined : pack(runBody);
      // A snapshot goes in the rows' transaction (one commit, not two), written after them.
      const withSnapshot = snapshot === undefined ? undefined : packed(snapshot);
      const control = writes.append.immediate(runId, packCommit(rows), lease, run, finishedAt, withSnapshot);
      if (++appendsSinceCheckpoint >= checkpointEvery) {
        appendsSinceCheckpoint = 0;
        // PASSIVE never waits for readers; journal_size_limit then keeps the WAL file small.
        db.pragma('wal_checkpoint(PASSIVE)');
      }
      return control;
    },
    async readJournal(runId, afterSeq, kinds) {
      const { db, statements } = use();
      const statement = kinds === undefined ? statements.readJournal : readKinds(db, statements, kinds);
      if (statement === null) return [];
      const readRow = (seq: number) => statements.readRecord.get({ runId, seq }) as PackedRow | undefined;
      return unpackRows(runId, statement.all({ runId, afterSeq }) as PackedRow[], readRow);
    },
    async writeSnapshot(runId, row, lease) {
      controlSeen = null;
      const { db, writes } = use();
      // `full`: the snapshot's commit is not fsynced on its own (an fsync per journal commit only). A snapshot stands
      // on journal rows committed (and fsynced) before it, and the next commit's fsync of the WAL makes it
      // durable too: a power cut before that loses the snapshot alone, the state of a crash before it was
      // written, from which a resume starts at the snapshot before (the journal is whole).
      if (options.durability !== 'full') return writes.snapshot.immediate(runId, packed(row), lease);
      db.pragma('synchronous = NORMAL');
      try {
        writes.snapshot.immediate(runId, packed(row), lease);
      } finally {
        db.pragma('synchronous = FULL');
      }
    },
    async latestSnapshot(runId) {
      const row = use().statements.latestSnapshot.get(runId) as PackedRow | undefined;
      return row === undefined ? null : unpackRows(runId, [row], () => undefined)[0]!;
    },
    async prune({ finishedBefore }) {
      controlSeen = null;
      const { db, writes } = use();
      const deleted = writes.prune.immediate(finishedBefore);
      // The deleted pages are reused by later writes; the WAL that recorded the deletes is folded back now,
      // and truncated whatever its size when no run of this store is under way (a prune is rare: its fsyncs
      // do not matter).
      if (deleted > 0) {
        if (driving.size === 0 && options.foldWalWhenIdle !== false) foldWal(db, busyTimeoutMs, true);
        else db.pragma('wal_checkpoint(PASSIVE)');
      }
      return deleted;
    },
    // --- listing runs
    async listRuns({ limit, after }) {
      const { statements } = use();
      const rows = (
        after === undefined ? statements.listRuns.all(limit) : statements.listRunsAfter.all(after, limit)
      ) as { run_id: string; body: string; packed: Uint8Array | null; finished_at: number | null }[];
      return rows.map((row) => ({
        runId: row.run_id,
        body: unpack(row.run_id, null, row.body, row.packed),
        finishedAt: row.finished_at,
      }));
    },
    // --- end of listing runs
    async requestCancel(runId) {
      controlSeen = null;
      return use().statements.requestCancel.run(runId).changes === 1;
    },
    async setPaused(reason) {
      controlSeen = null;
      use().statements.setPaused.run(reason);
    },
    async readControl(runId): Promise<RunControl> {
      const { statements } = use();
      // Read before the control: a commit landing between the two leaves a number older than what was read, and
      // the next call reads the control again (never the other way round).
      const version = (statements.dataVersion.get() as { data_version: number }).data_version;
      if (controlSeen !== null && controlSeen.runId === runId && controlSeen.version === version)
        return { ...controlSeen.control };
      const control = readControl(statements, runId);
      controlSeen = { runId, version, control: { ...control } };
      return control;
    },
    async readLedger(tenantId) {
      return (use().statements.readLedger.get(tenantId) as { body: string; version: number } | undefined) ?? null;
    },
    async writeLedger(tenantId, body, expectedVersion) {
      controlSeen = null;
      const { statements } = use();
      if (expectedVersion === null) return statements.insertLedger.run(tenantId, body).changes === 1;
      return statements.updateLedger.run(body, tenantId, expectedVersion).changes === 1;
    },
    ...learning,
    async close() {
      controlSeen = null;
      if (pendingFold !== null) {
        clearImmediate(pendingFold);
        // SQLite folds the WAL at the close of the file's last connection only: another one open keeps it.
        foldOwed(false);
      }
      db?.close();
      db = null;
      driving.clear();
      statements = null;
      writes = null;
    },
  });
}

const packed = (row: StoreRow): PackedRow => ({ seq: row.seq, kind: row.kind, ...pack(row.body) });

function readControl(statements: StoreStatements, runId: string): RunControl {
  const row = statements.readControl.get(runId) as
    { paused: string | null; cancel_requested: number | null } | undefined;
  return { paused: row?.paused ?? null, cancelRequested: row?.cancel_requested === 1 };
}

/** The lease, the control and the run's number (its journal key, version 6) a journal append reads, in one statement. */
interface OwnerAndControl {
  lease_owner: string | null;
  lease_until: number;
  cancel_requested: number;
  paused: string | null;
  number: number | null;
}

const conflict = (runId: string, seq: number | null, message: string, cause?: unknown) =>
  new StoreConflictError({ runId, seq, message, cause });
const lostLease = (runId: string, seq: number | null) =>
  conflict(runId, seq, `run ${runId} is held by another owner; this writer lost its lease`);

/**
 * Renews a held lease (in the caller's write transaction, the owner checked) when less than half of the new one's
 * length is left of it: `lease.until` is now + the loop's `leaseMs`, so the runs table's page is rewritten about
 * twice per `leaseMs` of a busy run, not at every commit, and the lease never runs out while the owner writes.
 * A run that makes no I/O (a scripted model, instant tools) never gives the heartbeat timer a turn: its writes are
 * all that keep its lease. Never shortens a lease (a stored `lease_until` below the midpoint is below `until`).
 */
function renewIfStale(statements: StoreStatements, runId: string, leaseUntil: number, lease: Lease): void {
  const now = Date.now();
  if (leaseUntil < now + (lease.until - now) / 2) statements.renewLease.run(lease.until, runId, lease.owner);
}

/**
 * A version 6 journal row's key is its run's number × 2^32 + its seq: a seq outside [0, 2^32) would land in
 * another run's range (a run without a number is given one before: this cannot happen but by a bug).
 */
function checkKey(runId: string, number: number | null, seq: number): void {
  if (number === null) throw conflict(runId, seq, `run ${runId} has no journal number (runs.number)`);
  if (!Number.isInteger(seq) || seq < 0 || seq >= SEQ_LIMIT)
    throw conflict(runId, seq, `run ${runId}: journal seq ${seq} is outside [0, 2^32)`);
}

/** The write transactions, made once: better-sqlite3 builds a wrapper per `transaction()` call. */
function prepareWrites(db: Database, statements: StoreStatements, layout: JournalLayout) {
  return {
    append: db.transaction(
      (
        runId: string,
        rows: readonly PackedRow[],
        lease: Lease,
        runBody: { body: string; packed: Buffer | null } | undefined,
        finishedAt: number | undefined,
        snapshot: PackedRow | undefined,
      ): AppendOutcome => {
        // A journal append checks the lease (a read: no page of the runs table rewritten per step), in the
        // statement that reads the run's control (the write lock is held: neither changes before the commit),
        // and renews it only when over half of it has gone (`renewIfStale`); a heartbeat (no rows) or a new run
        // body renews it always.
        const owned =
          runBody === undefined && rows.length > 0
            ? (statements.ownerAndControl.get(runId) as OwnerAndControl | undefined)
            : undefined;
        // The run's number (its rows' key, version 6) comes with the lease check: no statement more a commit.
        const written =
          owned === undefined && runBody !== undefined
            ? (statements.writeRunBody.get(
                lease.until,
                runBody.body,
                runBody.packed,
                finishedAt ?? null,
                runId,
                lease.owner,
              ) as { number: number | null } | undefined)
            : undefined;
        const held =
          owned !== undefined
            ? owned.lease_owner === lease.owner
            : runBody !== undefined
              ? written !== undefined
              : rows.length === 0 && statements.renewLease.run(lease.until, runId, lease.owner).changes === 1;
        if (!held) throw lostLease(runId, rows[0]?.seq ?? null);
        if (owned !== undefined) renewIfStale(statements, runId, owned.lease_until, lease);
        let number = owned?.number ?? written?.number ?? null;
        // A run row without a number (not made by this createRun: by hand, or a tool of its own) gets one now.
        if (layout === 'keyed' && number === null && rows.length > 0)
          number = (statements.numberRun.get(runId) as { number: number } | undefined)?.number ?? null;
        for (const row of rows) {
          if (layout === 'keyed') checkKey(runId, number, row.seq);
          try {
            // Bound by position (an object of named parameters costs ~0.7 µs a row more to bind, ~2 rows a step).
            if (layout === 'keyed') statements.insertRecord.run(number, row.seq, runId, row.kind, row.body, row.packed);
            else statements.insertRecord.run(runId, row.seq, row.kind, row.body, row.packed);
          } catch (error) {
            // Only a taken key is a conflict; anything else (a lost table, a full disk) is SQLite's own error.
            if (!isTakenKeyError(error)) throw error;
            throw conflict(runId, row.seq, `run ${runId} already has a journal record at seq ${row.seq}`, error);
          }
        }
        // After the rows, with the lease checked above: the snapshot is durable with the events it covers, never alone.
        if (snapshot !== undefined)
          statements.upsertSnapshot.run(runId, snapshot.seq, snapshot.kind, snapshot.body, snapshot.packed);
        // Read in the write transaction: what the owner checks before its next step, without another call.
        const control: AppendOutcome =
          owned !== undefined
            ? { paused: owned.paused, cancelRequested: owned.cancel_requested === 1 }
            : readControl(statements, runId);
        if (snapshot !== undefined) control.snapshotWritten = true;
        return control;
      },
    ),
    prune: db.transaction((finishedBefore: number): number => {
      statements.pruneJournal.run({ finishedBefore });
      statements.pruneSnapshots.run(finishedBefore);
      return statements.pruneRuns.run(finishedBefore).changes;
    }),
    snapshot: db.transaction((runId: string, row: PackedRow, lease: Lease) => {
      // The lease is checked, and renewed only when stale (as by a journal append): the runs table's page is
      // not rewritten by every snapshot.
      const owner = statements.leaseOwner.get(runId) as { lease_owner: string | null; lease_until: number } | undefined;
      if (owner === undefined || owner.lease_owner !== lease.owner) throw lostLease(runId, row.seq);
      renewIfStale(statements, runId, owner.lease_until, lease);
      statements.upsertSnapshot.run(runId, row.seq, row.kind, row.body, row.packed);
    }),
  };
}

/** Whether SQLite refused a row for a key another row holds (`SQLITE_CONSTRAINT_PRIMARYKEY` or `_UNIQUE`). */
function isTakenKeyError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}
