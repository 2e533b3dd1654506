/**
 * `loopstate learning show|reset` on real stores: a SQLite file that real runs learned into (in process
 * through `runCli`, and once as a child process through the bin), a Postgres schema, and the error cases:
 * bad arguments, a missing file (never created), a corrupt record.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoop, evaluators, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { postgresStore } from 'loopstate/postgres';
import { reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';
import { runCli } from '../../src/tooling/cli/run-cli.js';
import { testPostgres, type TestPostgres } from '../support/test-postgres.js';
import { flaky } from '../support/flaky-tools.js';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-learning-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Two loops (one of them for two tenants) learn into `store`. */
async function learnInto(store: Store): Promise<void> {
  const clock = virtualClock(Date.UTC(2026, 0, 2));
  const run = (name: string, tenant?: string) =>
    createLoop({
      model: scriptedModel([toolCall('flaky', {}), reply('no total'), reply('total 3')]),
      name,
      tools: [flaky],
      store,
      clock,
      learning: {},
      tasks: [
        {
          id: 'draft',
          prompt: 'Write it',
          evaluate: [evaluators.rule((text: string) => text.includes('total 3'), 'missing the total')],
        },
      ],
      ...(tenant === undefined ? {} : { tenant: { id: tenant } }),
    }).run({ goal: 'go' });
  await run('support-bot');
  await run('support-bot', 'acme');
  await run('reporter');
}

async function cli(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('loopstate learning on a SQLite file', () => {
  const path = join(scratch, 'loops.db');
  beforeAll(async () => {
    const store = sqliteStore({ path });
    await learnInto(store);
    await store.close();
  });

  it('shows every loop’s tool weights, streaks and task feedback', async () => {
    const { code, out, err } = await cli(['learning', 'show', '--store', path]);
    expect(err).toBe('');
    expect(code).toBe(0);
    expect(out).toContain('reporter: version 1, updated 2026-01-02T00:00:00.000Z');
    expect(out).toContain('support-bot (tenant acme): version 1');
    expect(out).toMatch(/flaky\s+0\.800\s+0\s+1\s+1\s+/);
    expect(out).toMatch(/draft\s+0\.900\s+2\s+missing the total \(1\)/);
  });

  it('selects by --name and --tenant, and prints JSON with --json', async () => {
    const { code, out } = await cli(['learning', 'show', '--store', path, '--name', 'support-bot', '--json']);
    expect(code).toBe(0);
    const listed = JSON.parse(out) as { key: string; tenantId: string | null; record: { tools: object } }[];
    expect(listed.map((entry) => [entry.key, entry.tenantId])).toEqual([
      ['["support-bot","acme"]', 'acme'],
      ['["support-bot",null]', null],
    ]);
    expect(Object.keys(listed[0]!.record.tools)).toEqual(['flaky']);
    const tenant = JSON.parse(
      (await cli(['learning', 'show', '--store', path, '--name', 'support-bot', '--tenant', 'acme', '--json'])).out,
    );
    expect(tenant).toHaveLength(1);
    expect((await cli(['learning', 'show', '--store', path, '--name', 'nobody'])).out).toBe(
      'nothing learned yet for nobody',
    );
  });

  it('resets the selected records only, and the next run starts from nothing', async () => {
    const copy = join(scratch, 'reset.db');
    const store = sqliteStore({ path: copy });
    await learnInto(store);
    await store.close();
    const reset = await cli(['learning', 'reset', '--store', copy, '--name', 'support-bot', '--tenant', 'acme']);
    expect(reset).toMatchObject({ code: 0, out: 'reset 1 learning record: support-bot (tenant acme)' });
    const left = JSON.parse((await cli(['learning', 'show', '--store', copy, '--json'])).out) as { key: string }[];
    expect(left.map((entry) => entry.key)).toEqual(['["reporter",null]', '["support-bot",null]']);
    expect(JSON.parse((await cli(['learning', 'reset', '--store', copy, '--all', '--json'])).out)).toEqual({
      deleted: ['["reporter",null]', '["support-bot",null]'],
    });
    expect((await cli(['learning', 'show', '--store', copy])).out).toBe('nothing learned yet in this store');
    expect((await cli(['learning', 'reset', '--store', copy, '--all'])).out).toBe('nothing learned to reset');
  });

  it('never reuses a version: a write under way, read before the reset, cannot bring the record back', async () => {
    const copy = join(scratch, 'aba.db');
    const store = sqliteStore({ path: copy });
    try {
      await learnInto(store);
      const key = '["reporter",null]';
      // A run's batch under way: it read version 1 before the reset.
      const stale = (await store.readLearning(key))!;
      expect(stale.version).toBe(1);
      expect((await cli(['learning', 'reset', '--store', copy, '--name', 'reporter'])).code).toBe(0);
      // Another run learns after the reset; then the stale batch tries its compare-and-set.
      const loop = createLoop({
        model: scriptedModel([reply('total 3')]),
        name: 'reporter',
        store,
        clock: virtualClock(Date.UTC(2026, 0, 2)),
        learning: {},
      });
      expect((await loop.run({ goal: 'go' })).stopReason).toBe('completed');
      expect(await store.writeLearning(key, stale.body, stale.version)).toBe(false);
      const record = JSON.parse((await store.readLearning(key))!.body) as { tools: object; tasks: object };
      // Only what was learned after the reset: no flaky tool, no draft task from before it.
      expect(record.tools).toEqual({});
      expect(Object.keys(record.tasks)).toEqual(['main']);
      // A reset record is shown and reset as nothing learned.
      expect((await cli(['learning', 'reset', '--store', copy, '--name', 'reporter'])).out).toBe(
        'reset 1 learning record: reporter',
      );
      expect((await cli(['learning', 'show', '--store', copy, '--name', 'reporter'])).out).toBe(
        'nothing learned yet for reporter',
      );
      expect((await cli(['learning', 'reset', '--store', copy, '--name', 'reporter'])).out).toBe(
        'nothing learned to reset',
      );
    } finally {
      await store.close();
    }
  });

  it('shows a corrupt record as unreadable, exits 1, and reset clears it', async () => {
    const copy = join(scratch, 'corrupt.db');
    const store = sqliteStore({ path: copy });
    await store.writeLearning('["broken",null]', '{"schemaVersion":1,"kind":"learning"', null);
    await store.close();
    const shown = await cli(['learning', 'show', '--store', copy]);
    expect(shown.code).toBe(1);
    expect(shown.out).toMatch(
      /^broken: version 1, unreadable: Refused the learning record \["broken",null\]: not JSON/,
    );
    expect((await cli(['learning', 'reset', '--store', copy, '--name', 'broken'])).code).toBe(0);
    expect((await cli(['learning', 'show', '--store', copy])).code).toBe(0);
  });

  it.each([
    [['learning'], /expected show or reset, got nothing/],
    [['learning', 'forget', '--store', 'x.db'], /expected show or reset, got "forget"/],
    [['learning', 'show'], /--store: expected a SQLite file or a postgres:\/\/ URL/],
    [['learning', 'show', '--store', 'x.db', '--tenant', 'acme'], /--tenant: needs --name/],
    [['learning', 'reset', '--store', 'x.db'], /reset needs --name <loop> \(or --all/],
    [['learning', 'show', '--store', 'x.db', '--all'], /--all: only with reset/],
    [['learning', 'show', '--store', 'x.db', '--bogus'], /Unknown option '--bogus'/],
    [['learning', 'show', '--store', 'x.db', 'extra'], /unexpected argument "extra"/],
  ])('refuses %j with exit 2 and the usage', async (args, message) => {
    const { code, err } = await cli(args);
    expect(code).toBe(2);
    expect(err).toMatch(message);
    expect(err).toContain('Usage: loopstate learning show|reset');
  });

  it('says a SQLite file does not exist (bad usage, exit 2, as loopstate runs), and does not create it', async () => {
    const missing = join(scratch, 'missing.db');
    const { code, err } = await cli(['learning', 'show', '--store', missing]);
    expect(code).toBe(2);
    expect(err).toBe(`loopstate learning: --store: no such SQLite file: ${missing}`);
    expect(existsSync(missing)).toBe(false);
  });

  it('prints stored failure reasons (they may quote model output) on one line, control characters escaped', async () => {
    const copy = join(scratch, 'control.db');
    const store = sqliteStore({ path: copy });
    const reason = 'no total\u001b]52;c;ZWNobyBoaQ==\u0007\nreporter: version 9, updated never';
    await createLoop({
      model: scriptedModel([reply('no total')]),
      name: 'escaper',
      store,
      learning: {},
      limits: { maxSteps: 1 },
      tasks: [{ id: 'draft', prompt: 'Write it', evaluate: [evaluators.rule(() => false, reason)] }],
    }).run({ goal: 'go' });
    await store.close();
    const { code, out } = await cli(['learning', 'show', '--store', copy]);
    expect(code).toBe(0);
    expect(out).toContain('no total\\u001b]52;c;ZWNobyBoaQ==\\u0007\\u000areporter: version 9');
    // eslint-disable-next-line no-control-regex -- a control character reaching the terminal is what is checked
    expect(out).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/);
    expect(out.split('\n').filter((line) => line.startsWith('reporter'))).toEqual([]);
  });

  it('runs as the bin, in a child process', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--import',
      './test/support/typescript-register.mjs',
      join('src', 'tooling', 'cli', 'bin.ts'),
      'learning',
      'show',
      '--store',
      path,
      '--name',
      'reporter',
    ]);
    expect(stdout).toMatch(/^reporter: version 1, updated 2026-01-02T00:00:00\.000Z\n {2}tools\n/);
  }, 60_000);
});

describe('loopstate learning on Postgres', () => {
  let server: TestPostgres;
  let admin: pg.Client;
  beforeAll(async () => {
    server = await testPostgres();
    admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
  }, 120_000);
  afterAll(async () => {
    await admin?.query('DROP SCHEMA IF EXISTS learning_cli CASCADE');
    await admin?.end();
    await server?.stop();
  });

  it('shows and resets through a postgres:// URL and --schema', async () => {
    const store = postgresStore({ connectionString: server.url, schema: 'learning_cli' });
    await learnInto(store);
    await store.close();
    const shown = await cli([
      'learning',
      'show',
      '--store',
      server.url,
      '--schema',
      'learning_cli',
      '--name',
      'reporter',
    ]);
    expect(shown.code).toBe(0);
    expect(shown.out).toMatch(/^reporter: version 1/);
    const reset = await cli([
      'learning',
      'reset',
      '--store',
      server.url,
      '--schema',
      'learning_cli',
      '--all',
      '--json',
    ]);
    expect(JSON.parse(reset.out).deleted).toHaveLength(3);
  });

  it('refuses --schema for a SQLite store', async () => {
    const { code, err } = await cli(['learning', 'show', '--store', 'x.db', '--schema', 'a']);
    expect(code).toBe(2);
    expect(err).toContain('--schema: only for a Postgres store');
  });
});
