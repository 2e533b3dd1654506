/**
 * What opening a SQLite store costs and still checks: its statements are prepared on first use (a resume
 * prepares what it runs, not all ~30); a database this version made or brought up to date is known so by its
 * header (`user_version`, schema 7) and its schema is not read again; any other is looked at in one statement,
 * and one missing a table, an index or a column is still brought up to date; a row refused before is refused as
 * before. fixtures/sqlite-schema-6.db was made by main at aed3b1c (before the stamp), never regenerated: run
 * `done` of 3 steps completed, run `old` of 12 steps left in its 8th model call by a process that died (its
 * lease long expired), the WAL folded into the file.
 */
import { createRequire } from 'node:module';
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { createLoop, type Message } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { reply, scriptedModel } from 'loopstate/testing';
import { SCHEMA_STAMP, STAMP_BASE } from '../../src/adapters/sqlite/sqlite-schema.js';
import { fixtureLoop } from './fixture-loop.js';

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-sqlite-opening-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

/** A finished run in a new file, the store closed. */
async function storedRun(name: string): Promise<string> {
  const path = join(scratch, `${name}.db`);
  const store = sqliteStore({ path });
  const loop = createLoop({ model: scriptedModel([reply('done')]), store });
  expect((await loop.run({ goal: 'go', runId: 'a' })).stopReason).toBe('completed');
  await store.close();
  return path;
}

/** The SQL of every statement better-sqlite3 prepares from here on. */
function preparedSql(): string[] {
  const prepared: string[] = [];
  const prepare = Database.prototype.prepare;
  vi.spyOn(Database.prototype, 'prepare').mockImplementation(function (this: BetterSqlite3.Database, sql: string) {
    prepared.push(sql);
    return prepare.call(this, sql);
  } as typeof prepare);
  return prepared;
}

const fixtures = join(import.meta.dirname, 'fixtures');

/** The `user_version` of a database, read by a connection of its own. */
function stampOf(path: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return db.pragma('user_version', { simple: true }) as number;
  } finally {
    db.close();
  }
}

/** The names of a database's indexes. */
function indexesOf(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index'").pluck().all() as string[];
  } finally {
    db.close();
  }
}

/** The WAL's size: 0 (or no WAL) when nothing was written since it was last folded. */
const walBytes = (path: string) => (existsSync(`${path}-wal`) ? readFileSync(`${path}-wal`).length : 0);

describe('opening a SQLite store', () => {
  it('prepares only the statements it runs: a read of a run prepares the header look and that read', async () => {
    const path = await storedRun('lazy');
    const prepared = preparedSql();
    const store = sqliteStore({ path });
    expect((await store.readRun('a'))?.runId).toBe('a');
    expect(await store.readRun('b')).toBeNull();
    // Was 26 at the opening (every statement of the store and the schema look), before any read; then the schema
    // look (`sqlite_schema` ⋈ `pragma_table_info`) and the read; now the header's stamp (a database this version
    // made) and the read.
    expect(prepared).toHaveLength(2);
    expect(prepared[0]).toBe('PRAGMA user_version');
    expect(prepared[1]).toMatch(/^SELECT body, packed, lease_owner/);
    // A statement is prepared once, at its first use.
    await store.readControl('a');
    await store.readControl('b');
    // readControl: the database's data_version (whether another connection committed since), then the control.
    expect(prepared).toHaveLength(4);
    expect(prepared[2]).toBe('PRAGMA data_version');
    expect(prepared[3]).toMatch(/cancel_requested FROM runs WHERE run_id/);
    await store.close();
  });

  it('prepares its statements again on the new connection after close (a closed one is never reused)', async () => {
    const path = await storedRun('reopen');
    const store = sqliteStore({ path });
    expect((await store.readRun('a'))?.runId).toBe('a');
    await store.close();
    expect((await store.readRun('a'))?.runId).toBe('a');
    expect(await store.readJournal('a', -1)).not.toHaveLength(0);
    await store.close();
  });

  it('refuses a damaged row as before (its code, run and seq named)', async () => {
    const path = await storedRun('damaged');
    const raw = new Database(path);
    const seq = (raw.prepare('SELECT max(id & 4294967295) AS seq FROM journal').get() as { seq: number }).seq;
    raw.prepare('UPDATE journal SET body = ?, packed = ? WHERE id & 4294967295 = ?').run('', Buffer.from([1, 2]), seq);
    raw.close();
    const store = sqliteStore({ path });
    // Its body is inflated when read (row-packing.ts): the refusal comes there.
    const row = (await store.readJournal('a', seq - 1))[0]!;
    expect(row.seq).toBe(seq);
    expect(() => row.body).toThrow(expect.objectContaining({ code: 'corrupt_record', runId: 'a', seq }));
    await store.close();
  });

  it('brings a database missing an index and a column up to date, and opens it again without a write', async () => {
    const path = await storedRun('old');
    const raw = new Database(path);
    // As an older version left it: without them, and without the stamp (it never wrote one).
    raw.exec(
      'DROP INDEX journal_chunks; DROP INDEX runs_finished_at; ALTER TABLE snapshots DROP COLUMN packed; PRAGMA user_version = 0;',
    );
    raw.close();
    const store = sqliteStore({ path });
    expect((await store.readRun('a'))?.runId).toBe('a');
    await store.close();
    const check = new Database(path);
    const names = (check.prepare("SELECT name FROM sqlite_schema WHERE type = 'index'").all() as { name: string }[])
      .map((row) => row.name)
      .sort();
    expect(names).toEqual(expect.arrayContaining(['journal_chunks', 'runs_finished_at', 'runs_number']));
    const columns = (check.pragma('table_info(snapshots)') as { name: string }[]).map((column) => column.name);
    expect(columns).toContain('packed');
    // Stamped in that same commit: up to date, in the version 6 layout.
    expect(check.pragma('user_version', { simple: true })).toBe(SCHEMA_STAMP.keyed);
    // Up to date now: a second opening takes no write lock (another connection holding one does not stop it).
    check.exec('BEGIN IMMEDIATE');
    const again = sqliteStore({ path, busyTimeoutMs: 1 });
    expect((await again.readRun('a'))?.runId).toBe('a');
    check.exec('ROLLBACK');
    check.close();
    await again.close();
  });

  it('resumes and appends on a fresh store whose statements were never prepared before', async () => {
    const path = join(scratch, 'fresh-append.db');
    const first = sqliteStore({ path });
    const loop = createLoop({ model: scriptedModel([reply('one'), reply('two')]), store: first });
    expect((await loop.run({ goal: 'first', runId: 'x' })).stopReason).toBe('completed');
    await first.close();
    const second = sqliteStore({ path });
    const again = createLoop({ model: scriptedModel([reply('three')]), store: second });
    expect((await again.run({ goal: 'second', runId: 'y' })).stopReason).toBe('completed');
    expect((await second.listRuns!({ limit: 10 })).map((run) => run.runId)).toEqual(['x', 'y']);
    await second.close();
  });

  it("refuses a file of zeros only (a new file's unsynced first page after a power cut), saying what to do, untouched", async () => {
    // What a power cut can leave of a file made unsynced: its size, and zeros. It is never emptied by the store:
    // another process may be making that very file.
    const path = join(scratch, 'zeroed.db');
    writeFileSync(path, Buffer.alloc(4096));
    const store = sqliteStore({ path });
    const loop = createLoop({ model: scriptedModel([reply('done')]), store });
    const refused = loop.run({ goal: 'go', runId: 'z' });
    await expect(refused).rejects.toThrow(/not a database/);
    await expect(refused).rejects.toThrow(
      /holds only zero bytes: a new store file whose first page never reached the disk/,
    );
    await expect(refused).rejects.toThrow(/Nothing was committed in it; delete it/);
    expect(readFileSync(path)).toEqual(Buffer.alloc(4096));
    await store.close();
  });

  it('opens a store on a directory as SQLite does (its error), not as a file to read', async () => {
    const store = sqliteStore({ path: scratch });
    const loop = createLoop({ model: scriptedModel([reply('done')]), store });
    await expect(loop.run({ goal: 'go', runId: 'd' })).rejects.toThrow(/unable to open database file/);
    await store.close();
  });

  it('refuses a file that is not a database, leaves it as it was and keeps no handle to it', async () => {
    const path = join(scratch, 'not-a-database.db');
    writeFileSync(path, 'hello, not a database\n'.repeat(200));
    const store = sqliteStore({ path });
    const loop = createLoop({ model: scriptedModel([reply('done')]), store });
    await expect(loop.run({ goal: 'go', runId: 'n' })).rejects.toThrow(/not a database/);
    expect(readFileSync(path, 'utf8')).toBe('hello, not a database\n'.repeat(200));
    // The connection that found it so is closed, not left to the garbage collector (Windows locks an open file).
    const open = readdirSync('/proc/self/fd').flatMap((fd) => {
      try {
        return [readlinkSync(join('/proc/self/fd', fd))];
      } catch {
        return [];
      }
    });
    expect(open.filter((target) => target.startsWith(path))).toEqual([]);
    await store.close();
  });
  it('opens a database made before the stamp (aed3b1c) by a look at its schema, writes nothing, and resumes it', async () => {
    const path = join(scratch, 'schema-6.db');
    copyFileSync(join(fixtures, 'sqlite-schema-6.db'), path);
    const prepared = preparedSql();
    const store = sqliteStore({ path });
    expect((await store.readRun('old'))?.leaseOwner).not.toBeNull();
    expect(prepared.slice(0, 2)).toEqual(['PRAGMA user_version', expect.stringContaining('pragma_table_info')]);
    // Up to date already: neither brought up to date nor stamped (no write at an opening of a database up to date).
    expect(walBytes(path)).toBe(0);
    vi.restoreAllMocks();
    // Resumed where its process died (its 8th model call), it sends the request an uninterrupted run sends there.
    const requests: (readonly Message[])[] = [];
    expect(await fixtureLoop(12, store, requests).resume('old')).toMatchObject({ stopReason: 'completed', steps: 12 });
    await store.close();
    expect(stampOf(path)).toBe(0);
    const fresh = sqliteStore({ path: join(scratch, 'schema-6-uninterrupted.db') });
    const uninterrupted: (readonly Message[])[] = [];
    expect(await fixtureLoop(12, fresh, uninterrupted).run({ goal: 'go', runId: 'old' })).toMatchObject({
      stopReason: 'completed',
      steps: 12,
    });
    await fresh.close();
    expect(requests).toHaveLength(5);
    expect(requests).toEqual(uninterrupted.slice(7));
  });

  it('stamps a database it brings up to date, in that commit, and opens it next by its header alone, in its layout', async () => {
    // A version 5 file (its journal a table and a (run_id, seq) index): brought up to date, it keeps that layout.
    const path = join(scratch, 'schema-5.db');
    copyFileSync(join(fixtures, 'sqlite-schema-5.db'), path);
    const first = sqliteStore({ path });
    expect(await first.readRun('old')).not.toBeNull();
    // Committed with the upgrade, seen by another connection while the store is open (not written at its close).
    expect(stampOf(path)).toBe(SCHEMA_STAMP.indexed);
    await first.close();
    expect(stampOf(path)).toBe(SCHEMA_STAMP.indexed);
    const prepared = preparedSql();
    const store = sqliteStore({ path });
    expect((await store.readRun('old'))?.runId).toBe('old');
    expect(prepared).toEqual(['PRAGMA user_version', expect.stringMatching(/^SELECT body, packed, lease_owner/)]);
    vi.restoreAllMocks();
    // Its rows appended in its own layout (the version 6 insert names a column `id` its journal does not have).
    expect(await fixtureLoop(40, store).resume('old')).toMatchObject({ stopReason: 'completed', steps: 40 });
    expect((await store.readJournal('old', 99)).length).toBeGreaterThan(0);
    await store.close();
  });

  it('looks at the schema of a database stamped by a later loopstate, as before, and leaves its stamp', async () => {
    const later = STAMP_BASE + 801;
    const path = await storedRun('later');
    const raw = new Database(path);
    raw.pragma(`user_version = ${later}`);
    raw.close();
    const prepared = preparedSql();
    const store = sqliteStore({ path });
    expect((await store.readRun('a'))?.runId).toBe('a');
    expect(prepared.slice(0, 2)).toEqual(['PRAGMA user_version', expect.stringContaining('pragma_table_info')]);
    expect(walBytes(path)).toBe(0);
    await store.close();
    expect(stampOf(path)).toBe(later);
    // Out of date for this version too (an index lost): brought up to date, and the later stamp kept (no downgrade).
    const lose = new Database(path);
    lose.exec('DROP INDEX journal_chunks');
    lose.close();
    const again = sqliteStore({ path });
    expect((await again.readRun('a'))?.runId).toBe('a');
    await again.close();
    expect(stampOf(path)).toBe(later);
    expect(indexesOf(path)).toContain('journal_chunks');
  });

  it("keeps an application's own user_version in its own file: its tables made, never stamped, looked at every opening", async () => {
    // An application keeping loopstate's tables in its own database, its migrations counting in user_version: 700 and
    // 701 were this version's first stamps, 3 a plain counter, a negative one allowed by SQLite, 0 before its
    // migrations first counted (its own tables make the file its own: a stamp then would read as a later migration).
    for (const own of [701, 700, 3, -5, 0]) {
      const path = join(scratch, `own-${own}.db`);
      const app = new Database(path);
      app.exec(`CREATE TABLE app_users (id INTEGER PRIMARY KEY, name TEXT); PRAGMA user_version = ${own};`);
      app.close();
      const store = sqliteStore({ path });
      const loop = createLoop({ model: scriptedModel([reply('done'), reply('again')]), store });
      expect((await loop.run({ goal: 'go', runId: 'a' })).stopReason).toBe('completed');
      await store.close();
      expect(stampOf(path)).toBe(own);
      // Opened again: looked at (its value says nothing of loopstate's tables), up to date, nothing written.
      const prepared = preparedSql();
      const again = sqliteStore({ path });
      expect((await again.readRun('a'))?.runId).toBe('a');
      expect(prepared.slice(0, 2)).toEqual(['PRAGMA user_version', expect.stringContaining('pragma_table_info')]);
      vi.restoreAllMocks();
      expect(
        (await createLoop({ model: scriptedModel([reply('b')]), store: again }).run({ goal: 'go', runId: 'b' }))
          .stopReason,
      ).toBe('completed');
      await again.close();
      expect(stampOf(path)).toBe(own);
      const check = new Database(path, { readonly: true });
      expect(check.prepare('SELECT count(*) FROM app_users').pluck().get()).toBe(0);
      check.close();
    }
  });

  it('stamps over an older stamp of its own when it brings that file up to date', async () => {
    const path = await storedRun('older-stamp');
    const raw = new Database(path);
    raw.exec(`DROP INDEX runs_finished_at; PRAGMA user_version = ${STAMP_BASE + 601};`);
    raw.close();
    const store = sqliteStore({ path });
    expect((await store.readRun('a'))?.runId).toBe('a');
    await store.close();
    expect(stampOf(path)).toBe(SCHEMA_STAMP.keyed);
    expect(indexesOf(path)).toContain('runs_finished_at');
  });

  it('stamps a new file in the commit that makes its tables (another connection sees both at once)', async () => {
    const path = join(scratch, 'created.db');
    const executed: string[] = [];
    const exec = Database.prototype.exec;
    vi.spyOn(Database.prototype, 'exec').mockImplementation(function (this: BetterSqlite3.Database, sql: string) {
      executed.push(sql.trim().split('\n')[0]!);
      return exec.call(this, sql);
    } as typeof exec);
    const store = sqliteStore({ path });
    expect(await store.readRun('a')).toBeNull();
    // Read while the store is open (no close folding anything): committed, stamped, the tables there.
    expect(stampOf(path)).toBe(SCHEMA_STAMP.keyed);
    const check = new Database(path, { readonly: true });
    expect(check.prepare('SELECT count(*) FROM runs').pluck().get()).toBe(0);
    check.close();
    // One transaction: the stamp is written between its BEGIN and its COMMIT, and nothing is committed after.
    const begin = executed.indexOf('BEGIN IMMEDIATE');
    const stamp = executed.indexOf(`PRAGMA user_version = ${SCHEMA_STAMP.keyed}`);
    const commit = executed.indexOf('COMMIT');
    expect(begin).toBeGreaterThanOrEqual(0);
    expect(begin < stamp && stamp < commit).toBe(true);
    expect(executed.slice(begin + 1).filter((sql) => sql === 'BEGIN IMMEDIATE' || sql === 'COMMIT')).toEqual([
      'COMMIT',
    ]);
    await store.close();
  });

  it('refuses a stamped database that lost a table (by hand) at the statement that needs it, saying how to get it back', async () => {
    const path = await storedRun('lost-table');
    const raw = new Database(path);
    raw.exec('DROP TABLE ledgers; DROP INDEX journal_chunks');
    raw.close();
    const store = sqliteStore({ path });
    expect((await store.readRun('a'))?.runId).toBe('a');
    const refused = store.readLedger('t');
    await expect(refused).rejects.toThrow(/no such table: ledgers/);
    await expect(refused).rejects.toThrow(/is not looked at again when opened. Run `PRAGMA user_version = 0` on it/);
    await store.close();
    // Nor is a lost index made again at an opening (its reads are slower, not refused).
    expect(indexesOf(path)).not.toContain('journal_chunks');
    // As said: with user_version 0, the next opening makes what is missing, and stamps it again.
    const fix = new Database(path);
    fix.pragma('user_version = 0');
    fix.close();
    const again = sqliteStore({ path });
    expect(await again.readLedger('t')).toBeNull();
    expect((await again.readRun('a'))?.runId).toBe('a');
    await again.close();
    expect(indexesOf(path)).toContain('journal_chunks');
    expect(stampOf(path)).toBe(SCHEMA_STAMP.keyed);
  });

  it("refuses an append to a stamped database that lost its journal table with SQLite's error, not as a taken seq", async () => {
    const path = await storedRun('lost-journal');
    const raw = new Database(path);
    raw.exec('DROP TABLE journal');
    raw.close();
    const store = sqliteStore({ path });
    const refused = createLoop({ model: scriptedModel([reply('done')]), store }).run({ goal: 'go', runId: 'b' });
    await expect(refused).rejects.toThrow(/no such table: journal/);
    await expect(refused).rejects.not.toMatchObject({ code: 'store_conflict' });
    await store.close();
  });

  it("prepares on a fresh store, before a resume's first model call, only what that resume runs (no schema look)", async () => {
    // The aed3b1c file as this version makes it: the same layout (keyed), stamped.
    const path = join(scratch, 'counted.db');
    copyFileSync(join(fixtures, 'sqlite-schema-6.db'), path);
    const raw = new Database(path);
    raw.pragma(`user_version = ${SCHEMA_STAMP.keyed}`);
    raw.close();
    const prepared = preparedSql();
    let atFirstCall: string[] = [];
    const requests: (readonly Message[])[] = [];
    // What was prepared when the model is first called.
    const push = requests.push.bind(requests);
    requests.push = (...items) => {
      if (requests.length === 0) atFirstCall = [...prepared];
      return push(...items);
    };
    const store = sqliteStore({ path });
    expect((await fixtureLoop(12, store, requests).resume('old')).stopReason).toBe('completed');
    await store.close();
    // The header's stamp; the run read (twice: the same statement); the lease; the snapshot; the journal (the events
    // after it, the trace chunks, the transcript chunks from the chain's start); the control (data_version, then it).
    expect(atFirstCall[0]).toBe('PRAGMA user_version');
    expect(atFirstCall.filter((sql) => sql.includes('pragma_table_info') || sql.includes('sqlite_schema'))).toEqual([]);
    expect(new Set(atFirstCall).size).toBe(atFirstCall.length);
    expect(atFirstCall).toEqual([
      'PRAGMA user_version',
      expect.stringMatching(/^SELECT body, packed, lease_owner/),
      expect.stringMatching(/^UPDATE runs SET lease_owner = \?, lease_until/),
      expect.stringMatching(/^SELECT seq, kind, body, packed FROM snapshots/),
      expect.stringMatching(/^SELECT id & 4294967295 AS seq, .* ORDER BY id$/),
      expect.stringMatching(/^SELECT id & 4294967295 AS seq, .* AND kind IN \('trace'\) ORDER BY id$/),
      expect.stringMatching(/^SELECT id & 4294967295 AS seq, .* AND kind IN \('transcript'\) ORDER BY id$/),
      'PRAGMA data_version',
      expect.stringMatching(/^SELECT \(SELECT value FROM control/),
    ]);
  });
});
