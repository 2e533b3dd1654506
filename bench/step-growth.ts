/**
 * Whether a step's cost grows with the run's history: µs per step at several S (one tool call per step,
 * an instant model that reads only the last message, limits raised so nothing stops the run, context
 * limits as the defaults), with no store, `memoryStore` and `sqliteStore`. Flat means a long run is
 * O(n); a rising column means something in the engine works over the whole history on every step.
 * Each S runs `rounds` times (the first is a warm-up) and the median is reported, with the load average.
 *
 *   npm run build && node dist/bench/step-growth.js                  # S = 100, 1,000, 10,000; 3 rounds
 *   node dist/bench/step-growth.js 100,1000,5000,10000 2 none,memory 0  # S list, rounds, stores, warm-ups
 *   node dist/bench/step-growth.js 1000,10000 1 none 1 16000           # a 16k-token context window: trims every step
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type Message, type Model, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';

const lengths = (process.argv[2] ?? '100,1000,10000').split(',').map(Number);
const rounds = Number(process.argv[3] ?? 3);
const storeNames = (process.argv[4] ?? 'none,memory,sqlite').split(',');
const warmUps = Number(process.argv[5] ?? 1);
// The model's context window (so the default ceiling is reached and trimming runs every step); none by default.
const contextWindowTokens = process.argv[6] === undefined ? undefined : Number(process.argv[6]);
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-growth-bench-'));
const USAGE = Object.freeze({ inputTokens: 50, outputTokens: 10 });
const KEY_PATTERN = /value of k(\d+)/;

/** Reads only the last message, so the model itself costs the same at every step. */
function model(total: number): Model {
  return {
    id: 'bench-instant',
    ...(contextWindowTokens === undefined ? {} : { contextWindowTokens }),
    generate(request) {
      const last: Message | undefined = request.messages[request.messages.length - 1];
      const match = typeof last?.content === 'string' ? KEY_PATTERN.exec(last.content) : null;
      const step = (match ? Number(match[1]) : 0) + 1;
      if (step < total)
        return Promise.resolve({
          text: null,
          toolCalls: [{ id: `c${step}`, name: 'lookup', arguments: `{"key":"k${step}"}` }],
          usage: USAGE,
        });
      return Promise.resolve({ text: '{"done":true}', toolCalls: [], usage: USAGE });
    },
  };
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up.',
  input: z.object({ key: z.string() }),
  access: 'read',
  execute: ({ key }) => `value of ${key}`,
});

let made = 0;
const stores: Record<string, () => Store | undefined> = {
  none: () => undefined,
  memory: () => memoryStore(),
  sqlite: () => sqliteStore({ path: join(scratch, `g${made++}.db`) }),
};

async function once(total: number, storeName: string): Promise<number> {
  const store = stores[storeName]!();
  const loop = createLoop({
    model: model(total),
    tools: [lookup],
    limits: {
      maxSteps: total + 1,
      maxToolCalls: total,
      deadlineMs: Infinity,
      maxInputTokens: Infinity,
      maxOutputTokens: Infinity,
      maxCostUsd: Infinity,
    },
    ...(store ? { store } : {}),
  });
  const started = performance.now();
  const result = await loop.run({ goal: 'go', runId: `growth-${made++}` });
  const elapsed = performance.now() - started;
  await store?.close();
  if (result.stopReason !== 'completed')
    throw new Error(`S = ${total}, ${storeName}: ${result.stopReason} ${result.detail}`);
  return (elapsed * 1_000) / total;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const loadBefore = loadavg()[0]!;
const table: Record<string, number[]> = {};
for (const storeName of storeNames) {
  table[storeName] = [];
  for (const total of lengths) {
    const samples: number[] = [];
    for (let round = -warmUps; round < rounds; round++) {
      const micros = await once(total, storeName);
      if (round >= 0) samples.push(micros);
    }
    table[storeName].push(median(samples));
  }
}
rmSync(scratch, { recursive: true, force: true });
console.log(
  `${rounds} rounds per cell (median), context window ${contextWindowTokens ?? 'none'}, load average ${loadBefore.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}`,
);
console.log(`| store | ${lengths.map((total) => `µs/step at S = ${total}`).join(' | ')} | last ÷ first |`);
console.log(`|---|${lengths.map(() => '---:').join('|')}|---:|`);
for (const storeName of storeNames) {
  const row = table[storeName]!;
  console.log(
    `| ${storeName} | ${row.map((micros) => micros.toFixed(0)).join(' | ')} | ${(row[row.length - 1]! / row[0]!).toFixed(2)}× |`,
  );
}
