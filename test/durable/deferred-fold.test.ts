/**
 * The WAL fold at the end of a SQLite store's last drive is done once the caller has its result (the next
 * macrotask), not on the run's path. A process killed between the two loses nothing committed; a store closed
 * with the fold still pending folds at its close, also when another connection keeps SQLite from doing it.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoop, type Model } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { buildCrashChild, removeCrashChild, runChild } from './crash-harness.js';
import { foldLoop, lookup, model, STEPS } from './fixtures/fold-loop.js';

const entry = join('fixtures', 'fold-crash-child.ts');
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-deferred-fold-'));
let script: string;
beforeAll(async () => {
  script = await buildCrashChild(entry);
}, 120_000);
afterAll(() => {
  removeCrashChild(entry);
  rmSync(scratch, { recursive: true, force: true });
});
const walBytes = (path: string) => (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);

const loopOn = (path: string, calls: number[] = []) =>
  foldLoop(path, {
    id: model.id,
    generate: (request) => {
      calls.push(1);
      return model.generate(request);
    },
  });

describe('the fold after the last drive, deferred', () => {
  it('a process killed right after run() returned (the fold not done) loses nothing committed', async () => {
    const path = join(scratch, 'killed.db');
    const outcome = await runChild(script, [path]);
    expect(outcome.signal, outcome.stderr).toBe('SIGKILL');
    const said = JSON.parse(outcome.stdout.trim()) as { steps: number; status: string; wal: number };
    expect(said).toMatchObject({ steps: STEPS, status: 'succeeded' });
    // The premise: the kill came before the fold (with the fold on the run's path, the WAL would be 0 here).
    expect(said.wal).toBeGreaterThan(256 * 1024);
    // Another process: the run is finished, its result whole, and resuming it calls no model.
    const calls: number[] = [];
    const loop = loopOn(path, calls);
    const result = await loop.resume('folded-later');
    expect(result).toMatchObject({ steps: STEPS, status: 'succeeded', stopReason: 'completed' });
    expect(result.messages).toHaveLength(2 * STEPS);
    expect(calls).toEqual([]);
  });

  it('close() folds a fold still pending, also with another connection open (SQLite would not then)', async () => {
    const path = join(scratch, 'closed.db');
    const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
    const store = sqliteStore({ path });
    const loop = createLoop({
      model,
      tools: [lookup],
      limits: { maxSteps: STEPS + 1, maxToolCalls: STEPS },
      noProgress: { unchangedState: 1_000_000 },
      durable: { maxUncommittedSteps: 1 },
      store,
    });
    const result = await loop.run({ goal: 'go', runId: 'closed-soon' });
    expect(result.steps).toBe(STEPS);
    // Another connection to the file, idle: SQLite's own fold at a close needs the file's last connection.
    const other = new Database(path);
    try {
      // Read once (outside a transaction): the connection is open on the file and its WAL, holding nothing.
      expect(other.prepare('SELECT count(*) AS n FROM runs').get()).toEqual({ n: 1 });
      expect(walBytes(path)).toBeGreaterThan(256 * 1024);
      await store.close();
      expect(walBytes(path)).toBe(0);
      expect(other.prepare("SELECT count(*) AS n FROM runs WHERE run_id = 'closed-soon'").get()).toEqual({ n: 1 });
    } finally {
      other.close();
    }
  });

  it('a run started at once after another (before the next macrotask) does not put the owed fold off', async () => {
    const path = join(scratch, 'back-to-back.db');
    const store = sqliteStore({ path });
    let answer: () => void = () => {};
    const answered = new Promise<void>((resolve) => (answer = resolve));
    let asked: () => void = () => {};
    const wasAsked = new Promise<void>((resolve) => (asked = resolve));
    const waiting: Model = {
      id: 'waiting',
      generate: async () => {
        asked();
        await answered;
        return { text: 'done', toolCalls: [], usage: { inputTokens: 5, outputTokens: 1 } };
      },
    };
    const limits = { maxSteps: STEPS + 1, maxToolCalls: STEPS };
    const first = createLoop({ model, tools: [lookup], limits, noProgress: { unchangedState: 1_000_000 }, store });
    const second = createLoop({ model: waiting, store });
    expect((await first.run({ goal: 'go', runId: 'first' })).steps).toBe(STEPS);
    const atReturn = walBytes(path);
    // Started in the same macrotask as the first run's return: before the deferred fold's turn.
    const running = second.run({ goal: 'go', runId: 'second' });
    await wasAsked;
    await new Promise((resolve) => setImmediate(resolve));
    const whileSecondRuns = walBytes(path);
    answer();
    expect((await running).stopReason).toBe('completed');
    await store.close();
    // The premise: the first run left a WAL to fold. It was folded while the second ran, not after it.
    expect(atReturn).toBeGreaterThan(256 * 1024);
    expect(whileSecondRuns).toBeLessThan(64 * 1024);
  });
});
