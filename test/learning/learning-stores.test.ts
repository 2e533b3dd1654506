/**
 * Learning with the real stores and readers: an older SQLite database and an older Postgres schema (no
 * learning table) gain one when opened; a trace file written by a learning run reads back through
 * `parseTraceText` and the viewer's reader; a run stopped for approval and resumed learns from both halves.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, parseTraceText, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { postgresStore } from 'loopstate/postgres';
import { reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';
import { pickRun } from '../../src/tooling/viewer/read-trace.js';
import { buildTimeline } from '../../src/tooling/viewer/run-timeline.js';
import { statechartGraph } from '../../src/tooling/viewer/statechart-graph.js';
import { loopMachine } from '../../machines/index.js';
import { testPostgres } from '../support/test-postgres.js';

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-learning-stores-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks up.',
  input: z.object({ q: z.string() }),
  access: 'read',
  execute: ({ q }) => `found ${q}`,
});

async function learnOnce(store: Store, trace?: string) {
  const loop = createLoop({
    model: scriptedModel([toolCall('lookup', { q: 'a' }), reply('done')]),
    name: 'old-db',
    tools: [lookup],
    store,
    clock: virtualClock(0),
    learning: {},
    ...(trace === undefined ? {} : { trace: { file: trace } }),
  });
  return loop.run({ goal: 'go' });
}

describe('learning on older databases', () => {
  it('a version 1 SQLite database gains the learning table when opened', async () => {
    const path = join(scratch, 'v1.db');
    const old = new Database(path);
    old.exec(`
CREATE TABLE runs (run_id TEXT PRIMARY KEY, body TEXT NOT NULL, lease_owner TEXT, lease_until INTEGER NOT NULL DEFAULT 0, cancel_requested INTEGER NOT NULL DEFAULT 0) STRICT;
CREATE TABLE journal (run_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq)) STRICT, WITHOUT ROWID;
CREATE TABLE snapshots (run_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL) STRICT;
CREATE TABLE ledgers (tenant_id TEXT PRIMARY KEY, body TEXT NOT NULL, version INTEGER NOT NULL) STRICT;
CREATE TABLE control (key TEXT PRIMARY KEY, value TEXT) STRICT;`);
    old.close();
    const store = sqliteStore({ path });
    const result = await learnOnce(store);
    expect(result.warnings).toEqual([]);
    expect((await store.listLearning()).map((row) => [row.key, row.version])).toEqual([['["old-db",null]', 1]]);
    await store.close();
  });

  it('a Postgres schema made before learning gains the learning table when opened', async () => {
    const server = await testPostgres();
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    try {
      // The store's schema as it was: made by the store, then its learning table dropped.
      const first = postgresStore({ connectionString: server.url, schema: 'learning_old' });
      await first.listLearning();
      await first.close();
      await admin.query('DROP TABLE learning_old.learning');
      const store = postgresStore({ connectionString: server.url, schema: 'learning_old' });
      const result = await learnOnce(store);
      expect(result.warnings).toEqual([]);
      expect((await store.listLearning()).map((row) => row.key)).toEqual(['["old-db",null]']);
      await store.close();
    } finally {
      await admin.query('DROP SCHEMA IF EXISTS learning_old CASCADE');
      await admin.end();
      await server.stop();
    }
  }, 120_000);
});

describe('learning events in a trace file', () => {
  it('read back through parseTraceText and the viewer’s reader and timeline', async () => {
    const file = join(scratch, 'run.jsonl');
    const store = memoryStore();
    await learnOnce(store);
    const result = await learnOnce(store, file);
    const text = readFileSync(file, 'utf8');
    const { events } = parseTraceText(text);
    expect(events.map((event) => event.type)).toEqual(result.trace.map((event) => event.type));
    expect(events.filter((event) => event.type.startsWith('learning'))).toHaveLength(2);
    const run = pickRun(text, file);
    expect(run.events.some((event) => event.type === 'learning-saved')).toBe(true);
    const timeline = buildTimeline(run, statechartGraph(loopMachine));
    expect(timeline.frames.length).toBeGreaterThan(0);
  });
});

describe('learning in a run stopped for approval and resumed', () => {
  it('learns from the tool calls before and after the stop, and traces learning-loaded on resume', async () => {
    const store = memoryStore();
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds.',
      input: z.object({ order: z.string() }),
      access: 'destructive',
      execute: ({ order }) => `refunded ${order}`,
    });
    const loop = createLoop({
      model: scriptedModel([toolCall('lookup', { q: 'O-7' }), toolCall('refund', { order: 'O-7' }), reply('done')]),
      name: 'refunds',
      tools: [lookup, refund],
      store,
      clock: virtualClock(0),
      learning: {},
    });
    const stopped = await loop.run({ goal: 'Refund O-7', runId: 'refund-O-7' });
    expect(stopped.stopReason).toBe('needs_human');
    const [pending] = stopped.pendingApprovals;
    const done = await loop.resume('refund-O-7', {
      approvals: { [pending!.callId]: { approve: true, argumentsHash: pending!.argumentsHash } },
    });
    expect(done.stopReason).toBe('completed');
    expect(done.trace.filter((event) => event.type === 'learning-loaded').length).toBeGreaterThanOrEqual(2);
    const record = JSON.parse((await store.readLearning('["refunds",null]'))!.body) as {
      tools: Record<string, { successes: number }>;
      tasks: Record<string, { passes: number }>;
    };
    expect(record.tools.lookup?.successes).toBe(1);
    expect(record.tools.refund?.successes).toBe(1);
    expect(record.tasks.main?.passes).toBe(1);
  });
});
