/**
 * What a resume costs on its own, many times over the same stored run (issue 18 target 3: ≤ 2% of the run's
 * own time at 1,000 steps). A run of S steps on SQLite is left hanging at its last model call and its lease
 * freed; the file is kept as a template. Each resume then gets a fresh copy of it (copied outside the timing)
 * and resumes the run to its end:
 *
 * - warm, fresh store: a new `sqliteStore` on the copy (as the CLI, or a process that opens a store per
 *   run), timed from `sqliteStore()` to the next model call and to the end;
 * - warm, open store: the store opened (and its first read made) before the timing, as a long-lived service
 *   keeps its store open;
 * - cold (`--cold`): one child process per resume, timed inside it from just after the imports.
 *
 * Reported: medians (wall and this process's CPU), the run's own time at S, the ratio, the load average.
 * The script imports `loopstate` by name, so the same file built in another checkout measures that checkout:
 * run two builds alternately to compare them.
 *
 *   node dist/bench/resume-fixed-cost.js 100,1000,10000 20          # warm, trace in memory (the default)
 *   LOOPSTATE_BENCH_TRACE=off node dist/bench/resume-fixed-cost.js 1000 20
 *   node dist/bench/resume-fixed-cost.js 1000 10 --cold
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { createLoop, defineTool, type Message, type Model, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';

const args = process.argv.slice(2);
const trace = process.env.LOOPSTATE_BENCH_TRACE !== 'off';

/** Which call this is, from the last assistant message's call id (`c<n>`): the model keeps no count, so a resumed run can use it. */
function callNumber(messages: readonly Message[]): number {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message?.role !== 'assistant') continue;
    const id = message.toolCalls?.[0]?.id;
    if (id === undefined || !/^c\d+$/.test(id)) throw new Error(`unexpected assistant message in the bench: ${id}`);
    return Number(id.slice(1)) + 1;
  }
  return 1;
}

/** Instant replies: a tool call on each of the first S − 1, then the answer; `hangAt` never answers. */
function model(total: number, hangAt: number | null, onCall: () => void): Model {
  return {
    id: 'scripted',
    generate(request) {
      const call = callNumber(request.messages);
      onCall();
      const usage = { inputTokens: 50, outputTokens: 10 };
      if (call === hangAt) return new Promise(() => undefined);
      if (call < total)
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
  execute: ({ key }) => `value ${key}`,
});

const loopOf = (total: number, store: Store, hangAt: number | null, onCall: () => void = () => undefined) =>
  createLoop({
    model: model(total, hangAt, onCall),
    tools: [lookup],
    limits: {
      maxSteps: total + 1,
      maxToolCalls: total,
      deadlineMs: Infinity,
      maxInputTokens: Infinity,
      maxOutputTokens: Infinity,
      maxCostUsd: Infinity,
    },
    noProgress: { unchangedState: 1_000_000 },
    ...(trace ? {} : { trace: { inMemory: false } }),
    store,
  });

/** One resume of the run in `path` to its end: ms from `started` (or from the store's opening) to the next model call and to the end. */
async function resumeOnce(
  path: string,
  total: number,
  openFirst: boolean,
): Promise<{ toCall: number; toEnd: number; cpu: number }> {
  let store: Store | undefined;
  if (openFirst) {
    store = sqliteStore({ path });
    await store.readRun('nothing');
  }
  let calledAt = NaN;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  store ??= sqliteStore({ path });
  const result = await loopOf(
    total,
    store,
    null,
    () => (calledAt = Number.isNaN(calledAt) ? performance.now() : calledAt),
  ).resume('long');
  const ended = performance.now();
  const cpu = process.cpuUsage(cpuBefore);
  if (result.stopReason !== 'completed' || result.steps !== total)
    throw new Error(`resume ended ${result.stopReason} after ${result.steps} steps: ${result.detail}`);
  await store.close();
  return { toCall: calledAt - started, toEnd: ended - started, cpu: (cpu.user + cpu.system) / 1_000 };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

if (args[0] === '--child') {
  // One cold resume: this process has imported loopstate and nothing else has run.
  const timing = await resumeOnce(args[1]!, Number(args[2]), false);
  console.log(JSON.stringify(timing));
  process.exit(0);
}

const lengths = (args[0] ?? '100,1000,10000').split(',').map(Number);
const resumes = Number(args[1] ?? 20);
const cold = args.includes('--cold');
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-resume-fixed-'));
const loadAtStart = loadavg()[0]!;
console.log(
  `${cold ? 'cold (a process per resume)' : 'warm'}, trace ${trace ? 'in memory' : 'off'}, ${resumes} resumes each`,
);
console.log(
  '| S | run ms | to next call ms (median) | to end ms | CPU ms | ÷ run (to end) | open store: to call / end ms | ÷ run |',
);
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
const here = fileURLToPath(import.meta.url);
for (const total of lengths) {
  // The template: S − 1 steps done, the S-th model call in flight when the process "dies" (its lease freed).
  const template = join(scratch, `template-${total}.db`);
  const first = sqliteStore({ path: template });
  let hung: () => void = () => undefined;
  const hanging = new Promise<void>((resolve) => (hung = resolve));
  let calls = 0;
  const started = performance.now();
  void loopOf(total, first, total, () => {
    if (++calls === total) hung();
  }).run({ goal: 'go', runId: 'long' });
  await hanging;
  const runMs = performance.now() - started;
  const row = await first.readRun('long');
  if (row?.leaseOwner) await first.releaseLease('long', row.leaseOwner);
  await first.close();
  // LOOPSTATE_BENCH_KEEP=<dir>: the template is kept there (runId `long`), to profile or inspect a resume of it.
  const keep = process.env.LOOPSTATE_BENCH_KEEP;
  if (keep !== undefined) copyFileSync(template, join(keep, `resume-template-${total}${trace ? '' : '-trace-off'}.db`));
  const copy = join(scratch, `resume-${total}.db`);
  const fresh = () => {
    for (const suffix of ['-wal', '-shm']) rmSync(copy + suffix, { force: true });
    copyFileSync(template, copy);
    if (existsSync(template + '-wal')) copyFileSync(template + '-wal', copy + '-wal');
  };
  const samples = { toCall: [] as number[], toEnd: [] as number[], cpu: [] as number[] };
  const openSamples = { toCall: [] as number[], toEnd: [] as number[] };
  // One warm-up of each, then `resumes` rounds, the two ways alternately.
  for (let round = -1; round < resumes; round++) {
    fresh();
    const timing = cold
      ? (JSON.parse(
          execFileSync(process.execPath, [here, '--child', copy, String(total)], {
            encoding: 'utf8',
            env: process.env,
          }).trim(),
        ) as { toCall: number; toEnd: number; cpu: number })
      : await resumeOnce(copy, total, false);
    if (round >= 0) {
      samples.toCall.push(timing.toCall);
      samples.toEnd.push(timing.toEnd);
      samples.cpu.push(timing.cpu);
    }
    if (cold) continue;
    fresh();
    const open = await resumeOnce(copy, total, true);
    if (round >= 0) {
      openSamples.toCall.push(open.toCall);
      openSamples.toEnd.push(open.toEnd);
    }
  }
  const toEnd = median(samples.toEnd);
  const openToEnd = median(openSamples.toEnd);
  console.log(
    `| ${total} | ${runMs.toFixed(0)} | ${median(samples.toCall).toFixed(2)} | ${toEnd.toFixed(2)} | ${median(samples.cpu).toFixed(2)} | ${((100 * toEnd) / runMs).toFixed(2)}% | ${cold ? '—' : `${median(openSamples.toCall).toFixed(2)} / ${openToEnd.toFixed(2)}`} | ${cold ? '—' : `${((100 * openToEnd) / runMs).toFixed(2)}%`} |`,
  );
}
console.log(`load average ${loadAtStart.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`);
rmSync(scratch, { recursive: true, force: true });
process.exit(0);
