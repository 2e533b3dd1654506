/**
 * What a resume costs on its own, many times over the same stored run (issue 18 target 3: ≤ 2% of the run's
 * own time at 1,000 steps). A run of S steps on SQLite is left hanging at its last model call and its lease
 * freed; the file is kept as a template. Each resume then gets a fresh copy of it (copied outside the timing)
 * and resumes the run to its end (with `--roots`, each build its own run's file):
 *
 * - warm, fresh store: a new `sqliteStore` on the copy (as the CLI, or a process that opens a store per
 *   run), timed from `sqliteStore()` to the next model call and to the end;
 * - warm, open store: the store opened (and its first read made) before the timing, as a long-lived service
 *   keeps its store open;
 * - cold (`--cold`): one child process per resume, timed inside it from just after the imports.
 *
 * Reported: medians (wall, and this process's CPU for the fresh-store resume), the run's own time at S, the
 * ratio, the load average. `--roots a,b`: the builds (`dist/`) of several checkouts, measured side by side in
 * one process (cold: alternately), rounds interleaved, so a noisy machine slows each alike; without it, this one.
 *
 *   node dist/bench/resume-fixed-cost.js 100,1000,10000 20          # warm, trace in memory (the default)
 *   LOOPSTATE_BENCH_TRACE=off node dist/bench/resume-fixed-cost.js 1000 20
 *   node dist/bench/resume-fixed-cost.js 1000 10 --cold
 *   node dist/bench/resume-fixed-cost.js 100,1000 20 --roots /tmp/before,.   # before / after
 *   LOOPSTATE_BENCH_CRASHED=1 node dist/bench/resume-fixed-cost.js 1000 41   # the WAL not folded before the resume
 *   LOOPSTATE_BENCH_STOP=approval node dist/bench/resume-fixed-cost.js 1000 41  # how the run stopped (see `stop`)
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { resolve } from 'node:path';
import { z } from 'zod';
import type * as Loopstate from 'loopstate';
import { callNumber, lookupTool, workloadLimits, workloadModel } from './durable-workload.js';
import type { Model, Store } from 'loopstate';
import type * as LoopstateSqlite from 'loopstate/sqlite';

const args = process.argv.slice(2);
const trace = process.env.LOOPSTATE_BENCH_TRACE !== 'off';
/**
 * LOOPSTATE_BENCH_CRASHED=1: the dead process's WAL is left as a crash leaves it (its release does not fold it),
 * so the resume appends to it and the resumed run's end folds it; by default the release folds it first (and starts
 * the WAL again with one frame: a resume appends to it, as a resume on a store kept open does).
 */
const crashed = process.env.LOOPSTATE_BENCH_CRASHED === '1';
/**
 * LOOPSTATE_BENCH_STOP: how the run stopped before the resume (the last step is S; its model call is call S).
 * - `hung` (the default): the process died while model call S was out (a timer tick after it began: the steps whose
 *   commit waited are committed meanwhile), its lease freed;
 * - `grouped`: the process died as model call S began, before that wait's commit: the steps since the last commit
 *   (≤ `maxUncommittedSteps` of idempotent calls) are lost and done again, its lease freed;
 * - `write`: step S − 1 called a tool that is not idempotent (its intent and outcome committed before call S), then
 *   the process died while call S was out, its lease freed;
 * - `approval`: step S − 1 called a destructive tool: the run stopped `needs_human`, and the resume approves it;
 * - `paused`: the store was paused during step S − 1; the process died while the run waited for the pause to be
 *   lifted (its lease freed), and the pause was lifted before the resume.
 */
const stops = ['hung', 'grouped', 'write', 'approval', 'paused'] as const;
const stop = (process.env.LOOPSTATE_BENCH_STOP ?? 'hung') as (typeof stops)[number];
if (!stops.includes(stop)) throw new Error(`LOOPSTATE_BENCH_STOP: expected one of ${stops.join(', ')}, got ${stop}`);
/** The tool step S − 1 calls instead of `lookup`, if any. */
const lastTool = stop === 'write' ? 'record' : stop === 'approval' ? 'charge' : null;

/** What the bench uses of a build of loopstate. */
interface Build {
  name: string;
  createLoop: typeof Loopstate.createLoop;
  defineTool: typeof Loopstate.defineTool;
  sqliteStore: typeof LoopstateSqlite.sqliteStore;
}
async function buildAt(root: string | null): Promise<Build> {
  const main = (
    root === null ? await import('loopstate') : await import(resolve(root, 'dist/src/index.js'))
  ) as typeof Loopstate;
  const sqlite = (
    root === null ? await import('loopstate/sqlite') : await import(resolve(root, 'dist/src/adapters/sqlite/index.js'))
  ) as typeof LoopstateSqlite;
  return {
    name: root ?? 'this build',
    createLoop: main.createLoop,
    defineTool: main.defineTool,
    sqliteStore: sqlite.sqliteStore,
  };
}

/** The workload's model; step S − 1 calls `lastTool` when there is one. */
function stopModel(total: number, hangAt: number | null, onCall: (call: number) => void): Model {
  const model = workloadModel(total, { hangAt, onCall });
  if (lastTool === null) return model;
  return {
    id: model.id,
    generate(request) {
      const call = callNumber(request.messages);
      if (call !== total - 1) return model.generate(request);
      onCall(call);
      return Promise.resolve({
        text: null,
        toolCalls: [{ id: `c${call}`, name: lastTool, arguments: `{"key":"k${call}"}` }],
        usage: { inputTokens: 50, outputTokens: 10 },
      });
    },
  };
}

const loopOf = (
  build: Build,
  total: number,
  store: Store,
  hangAt: number | null,
  onCall: (call: number) => void = () => undefined,
) =>
  build.createLoop({
    model: stopModel(total, hangAt, onCall),
    tools: [
      lookupTool(build.defineTool),
      ...(lastTool === null
        ? []
        : [
            build.defineTool({
              name: lastTool,
              description: 'Write a key.',
              input: z.object({ key: z.string() }),
              access: lastTool === 'record' ? 'write' : 'destructive',
              execute: ({ key }) => `wrote ${key}`,
            }),
          ]),
    ],
    ...workloadLimits(total),
    ...(trace ? {} : { trace: { inMemory: false } }),
    store,
  });

/** One resume of the run in `path` to its end: ms from `started` (or from the store's opening) to the next model call and to the end. */
async function resumeOnce(
  build: Build,
  path: string,
  total: number,
  openFirst: boolean,
): Promise<{ toCall: number; toEnd: number; cpu: number }> {
  let store: Store | undefined;
  if (openFirst) {
    store = build.sqliteStore({ path });
    await store.readRun('nothing');
  }
  let calledAt = NaN;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  store ??= build.sqliteStore({ path });
  const result = await loopOf(
    build,
    total,
    store,
    null,
    () => (calledAt = Number.isNaN(calledAt) ? performance.now() : calledAt),
  ).resume('long', stop === 'approval' ? { approvals: { [`c${total - 1}`]: { approve: true } } } : {});
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
  const build = await buildAt(args[3] === '-' ? null : args[3]!);
  const timing = await resumeOnce(build, args[1]!, Number(args[2]), false);
  console.log(JSON.stringify(timing));
  process.exit(0);
}

const lengths = (args[0] ?? '100,1000,10000').split(',').map(Number);
const resumes = Number(args[1] ?? 20);
const cold = args.includes('--cold');
const rootsAt = args.indexOf('--roots');
const roots = rootsAt === -1 ? [null] : args[rootsAt + 1]!.split(',').map((root) => resolve(root));
const builds = await Promise.all(roots.map(buildAt));
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-resume-fixed-'));
const loadAtStart = loadavg()[0]!;
console.log(
  `stopped: ${stop}; ${cold ? 'cold (a process per resume)' : 'warm'}, trace ${trace ? 'in memory' : 'off'}${crashed ? ', WAL left as a crash leaves it' : ''}, ${resumes} resumes each${builds.length > 1 ? ', builds side by side' : ''}`,
);
console.log(
  '| S | build | run ms | to next call ms (median) | to end ms | call → end ms | CPU ms | ÷ run (to end) | open store: to call / end ms | ÷ run |',
);
console.log('|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|');
const here = fileURLToPath(import.meta.url);

/** Copies the file `path` with its WAL to `into`, as they are now (better-sqlite3 writes synchronously: no write is half done). */
function copyFiles(path: string, into: string): void {
  for (const suffix of ['-wal', '-shm']) rmSync(into + suffix, { force: true });
  copyFileSync(path, into);
  if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${into}-wal`);
}

/** A run of S steps stopped as `stop` says, the files as that process left them copied to `into`; the run's own ms. */
async function hungRun(build: Build, total: number, into: string): Promise<number> {
  const path = join(scratch, `hung-${total}.db`);
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
  const first = build.sqliteStore({ path, ...(crashed ? { foldWalWhenIdle: false } : {}) });
  let hung: () => void = () => undefined;
  const hanging = new Promise<void>((resolve) => (hung = resolve));
  let owner: string | null = null;
  const started = performance.now();
  let runMs = NaN;
  const onCall = (call: number) => {
    if (call === total - 1) {
      if (stop === 'paused') void first.setPaused('bench');
      // The lease's owner, for `grouped` to free it in the very microtask the process dies in.
      void first.readRun('long').then((row) => (owner = row?.leaseOwner ?? null));
    }
    if (call !== total) return;
    runMs = performance.now() - started;
    if (stop === 'grouped') {
      // Dies as the call begins (before the wait's commit): the lease freed and the files copied at once.
      void first.releaseLease('long', owner!);
      copyFiles(path, into);
    }
    hung();
  };
  const running = loopOf(build, total, first, total, onCall).run({ goal: 'go', runId: 'long' });
  if (stop === 'approval') {
    const result = await running;
    runMs = performance.now() - started;
    if (result.status !== 'needs_human') throw new Error(`the run was to wait for approval: ${result.stopReason}`);
  } else if (stop === 'paused') {
    // The run's end is the pause; its own time is to the pause's first look (the tool of step S − 1 is instant).
    running.catch(() => undefined);
    while (owner === null) await new Promise((resolve) => setTimeout(resolve, 1));
    runMs = performance.now() - started;
  } else {
    running.catch(() => undefined);
    await hanging;
  }
  if (stop === 'grouped') {
    await first.close();
    return runMs;
  }
  // The process dies while its last model call is out (or the run waits), a timer tick or more after the call began
  // (a hosted model takes hundreds of ms): the steps whose commit waited (grouped commits) are committed meanwhile.
  await new Promise((resolve) => setTimeout(resolve, 10));
  const row = await first.readRun('long');
  if (row?.leaseOwner) await first.releaseLease('long', row.leaseOwner);
  // The release's fold of the WAL runs on the next macrotask (not with `CRASHED=1`): let it, as a process that lives on
  // after its run would; the copy below then has the folded file and its WAL of one frame.
  if (!crashed) await new Promise((resolve) => setImmediate(resolve));
  // Lifted after the process died, before the resume (the run, paused, looks again only after `pausePollMs`).
  if (stop === 'paused') await first.setPaused(null);
  // Its WAL included, copied while its connection is still open and idle (better-sqlite3 writes synchronously: no
  // write is half done here). With `CRASHED=1` a resume then appends to that WAL, as after a crash (SQLite first
  // rebuilds its index from the whole WAL); by default the WAL was folded and started again (one frame: a build
  // before resume13 left it empty, and every resume restarted it and synced its header).
  copyFiles(path, into);
  await first.close();
  return runMs;
}

for (const total of lengths) {
  // The run's own time, per build (rounds interleaved). Each build resumes the files its own first run left: the
  // journal as that build writes it (a build may write what a resume reads differently).
  const saved = (build: Build) => join(scratch, `saved-${total}-${builds.indexOf(build)}.db`);
  const runRounds = total <= 1_000 ? 3 : 1;
  const runMs = new Map<Build, number[]>(builds.map((build) => [build, []]));
  for (let round = 0; round < runRounds; round++)
    for (const build of builds)
      runMs
        .get(build)!
        .push(await hungRun(build, total, round === 0 ? saved(build) : join(scratch, `discarded-${total}.db`)));
  // LOOPSTATE_BENCH_KEEP=<dir>: the files are kept there (runId `long`), to profile or inspect a resume of them.
  const keep = process.env.LOOPSTATE_BENCH_KEEP;
  if (keep !== undefined)
    for (const build of builds) {
      const kept = join(keep, `resume-template-${total}${trace ? '' : '-trace-off'}-${builds.indexOf(build)}.db`);
      copyFileSync(saved(build), kept);
      if (existsSync(`${saved(build)}-wal`)) copyFileSync(`${saved(build)}-wal`, `${kept}-wal`);
    }
  const copy = join(scratch, `resume-${total}.db`);
  const fresh = (build: Build) => copyFiles(saved(build), copy);
  const samples = new Map(
    builds.map((build) => [
      build,
      {
        toCall: [] as number[],
        toEnd: [] as number[],
        /** From the next model call to the end: the rest of the run (its last steps) and its stop, which an uninterrupted run pays too. */
        callToEnd: [] as number[],
        cpu: [] as number[],
        openCall: [] as number[],
        openEnd: [] as number[],
      },
    ]),
  );
  // One warm-up round, then `resumes` rounds: the builds, and the two ways, alternately.
  for (let round = -1; round < resumes; round++)
    for (const [index, build] of builds.entries()) {
      const sample = samples.get(build)!;
      fresh(build);
      const timing = cold
        ? (JSON.parse(
            execFileSync(process.execPath, [here, '--child', copy, String(total), roots[index] ?? '-'], {
              encoding: 'utf8',
              env: process.env,
            }).trim(),
          ) as { toCall: number; toEnd: number; cpu: number })
        : await resumeOnce(build, copy, total, false);
      if (round >= 0) {
        sample.toCall.push(timing.toCall);
        sample.toEnd.push(timing.toEnd);
        sample.callToEnd.push(timing.toEnd - timing.toCall);
        sample.cpu.push(timing.cpu);
      }
      if (cold) continue;
      fresh(build);
      const open = await resumeOnce(build, copy, total, true);
      if (round >= 0) {
        sample.openCall.push(open.toCall);
        sample.openEnd.push(open.toEnd);
      }
    }
  for (const build of builds) {
    const sample = samples.get(build)!;
    const run = median(runMs.get(build)!);
    const toEnd = median(sample.toEnd);
    const openEnd = median(sample.openEnd);
    console.log(
      `| ${total} | ${build.name} | ${run.toFixed(0)} | ${median(sample.toCall).toFixed(2)} | ${toEnd.toFixed(2)} | ${median(sample.callToEnd).toFixed(2)} | ${median(sample.cpu).toFixed(2)} | ${((100 * toEnd) / run).toFixed(2)}% | ${cold ? '—' : `${median(sample.openCall).toFixed(2)} / ${openEnd.toFixed(2)}`} | ${cold ? '—' : `${((100 * openEnd) / run).toFixed(2)}%`} |`,
    );
  }
}
console.log(`load average ${loadAtStart.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`);
rmSync(scratch, { recursive: true, force: true });
process.exit(0);
