/**
 * A worker process of `bench/dbos-failover.ts`: drives the bench loop (a model call that asks for a
 * lookup until the run has its steps, each call taking MODEL_DELAY_MS) and writes one line per model
 * call to the log: `<epoch ms> <executor id> <run id> <step>`. Prints `ready`; SIGTERM shuts it down.
 *
 *   node dist/bench/dbos-bench-worker.js <postgres url> <log> <executor id>
 */
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import { createLoop, defineTool, type Model } from 'loopstate';
import { dbosWorker } from 'loopstate/dbos';
import { postgresStore } from 'loopstate/postgres';

const [url, log, executorId] = process.argv.slice(2) as [string, string, string];
const delayMs = Number(process.env.MODEL_DELAY_MS ?? 0);
const store = postgresStore({ connectionString: url });
const model: Model = {
  id: 'bench-script',
  generate: async ({ messages }) => {
    const step = messages.filter((message) => message.role === 'assistant').length;
    const goal = String(messages.find((message) => message.role === 'user')?.content ?? '');
    const wanted = Number(/steps=(\d+)/.exec(goal)?.[1] ?? 1);
    const runId = /run=(\S+)/.exec(goal)?.[1] ?? '?';
    appendFileSync(log, `${Date.now()} ${executorId} ${runId} ${step}\n`);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    const usage = { inputTokens: 100, outputTokens: 10 };
    if (step >= wanted - 1) return { text: 'done', toolCalls: [], usage };
    return {
      text: null,
      toolCalls: [{ id: `c${step}`, name: 'lookup', arguments: JSON.stringify({ n: step }) }],
      usage,
    };
  },
};
const lookup = defineTool({
  name: 'lookup',
  description: 'Look up',
  input: z.object({ n: z.number() }),
  access: 'read',
  idempotent: true,
  execute: async ({ n }) => ({ n, found: true }),
});
const loop = createLoop({
  model,
  tools: [lookup],
  store,
  limits: { maxSteps: 1_000 },
  noProgress: { unchangedState: 1_000 },
});
const worker = await dbosWorker({
  loop,
  store,
  systemDatabaseUrl: url,
  executorId,
  version: 'bench',
  workerConcurrency: Number(process.env.WORKER_CONCURRENCY ?? 4),
});
process.stdout.write('ready\n');
process.on('SIGTERM', () => {
  void worker
    .shutdown()
    .then(() => store.close())
    .then(() => process.exit(0));
});
