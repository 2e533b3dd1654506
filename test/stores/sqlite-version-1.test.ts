/**
 * A database made by loopstate 0.1 (schema 1: the journal a WITHOUT ROWID table, no `runs.finished_at`)
 * is brought up to date when a 0.2 sqliteStore opens it: its runs resume, and `prune` works on it.
 */
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createLoop } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { reply, scriptedModel } from 'loopstate/testing';

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-sqlite-v1-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The tables exactly as loopstate 0.1 created them. */
const VERSION_1 = `
CREATE TABLE runs (run_id TEXT PRIMARY KEY, body TEXT NOT NULL, lease_owner TEXT, lease_until INTEGER NOT NULL DEFAULT 0, cancel_requested INTEGER NOT NULL DEFAULT 0) STRICT;
CREATE TABLE journal (run_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq)) STRICT, WITHOUT ROWID;
CREATE TABLE snapshots (run_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL) STRICT;
CREATE TABLE ledgers (tenant_id TEXT PRIMARY KEY, body TEXT NOT NULL, version INTEGER NOT NULL) STRICT;
CREATE TABLE control (key TEXT PRIMARY KEY, value TEXT) STRICT;
`;

describe('a version 1 SQLite database', () => {
  it('gains runs.finished_at when opened, keeps its journal table, runs on it and prunes', async () => {
    const path = join(scratch, 'v1.db');
    const old = new Database(path);
    old.exec(VERSION_1);
    old.close();
    const store = sqliteStore({ path });
    const loop = createLoop({ model: scriptedModel([reply('one'), reply('two')]), store });
    expect((await loop.run({ goal: 'first', runId: 'a' })).stopReason).toBe('completed');
    expect((await store.readJournal('a', 0)).length).toBeGreaterThan(0);
    expect(await store.prune({ finishedBefore: Date.now() - 60_000 })).toBe(0);
    expect(await store.prune({ finishedBefore: Date.now() + 1 })).toBe(1);
    expect(await store.readRun('a')).toBeNull();
    expect(await store.readJournal('a', 0)).toEqual([]);
    await store.close();
    const db = new Database(path, { readonly: true });
    const columns = (db.pragma('table_info(runs)') as { name: string }[]).map((column) => column.name);
    const journal = db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'journal'").get() as { sql: string };
    db.close();
    expect(columns).toContain('finished_at');
    expect(journal.sql).toMatch(/WITHOUT ROWID/);
  });
});
