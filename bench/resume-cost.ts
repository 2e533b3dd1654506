/**
 * What resuming a long durable run costs: a run of S steps on SQLite is left hanging at its last model
 * call (as if its process had died there), its lease is freed, and a fresh loop on a fresh connection to
 * the same file resumes it to the end. Reported: the time of the original run per step, the time to
 * resume (rebuilding the run from its latest snapshot and the journal after it, then the one last call),
 * of which the time until that call is made (the rebuild itself: what a resume costs before its next
 * effect), the file's size and the load average. Prints one JSON line (for the suite) after a readable summary.
 *
 *   npm run bench:resume              # S = 10,000, the in-memory trace off
 *   npm run bench:resume -- 2000
 *   npm run bench:resume -- 2000 --trace   # the in-memory trace on (the default of a loop)
 *   npm run bench:resume -- 2000 --ceiling 4000   # a bounded next request: context.maxInputTokensPerCall, trim
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { createLoop, defineTool, type Model } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';

const args = process.argv.slice(2);
const traceInMemory = args.includes('--trace');
const ceilingAt = args.indexOf('--ceiling');
const ceiling = ceilingAt === -1 ? undefined : Number(args[ceilingAt + 1]);
if (ceiling !== undefined && !(Number.isInteger(ceiling) && ceiling > 0))
  throw new Error(`--ceiling: expected a positive whole number of tokens, got ${String(args[ceilingAt + 1])}`);
// The first argument that is neither a flag nor the ceiling's value (index 0 is a step count when there is no --ceiling).
const steps = Number(
  args.find((arg, at) => !arg.startsWith('--') && (ceilingAt === -1 || at !== ceilingAt + 1)) ?? 10_000,
);
const loadAtStart = loadavg()[0]!;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-resume-bench-'));
const path = join(scratch, 'runs.db');

/** Step `hangAt` never answers in the first process (and says so); every other call is instant. */
function model(
  hangAt: number | null,
  startAt = 0,
  onHang: () => void = () => undefined,
  onCall: () => void = () => undefined,
): Model {
  let call = startAt;
  return {
    id: 'scripted',
    generate() {
      onCall();
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
  trace: { inMemory: traceInMemory },
  // A bounded next request: the transcript is trimmed to the ceiling (a chunk then replaces it whole).
  ...(ceiling === undefined ? {} : { context: { maxInputTokensPerCall: ceiling, strategy: 'trim' as const } }),
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
let firstCallAt: number | null = null;
const resumeStarted = performance.now();
const result = await createLoop({
  model: model(null, steps - 1, undefined, () => (firstCallAt ??= performance.now())),
  store: second,
  ...options,
}).resume('long');
const resumeMs = performance.now() - resumeStarted;
const toEffectMs = (firstCallAt ?? NaN) - resumeStarted;
if (result.stopReason !== 'completed' || result.steps !== steps)
  throw new Error(`resume ended ${result.stopReason} after ${result.steps} steps: ${result.detail}`);
// With a ceiling the transcript must have been trimmed (else the figure is the unbounded one under another name).
if (ceiling !== undefined && result.messages.length >= 2 * steps)
  throw new Error(`the context ceiling trimmed nothing: ${result.messages.length} messages after ${steps} steps`);
await second.close();

const load = [loadAtStart, loadavg()[0]!];
console.log(
  `S = ${steps.toLocaleString('en-US')}, trace ${traceInMemory ? 'in memory' : 'off'}, context ceiling ${ceiling === undefined ? 'none' : `${ceiling} tokens (trim)`}: run ${(runMs / 1000).toFixed(1)} s (${((runMs * 1000) / steps).toFixed(0)} µs/step on SQLite), resume ${resumeMs.toFixed(0)} ms (${((100 * resumeMs) / runMs).toFixed(2)}% of the run), of which ${toEffectMs.toFixed(0)} ms before its next model call; ${result.messages.length} messages at the end; file ${(fileBytes / 2 ** 20).toFixed(1)} MiB; load average ${load.map((value) => value.toFixed(1)).join(' → ')}`,
);
console.log(
  JSON.stringify({ steps, traceInMemory, ceiling: ceiling ?? null, runMs, resumeMs, toEffectMs, fileBytes, load }),
);
rmSync(scratch, { recursive: true, force: true });
process.exit(0);
