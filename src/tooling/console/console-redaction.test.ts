/**
 * The console's API answers and pages show nothing the loop's redaction would hide, on a real SQLite
 * store whose runs carry an API key in their goal, tool arguments, messages and raw outputs
 * (test/fixtures/console/secret-loop.ts), before and after decisions.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoop } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import config, { SECRET } from '../../../test/fixtures/console/secret-loop.js';
import { startConsole, type RunningConsole } from './console-server.js';
import { openStoredLoop, type StoredLoop } from './stored-loop.js';

const directory = mkdtempSync(join(tmpdir(), 'loopstate-console-redaction-'));
const SECRET_PART = SECRET.slice('sk-live-'.length, -4);
let stored: StoredLoop;
let running: RunningConsole;

async function get(path: string): Promise<{ status: number; body: string }> {
  const url = new URL(running.url);
  const response = await fetch(`${url.origin}${path}`, {
    headers: { 'x-loopstate-token': url.searchParams.get('token')! },
  });
  return { status: response.status, body: await response.text() };
}

async function post(runId: string, body: unknown): Promise<number> {
  const url = new URL(running.url);
  const response = await fetch(`${url.origin}/api/runs/${encodeURIComponent(runId)}/actions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-loopstate-token': url.searchParams.get('token')! },
    body: JSON.stringify(body),
  });
  await response.text();
  return response.status;
}

function expectNoSecret(body: string): void {
  expect(body).not.toContain(SECRET_PART);
  expect(body).not.toContain('sk-live');
}

beforeAll(async () => {
  const db = join(directory, 'loops.db');
  const store = sqliteStore({ path: db });
  const loop = createLoop({ ...config, store });
  for (const order of ['O-1', 'O-2', 'O-3'])
    await loop.run({ goal: `Refund order ${order} with key ${SECRET}`, runId: `run-${order}` });
  await loop.run({ goal: `Write a note for O-6 with key ${SECRET}`, runId: 'note-O-6' });
  await loop.resume('run-O-3', { approvals: { 'call-O-3': { approve: true } } });
  await store.close();
  stored = await openStoredLoop({ loopFile: resolve('test/fixtures/console/secret-loop.ts'), store: db });
  running = await startConsole({ stored });
}, 60_000);

afterAll(async () => {
  await running?.close();
  await stored?.close();
  rmSync(directory, { recursive: true, force: true });
});

describe('the console redacts everything it answers with', () => {
  it('the runs, each run page, and the runs again after decisions', async () => {
    const before = await get('/api/runs');
    expect(before.status).toBe(200);
    expect(before.body).toContain('[redacted]');
    expectNoSecret(before.body);
    const ids = (JSON.parse(before.body) as { runs: { runId: string }[] }).runs.map((run) => run.runId);
    expect(ids).toEqual(['note-O-6', 'run-O-1', 'run-O-2', 'run-O-3']);
    for (const runId of ids) {
      const page = await get(`/runs/${runId}`);
      expect(page.status).toBe(200);
      expectNoSecret(page.body);
    }
    expect(await post('run-O-1', { kind: 'approve', callId: 'call-O-1' })).toBe(202);
    expect(await post('run-O-2', { kind: 'reject', callId: 'call-O-2', reason: 'no' })).toBe(202);
    expect(await post('note-O-6', { kind: 'accept' })).toBe(202);
    await running.settled();
    const after = await get('/api/runs');
    const runs = (JSON.parse(after.body) as { runs: { runId: string; activity: { state: string } | null }[] }).runs;
    expect(runs.filter((run) => run.activity !== null).map((run) => [run.runId, run.activity!.state])).toEqual([
      ['note-O-6', 'done'],
      ['run-O-1', 'done'],
      ['run-O-2', 'done'],
    ]);
    expectNoSecret(after.body);
    for (const runId of ids) expectNoSecret((await get(`/runs/${runId}`)).body);
  });
});
