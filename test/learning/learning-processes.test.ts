/**
 * Learning shared by processes, with real child processes on one real SQLite file
 * (test/fixtures/learning-child.ts): two processes learning at the same time merge their batches (every
 * count adds up, no write lost), and a process started afterwards begins from what they learned.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteStore } from 'loopstate/sqlite';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-learning-processes-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface ChildReport {
  saved: number;
  warnings: string[];
  firstLoaded?: {
    version: number | null;
    tools: { name: string; weight: number; successes: number; failures: number }[];
  };
  firstOffered?: string[];
}

function runChild(path: string, runs: number, barrier: string, parties: number): Promise<ChildReport> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      './test/support/typescript-register.mjs',
      join('test', 'fixtures', 'learning-child.ts'),
      path,
      String(runs),
      barrier,
      String(parties),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) =>
    child.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(stdout.trim()) as ChildReport)
        : reject(new Error(`child exited ${code}: ${stderr}`)),
    ),
  );
}

describe('learning across processes on one SQLite file', () => {
  it('merges two processes’ concurrent batches without losing a count, and a restarted process starts from them', async () => {
    const path = join(scratch, 'shared.db');
    const runs = 6;
    // Both start once both have loaded (a barrier folder), so their batches race.
    const barrier = join(scratch, 'barrier');
    const [first, second] = await Promise.all([runChild(path, runs, barrier, 2), runChild(path, runs, barrier, 2)]);
    expect(first.warnings).toEqual([]);
    expect(second.warnings).toEqual([]);

    const store = sqliteStore({ path });
    const row = await store.readLearning('["shared-bot",null]');
    await store.close();
    expect(row).not.toBeNull();
    const record = JSON.parse(row!.body) as {
      tools: Record<string, { successes: number; failures: number; consecutiveFailures: number }>;
      tasks: Record<string, { passes: number; failures: number }>;
    };
    // halfLifeMs: Infinity, so counts are exact: per run flaky 1 success + 1 failure, steady 2, one passed evaluation.
    expect(record.tools.flaky).toMatchObject({ successes: 2 * runs, failures: 2 * runs });
    expect(record.tools.steady).toMatchObject({ successes: 4 * runs, failures: 0 });
    expect(record.tasks.main).toMatchObject({ passes: 2 * runs, failures: 0 });
    // Every batch either process wrote is a version: none was written over another.
    expect(row!.version).toBe(first.saved + second.saved);
    // Per run 5 outcomes in batches of 3: two writes each.
    expect(first.saved + second.saved).toBe(2 * 2 * runs);

    // A new process (a restarted service) starts from what both learned: flaky ordered after steady.
    const restarted = await runChild(path, 1, join(scratch, 'alone'), 1);
    expect(restarted.firstLoaded?.version).toBe(row!.version);
    expect(restarted.firstLoaded?.tools.find((tool) => tool.name === 'flaky')).toMatchObject({
      successes: 2 * runs,
      failures: 2 * runs,
    });
    expect(restarted.firstLoaded?.tools.find((tool) => tool.name === 'flaky')?.weight).toBeLessThan(1);
    expect(restarted.firstOffered).toEqual(['steady', 'flaky']);
  }, 120_000);
});
