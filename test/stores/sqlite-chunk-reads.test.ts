/**
 * A read of some of the chunk kinds (`transcript` alone, as a resume's history and a stop's messages ask) goes
 * through the chunk index, whose condition SQLite matches only as written: without it the read visits every
 * row of the run (a 1,000-step run: ~2,000 event rows for 62 transcript chunks).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteStore } from 'loopstate/sqlite';
import { kindsCondition } from '../../src/adapters/sqlite/sqlite-statements.js';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-sqlite-chunk-reads-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;

describe('sqliteStore: reading some chunk kinds', () => {
  it('asks for a subset of the chunk kinds with the chunk index condition too; other kinds as they are', () => {
    expect(kindsCondition(['transcript'])).toBe(" AND kind IN ('trace', 'transcript') AND kind IN ('transcript')");
    expect(kindsCondition(['trace'])).toBe(" AND kind IN ('trace', 'transcript') AND kind IN ('trace')");
    expect(kindsCondition(['trace', 'transcript'])).toBe(" AND kind IN ('trace', 'transcript')");
    expect(kindsCondition(['event', 'transcript'])).toBe(" AND kind IN ('event', 'transcript')");
    expect(kindsCondition(["o'brien"])).toBe(" AND kind IN ('o''brien')");
  });

  it('reads the transcript chunks alone through the chunk index, and returns exactly them', async () => {
    const path = join(scratch, 'chunks.db');
    const store = sqliteStore({ path });
    const lease = { owner: 'a', until: Date.now() + 60_000 };
    expect(await store.createRun('r', '{}', lease)).toBe(true);
    for (let seq = 1; seq <= 60; seq++)
      await store.append(
        'r',
        [{ seq, kind: seq % 10 === 0 ? (seq % 20 === 0 ? 'trace' : 'transcript') : 'event', body: `{"n":${seq}}` }],
        lease,
      );
    expect((await store.readJournal('r', 0, ['transcript'])).map((row) => [row.seq, row.kind, row.body])).toEqual([
      [10, 'transcript', '{"n":10}'],
      [30, 'transcript', '{"n":30}'],
      [50, 'transcript', '{"n":50}'],
    ]);
    expect((await store.readJournal('r', 20, ['trace'])).map((row) => row.seq)).toEqual([40, 60]);
    await store.close();
    // The plan SQLite makes of that read (the store's range for a run, as it prepares it).
    const raw = new Database(path, { readonly: true });
    const number = "(SELECT number FROM runs WHERE run_id = 'r')";
    const plan = (kinds: readonly string[]) =>
      (
        raw
          .prepare(
            `EXPLAIN QUERY PLAN SELECT id FROM journal WHERE id > (${number} << 32) AND id < ((${number} + 1) << 32)${kindsCondition(kinds)} ORDER BY id`,
          )
          .all() as { detail: string }[]
      )
        .map((row) => row.detail)
        .join(' | ');
    expect(plan(['transcript'])).toContain('USING INDEX journal_chunks');
    expect(plan(['trace', 'transcript'])).toContain('USING INDEX journal_chunks');
    // What the condition alone gets: the run's every row (the premise of the above).
    expect(
      (
        raw
          .prepare(
            `EXPLAIN QUERY PLAN SELECT id FROM journal WHERE id > (${number} << 32) AND id < ((${number} + 1) << 32) AND kind IN ('transcript') ORDER BY id`,
          )
          .all() as { detail: string }[]
      )
        .map((row) => row.detail)
        .join(' | '),
    ).not.toContain('journal_chunks');
    raw.close();
  });
});
