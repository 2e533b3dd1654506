/**
 * What the distributed mode costs: one `DBOS.runStep` (its output checkpointed in Postgres) and one
 * journal append of `postgresStore`, in µs, against the Postgres at LOOPSTATE_TEST_POSTGRES_URL.
 *
 *   LOOPSTATE_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run bench:dbos -- 2000
 */
import { performance } from 'node:perf_hooks';
import { DBOS } from '@dbos-inc/dbos-sdk';
import pg from 'pg';
import { postgresStore } from '../src/index.js';

const steps = Number(process.argv[2] ?? 2_000);
const serverUrl = process.env.LOOPSTATE_TEST_POSTGRES_URL;
if (serverUrl === undefined) throw new Error('set LOOPSTATE_TEST_POSTGRES_URL (bash .ci/postgres.sh start /tmp/pg prints one)');

const database = `loopstate_bench_${process.pid}`;
const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);
await admin.end();
const url = new URL(serverUrl);
url.pathname = `/${database}`;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
const report = (name: string, samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  console.log(`${name}: p50 ${(percentile(sorted, 0.5) * 1000).toFixed(0)} µs, p95 ${(percentile(sorted, 0.95) * 1000).toFixed(0)} µs, mean ${((samples.reduce((a, b) => a + b, 0) / samples.length) * 1000).toFixed(0)} µs (${samples.length} samples)`);
};

const stepTimes: number[] = [];
const workflow = DBOS.registerWorkflow(async (count: number) => {
  for (let index = 0; index < count; index++) {
    const started = performance.now();
    await DBOS.runStep(async () => ({ index, reply: 'x'.repeat(200) }), { name: 'step' });
    stepTimes.push(performance.now() - started);
  }
  return count;
}, { name: 'bench' });
DBOS.setConfig({ name: 'loopstate-bench', systemDatabaseUrl: url.toString(), logLevel: 'warn', applicationVersion: 'bench' });
await DBOS.launch();
await workflow(50); // warm-up
stepTimes.length = 0;
await workflow(steps);
report('DBOS.runStep', stepTimes);
await DBOS.shutdown();

const store = postgresStore({ connectionString: url.toString() });
const lease = { owner: 'bench', until: Date.now() + 3_600_000 };
await store.createRun('bench', '{}', lease);
const appendTimes: number[] = [];
const body = JSON.stringify({ schemaVersion: 1, kind: 'event', payload: 'x'.repeat(400) });
for (let seq = 1; seq <= steps; seq++) {
  const started = performance.now();
  await store.append('bench', [{ seq, kind: 'event', body }], lease);
  appendTimes.push(performance.now() - started);
}
report('postgresStore.append (one journal record)', appendTimes);
await store.close();
