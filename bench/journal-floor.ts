/**
 * The floor of a durable step on SQLite: what the rows one step of bench/durable-cost.ts's workload commits
 * cost to encode, to deflate and to commit, each alone, beside the step without a store and the store's own
 * `append` — the budget argument for issue 18 target 1 (a SQLite run ≤ 3× the same run without a store).
 * Reported, never asserted.
 *
 * The rows are captured from a real run (S steps, one read call a step, instant model, trace in memory) through
 * a store that wraps sqliteStore; then, rounds interleaved in this process, per step of that run:
 * - encode: `JSON.stringify` of every record the run committed (its journal rows and snapshots), parsed back once;
 * - deflate: the store's own packing (`packCommit` per append, `pack` per snapshot);
 * - commit: the packed rows written by bare better-sqlite3 with the store's statements, one transaction an append
 *   (the lease and control read, the inserts) and one a snapshot, `synchronous` NORMAL and FULL;
 * - one statement: each append's rows as ONE multi-row INSERT that checks the lease itself (autocommit: no
 *   BEGIN/COMMIT statements, no control read), NORMAL;
 * - an empty write: BEGIN IMMEDIATE, one 4-byte row, COMMIT, as many as the run's appends (a write transaction's floor);
 * - store append: sqliteStore's `append` and `writeSnapshot` of the captured rows (packing + commit + its checkpoints);
 * - the whole run without a store and on sqliteStore NORMAL (the added figure the floor explains).
 *
 *   npm run build && node dist/bench/journal-floor.js            # S = 1,000, 7 rounds
 *   node dist/bench/journal-floor.js 1000 7
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type BetterSqlite3 from 'better-sqlite3';
import { createLoop, defineTool, type Store, type StoreRow } from 'loopstate';
import { lookupTool, workloadLimits, workloadModel } from './durable-workload.js';
import { sqliteStore } from 'loopstate/sqlite';
import { pack, packCommit, type PackedRow } from '../src/adapters/sqlite/row-packing.js';
import { JOURNAL_CHUNKS_INDEX, SQLITE_SCHEMA, SQLITE_SCHEMA_FINISH } from '../src/adapters/sqlite/sqlite-schema.js';

const steps = Number(process.argv[2] ?? 1_000);
const rounds = Number(process.argv[3] ?? 7);
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-journal-floor-'));
const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;

const loopOf = (store: Store | undefined) =>
  createLoop({
    model: workloadModel(steps),
    tools: [lookupTool(defineTool)],
    ...workloadLimits(steps),
    ...(store ? { store } : {}),
  });

// --- capture: every append's journal rows and every snapshot of one real run
const appends: StoreRow[][] = [];
const snapshots: StoreRow[] = [];
{
  const inner = sqliteStore({ path: join(scratch, 'capture.db') });
  const capturing: Store = {
    ...inner,
    append(runId, rows, lease, runBody, finishedAt) {
      if (rows.length > 0) appends.push(rows.map((row) => ({ seq: row.seq, kind: row.kind, body: row.body })));
      return inner.append(runId, rows, lease, runBody, finishedAt);
    },
    writeSnapshot(runId, row, lease) {
      snapshots.push({ seq: row.seq, kind: row.kind, body: row.body });
      return inner.writeSnapshot(runId, row, lease);
    },
  };
  const result = await loopOf(capturing).run({ goal: 'go', runId: 'capture' });
  if (result.stopReason !== 'completed') throw new Error(`capture run: ${result.stopReason}`);
  await inner.close();
}
const journalRows = appends.flat();
const chars = (rows: readonly StoreRow[]) => rows.reduce((sum, row) => sum + row.body.length, 0);
const byKind = new Map<string, { rows: number; chars: number }>();
for (const row of [...journalRows, ...snapshots]) {
  const entry = byKind.get(row.kind) ?? { rows: 0, chars: 0 };
  entry.rows += 1;
  entry.chars += row.body.length;
  byKind.set(row.kind, entry);
}
const records = [...journalRows, ...snapshots].map((row) => JSON.parse(row.body) as unknown);
const packedAppends = appends.map((rows) => packCommit(rows));
const packedSnapshots = snapshots.map((row): PackedRow => ({ seq: row.seq, kind: row.kind, ...pack(row.body) }));
const packedBytes = [...packedAppends.flat(), ...packedSnapshots].reduce(
  (sum, row) => sum + (row.packed?.length ?? Buffer.byteLength(row.body)),
  0,
);

// --- bare better-sqlite3, the store's schema (version 6, keyed) and statements
const lease = { owner: 'bench', until: Number.MAX_SAFE_INTEGER };
let files = 0;
function openBare(synchronous: 'NORMAL' | 'FULL') {
  const db = new Database(join(scratch, `bare-${files++}.db`));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.exec(SQLITE_SCHEMA);
  db.exec(SQLITE_SCHEMA_FINISH);
  db.exec(JOURNAL_CHUNKS_INDEX.keyed);
  db.prepare("INSERT INTO runs (run_id, body, lease_owner, lease_until, number) VALUES ('run', '{}', ?, ?, 1)").run(
    lease.owner,
    lease.until,
  );
  return db;
}

function bareCommits(synchronous: 'NORMAL' | 'FULL'): () => void {
  const db = openBare(synchronous);
  const ownerAndControl = db.prepare(
    "SELECT lease_owner, lease_until, cancel_requested, (SELECT value FROM control WHERE key = 'paused') AS paused, number FROM runs WHERE run_id = ?",
  );
  const insert = db.prepare(
    'INSERT INTO journal (id, run_id, kind, body, packed) VALUES ((@number << 32) + @seq, @runId, @kind, @body, @packed)',
  );
  const leaseOwner = db.prepare('SELECT lease_owner, lease_until FROM runs WHERE run_id = ?');
  const upsert = db.prepare(
    'INSERT INTO snapshots (run_id, seq, kind, body, packed) VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, kind = excluded.kind, body = excluded.body, packed = excluded.packed WHERE excluded.seq >= snapshots.seq',
  );
  const append = db.transaction((rows: readonly PackedRow[]) => {
    const owned = ownerAndControl.get('run') as { lease_owner: string; number: number };
    if (owned.lease_owner !== lease.owner) throw new Error('lease lost');
    for (const row of rows)
      insert.run({
        runId: 'run',
        number: owned.number,
        seq: row.seq,
        kind: row.kind,
        body: row.body,
        packed: row.packed,
      });
    return owned;
  });
  const snapshot = db.transaction((row: PackedRow) => {
    const owner = leaseOwner.get('run') as { lease_owner: string };
    if (owner.lease_owner !== lease.owner) throw new Error('lease lost');
    upsert.run('run', row.seq, row.kind, row.body, row.packed);
  });
  return () => {
    let next = 0;
    for (const rows of packedAppends) {
      append(rows);
      // A snapshot is written right after the append that committed its events.
      while (next < packedSnapshots.length && packedSnapshots[next]!.seq <= rows.at(-1)!.seq)
        snapshot(packedSnapshots[next++]!);
    }
    db.close();
  };
}

function oneStatement(): () => void {
  const db = openBare('NORMAL');
  const statements = new Map<number, BetterSqlite3.Statement>();
  const statementFor = (count: number) => {
    let statement = statements.get(count);
    if (statement === undefined) {
      const values = Array.from({ length: count }, () => '(?, ?, ?, ?)').join(', ');
      statement = db.prepare(
        `INSERT INTO journal (id, run_id, kind, body, packed) SELECT (runs.number << 32) + v.column1, runs.run_id, v.column2, v.column3, v.column4 FROM runs, (VALUES ${values}) AS v WHERE runs.run_id = ? AND runs.lease_owner = ?`,
      );
      statements.set(count, statement);
    }
    return statement;
  };
  return () => {
    for (const rows of packedAppends) {
      const parameters: unknown[] = [];
      for (const row of rows) parameters.push(row.seq, row.kind, row.body, row.packed);
      if (statementFor(rows.length).run(...parameters, 'run', lease.owner).changes !== rows.length)
        throw new Error('lease lost');
    }
    db.close();
  };
}

function emptyWrites(): () => void {
  const db = openBare('NORMAL');
  db.exec('CREATE TABLE tiny (id INTEGER PRIMARY KEY, value TEXT) STRICT');
  const insert = db.prepare("INSERT INTO tiny (value) VALUES ('four')");
  const write = db.transaction(() => insert.run());
  return () => {
    for (let index = 0; index < packedAppends.length; index++) write();
    db.close();
  };
}

function storeAppends(): () => Promise<void> {
  const store = sqliteStore({ path: join(scratch, `store-${files++}.db`) });
  return async () => {
    await store.createRun('run', '{}', lease);
    let next = 0;
    for (const rows of appends) {
      await store.append('run', rows, lease);
      while (next < snapshots.length && snapshots[next]!.seq <= rows.at(-1)!.seq)
        await store.writeSnapshot('run', snapshots[next++]!, lease);
    }
    await store.close();
  };
}

/** The store's own calls timed inside a whole run (the CPU and wall of each call, summed into `into`). */
function timedStore(store: Store, into: { cpu: number; wall: number }): Store {
  const timed =
    <A extends unknown[], R>(call: (...args: A) => R) =>
    (...args: A): R => {
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      // sqliteStore's calls do their work before their first await: timing the call times the work.
      const result = call(...args);
      into.wall += performance.now() - started;
      const cpu = process.cpuUsage(cpuBefore);
      into.cpu += cpu.user + cpu.system;
      return result;
    };
  return { ...store, append: timed(store.append), writeSnapshot: timed(store.writeSnapshot) };
}
const inRun: { cpu: number[]; wall: number[] } = { cpu: [], wall: [] };

async function wholeRun(store: Store | undefined): Promise<void> {
  const result = await loopOf(store).run({ goal: 'go', runId: `run-${files++}` });
  if (result.stopReason !== 'completed') throw new Error(result.stopReason);
  await store?.close();
}

interface Measure {
  name: string;
  /** Made before the timing starts (a database opened, statements prepared); its result is timed. */
  prepare: () => () => unknown;
  wall: number[];
  cpu: number[];
}
const measures: Measure[] = [
  { name: 'the whole run without a store', prepare: () => () => wholeRun(undefined), wall: [], cpu: [] },
  {
    name: 'the whole run on sqliteStore (normal)',
    prepare: () => () => {
      const spent = { cpu: 0, wall: 0 };
      const store = sqliteStore({ path: join(scratch, `run-${files++}.db`) });
      return wholeRun(timedStore(store, spent)).then(() => {
        inRun.cpu.push(spent.cpu / steps);
        inRun.wall.push((spent.wall * 1_000) / steps);
      });
    },
    wall: [],
    cpu: [],
  },
  {
    name: 'encode: JSON.stringify of the records',
    prepare: () => () => records.map((record) => JSON.stringify(record)),
    wall: [],
    cpu: [],
  },
  {
    name: 'deflate: packCommit + pack (snapshots)',
    prepare: () => () => [appends.map((rows) => packCommit(rows)), snapshots.map((row) => pack(row.body))],
    wall: [],
    cpu: [],
  },
  { name: 'commit, a transaction an append (normal)', prepare: () => bareCommits('NORMAL'), wall: [], cpu: [] },
  { name: 'commit, a transaction an append (full)', prepare: () => bareCommits('FULL'), wall: [], cpu: [] },
  { name: 'commit, one multi-row INSERT an append (normal)', prepare: oneStatement, wall: [], cpu: [] },
  { name: 'an empty write transaction an append (normal)', prepare: emptyWrites, wall: [], cpu: [] },
  { name: "sqliteStore's append + writeSnapshot of the rows", prepare: storeAppends, wall: [], cpu: [] },
];

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const loadBefore = loadavg()[0]!;
for (let round = -1; round < rounds; round++)
  for (const measure of measures) {
    const run = measure.prepare();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await run();
    const elapsed = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    if (round < 0) continue;
    measure.wall.push((elapsed * 1_000) / steps);
    measure.cpu.push((cpu.user + cpu.system) / steps);
  }

console.log(
  `S = ${steps}: ${appends.length} appends (${(appends.length / steps).toFixed(3)} a step), ${journalRows.length} journal rows, ${snapshots.length} snapshots; ${(chars([...journalRows, ...snapshots]) / steps).toFixed(0)} chars a step, ${(packedBytes / steps).toFixed(0)} bytes packed a step`,
);
console.log(
  `chars a step by kind: ${[...byKind].map(([kind, { rows, chars: count }]) => `${kind} ${(count / steps).toFixed(0)} (${rows} rows)`).join(', ')}`,
);
console.log(
  `${rounds} rounds interleaved, load average ${loadBefore.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}; µs per step of the run, medians`,
);
const base = median(measures[0]!.cpu);
const added = median(measures[1]!.cpu) - base;
console.log('| measure | CPU µs/step | wall µs/step | CPU ÷ the storeless step | CPU rounds |');
console.log('|---|---:|---:|---:|---|');
for (const measure of measures)
  console.log(
    `| ${measure.name} | ${median(measure.cpu).toFixed(1)} | ${median(measure.wall).toFixed(1)} | ${(median(measure.cpu) / base).toFixed(2)} | ${measure.cpu.map((value) => value.toFixed(0)).join(' ')} |`,
  );
console.log(
  `| (in the whole run on sqliteStore: its append + writeSnapshot calls) | ${median(inRun.cpu.slice(1)).toFixed(1)} | ${median(inRun.wall.slice(1)).toFixed(1)} | ${(median(inRun.cpu.slice(1)) / base).toFixed(2)} | ${inRun.cpu
    .slice(1)
    .map((value) => value.toFixed(0))
    .join(' ')} |`,
);
console.log(
  `\nadded by sqliteStore (normal), CPU: ${added.toFixed(1)} µs/step; the 3× budget: ${(2 * base).toFixed(1)} µs/step added`,
);
rmSync(scratch, { recursive: true, force: true });
