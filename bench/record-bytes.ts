/**
 * What a durable step encodes (issue 18 target 1): the bytes of the journal rows and snapshots a run of S steps
 * hands its store (before the store packs them), by row kind, and µs/step with no store and on SQLite (NORMAL and
 * FULL) — for this build and, with LOOPSTATE_BENCH_BASE set to another checkout built with `tsc -p
 * tsconfig.build.json` (e.g. main in /tmp), for that one too, in the same process with rounds interleaved.
 * The workload is bench/durable-cost.ts's: one tool call per step, an instant model.
 *
 *   npm run build && LOOPSTATE_BENCH_BASE=/tmp/before node dist/bench/record-bytes.js 1000 5 100,1000,10000
 */
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import * as current from 'loopstate';
import { lookupTool, workloadLimits, workloadModel } from './durable-workload.js';
import * as currentSqlite from 'loopstate/sqlite';
import type { Store, StoreRow } from 'loopstate';

const steps = Number(process.argv[2] ?? 1_000);
const rounds = Number(process.argv[3] ?? 5);
const byteLengths = (process.argv[4] ?? '100,1000,10000').split(',').map(Number);
const base = process.env.LOOPSTATE_BENCH_BASE;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-record-bytes-'));

interface Build {
  name: string;
  lib: typeof current;
  sqliteStore: typeof currentSqlite.sqliteStore;
}
const builds: Build[] = [];
if (base !== undefined) {
  const lib = (await import(join(base, 'dist/src/index.js'))) as typeof current;
  const sqlite = (await import(join(base, 'dist/src/adapters/sqlite/index.js'))) as typeof currentSqlite;
  builds.push({ name: `base (${base})`, lib, sqliteStore: sqlite.sqliteStore });
}
builds.push({ name: 'this build', lib: current, sqliteStore: currentSqlite.sqliteStore });

const loopOf = (build: Build, total: number, store: Store | undefined) =>
  build.lib.createLoop({
    model: workloadModel(total),
    tools: [lookupTool(build.lib.defineTool)],
    ...workloadLimits(total),
    ...(store ? { store } : {}),
  });

/** A memory store that counts the characters of every row, snapshot and run record it is handed, by kind. */
function counting(build: Build, bytes: Map<string, number>, lastSnapshot: { chars: number }): Store {
  const store = build.lib.memoryStore();
  const add = (kind: string, chars: number) => bytes.set(kind, (bytes.get(kind) ?? 0) + chars);
  return {
    ...store,
    createRun: (runId, body, lease) => {
      add('run', body.length);
      return store.createRun(runId, body, lease);
    },
    append: (runId, rows: StoreRow[], lease, runBody, finishedAt) => {
      for (const row of rows) add(row.kind, row.body.length);
      if (runBody !== undefined) add('run', runBody.length);
      return store.append(runId, rows, lease, runBody, finishedAt);
    },
    writeSnapshot: (runId, row, lease) => {
      add('snapshot', row.body.length);
      lastSnapshot.chars = row.body.length;
      return store.writeSnapshot(runId, row, lease);
    },
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
// `run`: the run records (the first, and the stop's, which held the result's messages whole before schema 6).
const kinds = ['event', 'trace', 'transcript', 'snapshot', 'model', 'intent', 'tool-result', 'run'];

console.log(
  `load average ${loadavg()
    .map((load) => load.toFixed(2))
    .join(' ')}`,
);
console.log(`\n| build | S | chars/step | ${kinds.join(' | ')} | last snapshot chars |`);
console.log(`|---|---:|---:|${kinds.map(() => '---:').join('|')}|---:|`);
for (const total of byteLengths)
  for (const build of builds) {
    const bytes = new Map<string, number>();
    const lastSnapshot = { chars: 0 };
    const result = await loopOf(build, total, counting(build, bytes, lastSnapshot)).run({ goal: 'go' });
    if (result.stopReason !== 'completed') throw new Error(`${result.stopReason}: ${result.detail}`);
    const sum = [...bytes.values()].reduce((a, b) => a + b, 0);
    console.log(
      `| ${build.name} | ${total} | ${(sum / total).toFixed(0)} | ${kinds.map((kind) => ((bytes.get(kind) ?? 0) / total).toFixed(0)).join(' | ')} | ${lastSnapshot.chars} |`,
    );
  }

interface Configuration {
  name: string;
  build: Build;
  make: () => Store | undefined;
  wall: number[];
  cpu: number[];
}
let files = 0;
const configurations: Configuration[] = builds.flatMap((build, index) => [
  { name: 'no store', build, make: () => undefined, wall: [], cpu: [] },
  {
    name: 'sqlite NORMAL',
    build,
    make: () => build.sqliteStore({ path: join(scratch, `n${index}-${files++}.db`) }),
    wall: [],
    cpu: [],
  },
  {
    name: 'sqlite FULL',
    build,
    make: () => build.sqliteStore({ path: join(scratch, `f${index}-${files++}.db`), durability: 'full' }),
    wall: [],
    cpu: [],
  },
]);
const loadBefore = loadavg()[0]!;
for (let round = -1; round < rounds; round++)
  for (const config of configurations) {
    const store = config.make();
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const result = await loopOf(config.build, steps, store).run({ goal: 'go' });
    const cpu = process.cpuUsage(cpuBefore);
    const elapsed = performance.now() - started;
    await store?.close();
    if (result.stopReason !== 'completed') throw new Error(`${result.stopReason}: ${result.detail}`);
    if (round < 0) continue;
    config.wall.push((elapsed * 1_000) / steps);
    config.cpu.push((cpu.user + cpu.system) / steps);
  }
console.log(
  `\nS = ${steps}, ${rounds} rounds interleaved (builds alternating), load average ${loadBefore.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`,
);
console.log('| build | store | µs/step (median) | × no store | CPU µs/step | CPU × no store |');
console.log('|---|---|---:|---:|---:|---:|');
for (const build of builds) {
  const mine = configurations.filter((config) => config.build === build);
  const wallBase = median(mine[0]!.wall);
  const cpuBase = median(mine[0]!.cpu);
  for (const config of mine)
    console.log(
      `| ${build.name} | ${config.name} | ${median(config.wall).toFixed(0)} | ${(median(config.wall) / wallBase).toFixed(2)}× | ${median(config.cpu).toFixed(0)} | ${(median(config.cpu) / cpuBase).toFixed(2)}× |`,
    );
}
