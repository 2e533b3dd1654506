/**
 * The SQLite journal's two layouts. Version 6 (a new database): one B-tree keyed by run number × 2^32 + seq,
 * so a commit of journal rows writes one page of it, not a page of the table and one of a (run_id, seq) index.
 * A database made before (version 2–5: fixtures/sqlite-schema-5.db, made by main at 76fc999: run `done`
 * completed, run `old` of 40 steps crashed waiting for its 25th model reply, its lease held by the dead
 * process) keeps its layout: opened, read, resumed and appended to as it is.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreRecordError } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { buildCrashChild, removeCrashChild } from '../durable/crash-harness.js';
import { fixtureLoop } from './fixture-loop.js';

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-sqlite-v5-'));
const openChildEntry = join('..', 'stores', 'fixtures', 'open-child.ts');
let openChild = '';
beforeAll(async () => {
  openChild = await buildCrashChild(openChildEntry);
}, 120_000);
afterAll(() => {
  removeCrashChild(openChildEntry);
  rmSync(scratch, { recursive: true, force: true });
});
const fixture = join(import.meta.dirname, 'fixtures', 'sqlite-schema-5.db');
let files = 0;

const journalSql = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare("SELECT sql FROM sqlite_schema WHERE tbl_name = 'journal' ORDER BY name").all() as {
      sql: string | null;
    }[];
  } finally {
    db.close();
  }
};

describe('a SQLite database made before version 6 (its journal a table and a (run_id, seq) index)', () => {
  it('is opened, read, resumed and appended to in its own layout', async () => {
    const path = join(scratch, `v5-${files++}.db`);
    copyFileSync(fixture, path);
    const store = sqliteStore({ path });
    const before = await store.readJournal('old', 0);
    expect(before.length).toBe(51);
    expect(before.at(-1)!.seq).toBe(99);
    expect(JSON.parse(before[0]!.body)).toMatchObject({ runId: 'old', seq: before[0]!.seq });
    expect((await store.readJournal('old', 0, ['transcript'])).map((row) => row.kind)).toEqual(['transcript']);
    expect((await store.readJournal('done', 0)).length).toBe(12);
    // From any seq: a row whose commit group begins before it is read through the group's first row.
    for (const [index, row] of before.entries())
      expect((await store.readJournal('old', row.seq)).map((later) => later.body)).toEqual(
        before.slice(index + 1).map((later) => later.body),
      );
    // The crashed run is resumed (its dead owner's lease long expired) and finishes at its 40th step.
    const result = await fixtureLoop(40, store).resume('old');
    expect(result).toMatchObject({ stopReason: 'completed', steps: 40 });
    const after = await store.readJournal('old', 0);
    expect(after.slice(0, 51).map((row) => row.seq)).toEqual(before.map((row) => row.seq));
    expect(after.length).toBeGreaterThan(51);
    expect(after.at(-1)!.seq).toBeGreaterThan(99);
    // A new run on the old file works alike.
    expect((await fixtureLoop(3, store).run({ goal: 'go', runId: 'new' })).stopReason).toBe('completed');
    expect((await store.readJournal('new', 0)).length).toBeGreaterThan(0);
    expect(await store.prune({ finishedBefore: Date.now() + 1 })).toBe(3);
    expect(await store.readJournal('old', 0)).toEqual([]);
    await store.close();
    expect(journalSql(path).map((row) => row.sql)).toContainEqual(expect.stringMatching(/PRIMARY KEY \(run_id, seq\)/));
  });

  it('gains its columns when another process opening it at the same moment adds them first', async () => {
    // Two openers of an old file both see `runs.number` missing; the first adds it, the second's ALTER would then
    // fail ("duplicate column name"). Made certain here: a second connection adds the column right after this
    // store looked for it, before the store's first write statement (its ALTER, or the lock it takes first).
    const path = join(scratch, `v5-${files++}.db`);
    copyFileSync(fixture, path);
    const exec = Database.prototype.exec;
    let raced = 0;
    Database.prototype.exec = function (this: BetterSqlite3.Database, sql: string) {
      if (raced === 0 && this.name === path && /^\s*(ALTER|BEGIN)/i.test(sql)) {
        raced++;
        const other = new Database(path);
        exec.call(other, 'ALTER TABLE runs ADD COLUMN number INTEGER');
        other.close();
      }
      return exec.call(this, sql);
    };
    const store = sqliteStore({ path });
    try {
      expect((await store.readRun('done'))?.leaseOwner).toBeNull();
    } finally {
      Database.prototype.exec = exec;
    }
    expect(raced).toBe(1);
    expect((await store.readJournal('done', 0)).length).toBe(12);
    expect((await fixtureLoop(3, store).run({ goal: 'go', runId: 'new' })).stopReason).toBe('completed');
    await store.close();
    // Opened again (nothing to add: no write lock taken), and each column is there once.
    const again = sqliteStore({ path });
    expect((await again.readJournal('new', 0)).length).toBeGreaterThan(0);
    await again.close();
    const raw = new Database(path, { readonly: true });
    const columns = (raw.pragma('table_info(runs)') as { name: string }[]).map((column) => column.name);
    raw.close();
    expect(columns.filter((name) => name === 'number')).toEqual(['number']);
  });

  it('is opened and read by two processes at the same moment (both find `runs.number` missing)', async () => {
    const path = join(scratch, `v5-${files++}.db`);
    copyFileSync(fixture, path);
    // The write lock held here until both children have looked for the columns and are about to add them.
    const lock = new Database(path);
    lock.exec('BEGIN IMMEDIATE');
    const children = [0, 1].map(() => {
      const child = spawn(process.execPath, [openChild, path, 'done'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      const checked = new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          if (stdout.startsWith('checked\n')) resolve();
        });
        child.once('close', () => reject(new Error(`the child ended before looking: ${stderr}`)));
      });
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const ended = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
        child.once('close', (code) => resolve({ code, stdout, stderr })),
      );
      return { checked, ended };
    });
    try {
      await Promise.all(children.map((child) => child.checked));
    } finally {
      lock.exec('ROLLBACK');
      lock.close();
    }
    const outcomes = await Promise.all(children.map((child) => child.ended));
    const expected = `checked\n${JSON.stringify({ found: true, leaseOwner: null, rows: 12 })}\n`;
    expect(outcomes).toEqual([
      { code: 0, stdout: expected, stderr: '' },
      { code: 0, stdout: expected, stderr: '' },
    ]);
  }, 60_000);

  it('still refuses a damaged row with corrupt_record naming it', async () => {
    const path = join(scratch, `v5-${files++}.db`);
    copyFileSync(fixture, path);
    const raw = new Database(path);
    const { seq } = raw
      .prepare("SELECT seq FROM journal WHERE run_id = 'old' AND packed IS NOT NULL ORDER BY seq LIMIT 1")
      .get() as { seq: number };
    raw.prepare("UPDATE journal SET packed = X'01ffffff' WHERE run_id = 'old' AND seq = ?").run(seq);
    raw.close();
    const store = sqliteStore({ path });
    const rows = await store.readJournal('old', 0);
    const error = (() => {
      try {
        return void rows.find((row) => row.seq === seq)!.body;
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(StoreRecordError);
    expect(error).toMatchObject({ code: 'corrupt_record', runId: 'old', seq });
    await store.close();
  });
});

describe('a version 6 SQLite journal (one tree keyed by run number and seq)', () => {
  const rowsOf = (count: number, from = 1) =>
    Array.from({ length: count }, (_, index) => ({ seq: from + index, kind: 'event', body: `{"n":${from + index}}` }));
  const lease = { owner: 'me', until: Date.now() + 60_000 };

  /** The commits in a WAL file: its frames whose header names the database's size after the commit (not 0). */
  const walCommits = (path: string) => {
    if (!existsSync(`${path}-wal`)) return 0;
    const wal = readFileSync(`${path}-wal`);
    const pageSize = wal.readUInt32BE(8);
    let commits = 0;
    for (let frame = 32; frame + 24 + pageSize <= wal.length; frame += 24 + pageSize)
      if (wal.readUInt32BE(frame + 4) !== 0) commits++;
    return commits;
  };

  it('is made in one commit when new, and opened again up to date without a write', async () => {
    const path = join(scratch, `v6-${files++}.db`);
    const store = sqliteStore({ path });
    expect(await store.readRun('a')).toBeNull(); // the first call opens (and makes) the database
    // Every table and index in one write transaction (they were a commit each: a dozen WAL frames of page 1 and more).
    expect(walCommits(path)).toBe(1);
    // Opened again by a second store (the first still open, so the WAL stays): nothing to make, nothing written.
    const again = sqliteStore({ path });
    expect(await again.readRun('a')).toBeNull();
    expect(walCommits(path)).toBe(1);
    await again.createRun('a', '{}', lease);
    expect(walCommits(path)).toBe(2);
    await again.close();
    await store.close();
    const sql = journalSql(path);
    expect(sql.map((row) => row.sql)).toEqual([
      expect.stringMatching(/CREATE TABLE journal \(\s*id INTEGER PRIMARY KEY/),
      expect.stringMatching(/CREATE INDEX journal_chunks ON journal \(id\)/),
    ]);
  });

  it('has no index beside its table but the chunks one', async () => {
    const path = join(scratch, `v6-${files++}.db`);
    const store = sqliteStore({ path });
    await store.createRun('a', '{}', lease);
    await store.close();
    const sql = journalSql(path);
    expect(sql.map((row) => row.sql)).toEqual([
      expect.stringMatching(/CREATE TABLE journal \(\s*id INTEGER PRIMARY KEY/),
      expect.stringMatching(/CREATE INDEX journal_chunks ON journal \(id\)/),
    ]);
  });

  it('writes one WAL frame (one page) for a commit of a few journal rows', async () => {
    const path = join(scratch, `v6-${files++}.db`);
    const store = sqliteStore({ path, foldWalWhenIdle: false });
    await store.createRun('a', '{}', lease);
    await store.append('a', rowsOf(3, 1), lease);
    const wal = () => statSync(`${path}-wal`).size;
    const frames: number[] = [];
    for (let commit = 1; commit <= 5; commit++) {
      const before = wal();
      await store.append('a', rowsOf(3, commit * 3 + 1), lease);
      frames.push((wal() - before) / (24 + 4096));
    }
    await store.close();
    expect(frames).toEqual([1, 1, 1, 1, 1]);
  });

  it('writes one WAL frame for a snapshot commit (the lease read, not rewritten in the runs table)', async () => {
    const path = join(scratch, `v6-${files++}.db`);
    const store = sqliteStore({ path, foldWalWhenIdle: false });
    await store.createRun('a', '{}', lease);
    await store.append('a', rowsOf(3, 1), lease);
    await store.writeSnapshot('a', { seq: 3, kind: 'snapshot', body: '{"at":3}' }, lease);
    const wal = () => statSync(`${path}-wal`).size;
    const frames: number[] = [];
    for (let commit = 1; commit <= 3; commit++) {
      await store.append('a', rowsOf(3, commit * 3 + 1), lease);
      const before = wal();
      // As a run's lease: a later `until` at every write (an unchanged row would not be rewritten).
      await store.writeSnapshot(
        'a',
        { seq: commit * 3 + 3, kind: 'snapshot', body: `{"at":${commit * 3 + 3}}` },
        { ...lease, until: lease.until + commit },
      );
      frames.push((wal() - before) / (24 + 4096));
    }
    expect((await store.latestSnapshot('a'))?.seq).toBe(12);
    // A stale owner is still refused.
    await expect(
      store.writeSnapshot('a', { seq: 13, kind: 'snapshot', body: '{}' }, { owner: 'other', until: lease.until }),
    ).rejects.toThrow(/held by another owner/);
    await store.close();
    expect(frames).toEqual([1, 1, 1]);
  });

  it("keeps each run's rows to its own range, whatever afterSeq a reader asks from", async () => {
    const store = sqliteStore({ path: join(scratch, `v6-${files++}.db`) });
    for (const runId of ['a', 'b', 'c']) {
      await store.createRun(runId, '{}', lease);
      await store.append(runId, rowsOf(4, runId === 'b' ? 0 : 1), lease);
    }
    expect((await store.readJournal('b', -5)).map((row) => row.seq)).toEqual([0, 1, 2, 3]);
    expect((await store.readJournal('b', -1)).map((row) => row.seq)).toEqual([0, 1, 2, 3]);
    expect((await store.readJournal('b', 2)).map((row) => row.seq)).toEqual([3]);
    expect((await store.readJournal('b', 2 ** 40)).map((row) => row.seq)).toEqual([]);
    expect((await store.readJournal('c', -1_000)).map((row) => row.body)).toEqual(rowsOf(4).map((row) => row.body));
    expect(await store.readJournal('missing', 0)).toEqual([]);
    await store.close();
  });

  it('refuses a seq outside [0, 2^32) and loses nothing already written', async () => {
    const store = sqliteStore({ path: join(scratch, `v6-${files++}.db`) });
    await store.createRun('a', '{}', lease);
    await store.createRun('b', '{}', lease);
    await store.append('a', rowsOf(2), lease);
    for (const seq of [-1, 2 ** 32, 1.5])
      await expect(store.append('a', [{ seq, kind: 'event', body: '{}' }], lease)).rejects.toThrow(
        /journal seq .* is outside \[0, 2\^32\)/,
      );
    expect((await store.readJournal('a', 0)).map((row) => row.seq)).toEqual([1, 2]);
    expect(await store.readJournal('b', -1)).toEqual([]);
    await store.close();
  });

  it('numbers a run row made without a number (not by createRun) at its first append', async () => {
    const path = join(scratch, `v6-${files++}.db`);
    const store = sqliteStore({ path });
    await store.createRun('a', '{}', lease);
    await store.append('a', rowsOf(2), lease);
    await store.createRun('old', '{}', lease);
    const raw = new Database(path);
    raw.prepare("UPDATE runs SET number = NULL WHERE run_id = 'old'").run();
    raw.close();
    expect(await store.readJournal('old', 0)).toEqual([]);
    await store.append('old', rowsOf(3), lease);
    expect((await store.readJournal('old', 0)).map((row) => row.seq)).toEqual([1, 2, 3]);
    expect((await store.readJournal('a', 0)).map((row) => row.seq)).toEqual([1, 2]);
    await store.close();
  });

  it('prunes only the finished runs, each by its range', async () => {
    const store = sqliteStore({ path: join(scratch, `v6-${files++}.db`) });
    for (const runId of ['a', 'b', 'c']) {
      await store.createRun(runId, '{}', lease);
      await store.append(
        runId,
        rowsOf(3),
        lease,
        runId === 'b' ? '{"done":1}' : undefined,
        runId === 'b' ? 1 : undefined,
      );
    }
    expect(await store.prune({ finishedBefore: 2 })).toBe(1);
    expect((await store.readJournal('a', 0)).length).toBe(3);
    expect(await store.readJournal('b', 0)).toEqual([]);
    expect((await store.readJournal('c', 0)).length).toBe(3);
    // A run made after the prune takes a new range; the runs kept keep theirs.
    await store.createRun('d', '{}', lease);
    await store.append('d', rowsOf(2), lease);
    expect((await store.readJournal('d', 0)).length).toBe(2);
    expect((await store.readJournal('c', 0)).length).toBe(3);
    await store.close();
  });
});
