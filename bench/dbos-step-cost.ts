/**
 * What the distributed mode costs, against the Postgres at LOOPSTATE_TEST_POSTGRES_URL:
 * - one bare `DBOS.runStep` (its output checkpointed in Postgres) and one journal append of
 *   `postgresStore`, in µs;
 * - a loop step (a model call and a tool round, each one effect) driven embedded on `postgresStore`
 *   beside the same loop driven by an in-process `dbosWorker` (effects journalled, not checkpointed):
 *   the difference is what DBOS adds per loop step. Beside them, the designs weighed against it, in a
 *   DBOS workflow of the bench's own: each effect a DBOS step (the design before), and one DBOS step a
 *   loop step (around the model call). Runs alternate between the modes, to cancel drift.
 *
 *   LOOPSTATE_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run bench:dbos -- 2000 40
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { DBOS } from '@dbos-inc/dbos-sdk';
import pg from 'pg';
import { z } from 'zod';
import { createLoop, defineTool, type Model, type Store } from 'loopstate';
import { dbosWorker } from 'loopstate/dbos';
import { postgresStore } from 'loopstate/postgres';
import { validateRunInput } from '../src/engine/config/config.js';
import { durableRunsOf } from '../src/engine/loop.js';

const steps = Number(process.argv[2] ?? 2_000);
const loopSteps = Number(process.argv[3] ?? 40);
console.log(
  `load average at start: ${loadavg()
    .map((load) => load.toFixed(2))
    .join(' ')}`,
);
const serverUrl = process.env.LOOPSTATE_TEST_POSTGRES_URL;
if (serverUrl === undefined)
  throw new Error('set LOOPSTATE_TEST_POSTGRES_URL (bash .ci/postgres.sh start /tmp/pg prints one)');

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
  console.log(
    `${name}: p50 ${(percentile(sorted, 0.5) * 1000).toFixed(0)} µs, p95 ${(percentile(sorted, 0.95) * 1000).toFixed(0)} µs, mean ${((samples.reduce((a, b) => a + b, 0) / samples.length) * 1000).toFixed(0)} µs (${samples.length} samples)`,
  );
};

const stepTimes: number[] = [];
const workflow = DBOS.registerWorkflow(
  async (count: number) => {
    for (let index = 0; index < count; index++) {
      const started = performance.now();
      await DBOS.runStep(async () => ({ index, reply: 'x'.repeat(200) }), { name: 'step' });
      stepTimes.push(performance.now() - started);
    }
    return count;
  },
  { name: 'bench' },
);
DBOS.setConfig({
  name: 'loopstate-bench',
  systemDatabaseUrl: url.toString(),
  logLevel: 'warn',
  applicationVersion: 'bench',
});
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

// A loop step: a model call asking for a lookup, then the lookup; the last call answers.
function benchLoop(store: Store) {
  const model: Model = {
    id: 'bench-script',
    generate: async ({ messages }) => {
      const step = messages.filter((message) => message.role === 'assistant').length;
      const wanted = Number(/steps=(\d+)/.exec(String(messages[0]?.content ?? messages[1]?.content))?.[1] ?? 0);
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
  return createLoop({
    model,
    tools: [lookup],
    store,
    limits: { maxSteps: loopSteps * 4 + 5 },
    noProgress: { unchangedState: 1_000 },
  });
}

// Two run lengths: the slope between them is the cost per loop step, the rest a run's fixed cost
// (DBOS's queue and result polling are per run, not per step).
const lengths = [loopSteps, loopSteps * 4] as const;
const loopStore = postgresStore({ connectionString: url.toString() });
const embedded = benchLoop(loopStore);
// The designs weighed: DBOS checkpoints around each effect, or around each model call (one a loop step).
type Stepped = 'effect-steps' | 'model-steps';
const steppedRuns = durableRunsOf(benchLoop(loopStore))!;
const steppedMs: number[] = [];
const stepped = DBOS.registerWorkflow(
  async (runId: string, goal: string, every: Stepped) => {
    const started = performance.now();
    const result = await steppedRuns.run(validateRunInput({ goal, runId }), {
      effectStep: (kind, perform) =>
        every === 'effect-steps' || kind === 'callModel'
          ? DBOS.runStep(perform, { name: `effect:${kind}` })
          : perform(),
    });
    steppedMs.push(performance.now() - started);
    return { stopReason: result.stopReason, steps: result.steps, detail: result.detail };
  },
  { name: 'bench-stepped' },
);
const worker = await dbosWorker({
  loop: benchLoop(loopStore),
  store: loopStore,
  systemDatabaseUrl: url.toString(),
  executorId: 'bench',
  version: 'bench',
  stepsPerWorkflow: 10_000,
  // `worker.result` polls the run's status while it runs: every 20 ms by default, a query each time on
  // the same two cores. That costs per second waited, not per step, and is measured apart (the time
  // outside the workflow here, enqueue → result in bench:dbos-failover); polled every 20 ms it would
  // show up in the slope as a cost per step.
  pollingIntervalMs: 500,
});
// Embedded, with the worker's gate before each effect: the journal then commits each effect's outcome
// at once (so a handoff at the gate leaves nothing uncommitted), the one thing the worker's journal does
// differently from the embedded mode's.
const gatedRuns = durableRunsOf(embedded)!;
type Mode = 'embedded' | 'embedded-gated' | 'dbos' | Stepped;
const modes: Mode[] = ['embedded', 'embedded-gated', 'dbos', 'effect-steps', 'model-steps'];
const runMs: Record<`${Mode}:${number}`, number[]> = {};
const waitMs: Record<number, number[]> = {};
const rounds = 6;
for (let round = -1; round < rounds; round++) {
  for (const length of lengths) {
    // A different order each round: no mode always follows another.
    const order = modes.map((_, index) => modes[(index + round + 1) % modes.length]!);
    for (const mode of round % 2 === 0 ? order : order.reverse()) {
      const runId = `loop-${mode}-${length}-${round}`;
      const goal = `Look everything up (steps=${length})`;
      const started = performance.now();
      let result: { stopReason: string; steps: number; detail?: string | null };
      if (mode === 'embedded') result = await embedded.run({ goal, runId });
      else if (mode === 'embedded-gated')
        result = await gatedRuns.run(validateRunInput({ goal, runId }), { effectStep: (_kind, perform) => perform() });
      else if (mode === 'dbos') result = await worker.enqueue({ goal, runId }).then(() => worker.result(runId));
      else
        result = await DBOS.startWorkflow(stepped, { workflowID: runId })(runId, goal, mode).then((handle) =>
          handle.getResult(),
        );
      let elapsed = performance.now() - started;
      if (mode === 'dbos') {
        // Inside the workflow, from its first step's start to its last step's end: the queue's and the
        // result's polling (a second or so, whatever the run's length) are the rest, reported apart.
        const recorded = (await DBOS.listWorkflowSteps(runId)) ?? [];
        const inside = Number(recorded.at(-1)?.completedAtEpochMs ?? 0) - Number(recorded[0]?.startedAtEpochMs ?? 0);
        if (round >= 0) (waitMs[length] ??= []).push(elapsed - inside);
        elapsed = inside;
      } else if (mode === 'effect-steps' || mode === 'model-steps') elapsed = steppedMs.at(-1)!;
      if (result.stopReason !== 'completed' || result.steps !== length)
        throw new Error(
          `${mode} run ${runId} did not do the work: ${result.stopReason} after ${result.steps} steps (${result.detail})`,
        );
      if (round >= 0) (runMs[`${mode}:${length}`] ??= []).push(elapsed);
    }
  }
}
// The checkpoints each design wrote for one run: the worker's are a constant few, whatever the run's length.
const checkpoints = async (runId: string) => ((await DBOS.listWorkflowSteps(runId)) ?? []).length;
const written = {
  dbos: await checkpoints(`loop-dbos-${loopSteps}-0`),
  'effect-steps': await checkpoints(`loop-effect-steps-${loopSteps}-0`),
  'model-steps': await checkpoints(`loop-model-steps-${loopSteps}-0`),
};
if (written.dbos > 3 || written['effect-steps'] !== loopSteps * 2 || written['model-steps'] !== loopSteps)
  throw new Error(`unexpected DBOS checkpoints for runs of ${loopSteps} steps: ${JSON.stringify(written)}`);
console.log(`DBOS checkpoints for one run of ${loopSteps} steps: ${JSON.stringify(written)}`);
await worker.shutdown();
await loopStore.close();
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const fit = (mode: Mode) => {
  const [short, long] = lengths.map((length) => median(runMs[`${mode}:${length}`]!));
  const perStepMs = (long! - short!) / (lengths[1] - lengths[0]);
  return { perStepMs, perRunMs: short! - perStepMs * lengths[0] };
};
const plain = fit('embedded');
console.log(
  `loop steps (a model call and a tool round each: two effects), runs of ${lengths.join(' and ')} steps, ${rounds} runs each, medians, fitted:`,
);
console.log(
  `  embedded on postgresStore: ${(plain.perStepMs * 1000).toFixed(0)} µs/step, ${plain.perRunMs.toFixed(1)} ms/run`,
);
const described: Record<Exclude<Mode, 'embedded'>, string> = {
  'embedded-gated': 'embedded, each effect committed at once (as under the worker)',
  dbos: 'dbosWorker (effects journalled, a leg checkpointed at entry and end), inside the workflow',
  'effect-steps': 'each effect a DBOS step (the design before)',
  'model-steps': 'one DBOS step a loop step (around the model call)',
};
for (const mode of ['embedded-gated', 'dbos', 'effect-steps', 'model-steps'] as const) {
  const cost = fit(mode);
  console.log(
    `  ${described[mode]}: ${(cost.perStepMs * 1000).toFixed(0)} µs/step, ${cost.perRunMs.toFixed(1)} ms/run; adds ${((cost.perStepMs - plain.perStepMs) * 1000).toFixed(0)} µs/step (${(cost.perStepMs / plain.perStepMs).toFixed(2)}×)`,
  );
}
console.log(
  `  plus, outside the workflow (enqueue → dequeue, result polled every 500 ms), median: ${lengths.map((length) => `${median(waitMs[length]!).toFixed(0)} ms at ${length} steps`).join(', ')}`,
);
console.log(
  `load average at end: ${loadavg()
    .map((load) => load.toFixed(2))
    .join(' ')}`,
);
