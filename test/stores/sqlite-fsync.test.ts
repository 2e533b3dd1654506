/**
 * How many fsyncs a SQLite commit costs, counted with strace on a real child process: `durability: 'full'`
 * fsyncs the WAL at every journal commit and not at the snapshot commit after it (the next commit's fsync
 * covers it); `normal` fsyncs at checkpoints only. Skipped where strace is not installed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCrashChild, removeCrashChild } from '../durable/crash-harness.js';

const entry = join('..', 'stores', 'fixtures', 'fsync-child.ts');
const strace = spawnSync('strace', ['-V']).status === 0;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-sqlite-fsync-'));
let child = '';
beforeAll(async () => {
  if (strace) child = await buildCrashChild(entry);
}, 120_000);
afterAll(() => {
  removeCrashChild(entry);
  rmSync(scratch, { recursive: true, force: true });
});

/** The fsync and fdatasync calls of the child writing `commits` commits (each with a snapshot after it). */
function syncs(durability: 'normal' | 'full', commits: number): { syncs: number; output: string } {
  const path = join(scratch, `${durability}-${commits}.db`);
  const trace = join(scratch, `${durability}-${commits}.strace`);
  const run = spawnSync(
    'strace',
    [
      '-f',
      '-qq',
      '-o',
      trace,
      '-e',
      'trace=fsync,fdatasync',
      process.execPath,
      child,
      path,
      durability,
      String(commits),
    ],
    { encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(`the child failed (${run.status}): ${run.stderr}`);
  const calls = readFileSync(trace, 'utf8')
    .split('\n')
    .filter((line) => /\b(fsync|fdatasync)\(/.test(line));
  return { syncs: calls.length, output: run.stdout };
}

describe.skipIf(!strace)('fsyncs of a SQLite commit (strace)', () => {
  it("durability 'full': one fsync a journal commit, none for the snapshot commit after it", () => {
    const small = syncs('full', 10);
    const large = syncs('full', 40);
    expect(JSON.parse(large.output)).toEqual({ rows: 120, snapshot: 120 });
    // 30 more commits of rows (and 30 more snapshots) cost 30 more fsyncs: every journal commit is fsynced
    // (not fewer), and the snapshots none of their own (they were 60).
    expect(large.syncs - small.syncs).toBe(30);
  });

  it("durability 'normal': no fsync at a commit", () => {
    const small = syncs('normal', 10);
    const large = syncs('normal', 40);
    expect(JSON.parse(large.output)).toEqual({ rows: 120, snapshot: 120 });
    expect(large.syncs - small.syncs).toBe(0);
  });
});
