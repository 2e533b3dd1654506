/**
 * What a durable run costs when its model calls wait (a hosted model's latency), which the instant-model benches
 * (durable-cost, record-bytes) never see: commits and snapshots made while a call is out, bytes and CPU a step.
 * The issue 18 workload on SQLite, each call answered after a timer of `ms`; with `--roots`, the builds of several
 * checkouts in one process, alternately.
 *
 *   node dist/bench/waiting-model-cost.js 300 20                              # this build, 20 ms a call
 *   node dist/bench/waiting-model-cost.js 300 5 --roots /tmp/before,.         # before / after
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type * as Loopstate from 'loopstate';
import type { Model, Store } from 'loopstate';
import type * as LoopstateSqlite from 'loopstate/sqlite';
import { lookupTool, workloadLimits, workloadModel } from './durable-workload.js';

const args = process.argv.slice(2);
const steps = Number(args[0] ?? 300);
const latencyMs = Number(args[1] ?? 20);
const rootsAt = args.indexOf('--roots');
const roots = rootsAt === -1 ? [null] : args[rootsAt + 1]!.split(',').map((root) => resolve(root));

async function buildAt(root: string | null) {
  const main = (
    root === null ? await import('loopstate') : await import(resolve(root, 'dist/src/index.js'))
  ) as typeof Loopstate;
  const sqlite = (
    root === null ? await import('loopstate/sqlite') : await import(resolve(root, 'dist/src/adapters/sqlite/index.js'))
  ) as typeof LoopstateSqlite;
  return { name: root ?? 'this build', main, sqlite };
}

const fileBytes = (path: string) =>
  statSync(path).size + (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-waiting-model-'));
const builds = await Promise.all(roots.map(buildAt));
console.log(`S = ${steps}, the model answering after ${latencyMs} ms, load average ${loadavg()[0]!.toFixed(2)}`);
console.log('| build | appends / step | snapshots / step | db + wal B/step (open / closed) | CPU µs/step |');
console.log('|---|---:|---:|---:|---:|');
for (const build of builds) {
  const path = join(scratch, `${builds.indexOf(build)}.db`);
  const store = build.sqlite.sqliteStore({ path });
  let appends = 0;
  let snapshots = 0;
  // The store as the run sees it, its appends and snapshot writes counted.
  const counted = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...rest: unknown[]) => {
        if (key === 'append') appends += 1;
        if (key === 'writeSnapshot') snapshots += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, rest);
      };
    },
  }) as Store;
  const instant = workloadModel(steps);
  const model: Model = {
    ...instant,
    generate: (request) =>
      new Promise((answer) => setTimeout(() => answer(instant.generate(request)), latencyMs)) as ReturnType<
        Model['generate']
      >,
  };
  const cpuBefore = process.cpuUsage();
  const result = await build.main
    .createLoop({
      model,
      tools: [lookupTool(build.main.defineTool)],
      ...workloadLimits(steps),
      store: counted,
    })
    .run({ goal: 'go', runId: 'waiting' });
  const cpu = process.cpuUsage(cpuBefore);
  if (result.stopReason !== 'completed') throw new Error(`the run ended ${result.stopReason}: ${result.detail}`);
  const open = fileBytes(path);
  await store.close();
  const closed = fileBytes(path);
  console.log(
    `| ${build.name} | ${(appends / steps).toFixed(3)} | ${(snapshots / steps).toFixed(3)} | ${(open / steps).toFixed(0)} / ${(closed / steps).toFixed(0)} | ${((cpu.user + cpu.system) / steps).toFixed(0)} |`,
  );
}
console.log(`load average ${loadavg()[0]!.toFixed(2)}`);
rmSync(scratch, { recursive: true, force: true });
