/**
 * `loopstate runs` end to end, as real child processes of the built bin on a real SQLite file: runs that
 * `loopstate run` stopped for approval are listed, shown, approved (the destructive tool runs exactly once,
 * counted by the tool itself in a file), rejected (the reason reaches the model), cancelled; a loop with
 * other tools is refused with definition_changed; bad arguments exit 2 naming the argument.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const bin = join(repoRoot, 'dist', 'src', 'tooling', 'cli', 'bin.js');
let directory: string;

const LOOP = (tools: string) => `
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { defineTool } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';

const refund = defineTool({
  name: 'refund',
  description: 'Refund an order.',
  input: z.object({ order_id: z.string(), api_key: z.string() }),
  access: 'destructive',
  execute: ({ order_id }) => {
    appendFileSync('refunds.log', order_id + '\\n');
    return { refunded: order_id };
  },
});
const lookup = defineTool({ name: 'lookup', description: 'Look an order up.', input: z.object({}), access: 'read', execute: () => ({}) });
const usage = { inputTokens: 40, outputTokens: 10 };
const model = {
  id: 'e2e-refunds',
  async generate(request) {
    appendFileSync('model-calls.jsonl', JSON.stringify(request.messages) + '\\n');
    const last = request.messages.at(-1);
    if (last.role === 'tool') return { text: 'Done: ' + last.content, toolCalls: [], usage };
    const order = /O-\\d+/.exec(request.messages.find((message) => message.role === 'user').content)[0];
    const args = JSON.stringify({ order_id: order, api_key: 'sk-live-4eC39HqLyjWDarjtT1zdp7dc' });
    return { text: null, toolCalls: [{ id: 'call-' + order, name: 'refund', arguments: args }], usage };
  },
};
export default { name: 'refunds', model, tools: [${tools}], store: sqliteStore({ path: 'loops.db' }) };
export const goal = 'Refund order O-7';
`;

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function loopstate(...args: string[]): Promise<Outcome> {
  const env: Record<string, string | undefined> = { ...process.env, OPENAI_API_KEY: undefined };
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key];
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], {
      cwd: directory,
      env: env as NodeJS.ProcessEnv,
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}
const runs = (...args: string[]) => loopstate('runs', 'loop.mjs', '--store', 'loops.db', ...args);
const lines = (file: string) =>
  existsSync(join(directory, file)) ? readFileSync(join(directory, file), 'utf8').split('\n').filter(Boolean) : [];

beforeAll(async () => {
  await run(
    process.execPath,
    [join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(repoRoot, 'tsconfig.build.json')],
    { cwd: repoRoot },
  );
  directory = mkdtempSync(join(tmpdir(), 'loopstate-runs-e2e-'));
  mkdirSync(join(directory, 'node_modules'));
  symlinkSync(repoRoot, join(directory, 'node_modules', 'loopstate'), 'dir');
  symlinkSync(join(repoRoot, 'node_modules', 'zod'), join(directory, 'node_modules', 'zod'), 'dir');
  writeFileSync(join(directory, 'package.json'), JSON.stringify({ name: 'my-project', type: 'module', private: true }));
  writeFileSync(join(directory, 'loop.mjs'), LOOP('refund'));
  writeFileSync(join(directory, 'other-tools.mjs'), LOOP('refund, lookup'));
  for (const order of ['O-7', 'O-8', 'O-9']) {
    const started = await loopstate('run', 'loop.mjs', '--goal', `Refund order ${order}`, '--json', '--quiet');
    expect(started.code).toBe(1);
    expect(JSON.parse(started.stdout).result).toMatchObject({ status: 'needs_human', stopReason: 'needs_human' });
  }
}, 240_000);

afterAll(() => {
  if (directory) rmSync(directory, { recursive: true, force: true });
});

/** The run ids by order, from `runs list --json`. */
async function runIds(): Promise<Record<string, string>> {
  const listed = JSON.parse((await runs('list', '--json')).stdout) as { runs: { runId: string; goal: string }[] };
  return Object.fromEntries(listed.runs.map((stored) => [/O-\d+/.exec(stored.goal)![0], stored.runId]));
}

describe('loopstate runs through the bin', () => {
  it('lists the waiting runs as JSON, arguments redacted, and filters by status', async () => {
    const listed = await runs('list', '--json');
    expect(listed.code).toBe(0);
    const page = JSON.parse(listed.stdout) as {
      runs: { status: string; pendingApprovals: { callId: string; tool: string; args: unknown }[] }[];
      next: string | null;
    };
    expect(page.runs).toHaveLength(3);
    expect(page.next).toBeNull();
    for (const stored of page.runs) {
      expect(stored.status).toBe('needs_human');
      expect(stored.pendingApprovals[0]).toMatchObject({ tool: 'refund', args: { api_key: '[redacted]' } });
    }
    expect(listed.stdout).not.toContain('sk-live');
    const none = await runs('list', '--status', 'succeeded');
    expect(none).toMatchObject({ code: 0, stdout: expect.stringContaining('no succeeded runs') });
    const text = await runs('list', '--status', 'needs_human');
    expect(text.stdout.trim().split('\n')).toHaveLength(3);
    expect(text.stdout).toContain('waiting: approve call-O-7 (refund)');
  });

  it('shows a run: what it waits for and its step table', async () => {
    const { 'O-7': runId } = await runIds();
    const shown = await runs('show', runId!);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`run ${runId}: needs_human (needs_human)`);
    expect(shown.stdout).toContain('waiting for approval: call-O-7 refund {"order_id":"O-7","api_key":"[redacted]"}');
    expect(shown.stdout).toMatch(/^\s+1 {2}/m);
    const json = JSON.parse((await runs('show', runId!, '--json')).stdout) as {
      steps: unknown[];
      result: { status: string };
    };
    expect(json.result.status).toBe('needs_human');
    expect(json.steps).toHaveLength(1);
  });

  it('approve: the refund runs exactly once and the run completes; sent again, it runs no more', async () => {
    const { 'O-7': runId } = await runIds();
    const approved = await runs('approve', runId!, 'call-O-7');
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain(`run ${runId}: succeeded (completed)`);
    expect(lines('refunds.log')).toEqual(['O-7']);
    const again = await runs('approve', runId!, 'call-O-7');
    expect(again.code).toBe(0);
    expect(lines('refunds.log')).toEqual(['O-7']);
    const otherDecision = await runs('reject', runId!, 'call-O-7', '--reason', 'changed my mind');
    expect(otherDecision.code).toBe(1);
    expect(otherDecision.stderr).toContain('approval_already_decided');
    expect(lines('refunds.log')).toEqual(['O-7']);
  });

  it('reject: the reason reaches the model and the refund never runs', async () => {
    const { 'O-8': runId } = await runIds();
    const rejected = await runs('reject', runId!, 'call-O-8', '--reason', 'O-8 was refunded by hand', '--json');
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(JSON.parse(rejected.stdout)).toMatchObject({ action: 'reject', result: { status: 'succeeded' } });
    const seen = lines('model-calls.jsonl').join('\n');
    expect(seen).toContain('O-8 was refunded by hand');
    expect(lines('refunds.log')).not.toContain('O-8');
  });

  it('a loop file with other tools is refused with definition_changed, and nothing runs', async () => {
    const { 'O-9': runId } = await runIds();
    const refused = await loopstate('runs', 'other-tools.mjs', '--store', 'loops.db', 'approve', runId!, 'call-O-9');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('definition_changed');
    expect(lines('refunds.log')).not.toContain('O-9');
  });

  it('cancel: the waiting run stops as cancelled', async () => {
    const { 'O-9': runId } = await runIds();
    const cancelled = await runs('cancel', runId!);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toContain('failed (cancelled)');
    const listed = JSON.parse((await runs('list', '--status', 'failed', '--json')).stdout) as {
      runs: { runId: string }[];
    };
    expect(listed.runs.map((stored) => stored.runId)).toEqual([runId]);
    expect(lines('refunds.log')).toEqual(['O-7']);
  });

  it('bad arguments exit 2 naming the argument; --json errors stay JSON', async () => {
    const noStore = await loopstate('runs', 'loop.mjs', 'list');
    expect(noStore.code).toBe(2);
    expect(noStore.stderr).toContain('--store');
    const badStatus = await runs('list', '--status', 'waiting');
    expect(badStatus.code).toBe(2);
    expect(badStatus.stderr).toContain(
      '--status: expected one of running, needs_human, succeeded, failed, got "waiting"',
    );
    const unknown = await runs('approve', 'no-such-run', 'call-1', '--json');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('<runId>: no run "no-such-run"');
    expect(JSON.parse(unknown.stdout)).toMatchObject({ error: { code: 'cli_usage', exitCode: 2 } });
    const missingFile = await loopstate('runs', 'loop.mjs', '--store', 'nope.db', 'list');
    expect(missingFile.code).toBe(2);
    expect(missingFile.stderr).toContain('--store: no such SQLite file: nope.db');
    const review = await runs('review', 'x');
    expect(review.code).toBe(2);
    expect(review.stderr).toContain('exactly one of --accept and --reject');
    const rejectWithoutReason = await runs('reject', 'x', 'call-1');
    expect(rejectWithoutReason.code).toBe(2);
    expect(rejectWithoutReason.stderr).toContain('--reason');
  });
});
