/**
 * Issue 18's durable workload: a run of S steps with one tool call per step and an instant model, the
 * same loop with no store, on SQLite (synchronous NORMAL and FULL, WAL) and, when
 * LOOPSTATE_BENCH_POSTGRES_URL is set, on postgresStore — in one process, rounds interleaved, medians
 * reported with the load average. Then the bytes on disk per step (db + wal, right after the run returns
 * with the store open, and after close) at several S, with and without the WAL fold at the run's stop,
 * what that fold costs a short and a long run, and what resuming costs after S steps against the run's
 * own time.
 *
 *   npm run bench:durable    # S = 1,000, 5 rounds; bytes at 100, 1,000, 10,000; resume at 100, 1,000, 10,000; fold at 10, 1,000
 *   npm run bench:durable -- 1000 5 100,1000 100,1000 10,1000
 *
 * LOOPSTATE_BENCH_BEFORE=<a checkout with dist/ built> adds that checkout's sqliteStore (normal and full) beside
 * this one's, driven by this checkout's engine, rounds interleaved: a store-side change measured side by side
 * in one process (e.g. `git archive 76fc999 | tar -x -C /tmp/before`, node_modules linked, `npx tsc -p
 * tsconfig.build.json` in it).
 *
 * Beside them, sqliteStore (normal) whose file was made before the run's timer starts: the fresh database's fixed
 * cost (making its schema and WAL), which the figure above includes, apart from the steps'.
 *
 * LOOPSTATE_BENCH_GROUPS=1,4,8,16,32 adds, for each store, the same run with `durable.maxUncommittedSteps` at each
 * bound (1: a commit before every model call, the behaviour before commits were grouped across steps), rounds
 * interleaved with the defaults; commits a step are counted (the store's appends) and shown beside them.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { createLoop, defineTool, type Store } from 'loopstate';
import { lookupTool, workloadLimits, workloadModel } from './durable-workload.js';
import { postgresStore } from 'loopstate/postgres';
import { sqliteStore } from 'loopstate/sqlite';

const steps = Number(process.argv[2] ?? 1_000);
const rounds = Number(process.argv[3] ?? 5);
const byteLengths = (process.argv[4] ?? '100,1000,10000').split(',').map(Number);
const resumeLengths = (process.argv[5] ?? '100,1000,10000').split(',').map(Number);
const foldLengths = (process.argv[6] ?? '10,1000').split(',').map(Number);
const trace = process.env.LOOPSTATE_BENCH_TRACE !== 'off';
const postgresUrl = process.env.LOOPSTATE_BENCH_POSTGRES_URL;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-durable-bench-'));

const lookup = lookupTool(defineTool);

const loopOf = (
  total: number,
  store: Store | undefined,
  hangAt: number | null = null,
  onHang?: () => void,
  durable?: { maxUncommittedSteps: number },
) =>
  createLoop({
    model: workloadModel(total, { hangAt, onCall: (call) => (call === hangAt ? onHang?.() : undefined) }),
    tools: [lookup],
    ...workloadLimits(total),
    ...(trace ? {} : { trace: { inMemory: false } }),
    ...(store ? { store } : {}),
    ...(durable ? { durable } : {}),
  });

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const size = (path: string) => (existsSync(path) ? statSync(path).size : 0);
let runs = 0;

interface Configuration {
  name: string;
  make: () => Store | undefined;
  samples: number[];
  /** CPU time of this process (user + system) per step: under a loaded machine it moves less than the wall time. */
  cpuSamples: number[];
  /** `durable.maxUncommittedSteps`, when not the default. */
  group?: number;
  /** Appends a step (the last round's). */
  commits?: number;
}
const beforeTree = process.env.LOOPSTATE_BENCH_BEFORE;
const before =
  beforeTree === undefined
    ? undefined
    : ((await import(pathToFileURL(join(beforeTree, 'dist', 'src', 'adapters', 'sqlite', 'index.js')).href)) as {
        sqliteStore: typeof sqliteStore;
      });
const configurations: Configuration[] = [{ name: 'no store', make: () => undefined, samples: [], cpuSamples: [] }];
for (const [durability, label] of [
  ['normal', 'normal'],
  ['full', "durability: 'full'"],
] as const) {
  if (before)
    configurations.push({
      name: `sqliteStore (${label}) of ${beforeTree}`,
      make: () => before.sqliteStore({ path: join(scratch, `b${runs++}.db`), durability }),
      samples: [],
      cpuSamples: [],
    });
  configurations.push({
    name: `sqliteStore (${label})`,
    make: () => sqliteStore({ path: join(scratch, `${durability[0]}${runs++}.db`), durability }),
    samples: [],
    cpuSamples: [],
  });
}
// The same store with its file made (schema, WAL) before the timer starts: what of the ratio is the fresh
// database's fixed cost (six fsyncs to make it, see bench/RESULTS.md) rather than the steps'.
configurations.push({
  name: 'sqliteStore (normal), file made before the run',
  make: () => {
    const store = sqliteStore({ path: join(scratch, `o${runs++}.db`) });
    // The store opens (and makes) its file on first use, synchronously inside this call.
    void store.readControl('opened');
    return store;
  },
  samples: [],
  cpuSamples: [],
});
if (postgresUrl)
  configurations.push({
    name: 'postgresStore',
    make: () => postgresStore({ connectionString: postgresUrl, schema: `bench_${process.pid}` }),
    samples: [],
    cpuSamples: [],
  });
const groups = (process.env.LOOPSTATE_BENCH_GROUPS ?? '')
  .split(',')
  .filter((group) => group !== '')
  .map(Number);
for (const config of configurations.filter(
  (config) => config.name !== 'no store' && !config.name.includes(' of ') && !config.name.includes('made before'),
))
  for (const group of groups)
    configurations.push({
      ...config,
      name: `${config.name}, maxUncommittedSteps ${group}`,
      samples: [],
      cpuSamples: [],
      group,
    });

/** The store, its appends counted. */
function counting(store: Store | undefined, count: { appends: number }): Store | undefined {
  if (store === undefined) return undefined;
  const append = store.append.bind(store);
  return Object.assign(Object.create(store) as Store, {
    append: (...args: Parameters<Store['append']>) => {
      count.appends += 1;
      return append(...args);
    },
  });
}

const loadBefore = loadavg()[0]!;
// A warm-up round, then `rounds` rounds interleaved: a noisy neighbour slows every configuration alike.
for (let round = -1; round < rounds; round++) {
  for (const config of configurations) {
    const count = { appends: 0 };
    const store = counting(config.make(), count);
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const result = await loopOf(
      steps,
      store,
      null,
      undefined,
      config.group === undefined ? undefined : { maxUncommittedSteps: config.group },
    ).run({ goal: 'go', runId: `run-${round}-${runs++}` });
    const cpu = process.cpuUsage(cpuBefore);
    const elapsed = performance.now() - started;
    config.commits = count.appends / steps;
    if (result.stopReason !== 'completed') throw new Error(`${config.name}: ${result.stopReason} ${result.detail}`);
    await store?.close();
    if (round >= 0) {
      config.samples.push((elapsed * 1_000) / steps);
      config.cpuSamples.push((cpu.user + cpu.system) / steps);
    }
  }
}
const baseline = median(configurations[0]!.samples);
const cpuBaseline = median(configurations[0]!.cpuSamples);
console.log(
  `S = ${steps}, ${rounds} rounds interleaved, trace ${trace ? 'in memory' : 'off'}, load average ${loadBefore.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}`,
);
// "× no store" divides two medians taken over the whole bench: the storeless run is the shortest (~50–130 ms at
// S = 1,000), so a neighbour's burst or a change of load between rounds moves its median, and every ratio with it.
// Two more columns, beside (not instead of) it: "paired" is the median of each round's own ratio (this round's run
// ÷ the storeless run of the same round, a few ms apart: a change of load between rounds cancels out), wall and
// CPU; "best ÷ best" divides the fastest rounds (the least disturbed run of each; disturbance only adds time).
const paired = (samples: number[], base: number[]) =>
  median(samples.map((sample, index) => sample / (base[index] ?? NaN)));
const best = (values: number[]) => Math.min(...values);
const noStore = configurations[0]!;
console.log(
  '| store | µs/step (median) | rounds | × no store | added µs/step | CPU µs/step | CPU × no store | appends/step | × paired (CPU) | best ÷ best (CPU) |',
);
console.log('|---|---:|---|---:|---:|---:|---:|---:|---:|---:|');
for (const config of configurations) {
  const micros = median(config.samples);
  const cpu = median(config.cpuSamples);
  const pairedRatios = `${paired(config.samples, noStore.samples).toFixed(2)}× (${paired(config.cpuSamples, noStore.cpuSamples).toFixed(2)}×)`;
  const bestRatios = `${(best(config.samples) / best(noStore.samples)).toFixed(2)}× (${(best(config.cpuSamples) / best(noStore.cpuSamples)).toFixed(2)}×)`;
  console.log(
    `| ${config.name} | ${micros.toFixed(0)} | ${config.samples.map((sample) => sample.toFixed(0)).join(' ')} | ${(micros / baseline).toFixed(2)}× | ${(micros - baseline).toFixed(0)} | ${cpu.toFixed(0)} | ${(cpu / cpuBaseline).toFixed(2)}× | ${config.commits?.toFixed(3) ?? ''} | ${pairedRatios} | ${bestRatios} |`,
  );
}

// Bytes: right after `run()` returns with the store still open (how a user looks at the file), then after
// close; the default store (it folds the WAL when its last run stops) beside `foldWalWhenIdle: false`.
console.log('\n| S | store | db + wal bytes/step (open) | wal bytes (open) | db + wal bytes/step (closed) |');
console.log('|---:|---|---:|---:|---:|');
/** The store folds its WAL once the run's caller has its result (the next macrotask): counted with the run here. */
const foldDone = () => new Promise<void>((resolve) => setImmediate(resolve));
for (const total of byteLengths) {
  for (const [fold, make, tree] of [
    [false, sqliteStore, ''],
    [true, sqliteStore, ''],
    ...(before ? ([[true, before.sqliteStore, ` of ${beforeTree}`]] as const) : []),
  ] as const) {
    const path = join(scratch, `bytes-${total}-${fold}-${tree === '' ? 'this' : 'before'}.db`);
    const store = make({ path, foldWalWhenIdle: fold });
    await loopOf(total, store).run({ goal: 'go', runId: 'bytes' });
    await foldDone();
    const open = size(path) + size(`${path}-wal`);
    const wal = size(`${path}-wal`);
    await store.close();
    console.log(
      `| ${total} | ${fold ? 'fold (default)' : 'foldWalWhenIdle: false'}${tree} | ${(open / total).toFixed(0)} | ${wal} | ${((size(path) + size(`${path}-wal`)) / total).toFixed(0)} |`,
    );
  }
}

// What the fold costs a run: the same run on a fresh file with and without it, rounds interleaved.
console.log(`\n| S | foldWalWhenIdle | run ms (median of ${rounds}) | CPU ms (median) | rounds (ms) |`);
console.log('|---:|---|---:|---:|---|');
for (const total of foldLengths) {
  const samples = new Map<boolean, { wall: number[]; cpu: number[] }>([
    [false, { wall: [], cpu: [] }],
    [true, { wall: [], cpu: [] }],
  ]);
  for (let round = -1; round < rounds; round++)
    for (const fold of [false, true]) {
      const store = sqliteStore({ path: join(scratch, `fold-${total}-${fold}-${round}.db`), foldWalWhenIdle: fold });
      const started = performance.now();
      const cpuBefore = process.cpuUsage();
      await loopOf(total, store).run({ goal: 'go', runId: 'fold' });
      await foldDone();
      const cpu = process.cpuUsage(cpuBefore);
      const elapsed = performance.now() - started;
      await store.close();
      if (round < 0) continue;
      samples.get(fold)!.wall.push(elapsed);
      samples.get(fold)!.cpu.push((cpu.user + cpu.system) / 1_000);
    }
  for (const [fold, { wall, cpu }] of samples)
    console.log(
      `| ${total} | ${fold} | ${median(wall).toFixed(1)} | ${median(cpu).toFixed(1)} | ${wall.map((ms) => ms.toFixed(0)).join(' ')} |`,
    );
}
// Short runs one after another on one file, as a service makes them: the fold runs only at the stops
// where the WAL has grown past 256 KiB and a quarter of the database.
const sequenceRuns = 200;
console.log(
  `\n| ${sequenceRuns} runs of 10 steps on one file | ms/run (mean) | CPU ms/run | runs that left the WAL folded (one frame or none) | db + wal bytes at the end (open) |`,
);
console.log('|---|---:|---:|---:|---:|');
{
  const sequences = [false, true].map((fold) => ({
    fold,
    path: join(scratch, `sequence-${fold}.db`),
    wall: 0,
    cpu: 0,
    folded: 0,
    store: sqliteStore({ path: join(scratch, `sequence-${fold}.db`), foldWalWhenIdle: fold }),
  }));
  for (let run = 0; run < sequenceRuns; run++)
    for (const sequence of sequences) {
      const started = performance.now();
      const cpuBefore = process.cpuUsage();
      await loopOf(10, sequence.store).run({ goal: 'go', runId: `short-${run}` });
      await foldDone();
      const cpu = process.cpuUsage(cpuBefore);
      sequence.wall += performance.now() - started;
      sequence.cpu += (cpu.user + cpu.system) / 1_000;
      // A fold leaves the WAL started again with one frame (page 1: its header, a frame header and 4 KiB).
      if (size(`${sequence.path}-wal`) <= 32 + 24 + 4_096) sequence.folded++;
    }
  for (const sequence of sequences) {
    console.log(
      `| foldWalWhenIdle: ${sequence.fold} | ${(sequence.wall / sequenceRuns).toFixed(1)} | ${(sequence.cpu / sequenceRuns).toFixed(1)} | ${sequence.folded} | ${size(sequence.path) + size(`${sequence.path}-wal`)} |`,
    );
    await sequence.store.close();
  }
}
console.log(
  `load average ${loadavg()
    .map((load) => load.toFixed(1))
    .join(' ')}`,
);

console.log('\n| S | run ms | resume ms (median of 3) | resume ÷ run |');
console.log('|---:|---:|---:|---:|');
for (const total of resumeLengths) {
  const samples: number[] = [];
  let runMs = 0;
  for (let attempt = 0; attempt < 3; attempt++) {
    const path = join(scratch, `resume-${total}-${attempt}.db`);
    const first = sqliteStore({ path });
    let hung: () => void = () => undefined;
    const hanging = new Promise<void>((resolve) => (hung = resolve));
    const started = performance.now();
    void loopOf(total, first, total, hung).run({ goal: 'go', runId: 'long' });
    await hanging;
    runMs = performance.now() - started;
    const row = await first.readRun('long');
    if (row?.leaseOwner) await first.releaseLease('long', row.leaseOwner);
    // A fresh connection, as a new process would have; the resume answers the last call.
    const second = sqliteStore({ path });
    const resumeStarted = performance.now();
    const result = await loopOf(total, second).resume('long');
    samples.push(performance.now() - resumeStarted);
    if (result.stopReason !== 'completed' || result.steps !== total)
      throw new Error(`resume ended ${result.stopReason} after ${result.steps} steps`);
    await second.close();
  }
  const resumeMs = median(samples);
  console.log(
    `| ${total} | ${runMs.toFixed(0)} | ${resumeMs.toFixed(1)} | ${((resumeMs / runMs) * 100).toFixed(2)}% |`,
  );
}
rmSync(scratch, { recursive: true, force: true });
process.exit(0);
