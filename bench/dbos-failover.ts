/**
 * The distributed mode's latency, throughput and failover, with real worker processes
 * (dist/bench/dbos-bench-worker.js) on the Postgres at LOOPSTATE_TEST_POSTGRES_URL, enqueued and awaited
 * through `dbosClient` as a web server would:
 * - one 5-step run at a time on an idle worker (instant model): enqueue → first step, enqueue → result;
 * - throughput of 1 and 2 workers (4 runs each at once) on runs of 3 model calls of 200 ms;
 * - failover: a worker SIGKILLed while it drives runs (model calls of 300 ms), the time until each of
 *   its runs calls the model again on the survivor, with the survivor on the same host and on another
 *   (a UTS namespace of its own hostname: `unshare -u`, as root).
 *
 *   LOOPSTATE_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run bench:dbos-failover -- 40
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { DBOSClient } from '@dbos-inc/dbos-sdk';
import pg from 'pg';
import { dbosClient, DEFAULT_DBOS_WORKER } from 'loopstate/dbos';

const latencyRuns = Number(process.argv[2] ?? 40);
/** `--only latency|throughput|failover`: one part. */
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
const part = (name: string) => only === undefined || only === name;
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
console.log(`load average at start: ${load()}`);
const serverUrl = process.env.LOOPSTATE_TEST_POSTGRES_URL;
if (serverUrl === undefined)
  throw new Error('set LOOPSTATE_TEST_POSTGRES_URL (bash .ci/postgres.sh start /tmp/pg prints one)');
const workerScript = join(dirname(fileURLToPath(import.meta.url)), 'dbos-bench-worker.js');
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-bench-failover-'));

/** A fresh database for each part: no worker or queued run of one part is seen by the next. */
async function freshDatabase(name: string): Promise<string> {
  const database = `loopstate_bench_${name}_${process.pid}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
  const url = new URL(serverUrl!);
  url.pathname = `/${database}`;
  return url.toString();
}

const children: ChildProcess[] = [];
function startWorker(url: string, log: string, id: string, env: Record<string, string>, host?: string) {
  const args = [workerScript, url, log, id];
  const options = {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'] as ('ignore' | 'pipe' | 'inherit')[],
  };
  const child =
    host === undefined
      ? spawn(process.execPath, args, options)
      : spawn('unshare', ['-u', 'sh', '-c', `hostname ${host} && exec "$0" "$@"`, process.execPath, ...args], options);
  children.push(child);
  return new Promise<ChildProcess>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve(child);
    });
    child.on('exit', (code, signal) =>
      reject(new Error(`worker ${id} exited (${signal ?? code}) before it was ready`)),
    );
  });
}
/** CPU time a worker process used so far, in ms (user + system, from /proc). */
function cpuMs(child: ChildProcess): number {
  try {
    const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (100/s)
  } catch {
    return Number.NaN;
  }
}
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
const calls = (log: string) =>
  (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []).map((line) => {
    const [at, executor, runId, step] = line.split(' ');
    return { at: Number(at), executor: executor!, runId: runId!, step: Number(step) };
  });
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;
const ms = (value: number) => `${value.toFixed(0)} ms`;
const median = (values: number[]) => percentile(values, 0.5);
const cores = availableParallelism();
const goal = (runId: string, steps: number) => `Look everything up (steps=${steps} run=${runId})`;

// 1. Latency, one run at a time on an idle worker.
if (part('latency')) {
  const url = await freshDatabase('latency');
  const log = join(scratch, 'latency.log');
  const worker = await startWorker(url, log, 'latency', {});
  const client = await dbosClient({ systemDatabaseUrl: url, version: 'bench' });
  const steps = await DBOSClient.create({ systemDatabaseUrl: url });
  const toFirst: number[] = [];
  const toResult: number[] = [];
  const inside: number[] = [];
  for (let index = -5; index < latencyRuns; index++) {
    const runId = `latency-${index + 5}`;
    await new Promise((resolve) => setTimeout(resolve, 50)); // idle between runs, as one at a time is
    const epoch = Date.now();
    const started = performance.now();
    await client.enqueue({ goal: goal(runId, 5), runId });
    const result = await client.result(runId);
    const elapsed = performance.now() - started;
    if (result.stopReason !== 'completed' || result.steps !== 5)
      throw new Error(`run ${runId}: ${result.stopReason} after ${result.steps} steps (${result.detail})`);
    const recorded = (await steps.listWorkflowSteps(runId)) ?? [];
    if (index < 0) continue; // warm-up
    toFirst.push(Number(recorded[0]?.startedAtEpochMs ?? Number.NaN) - epoch);
    inside.push(Number(recorded.at(-1)?.completedAtEpochMs ?? Number.NaN) - Number(recorded[0]?.startedAtEpochMs));
    toResult.push(elapsed);
  }
  console.log(
    `one 5-step run at a time (instant model), ${latencyRuns} runs: enqueue → first step p50 ${ms(percentile(toFirst, 0.5))}, p95 ${ms(percentile(toFirst, 0.95))}; enqueue → result p50 ${ms(percentile(toResult, 0.5))}, p95 ${ms(percentile(toResult, 0.95))} (queue polled every ${DEFAULT_DBOS_WORKER.queuePollingIntervalMs} ms, results every ${DEFAULT_DBOS_WORKER.pollingIntervalMs} ms)`,
  );
  console.log(
    `  of which inside the workflow (first step's start to last step's end, 10 effects): p50 ${ms(percentile(inside, 0.5))}; worker CPU ${(cpuMs(worker) / (latencyRuns + 5)).toFixed(1)} ms a run (idle polling included)`,
  );
  await client.close();
  await steps.destroy();
  await stop(worker);
}

// 2. Throughput of 1 and 2 workers, I/O-bound: every model call takes 200 ms.
if (part('throughput')) {
  const runsPerRound = 24;
  const seconds: Record<1 | 2, number[]> = { 1: [], 2: [] };
  const cpuPerRun: number[] = [];
  for (let round = 0; round < 2; round++) {
    for (const count of round % 2 === 0 ? ([1, 2] as const) : ([2, 1] as const)) {
      const url = await freshDatabase(`throughput_${count}_${round}`);
      const log = join(scratch, `throughput-${count}-${round}.log`);
      const env = { MODEL_DELAY_MS: '200' };
      const workers = await Promise.all(
        Array.from({ length: count }, (_, index) => startWorker(url, log, `tp-${index}`, env)),
      );
      const client = await dbosClient({ systemDatabaseUrl: url, version: 'bench' });
      const ids = Array.from({ length: runsPerRound }, (_, index) => `tp-${index}`);
      const cpuBefore = workers.reduce((sum, worker) => sum + cpuMs(worker), 0);
      const started = performance.now();
      await Promise.all(ids.map((runId) => client.enqueue({ goal: goal(runId, 3), runId })));
      const results = await Promise.all(ids.map((runId) => client.result(runId)));
      seconds[count].push((performance.now() - started) / 1000);
      cpuPerRun.push((workers.reduce((sum, worker) => sum + cpuMs(worker), 0) - cpuBefore) / runsPerRound);
      for (const result of results)
        if (result.stopReason !== 'completed') throw new Error(`${result.runId}: ${result.stopReason}`);
      await client.close();
      await Promise.all(workers.map(stop));
    }
  }
  const best = (count: 1 | 2) => Math.min(...seconds[count]);
  console.log(
    `throughput, ${runsPerRound} runs of 3 model calls of 200 ms, workerConcurrency 4: 1 worker ${(runsPerRound / best(1)).toFixed(2)} runs/s, 2 workers ${(runsPerRound / best(2)).toFixed(2)} runs/s: ${(best(1) / best(2)).toFixed(2)}× (best of 2 rounds each, alternating); the workers' CPU: ${median(cpuPerRun).toFixed(0)} ms a run, so ${cores} cores at most ${((cores * 1000) / median(cpuPerRun)).toFixed(1)} runs/s`,
  );
}

// 3. Failover: the victim SIGKILLed while it drives runs; when do they call the model again elsewhere?
for (const where of part('failover') ? (['same host', 'another host'] as const) : []) {
  const samples: number[] = [];
  for (let round = 0; round < 3; round++) {
    const url = await freshDatabase(`failover_${where === 'same host' ? 'here' : 'there'}_${round}`);
    const log = join(scratch, `failover-${where.replace(' ', '-')}-${round}.log`);
    const env = { MODEL_DELAY_MS: '300', WORKER_CONCURRENCY: '2' };
    const survivor = await startWorker(url, log, 'survivor', env);
    const victim = await startWorker(
      url,
      log,
      'victim',
      env,
      where === 'another host' ? 'loopstate-bench-other' : undefined,
    );
    const client = await dbosClient({ systemDatabaseUrl: url, version: 'bench' });
    const ids = Array.from({ length: 4 }, (_, index) => `fo-${index}`);
    await Promise.all(ids.map((runId) => client.enqueue({ goal: goal(runId, 12), runId })));
    while (!calls(log).some((call) => call.executor === 'victim' && call.step >= 1))
      await new Promise((resolve) => setTimeout(resolve, 10));
    victim.kill('SIGKILL');
    const killedAt = Date.now();
    const held = [
      ...new Set(
        calls(log)
          .filter((call) => call.executor === 'victim')
          .map((call) => call.runId),
      ),
    ];
    const results = await Promise.all(ids.map((runId) => client.result(runId)));
    for (const result of results)
      if (result.stopReason !== 'completed') throw new Error(`${result.runId}: ${result.stopReason}`);
    for (const runId of held) {
      const again = calls(log).find(
        (call) => call.runId === runId && call.executor === 'survivor' && call.at >= killedAt,
      );
      if (again !== undefined) samples.push(again.at - killedAt);
    }
    await client.close();
    await stop(survivor);
  }
  console.log(
    `failover, ${where}: a killed worker's run calls the model again on the survivor after p50 ${ms(percentile(samples, 0.5))}, max ${ms(Math.max(...samples))} (${samples.length} runs over 3 kills; heartbeat ${DEFAULT_DBOS_WORKER.heartbeatMs} ms, dead after ${DEFAULT_DBOS_WORKER.deadAfterMs} ms)`,
  );
}

await Promise.all(children.map(stop));
if (process.env.BENCH_KEEP === undefined) rmSync(scratch, { recursive: true, force: true });
else console.log(`logs kept in ${scratch}`);
console.log(`load average at end: ${load()}`);
