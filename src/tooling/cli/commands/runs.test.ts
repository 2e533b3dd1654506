/** `loopstate runs` in process on the shared Postgres (the SQLite path runs through the bin in test/e2e/runs.e2e.test.ts). */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
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
  await loop.run({ goal: 'Write a note for O-5', runId: 'pg-note' });
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
    expect(page.runs.map((run) => run.runId)).toEqual(['pg-O-1', 'pg-O-2', 'pg-note']);
    expect(page.runs[0]!.pendingApprovals[0]!.args).toEqual({ order_id: 'O-1', api_key: '[redacted]' });
    const none = await cli('runs', LOOP_FILE, '--store', postgres.url, 'list', '--status', 'succeeded');
    expect(none.out).toContain('no succeeded runs in postgres');
  });

  it('review: a rejection reaches the model and the run waits again; an acceptance completes it; again, already decided', async () => {
    process.env.MODEL_CALLS_LOG = join(mkdtempSync(join(tmpdir(), 'loopstate-runs-review-')), 'calls.jsonl');
    const runs = (...args: string[]) => cli('runs', LOOP_FILE, '--store', postgres.url, ...args);
    const shown = await runs('show', 'pg-note');
    expect(shown.out).toContain('waiting for review (review: a person signs notes off): Note: O-5 is on its way');
    const firstId = /review id: (\S+)/.exec(shown.out)?.[1];
    expect(firstId).toMatch(/^\d+-[0-9a-f]{16}$/);
    const rejected = await runs('review', 'pg-note', '--reject', '--reason', 'say when it arrives');
    expect(rejected.code, rejected.err).toBe(0);
    expect(rejected.out).toContain('run pg-note: needs_human (needs_human)');
    const calls = () => readFileSync(process.env.MODEL_CALLS_LOG!, 'utf8').trim().split('\n').length;
    expect(readFileSync(process.env.MODEL_CALLS_LOG, 'utf8')).toContain('say when it arrives');
    const callsAfterReject = calls();
    // The run stopped again at a new review: the same command again (a retry) returns the result, applies nothing.
    const retried = await runs('review', 'pg-note', '--reject', '--reason', 'say when it arrives');
    expect(retried.code, retried.err).toBe(0);
    expect(retried.out).toContain('run pg-note: needs_human (needs_human)');
    expect(calls()).toBe(callsAfterReject);
    // Bound to the first stop, another decision is refused; bound to the one shown now, it is taken.
    const second = await runs('show', 'pg-note');
    const secondId = /review id: (\S+)/.exec(second.out)?.[1];
    expect(secondId).toMatch(/^\d+-[0-9a-f]{16}$/);
    expect(secondId).not.toBe(firstId);
    // The retry said which stop now waits, and how to decide that one.
    expect(retried.out).toContain(`waiting for review ${secondId}`);
    expect(retried.out).toContain(`a decision meant for it needs --review-id ${secondId}`);
    const stale = await runs('review', 'pg-note', '--accept', '--review-id', firstId!);
    expect(stale.code).toBe(1);
    expect(stale.err).toContain('review_already_decided');
    const badId = await runs('review', 'pg-note', '--accept', '--review-id', 'latest');
    expect(badId.code).toBe(2);
    expect(badId.err).toContain('--review-id: expected the id');
    const accepted = await runs('review', 'pg-note', '--accept', '--review-id', secondId!);
    expect(accepted.code, accepted.err).toBe(0);
    expect(accepted.out).toContain('run pg-note: succeeded (completed)');
    const again = await runs('review', 'pg-note', '--reject', '--reason', 'too late');
    expect(again.code).toBe(1);
    expect(again.err).toContain('review_already_decided');
    expect(again.err).not.toContain('review_not_pending');
  });

  it('--schema: the runs of a store in another Postgres schema, listed, shown and decided there', async () => {
    const store = postgresStore({ connectionString: postgres.url, schema: 'runs_cli_ops' });
    await createLoop({ ...config, store }).run({ goal: 'Refund order O-3', runId: 'ops-O-3' });
    await store.close();
    const runs = (...args: string[]) =>
      cli('runs', LOOP_FILE, '--store', postgres.url, '--schema', 'runs_cli_ops', ...args);
    const listed = await runs('list', '--json');
    expect(listed.code, listed.err).toBe(0);
    expect((JSON.parse(listed.out) as { runs: { runId: string }[] }).runs.map((run) => run.runId)).toEqual(['ops-O-3']);
    expect((await runs('show', 'ops-O-3')).out).toContain('waiting for approval: call-O-3 refund');
    const approved = await runs('approve', 'ops-O-3', 'call-O-3');
    expect(approved.code, approved.err).toBe(0);
    expect(approved.out).toContain('run ops-O-3: succeeded (completed)');
    // The default schema has runs of its own, and not this one.
    const elsewhere = await cli('runs', LOOP_FILE, '--store', postgres.url, 'show', 'ops-O-3');
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.err).toContain('no run "ops-O-3" in the store');
    // The console opens the same schema: its first line names it.
    const stop = new AbortController();
    stop.abort();
    const printed: string[] = [];
    const served = await runCli(
      ['console', LOOP_FILE, '--store', postgres.url, '--schema', 'runs_cli_ops'],
      { out: (text) => printed.push(text), err: (text) => printed.push(text) },
      { stop: stop.signal },
    );
    expect(served, printed.join('\n')).toBe(0);
    expect(printed[0]).toMatch(/^loopstate console: loop refunds on postgres.* \(schema runs_cli_ops\)$/);
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
