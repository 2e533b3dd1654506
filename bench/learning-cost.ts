/**
 * What learning across runs costs a durable run, side by side in one process on one SQLite file each: runs
 * of S = 10 steps (9 `lookup` calls, then an answer) with `sqliteStore` and no learning, with `learning: {}`
 * (batches of 20 outcomes: one merge at the end of each run), and with `batchWindow: { outcomes: 1 }` (a
 * merge after every step, the worst case). Rounds are interleaved and the order rotates; figures are
 * medians of µs per run, and the ratios to the run without learning.
 *
 *   npm run build && node dist/bench/learning-cost.js          # 7 rounds of 200 runs
 *   node dist/bench/learning-cost.js 3 100                     # rounds, runs per round
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { createLoop, defineTool, type LoopConfig, type Model } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';

const rounds = Number(process.argv[2] ?? 7);
const runsPerRound = Number(process.argv[3] ?? 200);
const STEPS = 10;
const USAGE = Object.freeze({ inputTokens: 50, outputTokens: 10 });

/** Asks for the next key after the last tool result's, then answers. */
const model: Model = {
  id: 'bench-model',
  async generate(request) {
    const last = request.messages[request.messages.length - 1];
    const match = last?.role === 'tool' ? /value of k(\d+)/.exec(last.content) : null;
    const step = (match ? Number(match[1]) : 0) + 1;
    return step < STEPS
      ? {
          text: null,
          toolCalls: [{ id: `call_${step}`, name: 'lookup', arguments: `{"key":"k${step}"}` }],
          usage: USAGE,
        }
      : { text: 'done', toolCalls: [], usage: USAGE };
  },
};
const lookup = defineTool({
  name: 'lookup',
  description: 'Looks up a key.',
  input: z.object({ key: z.string() }),
  access: 'read',
  execute: ({ key }) => `value of ${key}`,
});

const folder = mkdtempSync(join(tmpdir(), 'loopstate-learning-cost-'));
const variants: { name: string; learning: LoopConfig['learning'] }[] = [
  { name: 'sqliteStore, no learning', learning: undefined },
  { name: 'sqliteStore, learning: {}', learning: {} },
  { name: 'sqliteStore, learning every outcome', learning: { batchWindow: { outcomes: 1 } } },
];
const loops = variants.map((variant, index) =>
  createLoop({
    model,
    tools: [lookup],
    name: `bench-${index}`,
    store: sqliteStore({ path: join(folder, `${index}.db`) }),
    trace: false,
    ...(variant.learning === undefined ? {} : { learning: variant.learning }),
  }),
);
const samples: number[][] = variants.map(() => []);
let runCounter = 0;
for (let round = 0; round < rounds + 1; round++) {
  for (let offset = 0; offset < variants.length; offset++) {
    const index = (round + offset) % variants.length;
    const loop = loops[index]!;
    const started = performance.now();
    for (let run = 0; run < runsPerRound; run++) {
      const result = await loop.run({ goal: 'go', runId: `r${++runCounter}` });
      if (result.stopReason !== 'completed') throw new Error(`run stopped: ${result.stopReason}`);
    }
    // Round 0 warms up.
    if (round > 0) samples[index]!.push(((performance.now() - started) * 1_000) / runsPerRound);
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const base = median(samples[0]!);
console.log(
  `learning cost: ${rounds} rounds of ${runsPerRound} runs, S = ${STEPS}; load average ${loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')}`,
);
for (const [index, variant] of variants.entries()) {
  const value = median(samples[index]!);
  console.log(`${variant.name.padEnd(40)} ${value.toFixed(0).padStart(7)} µs/run  ×${(value / base).toFixed(2)}`);
}
rmSync(folder, { recursive: true, force: true });
