/** `loopstate runs` in process on the shared Postgres (the SQLite path runs through the bin in test/e2e/runs.e2e.test.ts). */
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoop } from 'loopstate';
import { postgresStore } from 'loopstate/postgres';
import config from '../../../../test/fixtures/console/refund-loop.js';
import { testPostgres, type TestPostgres } from '../../../../test/support/test-postgres.js';
import { runCli } from '../run-cli.js';

const LOOP_FILE = resolve('test/fixtures/console/refund-loop.ts');
let postgres: TestPostgres;

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

beforeAll(async () => {
  postgres = await testPostgres();
  const store = postgresStore({ connectionString: postgres.url });
  const loop = createLoop({ ...config, store });
  for (const order of ['O-1', 'O-2']) await loop.run({ goal: `Refund order ${order}`, runId: `pg-${order}` });
  await store.close();
}, 60_000);

afterAll(async () => {
  await postgres?.stop();
});

describe('loopstate runs on Postgres', () => {
  it('lists the runs of a postgres:// store, with their pending calls redacted', async () => {
    const listed = await cli('runs', LOOP_FILE, '--store', postgres.url, 'list', '--status', 'needs_human', '--json');
    expect(listed.code, listed.err).toBe(0);
    const page = JSON.parse(listed.out) as { runs: { runId: string; pendingApprovals: { args: unknown }[] }[] };
    expect(page.runs.map((run) => run.runId)).toEqual(['pg-O-1', 'pg-O-2']);
    expect(page.runs[0]!.pendingApprovals[0]!.args).toEqual({ order_id: 'O-1', api_key: '[redacted]' });
    const none = await cli('runs', LOOP_FILE, '--store', postgres.url, 'list', '--status', 'succeeded');
    expect(none.out).toContain('no succeeded runs in postgres');
  });

  it('never prints the password of the URL', async () => {
    const url = new URL(postgres.url);
    url.password = 'hunter2';
    const shown = await cli('runs', LOOP_FILE, '--store', url.toString(), 'show', 'nope');
    expect(shown.code).toBe(2);
    expect(shown.err).toContain(':***@');
    expect(`${shown.out}${shown.err}`).not.toContain('hunter2');
  });
});
