/**
 * The SQLite file on disk right after a run stops: the last drive of a store folds the WAL back into the
 * database and truncates it (issue 18 target 2: ≤ 2 KB a step, db + wal, with the store still open), never
 * waiting for another process's reader, and `prune` leaves pages that later runs reuse. The folded WAL is started
 * again with one frame, so the next drive's first write appends to it (a WAL restarted at a write has its new
 * header fsynced on that write's path).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, LoopConfigError, type Model, type Store } from 'loopstate';
import { sqliteStore, type SqliteStoreOptions } from 'loopstate/sqlite';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-sqlite-wal-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());
let files = 0;
const freshPath = () => join(scratch, `wal-${files++}.db`);
const size = (path: string) => (existsSync(path) ? statSync(path).size : 0);
const walBytes = (path: string) => size(`${path}-wal`);
/** A WAL folded and started again: its header (32 bytes) and one frame (24 bytes and a 4 KiB page: page 1). */
const STARTED_WAL = 32 + 24 + 4_096;
/** The fold at the end of a store's last drive is done once the caller has its result: the next macrotask. */
const afterReturn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Issue 18's workload: a read tool call a step with a 10-byte result, the answer at step `total`. */
function stepsModel(total: number, gate?: Promise<void>): Model {
  return {
    id: 'scripted',
    async generate(request) {
      const call = request.messages.filter((message) => message.role === 'assistant').length + 1;
      const usage = { inputTokens: 50, outputTokens: 10 };
      if (call === total && gate) await gate;
      if (call < total)
        return { text: null, toolCalls: [{ id: `c${call}`, name: 'lookup', arguments: `{"key":"k${call}"}` }], usage };
      return { text: '{"done":true}', toolCalls: [], usage };
    },
  };
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up.',
  input: z.object({ key: z.string() }),
  access: 'read',
  execute: () => 'value 1234',
});

const refund = defineTool({
  name: 'refund',
  description: 'Refund an order.',
  input: z.object({ order: z.string() }),
  access: 'destructive',
  execute: ({ order }) => ({ refunded: order }),
});

const loopOf = (total: number, store: Store, gate?: Promise<void>) =>
  createLoop({
    model: stepsModel(total, gate),
    tools: [lookup],
    limits: {
      maxSteps: total + 1,
      maxToolCalls: total,
      deadlineMs: Infinity,
      maxInputTokens: Infinity,
      maxOutputTokens: Infinity,
      maxCostUsd: Infinity,
    },
    noProgress: { unchangedState: 1_000_000 },
    // A commit a step (not grouped across steps): the WAL sizes the cases count on.
    durable: { maxUncommittedSteps: 1 },
    store,
  });

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;

/** The runs another connection sees committed in `path`. */
function committedRuns(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT run_id FROM runs ORDER BY run_id').pluck().all() as string[];
  } finally {
    db.close();
  }
}

function storeAt(path: string, options: Partial<SqliteStoreOptions> = {}): Store {
  return sqliteStore({ path, ...options });
}

/** A second process holding a read transaction on `path` until its stdin closes. */
async function readerProcess(path: string): Promise<ChildProcessWithoutNullStreams> {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const source = `
    const Database = require(${JSON.stringify(driver)});
    const db = new Database(${JSON.stringify(path)});
    db.exec('BEGIN');
    db.prepare('SELECT count(*) FROM journal').get();
    process.stdout.write('reading\\n');
    process.stdin.on('end', () => { db.exec('COMMIT'); db.close(); process.exit(0); });
    process.stdin.resume();
  `;
  const child = spawn(process.execPath, ['-e', source]);
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the reader exited with ${code}`)));
  });
  return child;
}

describe('sqliteStore: the WAL when a run stops', () => {
  it('leaves db + wal ≤ 2 KB a step right after a 100-step run returns, the store still open', async () => {
    const path = freshPath();
    const store = storeAt(path);
    const result = await loopOf(100, store).run({ goal: 'go', runId: 'long' });
    expect(result.stopReason).toBe('completed');
    expect(result.steps).toBe(100);
    // Not on the run's path: when the result is handed back, the WAL is still there (all of it committed).
    expect(walBytes(path)).toBeGreaterThan(256 * 1024);
    await afterReturn();
    expect(walBytes(path)).toBe(STARTED_WAL);
    expect(size(path) + walBytes(path)).toBeLessThanOrEqual(100 * 2_048);
    // Nothing was lost by the fold: the recorded run is read back whole.
    expect((await loopOf(100, store).resume('long')).steps).toBe(100);
    await store.close();
  });

  it.each(['normal', 'full'] as const)(
    "starts the folded WAL again, so the next drive appends to it: its header is not written (nor fsynced) again (durability '%s')",
    async (durability) => {
      const path = freshPath();
      const store = storeAt(path, { durability });
      expect((await loopOf(100, store).run({ goal: 'go', runId: 'long' })).steps).toBe(100);
      await afterReturn();
      // Folded, then one frame written: the WAL's header (its salts) is on disk, synced by that write.
      expect(walBytes(path)).toBe(STARTED_WAL);
      const header = readFileSync(`${path}-wal`).subarray(0, 32);
      // The next drive's first write (a resume's lease, a new run's row) appends a frame after it. A WAL restarted
      // there would get a new header (new salts), and SQLite fsyncs a restarted WAL's header before its first frame.
      const now = Date.now();
      expect(await store.acquireLease('long', { owner: 'next', until: now + 60_000 }, now)).toBe(true);
      expect(walBytes(path)).toBe(2 * STARTED_WAL - 32);
      expect(readFileSync(`${path}-wal`).subarray(0, 32)).toEqual(header);
      // A store opened afresh on the file (another process's, after this one died) appends to it alike.
      const other = storeAt(path, { durability });
      expect(await other.createRun('other', '{}', { owner: 'o', until: now + 60_000 })).toBe(true);
      expect(readFileSync(`${path}-wal`).subarray(0, 32)).toEqual(header);
      expect(walBytes(path)).toBeGreaterThan(2 * STARTED_WAL - 32);
      await other.close();
      // Nothing was lost: the run resumes (its lease's owner gone with the release) to the same end.
      await store.releaseLease('long', 'next');
      expect((await loopOf(100, store).resume('long')).steps).toBe(100);
      await store.close();
      // Closed: SQLite folds and removes the WAL as it always did.
      expect(walBytes(path)).toBe(0);
    },
  );

  it('swallows a failure to start the WAL again: busy timeout restored, the WAL left truncated, the next run as before', async () => {
    const path = freshPath();
    const store = storeAt(path, { busyTimeoutMs: 1_234 });
    await loopOf(100, store).run({ goal: 'go', runId: 'long' });
    // Another connection taking the write lock between the checkpoint and the fold's own transaction.
    // The store's connection, as the failing statement ran on it.
    const failedOn: BetterSqlite3.Database[] = [];
    const connection = () => failedOn[0];
    const exec = Database.prototype.exec;
    vi.spyOn(Database.prototype, 'exec').mockImplementation(function (this: BetterSqlite3.Database, sql: string) {
      if (sql !== 'BEGIN IMMEDIATE') return exec.call(this, sql);
      failedOn.push(this);
      throw new Database.SqliteError('database is locked', 'SQLITE_BUSY');
    } as typeof exec);
    await afterReturn();
    vi.restoreAllMocks();
    expect(connection()?.open).toBe(true);
    expect(connection()!.inTransaction).toBe(false);
    expect(connection()!.pragma('busy_timeout', { simple: true })).toBe(1_234);
    expect(walBytes(path)).toBe(0);
    // The next run is recorded as ever (a WAL restarted by its first write), committed for any other connection.
    expect((await loopOf(5, store).run({ goal: 'go', runId: 'next' })).stopReason).toBe('completed');
    expect(committedRuns(path)).toEqual(['long', 'next']);
    await store.close();
  });

  it("closes the connection a failed start of the WAL left in its transaction (ROLLBACK refused): later commits don't nest in it", async () => {
    const path = freshPath();
    const store = storeAt(path);
    await loopOf(100, store).run({ goal: 'go', runId: 'long' });
    // The store's connection, as the failing statement ran on it.
    const failedOn: BetterSqlite3.Database[] = [];
    const connection = () => failedOn[0];
    const exec = Database.prototype.exec;
    vi.spyOn(Database.prototype, 'exec').mockImplementation(function (this: BetterSqlite3.Database, sql: string) {
      if (sql.startsWith('PRAGMA user_version =') || sql === 'ROLLBACK') {
        failedOn.push(this);
        throw new Database.SqliteError('disk I/O error', 'SQLITE_IOERR');
      }
      return exec.call(this, sql);
    } as typeof exec);
    await afterReturn();
    vi.restoreAllMocks();
    // Its transaction (BEGIN IMMEDIATE) could not be ended: the connection is closed, SQLite rolling it back.
    expect(connection()?.open).toBe(false);
    // The next run opens another: its commits are commits (nested in the old transaction, they were savepoints that
    // no other connection saw, all lost at close).
    expect((await loopOf(5, store).run({ goal: 'go', runId: 'next' })).stopReason).toBe('completed');
    expect(committedRuns(path)).toEqual(['long', 'next']);
    await store.close();
    expect(committedRuns(path)).toEqual(['long', 'next']);
    expect((await loopOf(5, storeAt(path)).resume('next')).stopReason).toBe('completed');
  });

  it('leaves the WAL as SQLite does with foldWalWhenIdle: false (the bound above is the fold)', async () => {
    const path = freshPath();
    const store = storeAt(path, { foldWalWhenIdle: false });
    await loopOf(100, store).run({ goal: 'go', runId: 'long' });
    expect(walBytes(path)).toBeGreaterThan(100 * 2_048);
    await store.close();
    expect(walBytes(path)).toBe(0);
  });

  it('folds the WAL when a run stops to wait for an approval', async () => {
    const path = freshPath();
    const store = storeAt(path);
    // 40 read steps (a WAL past 256 KiB), then a refund that asks for approval.
    const model: Model = {
      id: 'scripted',
      async generate(request) {
        const call = request.messages.filter((message) => message.role === 'assistant').length + 1;
        const usage = { inputTokens: 50, outputTokens: 10 };
        if (call <= 40)
          return {
            text: null,
            toolCalls: [{ id: `c${call}`, name: 'lookup', arguments: `{"key":"k${call}"}` }],
            usage,
          };
        return { text: null, toolCalls: [{ id: 'refund', name: 'refund', arguments: '{"order":"O-7"}' }], usage };
      },
    };
    const stopped = await createLoop({
      model,
      tools: [lookup, refund],
      store,
      limits: { maxSteps: 50 },
      noProgress: { unchangedState: 1_000 },
      // A commit a step (not grouped across steps): the WAL the premise needs.
      durable: { maxUncommittedSteps: 1 },
    }).run({ goal: 'Refund O-7', runId: 'ask' });
    expect(stopped.status).toBe('needs_human');
    await afterReturn();
    expect(walBytes(path)).toBe(STARTED_WAL);
    expect((await store.readRun('ask'))?.leaseOwner).toBeNull();
    await store.close();
  });

  it('leaves the WAL while another run of the store is under way, and folds it when the last one stops', async () => {
    const path = freshPath();
    const store = storeAt(path);
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const slow = loopOf(40, store, gate).run({ goal: 'go', runId: 'slow' });
    const quick = await loopOf(40, store).run({ goal: 'go', runId: 'quick' });
    expect(quick.stopReason).toBe('completed');
    await afterReturn();
    expect(walBytes(path)).toBeGreaterThan(0);
    open();
    expect((await slow).stopReason).toBe('completed');
    await afterReturn();
    expect(walBytes(path)).toBe(STARTED_WAL);
    await store.close();
  });

  it('a release by an owner not holding the run, or of a lease taken over, leaves the drive under way unfolded', async () => {
    const path = freshPath();
    const store = storeAt(path);
    const now = Date.now();
    const lease = { owner: 'a', until: now + 60_000 };
    expect(await store.createRun('held', '{}', lease)).toBe(true);
    // Bodies that deflate little: the WAL goes well past 256 KiB and a quarter of the database.
    for (let seq = 1; seq <= 120; seq++)
      await store.append('held', [{ seq, kind: 'event', body: randomBytes(3_000).toString('base64') }], lease);
    const before = walBytes(path);
    expect(before).toBeGreaterThan(256 * 1024);
    // Not the holder: the run's lease and its drive stay.
    await store.releaseLease('held', 'b');
    await afterReturn();
    expect((await store.readRun('held'))?.leaseOwner).toBe('a');
    expect(walBytes(path)).toBeGreaterThanOrEqual(before);
    // Another loop sharing this store takes the lease over; the first owner's late release ends nothing.
    expect(await store.acquireLease('held', { owner: 'b', until: now + 60_000 }, now, 'a')).toBe(true);
    await store.releaseLease('held', 'a');
    await afterReturn();
    expect(walBytes(path)).toBeGreaterThanOrEqual(before);
    // The holder's release ends the last drive: the WAL is folded.
    await store.releaseLease('held', 'b');
    await afterReturn();
    expect((await store.readRun('held'))?.leaseOwner).toBeNull();
    expect(walBytes(path)).toBe(STARTED_WAL);
    await store.close();
  });

  it('never waits for a reader in another process (busy timeout 10 minutes), and folds once it is gone', async () => {
    const path = freshPath();
    const store = storeAt(path, { busyTimeoutMs: 600_000 });
    await loopOf(5, store).run({ goal: 'go', runId: 'first' });
    const reader = await readerProcess(path);
    try {
      // Were the fold to wait for the reader through the busy handler, this would hang (the reader waits for us).
      const second = await loopOf(40, store).run({ goal: 'go', runId: 'second' });
      expect(second.stopReason).toBe('completed');
      await afterReturn();
      // The reader's snapshot pins the WAL: the frames after it are folded, the file is not truncated.
      expect(walBytes(path)).toBeGreaterThan(0);
    } finally {
      reader.stdin.end();
      await new Promise((resolve) => reader.once('exit', resolve));
    }
    await loopOf(5, store).run({ goal: 'go', runId: 'third' });
    await afterReturn();
    expect(walBytes(path)).toBe(STARTED_WAL);
    for (const runId of ['first', 'second', 'third'])
      expect((await store.listRuns!({ limit: 10 })).map((run) => run.runId)).toContain(runId);
    await store.close();
  });

  it('leaves a WAL of 256 KiB or less be: a short run on a new file pays no checkpoint', async () => {
    const path = freshPath();
    const store = storeAt(path);
    await loopOf(5, store).run({ goal: 'go', runId: 'short' });
    await afterReturn();
    expect(walBytes(path)).toBeGreaterThan(0);
    expect(walBytes(path)).toBeLessThanOrEqual(256 * 1024);
    // The next short runs add to it until it passes 256 KiB; the stop after that folds it.
    const sizes: number[] = [];
    for (let run = 0; run < 12 && (sizes.length === 0 || sizes.at(-1)! > STARTED_WAL); run++) {
      await loopOf(5, store).run({ goal: 'go', runId: `next-${run}` });
      await afterReturn();
      sizes.push(walBytes(path));
    }
    expect(sizes.at(-1)).toBe(STARTED_WAL);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(256 * 1024);
    await store.close();
  });

  it('leaves a WAL under a quarter of a large database be (no checkpoint at every short run)', async () => {
    const path = freshPath();
    const store = storeAt(path);
    await loopOf(5, store).run({ goal: 'go', runId: 'first' });
    // Another connection makes the database large (4 MB of other data) and folds its own WAL.
    const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
    const other = new Database(path);
    other.exec('CREATE TABLE filler (data BLOB)');
    const insert = other.prepare('INSERT INTO filler VALUES (randomblob(4000))');
    for (let row = 0; row < 1_000; row++) insert.run();
    other.pragma('wal_checkpoint(TRUNCATE)');
    other.close();
    const database = size(path);
    expect(database).toBeGreaterThan(4_000_000);
    await loopOf(5, store).run({ goal: 'go', runId: 'short' });
    await afterReturn();
    expect(walBytes(path)).toBeGreaterThan(0);
    expect(walBytes(path)).toBeLessThanOrEqual(size(path) / 4);
    await store.close();
  });

  it('names foldWalWhenIdle when it is not a boolean', () => {
    let thrown: unknown;
    try {
      sqliteStore({ path: freshPath(), foldWalWhenIdle: 'yes' as unknown as boolean });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(LoopConfigError);
    expect((thrown as LoopConfigError).issues).toEqual([
      expect.objectContaining({ path: 'foldWalWhenIdle', message: 'expected true or false' }),
    ]);
  });
});

describe('sqliteStore: prune', () => {
  it('frees the pages of pruned runs, and later runs reuse them: the file does not grow', async () => {
    const path = freshPath();
    const store = storeAt(path);
    for (let run = 0; run < 4; run++) await loopOf(100, store).run({ goal: 'go', runId: `old-${run}` });
    const full = size(path) + walBytes(path);
    expect(await store.prune({ finishedBefore: Date.now() + 1 })).toBe(4);
    expect(await store.listRuns!({ limit: 10 })).toEqual([]);
    // The WAL that recorded the deletes is folded back and truncated (no run under way).
    expect(walBytes(path)).toBe(0);
    for (let run = 0; run < 4; run++) await loopOf(100, store).run({ goal: 'go', runId: `new-${run}` });
    // About the size of the first four, not twice it as without the reuse: their records hold times (deflated
    // a few bytes more or less) and whether a stop folds depends on the WAL's size then, so a few pages move.
    expect(size(path) + walBytes(path)).toBeLessThan(full * 1.25);
    await store.close();
  });
});
