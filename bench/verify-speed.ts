/**
 * `verify`'s exploration speed, states per second, on the 22-tool triage loop (`bench/triage-loop.ts`) and the
 * example loops: the compiled macrostep beside XState's `machine.transition`, rounds interleaved, medians. Both
 * explore the same states (a test checks it); CPU time is given beside wall time because the machine is shared.
 *
 * The first exploration of each loop in the process is also given alone ("first round"; only the first loop's is truly
 * cold): `loopstate verify` explores once per process, before the JIT has warmed up. Its CPU time is the process's
 * (V8's compiler and collector threads included) and, on Linux, the main thread's alone (what a user waits for when
 * the helper threads have cores of their own; it moves far less with the load than wall time does).
 *
 *   npm run build && node dist/bench/verify-speed.js [rounds] [--compiled-only]
 *
 * `--cli <checkout>…` times what a user sees instead: `loopstate verify` on the triage loop as a process of its own
 * (start to exit, wall, and its CPU time on Linux), in each built checkout given (e.g. this one and a `git archive` of
 * main), alternately, `rounds` times each, with the exploration's own figure that the report prints; for the built
 * `.js` file and for the `.ts` source in a project of its own (unchanged, and edited before each round), which Node
 * 20 runs through the CLI's TypeScript hooks and 22.6+ by stripping types itself.
 *
 *   node dist/bench/verify-speed.js 5 --cli . /tmp/before
 *
 * `--cold <checkout>…` explores each loop once in a process of its own (truly cold, the first round `loopstate
 * verify` gets, for every loop and not only the first), in each checkout, alternately, `rounds` times each.
 *
 *   node dist/bench/verify-speed.js 5 --cold . /tmp/before
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import incident from '../examples/incident.js';
import toolFeedback from '../examples/tool-feedback.js';
import { exploreLoop } from '../src/tooling/verify/explore.js';
import { resolveForVerify } from '../src/tooling/verify/resolve-for-verify.js';
import { verifyModelOf } from '../src/tooling/verify/verify-model.js';
import triage from './triage-loop.js';

const rounds = Number(process.argv.find((argument) => /^\d+$/.test(argument)) ?? 3);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const figure = (value: number) => Math.round(value).toLocaleString('en-US').padStart(8);

/** The main thread's own CPU time in ms (Linux's per-thread scheduler figures), or null elsewhere. */
function mainThreadCpuMs(): number | null {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return null;
  }
}

/** CPU time of the waited-for children so far in ms (Linux's cutime + cstime, 10 ms ticks), or null elsewhere. */
function childrenCpuMs(): number | null {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? [];
    // After the command name: state is field 3, cutime field 16 and cstime field 17 (1-based, as proc(5) counts).
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
  } catch {
    return null;
  }
}

/**
 * A user's project for the triage loop's TypeScript source, for the checkout at `root`: a folder with the loop file
 * and `node_modules/loopstate` (the checkout) and `node_modules/zod`, as `npm install loopstate` leaves one.
 * `bench/triage-loop.ts` itself cannot be the file: `bench/` is a package of its own (`bench/package.json`, named
 * loopstate-bench, for the benchmark suite), so `import 'loopstate'` there finds neither the repo's package by
 * self-reference nor one in `node_modules` (its built copy in `dist/bench/`, outside that package, can).
 */
function typescriptProject(root: string): string {
  const project = mkdtempSync(join(tmpdir(), 'loopstate-verify-speed-'));
  mkdirSync(join(project, 'node_modules'));
  symlinkSync(root, join(project, 'node_modules', 'loopstate'), 'dir');
  symlinkSync(join(root, 'node_modules', 'zod'), join(project, 'node_modules', 'zod'), 'dir');
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'triage', type: 'module', private: true }));
  copyFileSync(join(root, 'bench', 'triage-loop.ts'), join(project, 'triage-loop.ts'));
  return project;
}

/**
 * The loop files `--cli` verifies in each checkout: the built `.js`, the `.ts` source (unchanged between rounds, so
 * from the second round on Node 20's hooks find its transpile kept), and the `.ts` source edited before each round
 * (a comment added: transpiled again, with the `typescript` package's code cache kept).
 */
const CLI_VARIANTS = ['.js', '.ts', '.ts, edited'] as const;

function cliLoopFile(root: string, project: string, variant: (typeof CLI_VARIANTS)[number], round: number): string {
  if (variant === '.js') return join(root, 'dist/bench/triage-loop.js');
  if (variant === '.ts') return join(project, 'triage-loop.ts');
  const edited = join(project, 'triage-loop-edited.ts');
  writeFileSync(edited, `${readFileSync(join(project, 'triage-loop.ts'), 'utf8')}// edit ${round} ${process.pid}\n`);
  return edited;
}

function timeCli(checkouts: string[]): void {
  console.log(
    `loopstate verify <triage loop>, one process each (Node ${process.version}), load average ${loadavg()[0]?.toFixed(2)}`,
  );
  const projects = new Map(checkouts.map((checkout) => [resolve(checkout), typescriptProject(resolve(checkout))]));
  const results = new Map<string, { wall: number[]; cpu: Array<number | null>; explored: number[] }>();
  try {
    for (let round = 0; round < rounds; round++)
      for (const variant of CLI_VARIANTS)
        for (const [root, project] of projects) {
          const cpuBefore = childrenCpuMs();
          const started = performance.now();
          const run = spawnSync(
            process.execPath,
            [join(root, 'dist/src/tooling/cli/bin.js'), 'verify', cliLoopFile(root, project, variant, round)],
            { encoding: 'utf8', cwd: project },
          );
          const wallMs = performance.now() - started;
          const cpuAfter = childrenCpuMs();
          const explored = /\(([\d,]+) states\/s\)/.exec(run.stdout)?.[1];
          if (run.status !== 0 || explored === undefined)
            throw new Error(`verify (${variant}) in ${root} failed: ${run.stderr}`);
          const key = `${root} ${variant}`;
          const entry = results.get(key) ?? { wall: [], cpu: [], explored: [] };
          entry.wall.push(wallMs);
          entry.cpu.push(cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore);
          entry.explored.push(Number(explored.replaceAll(',', '')));
          results.set(key, entry);
        }
  } finally {
    for (const project of projects.values()) rmSync(project, { recursive: true, force: true });
  }
  for (const [key, { wall, cpu, explored }] of results) {
    const cpuMs = cpu.every((value) => value !== null) ? ` CPU ${figure(median(cpu))} ms (user + sys)` : '';
    console.log(
      `${key.padEnd(40)} CLI start to exit ${figure(median(wall))} ms (wall, median of ${wall.length}; fastest ${Math.round(Math.min(...wall))})${cpuMs}  exploration as reported ${figure(median(explored))} states/s`,
    );
  }
  console.log(`load average at the end ${loadavg()[0]?.toFixed(2)}`);
}

/** The loops explored, by name: the module under a checkout's `dist/` that exports each. */
const LOOP_FILES: Readonly<Record<string, string>> = {
  'triage (22 tools)': 'dist/bench/triage-loop.js',
  incident: 'dist/examples/incident.js',
  'tool-feedback': 'dist/examples/tool-feedback.js',
};

/** One cold exploration in a fresh process: imports the checkout's verify and the loop, explores once, prints figures. */
const COLD_EXPLORATION = `
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
const [root, file] = process.argv.slice(-2);
const load = (path) => import(pathToFileURL(root + '/' + path).href);
const { exploreLoop } = await load('dist/src/tooling/verify/explore.js');
const { resolveForVerify } = await load('dist/src/tooling/verify/resolve-for-verify.js');
const { verifyModelOf } = await load('dist/src/tooling/verify/verify-model.js');
const { config, limits } = resolveForVerify((await load(file)).default);
const model = verifyModelOf(config, limits ?? config.limits);
const main = () => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
const mainBefore = main();
const cpu = process.cpuUsage();
const started = performance.now();
const graph = exploreLoop(model, 1000000);
const wallMs = performance.now() - started;
const { user, system } = process.cpuUsage(cpu);
console.log(JSON.stringify({ states: graph.keys.length, wallMs, cpuMs: (user + system) / 1000, mainMs: main() - mainBefore }));
`;

/** Each loop's exploration truly cold (a process of its own, as `loopstate verify` gets it), in each checkout, alternately. */
function timeColdExplorations(checkouts: string[]): void {
  console.log(
    `cold explorations, one process each (Node ${process.version}), load average ${loadavg()[0]?.toFixed(2)}; states/s by wall / process CPU / main thread CPU, medians of ${rounds} (and the best)`,
  );
  const results = new Map<string, { states: number; wall: number[]; cpu: number[]; main: number[] }>();
  for (let round = 0; round < rounds; round++)
    for (const [name, file] of Object.entries(LOOP_FILES))
      for (const checkout of checkouts) {
        const root = resolve(checkout);
        const run = spawnSync(process.execPath, ['--input-type=module', '-e', COLD_EXPLORATION, root, file], {
          encoding: 'utf8',
        });
        if (run.status !== 0) throw new Error(`a cold exploration in ${root} failed: ${run.stderr}`);
        const figures = JSON.parse(run.stdout) as { states: number; wallMs: number; cpuMs: number; mainMs: number };
        const key = `${name} | ${root}`;
        const entry = results.get(key) ?? { states: figures.states, wall: [], cpu: [], main: [] };
        entry.wall.push((figures.states / figures.wallMs) * 1000);
        entry.cpu.push((figures.states / figures.cpuMs) * 1000);
        entry.main.push((figures.states / figures.mainMs) * 1000);
        results.set(key, entry);
      }
  for (const [key, { states, wall, cpu, main }] of results)
    console.log(
      `${key.padEnd(50)} ${String(states).padStart(7)} states  ${figure(median(wall))} / ${figure(median(cpu))} / ${figure(median(main))} states/s (best ${figure(Math.max(...wall))} / ${figure(Math.max(...cpu))} / ${figure(Math.max(...main))})`,
    );
  console.log(`load average at the end ${loadavg()[0]?.toFixed(2)}`);
}

function timeExploration(): void {
  const loops = { 'triage (22 tools)': triage, incident, 'tool-feedback': toolFeedback };
  const steppers = process.argv.includes('--compiled-only')
    ? (['compiled'] as const)
    : (['compiled', 'xstate'] as const);
  const results: Record<string, { wall: number[]; cpu: number[]; main: Array<number | null>; states: number }> = {};
  console.log(`verify exploration speed (Node ${process.version}), load average ${loadavg()[0]?.toFixed(2)}`);
  for (let round = 0; round < rounds; round++) {
    for (const [name, loop] of Object.entries(loops)) {
      const { config, limits } = resolveForVerify(loop);
      const model = verifyModelOf(config, limits ?? config.limits);
      for (let offset = 0; offset < steppers.length; offset++) {
        const stepper = steppers[(round + offset) % steppers.length] as (typeof steppers)[number];
        const cpuBefore = process.cpuUsage();
        const mainBefore = mainThreadCpuMs();
        const started = performance.now();
        const graph = exploreLoop(model, 1_000_000, undefined, stepper);
        const wallMs = performance.now() - started;
        const mainAfter = mainThreadCpuMs();
        const cpu = process.cpuUsage(cpuBefore);
        const entry = (results[`${name}, ${stepper}`] ??= { wall: [], cpu: [], main: [], states: graph.keys.length });
        entry.wall.push((graph.keys.length / wallMs) * 1000);
        entry.cpu.push((graph.keys.length / (cpu.user + cpu.system)) * 1e6);
        entry.main.push(
          mainBefore === null || mainAfter === null ? null : (graph.keys.length / (mainAfter - mainBefore)) * 1000,
        );
      }
    }
  }
  for (const [name, { wall, cpu, main, states }] of Object.entries(results))
    console.log(
      `${name.padEnd(30)} ${String(states).padStart(7)} states  ${figure(median(wall))} states/s (wall)  ${figure(median(cpu))} states/s (CPU)  first round: ${figure(wall[0] as number)} (wall) ${figure(cpu[0] as number)} (CPU)${main[0] === null ? '' : ` ${figure(main[0] as number)} (main thread CPU)`}`,
    );
  console.log(`load average at the end ${loadavg()[0]?.toFixed(2)}`);
}

const cli = process.argv.indexOf('--cli');
const cold = process.argv.indexOf('--cold');
if (cli >= 0) timeCli(process.argv.slice(cli + 1));
else if (cold >= 0) timeColdExplorations(process.argv.slice(cold + 1));
else timeExploration();
