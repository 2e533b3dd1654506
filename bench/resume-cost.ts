/**
 * What resuming a long durable run costs: a run of S steps on SQLite is left hanging at its last model
 * call (as if its process had died there), its lease is freed, and a fresh loop on a fresh connection to
 * the same file resumes it to the end. Reported: the time of the original run per step, the time to
 * resume (rebuilding the run from its latest snapshot and the journal after it, then the one last call),
 * and the file's size. Prints one JSON line (for the suite) after a readable summary.
 *
 *   npm run bench:resume              # S = 10,000
 *   npm run bench:resume -- 2000
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { createLoop, defineTool, type Model } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';

const steps = Number(process.argv[2] ?? 10_000);
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-resume-bench-'));
const path = join(scratch, 'runs.db');

/** Step `hangAt` never answers in the first process (and says so); every other call is instant. */
function model(hangAt: number | null, startAt = 0, onHang: () => void = () => undefined): Model {
  let call = startAt;
  return {
    id: 'scripted',
    generate() {
      call += 1;
      const usage = { inputTokens: 50, outputTokens: 10 };
      if (call === hangAt) {
        onHang();
        return new Promise(() => undefined);
      }
      if (call < steps)
        return Promise.resolve({
          text: null,
          toolCalls: [{ id: `c${call}`, name: 'lookup', arguments: `{"key":"k${call}"}` }],
          usage,
        });
      return Promise.resolve({ text: '{"done":true}', toolCalls: [], usage });
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
const options = {
  tools: [lookup],
  limits: {
    maxSteps: steps + 1,
    maxToolCalls: steps,
    deadlineMs: Infinity,
    maxInputTokens: Infinity,
    maxOutputTokens: Infinity,
    maxCostUsd: Infinity,
  },
  noProgress: { unchangedState: 1_000_000 },
  trace: { inMemory: false },
} as const;

let reached: () => void = () => undefined;
const hanging = new Promise<void>((resolve) => (reached = resolve));
const first = sqliteStore({ path });
const started = performance.now();
const firstRun = createLoop({ model: model(steps, 0, () => reached()), store: first, ...options }).run({
  goal: 'go',
  runId: 'long',
});
// A run that ends before its last call (a budget, say) would leave nothing to resume: say why instead of waiting.
const ended = await Promise.race([hanging.then(() => null), firstRun]);
if (ended !== null) throw new Error(`the first run ended (${ended.stopReason}: ${ended.detail}) before its last call`);
const runMs = performance.now() - started;
const row = await first.readRun('long');
if (row?.leaseOwner) await first.releaseLease('long', row.leaseOwner);
const fileBytes = statSync(path).size;

// A fresh loop on a fresh connection, as a new process would have; it answers only the last call.
const second = sqliteStore({ path });
const resumeStarted = performance.now();
const result = await createLoop({ model: model(null, steps - 1), store: second, ...options }).resume('long');
const resumeMs = performance.now() - resumeStarted;
if (result.stopReason !== 'completed' || result.steps !== steps)
  throw new Error(`resume ended ${result.stopReason} after ${result.steps} steps: ${result.detail}`);
await second.close();

console.log(
  `S = ${steps.toLocaleString('en-US')}: run ${(runMs / 1000).toFixed(1)} s (${((runMs * 1000) / steps).toFixed(0)} µs/step on SQLite), resume ${resumeMs.toFixed(0)} ms, file ${(fileBytes / 2 ** 20).toFixed(1)} MiB`,
);
console.log(JSON.stringify({ steps, runMs, resumeMs, fileBytes }));
rmSync(scratch, { recursive: true, force: true });
process.exit(0);
