/**
 * The distributed mode's own unit: one `DBOS.runStep`, its output checkpointed in Postgres, timed one by
 * one in a workflow as `bench:dbos` does. In that mode each effect of a loop step is one DBOS step, inside
 * which it is journalled in `postgresStore` (the `loopstate + postgresStore` rows). Runs
 * after the rounds, in a throwaway database it drops again; `pg` and the DBOS SDK are the project's own
 * dependencies, loaded from the project root.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

/** Drops the Postgres schema the `loopstate + postgresStore` variant wrote its tables in. */
export async function dropSchema({ projectRoot, postgresUrl, schema }) {
  const pg = createRequire(path.join(projectRoot, 'package.json'))('pg');
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

export async function measureDbosStep({ projectRoot, postgresUrl, steps }) {
  const require = createRequire(path.join(projectRoot, 'package.json'));
  const pg = require('pg');
  const { DBOS } = require('@dbos-inc/dbos-sdk');
  const database = `loopstate_bench_dbos_${process.pid}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  const url = new URL(postgresUrl);
  url.pathname = `/${database}`;
  // A step's output the size of a loop step's model response (its `model` journal record holds the same).
  const output = {
    text: null,
    toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"key":"k1"}' }],
    usage: { inputTokens: 50, outputTokens: 10 },
  };
  const times = [];
  try {
    const workflow = DBOS.registerWorkflow(
      async (count) => {
        for (let index = 0; index < count; index++) {
          const started = performance.now();
          await DBOS.runStep(async () => ({ index, ...output }), { name: 'step' });
          times.push(performance.now() - started);
        }
        return count;
      },
      { name: 'checkpoint-bench' },
    );
    DBOS.setConfig({
      name: 'loopstate-checkpoint-bench',
      systemDatabaseUrl: url.toString(),
      logLevel: 'warn',
      applicationVersion: 'bench',
    });
    await DBOS.launch();
    try {
      await workflow(50);
      times.length = 0;
      const completed = await workflow(steps);
      if (completed !== steps || times.length !== steps)
        throw new Error(`DBOS workflow ran ${times.length} of ${steps} steps`);
    } finally {
      await DBOS.shutdown();
    }
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
  const sorted = [...times].sort((a, b) => a - b);
  return {
    steps,
    outputBytes: Buffer.byteLength(JSON.stringify({ index: 0, ...output })),
    p50Microseconds: percentile(sorted, 0.5) * 1000,
    p95Microseconds: percentile(sorted, 0.95) * 1000,
    meanMicroseconds: (times.reduce((total, time) => total + time, 0) / times.length) * 1000,
  };
}
