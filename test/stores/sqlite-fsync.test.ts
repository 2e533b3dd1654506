/**
 * How many fsyncs a SQLite commit costs, counted with strace on a real child process: `durability: 'full'`
 * fsyncs the WAL at every journal commit and not at the snapshot commit after it (the next commit's fsync
 * covers it); `normal` fsyncs at checkpoints only; a new file turns to WAL with one fsync of its own; the idle fold
 * starts the WAL again (its header synced there), so the next drive's first write syncs no header. Skipped where
 * strace is not installed.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteStore } from 'loopstate/sqlite';
import { buildCrashChild, removeCrashChild } from '../durable/crash-harness.js';

const entry = join('..', 'stores', 'fixtures', 'fsync-child.ts');
const foldEntry = join('..', 'stores', 'fixtures', 'fold-child.ts');
const strace = spawnSync('strace', ['-V']).status === 0;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-sqlite-fsync-'));
let child = '';
let foldChild = '';
beforeAll(async () => {
  if (strace) [child, foldChild] = [await buildCrashChild(entry), await buildCrashChild(foldEntry)];
}, 120_000);
afterAll(() => {
  removeCrashChild(entry);
  removeCrashChild(foldEntry);
  rmSync(scratch, { recursive: true, force: true });
});

/**
 * The lines strace wrote for `calls` (each call's file named, `-y`) while Node ran `args`, and the child's output;
 * throws with the child's stderr unless `ended` accepts how it ended.
 */
function straced(
  name: string,
  calls: string,
  args: string[],
  ended: (run: SpawnSyncReturns<string>) => boolean,
): { lines: string[]; output: string } {
  const trace = join(scratch, `${name}.strace`);
  const run = spawnSync('strace', ['-f', '-qq', '-o', trace, '-y', '-e', `trace=${calls}`, process.execPath, ...args], {
    encoding: 'utf8',
  });
  if (!ended(run)) throw new Error(`the child failed (${run.status ?? run.signal}): ${run.stderr}`);
  return { lines: readFileSync(trace, 'utf8').split('\n'), output: run.stdout };
}

/**
 * The fsync and fdatasync calls of the child writing `commits` commits (each with a snapshot after it), on a new
 * file; with `kill`, the child ends by SIGKILL after its last write (no close, no checkpoint).
 */
function syncs(
  durability: 'normal' | 'full',
  commits: number,
  end: 'exit' | 'kill' = 'exit',
): { syncs: number; files: string[]; output: string } {
  const name = `${durability}-${commits}-${end}`;
  const path = join(scratch, `${name}.db`);
  const { lines, output } = straced(
    name,
    'fsync,fdatasync',
    [child, path, durability, String(commits), ...(end === 'kill' ? ['kill'] : [])],
    (run) => (end === 'kill' ? run.signal === 'SIGKILL' : run.status === 0),
  );
  const calls = lines.filter((line) => /\b(fsync|fdatasync)\(/.test(line));
  // `-y` names each call's file: `fsync(19</tmp/…/normal-0-kill.db-wal>)`.
  const files = calls.map((line) => /<([^>]*)>/.exec(line)?.[1]?.replace(scratch, '.') ?? line);
  return { syncs: calls.length, files, output };
}

/**
 * The fsync and fdatasync calls of fold-child.ts by phase (each phase's files, `.` for the scratch folder): `fold`
 * from the lease's release to the fold's end, `write` the next drive's first write.
 */
function foldSyncs(durability: 'normal' | 'full'): { fold: string[]; write: string[]; output: string } {
  const path = join(scratch, `fold-${durability}.db`);
  const { lines, output } = straced(
    `fold-${durability}`,
    'fsync,fdatasync,write',
    [foldChild, path, durability],
    (run) => run.signal === 'SIGKILL',
  );
  const phases: Record<string, string[]> = {};
  let phase = 'run';
  for (const line of lines) {
    const marked = /"MARK-(\w+)"/.exec(line);
    if (marked) phase = marked[1]!;
    else if (/\b(fsync|fdatasync)\(/.test(line))
      (phases[phase] ??= []).push(/<([^>]*)>/.exec(line)?.[1]?.replace(path, 'db').replace(scratch, '.') ?? line);
  }
  return { fold: phases['RELEASED'] ?? [], write: phases['FOLDED'] ?? [], output };
}

describe.skipIf(!strace)('fsyncs of the idle fold and the write after it (strace)', () => {
  it("'normal': the fold's checkpoint (WAL, database) and the new WAL's header; the next write none", () => {
    const { fold, write, output } = foldSyncs('normal');
    expect(JSON.parse(output)).toEqual({ taken: true, rows: 200 });
    expect(fold).toEqual(['db-wal', 'db', 'db-wal']);
    // It appends to the WAL started by the fold: no restart, no header to sync on its way.
    expect(write).toEqual([]);
  });

  it("'full': the same and the fold's commit (four); the next write its own commit's only", () => {
    const { fold, write, output } = foldSyncs('full');
    expect(JSON.parse(output)).toEqual({ taken: true, rows: 200 });
    expect(fold).toEqual(['db-wal', 'db', 'db-wal', 'db-wal']);
    expect(write).toEqual(['db-wal']);
  });
});

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

  it('a new file turns to WAL with one fsync, of the file itself (page 1, saying WAL), none of a rollback journal', () => {
    // At synchronous=FULL, the switch to WAL went through a rollback journal: it fsynced the journal twice, its
    // directory and the file (four), and only then the WAL's header at the first commit, with the directory.
    const opened = syncs('normal', 0, 'kill');
    expect(JSON.parse(opened.output)).toEqual({ rows: 0, snapshot: null });
    expect(opened.files).toEqual(['./normal-0-kill.db', './normal-0-kill.db-wal', '.']);
    // Page 1 is on disk saying WAL: bytes 18 and 19 of the header are 2.
    const header = readFileSync(join(scratch, 'normal-0-kill.db')).subarray(18, 20);
    expect([...header]).toEqual([2, 2]);
    // 'full' then fsyncs every commit (the schema's and the run's) as before.
    const full = syncs('full', 0, 'kill');
    expect(full.files).toEqual([
      './full-0-kill.db',
      './full-0-kill.db-wal',
      '.',
      './full-0-kill.db-wal',
      './full-0-kill.db-wal',
    ]);
  });

  it('the run written before a kill reads back from a file opened that way', async () => {
    syncs('full', 1, 'kill');
    const store = sqliteStore({ path: join(scratch, 'full-1-kill.db') });
    try {
      expect((await store.readJournal('r', 0)).map((row) => row.seq)).toEqual([1, 2, 3]);
      expect((await store.latestSnapshot('r'))?.seq).toBe(3);
    } finally {
      await store.close();
    }
  });
});
