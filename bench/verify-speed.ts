/**
 * `verify`'s exploration speed, states per second, on the 22-tool triage loop (`bench/triage-loop.ts`) and the
 * example loops: the compiled macrostep beside XState's `machine.transition`, rounds interleaved, medians. Both
 * explore the same states (a test checks it); CPU time is given beside wall time because the machine is shared.
 *
 * The first exploration of each loop in the process is also given alone ("first round"; only the first loop's is truly cold): `loopstate verify` explores once
 * per process, before the JIT has warmed up.
 *
 *   npm run build && node dist/bench/verify-speed.js [rounds] [--compiled-only]
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import incident from '../examples/incident.js';
import toolFeedback from '../examples/tool-feedback.js';
import { exploreLoop } from '../src/tooling/verify/explore.js';
import { resolveForVerify } from '../src/tooling/verify/resolve-for-verify.js';
import { verifyModelOf } from '../src/tooling/verify/verify-model.js';
import triage from './triage-loop.js';

const rounds = Number(process.argv.find((argument) => /^\d+$/.test(argument)) ?? 3);
const loops = { 'triage (22 tools)': triage, incident, 'tool-feedback': toolFeedback };
const steppers = process.argv.includes('--compiled-only') ? (['compiled'] as const) : (['compiled', 'xstate'] as const);
const results: Record<string, { wall: number[]; cpu: number[]; states: number }> = {};
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
console.log(`verify exploration speed (Node ${process.version}), load average ${loadavg()[0]?.toFixed(2)}`);
for (let round = 0; round < rounds; round++) {
  for (const [name, loop] of Object.entries(loops)) {
    const { config, limits } = resolveForVerify(loop);
    const model = verifyModelOf(config, limits ?? config.limits);
    for (let offset = 0; offset < steppers.length; offset++) {
      const stepper = steppers[(round + offset) % steppers.length] as (typeof steppers)[number];
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      const graph = exploreLoop(model, 1_000_000, undefined, stepper);
      const wallMs = performance.now() - started;
      const cpu = process.cpuUsage(cpuBefore);
      const entry = (results[`${name}, ${stepper}`] ??= { wall: [], cpu: [], states: graph.keys.length });
      entry.wall.push((graph.keys.length / wallMs) * 1000);
      entry.cpu.push((graph.keys.length / (cpu.user + cpu.system)) * 1e6);
    }
  }
}
const figure = (value: number) => Math.round(value).toLocaleString('en-US').padStart(8);
for (const [name, { wall, cpu, states }] of Object.entries(results))
  console.log(
    `${name.padEnd(30)} ${String(states).padStart(7)} states  ${figure(median(wall))} states/s (wall)  ${figure(median(cpu))} states/s (CPU)  ${figure(cpu[0] as number)} first round (CPU)`,
  );
console.log(`load average at the end ${loadavg()[0]?.toFixed(2)}`);
