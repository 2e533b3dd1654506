/**
 * `loopstate runs` prints nothing the loop's redaction would hide: every subcommand, as text and as
 * `--json`, on a real SQLite store whose runs carry an API key in their goal, tool arguments, messages
 * and raw outputs (test/fixtures/console/secret-loop.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoop } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import config, { SECRET } from '../../../../test/fixtures/console/secret-loop.js';
import { runCli } from '../run-cli.js';

const LOOP_FILE = resolve('test/fixtures/console/secret-loop.ts');
const directory = mkdtempSync(join(tmpdir(), 'loopstate-runs-redaction-'));
const db = join(directory, 'loops.db');
/** Any recognisable part of the key: a partial leak is a leak. */
const SECRET_PART = SECRET.slice('sk-live-'.length, -4);

async function runs(...args: string[]): Promise<{ code: number; printed: string }> {
  const printed: string[] = [];
  const code = await runCli(['runs', LOOP_FILE, '--store', db, ...args], {
    out: (text) => printed.push(text),
    err: (text) => printed.push(text),
  });
  return { code, printed: printed.join('\n') };
}

function expectNoSecret(printed: string): void {
  expect(printed).not.toContain(SECRET_PART);
  expect(printed).not.toContain('sk-live');
}

beforeAll(async () => {
  const store = sqliteStore({ path: db });
  const loop = createLoop({ ...config, store });
  for (const order of ['O-1', 'O-2', 'O-3', 'O-4', 'O-5'])
    await loop.run({ goal: `Refund order ${order} with key ${SECRET}`, runId: `run-${order}` });
  await loop.run({ goal: `Write a note for O-6 with key ${SECRET}`, runId: 'note-O-6' });
  // A run that went on to its end: its messages and raw output hold the key.
  await loop.resume('run-O-5', { approvals: { 'call-O-5': { approve: true } } });
  await store.close();
}, 60_000);

afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('loopstate runs redacts everything it prints', () => {
  it('list and show, as text and as --json, for a waiting, a reviewed and a finished run', async () => {
    for (const args of [
      ['list'],
      ['list', '--json'],
      ...['run-O-1', 'note-O-6', 'run-O-5'].flatMap((runId) => [
        ['show', runId],
        ['show', runId, '--json'],
      ]),
    ]) {
      const { code, printed } = await runs(...args);
      expect(code, `${args.join(' ')}: ${printed}`).toBe(0);
      expect(printed).toContain('[redacted]');
      expectNoSecret(printed);
    }
    // Still the run's result, with what is not secret kept.
    const shown = JSON.parse((await runs('show', 'run-O-5', '--json')).printed) as {
      result: { status: string; messages: unknown[]; rawOutput: string };
    };
    expect(shown.result.status).toBe('succeeded');
    expect(shown.result.messages.length).toBeGreaterThan(2);
    expect(shown.result.rawOutput).toContain('Done:');
  });

  it('every decision and command, as text and as --json', async () => {
    for (const args of [
      ['approve', 'run-O-1', 'call-O-1'],
      ['reject', 'run-O-2', 'call-O-2', '--reason', 'no', '--json'],
      ['approve', 'run-O-3', 'call-O-3', '--json'],
      ['reject', 'run-O-4', 'call-O-4', '--reason', 'no'],
      ['review', 'note-O-6', '--accept', '--json'],
      ['resume', 'run-O-5'],
      ['resume', 'run-O-5', '--json'],
      ['cancel', 'run-O-1', '--json'],
      ['cancel', 'run-O-2'],
    ]) {
      const { code, printed } = await runs(...args);
      expect(code, `${args.join(' ')}: ${printed}`).toBe(0);
      expectNoSecret(printed);
    }
  });
});
