/**
 * The embedded engine's fixed cost per run, side by side in one process: µs per step at S = 10 and
 * S = 100 (their ratio is what a run costs beyond its steps), and 1,000 concurrent runs of S = 10 with
 * 1 ms model latency against the hand-written loop (wall time and peak heap per in-flight run). The
 * workload is the suite's (`bench/suite/workload.mjs`): a stateless instant model that reads the key
 * number from the last tool result, `S − 1` `lookup` calls, then a final JSON answer; every guard,
 * no-progress detection and the in-memory trace on. Rounds are interleaved and the order rotates;
 * figures are medians.
 *
 * Then, once each, 1,000 and 10,000 runs in flight: the peak heap per run sampled, and the heap per run that
 * survives a full collection halfway through (what a run in flight holds); `--no-heap` leaves this out.
 *
 * With `--floor`, plain XState runs the same workload beside them (one actor a run, the model and the tool as
 * invoked promise actors, as `bench/suite`'s adapter does): the floor of a statechart runtime, for what the engine
 * adds above it. Off by default: its garbage, collected while loopstate runs, would move loopstate's figures.
 *
 *   npm run build && node dist/bench/run-fixed-cost.js            # 7 rounds
 *   node dist/bench/run-fixed-cost.js 3                           # rounds
 *   node dist/bench/run-fixed-cost.js 5 --floor                   # plain XState beside them
 */
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { assign, createActor, fromPromise, setup, toPromise } from 'xstate';
import { z } from 'zod';
import { createLoop, defineTool, evaluators, type Loop, type Message, type Model } from 'loopstate';

const rounds = Number(process.argv[2] ?? 7);
const USAGE = Object.freeze({ inputTokens: 50, outputTokens: 10 });
const KEY_PATTERN = /value of k(\d+)/;
let modelCalls = 0;
let onModelCall: (() => void) | null = null;

/** The model's decision from its request's last message: the next tool call, or null for the final answer. */
function decide(lastMessageText: unknown, steps: number): { id: string; arguments: string } | null {
  modelCalls++;
  onModelCall?.();
  const match = typeof lastMessageText === 'string' ? KEY_PATTERN.exec(lastMessageText) : null;
  const step = (match ? Number(match[1]) : 0) + 1;
  return step < steps ? { id: `call_${step}`, arguments: `{"key":"k${step}"}` } : null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const lookupInput = z.object({ key: z.string() });
const lookupValue = (key: string) => `value of ${key}`;

interface Runner {
  run(): Promise<void>;
}

function handWritten(steps: number, latencyMs: number): Runner {
  async function generate(messages: { content: unknown }[]) {
    if (latencyMs > 0) await sleep(latencyMs);
    const call = decide(messages[messages.length - 1]?.content, steps);
    if (call === null) return { text: '{"done":true}', toolCalls: [], usage: USAGE };
    return { text: null, toolCalls: [{ id: call.id, name: 'lookup', arguments: call.arguments }], usage: USAGE };
  }
  return {
    async run() {
      const messages: { role: string; content: unknown; toolCalls?: unknown; toolCallId?: string }[] = [
        { role: 'user', content: 'go' },
      ];
      for (;;) {
        const response = await generate(messages);
        messages.push({ role: 'assistant', content: response.text, toolCalls: response.toolCalls });
        if (response.toolCalls.length === 0) {
          JSON.parse(response.text ?? '');
          return;
        }
        for (const call of response.toolCalls) {
          const args = lookupInput.parse(JSON.parse(call.arguments));
          messages.push({ role: 'tool', toolCallId: call.id, content: lookupValue(args.key) });
        }
      }
    },
  };
}

function engine(steps: number, latencyMs: number): Runner {
  const model: Model = {
    id: 'bench-instant',
    async generate(request) {
      if (latencyMs > 0) await sleep(latencyMs);
      const last: Message | undefined = request.messages[request.messages.length - 1];
      const call = decide(last?.content, steps);
      if (call === null) return { text: '{"done":true}', toolCalls: [], usage: USAGE };
      return { text: null, toolCalls: [{ id: call.id, name: 'lookup', arguments: call.arguments }], usage: USAGE };
    },
  };
  const lookup = defineTool({
    name: 'lookup',
    description: 'Look a key up.',
    input: lookupInput,
    access: 'read',
    execute: ({ key }) => lookupValue(key),
  });
  const loop: Loop = createLoop({
    model,
    tools: [lookup],
    evaluate: [evaluators.json()],
    limits: {
      maxSteps: steps,
      maxStepsPerTask: steps,
      maxToolCalls: steps,
      maxInputTokens: Infinity,
      maxOutputTokens: Infinity,
      maxCostUsd: Infinity,
      deadlineMs: 3_600_000,
    },
    noProgress: { planStall: steps + 1 },
    trace: { inMemory: true },
  });
  return {
    async run() {
      const result = await loop.run({ goal: 'go' });
      if (result.stopReason !== 'completed' || result.steps !== steps)
        throw new Error(`run stopped with ${result.stopReason} after ${result.steps} steps: ${result.detail}`);
    },
  };
}

interface ModelReply {
  text: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  usage: typeof USAGE;
}
interface PlainContext {
  messages: { role: string; content: unknown; toolCalls?: unknown; toolCallId?: string }[];
  pending: ModelReply['toolCalls'][number] | null;
  answer: unknown;
}

/** Plain XState v5 on the same workload: one actor a run, the model and the tool as invoked promise actors. */
function plainXState(steps: number, latencyMs: number): Runner {
  const machine = setup({
    types: { context: {} as PlainContext },
    actors: {
      callModel: fromPromise<ModelReply, { messages: PlainContext['messages'] }>(async ({ input }) => {
        if (latencyMs > 0) await sleep(latencyMs);
        const call = decide(input.messages[input.messages.length - 1]?.content, steps);
        if (call === null) return { text: '{"done":true}', toolCalls: [], usage: USAGE };
        return { text: null, toolCalls: [{ id: call.id, name: 'lookup', arguments: call.arguments }], usage: USAGE };
      }),
      callTool: fromPromise<PlainContext['messages'][number], { call: ModelReply['toolCalls'][number] }>(
        async ({ input }) => {
          const args = lookupInput.parse(JSON.parse(input.call.arguments));
          return { role: 'tool', toolCallId: input.call.id, content: lookupValue(args.key) };
        },
      ),
    },
  }).createMachine({
    context: () => ({ messages: [{ role: 'user', content: 'go' }], pending: null, answer: null }),
    initial: 'callingModel',
    states: {
      callingModel: {
        invoke: {
          src: 'callModel',
          input: ({ context }) => ({ messages: context.messages }),
          onDone: [
            {
              guard: ({ event }) => event.output.toolCalls.length > 0,
              target: 'callingTool',
              actions: assign(({ context, event }) => ({
                messages: [
                  ...context.messages,
                  { role: 'assistant', content: null, toolCalls: event.output.toolCalls },
                ],
                pending: event.output.toolCalls[0] ?? null,
              })),
            },
            { target: 'done', actions: assign(({ event }) => ({ answer: JSON.parse(event.output.text ?? '') })) },
          ],
        },
      },
      callingTool: {
        invoke: {
          src: 'callTool',
          input: ({ context }) => ({ call: context.pending as ModelReply['toolCalls'][number] }),
          onDone: {
            target: 'callingModel',
            actions: assign(({ context, event }) => ({ messages: [...context.messages, event.output], pending: null })),
          },
        },
      },
      done: { type: 'final' },
    },
  });
  return {
    async run() {
      const actor = createActor(machine);
      const finished = toPromise(actor);
      actor.start();
      await finished;
    },
  };
}

/** µs per step over sequential runs totalling about `stepsPerBatch` steps, wall and CPU (the process's, GC threads included). */
async function perStep(runner: Runner, steps: number, stepsPerBatch: number): Promise<{ wall: number; cpu: number }> {
  const runs = Math.max(3, Math.round(stepsPerBatch / steps));
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (let index = 0; index < runs; index++) await runner.run();
  const cpu = process.cpuUsage(cpuBefore);
  return {
    wall: ((performance.now() - started) * 1000) / (runs * steps),
    cpu: (cpu.user + cpu.system) / (runs * steps),
  };
}

/** A full garbage collection (exposed at run time: the bench runs without flags). */
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

/**
 * `runs` runs started at once; wall time and the peak heap per run, sampled on every 50th model call (garbage
 * not yet collected included). With `live`, also the heap per run that survives a full collection made halfway
 * (when the runs have made half their model calls, all of them in flight): what a run in flight holds.
 */
async function concurrent(
  runner: Runner,
  runs: number,
  live = false,
): Promise<{ wallMs: number; cpuMs: number; heapPerRunKiB: number; liveHeapPerRunKiB: number }> {
  let peak = 0;
  let liveHeap = 0;
  if (live) collectGarbage();
  const before = v8.getHeapStatistics().used_heap_size;
  const halfway = modelCalls + runs * 5;
  onModelCall = () => {
    if (modelCalls % 50 === 0) peak = Math.max(peak, v8.getHeapStatistics().used_heap_size);
    if (live && modelCalls === halfway) {
      collectGarbage();
      liveHeap = v8.getHeapStatistics().used_heap_size;
    }
  };
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: runs }, () => runner.run()));
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  onModelCall = null;
  return {
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    heapPerRunKiB: (peak - before) / runs / 1024,
    liveHeapPerRunKiB: (liveHeap - before) / runs / 1024,
  };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

const floor = process.argv.includes('--floor');
const sequential: Record<string, { runner: Runner; steps: number }> = {
  'hand-written S=10': { runner: handWritten(10, 0), steps: 10 },
  'loopstate S=10': { runner: engine(10, 0), steps: 10 },
  'loopstate S=100': { runner: engine(100, 0), steps: 100 },
  ...(floor
    ? {
        'plain XState S=10': { runner: plainXState(10, 0), steps: 10 },
        'plain XState S=100': { runner: plainXState(100, 0), steps: 100 },
      }
    : {}),
};
const wide: Record<string, Runner> = {
  'hand-written': handWritten(10, 1),
  loopstate: engine(10, 1),
  ...(floor ? { 'plain XState': plainXState(10, 1) } : {}),
};
const timings: Record<string, number[]> = {};
/** CPU µs per step: on a shared machine the wall time moves with the load far more than this. */
const cpuTimings: Record<string, number[]> = {};
const walls: Record<string, number[]> = {};
const heaps: Record<string, number[]> = {};
const cpus: Record<string, number[]> = {};
// Warm-up: every variant until the JIT has settled.
const warmUntil = performance.now() + 2_000;
while (performance.now() < warmUntil)
  for (const { runner, steps } of Object.values(sequential)) await perStep(runner, steps, 300);
for (const runner of Object.values(wide)) for (let batch = 0; batch < 2; batch++) await concurrent(runner, 100);
for (let round = 0; round < rounds; round++) {
  const names = Object.keys(sequential);
  for (let offset = 0; offset < names.length; offset++) {
    const name = names[(round + offset) % names.length] as string;
    const { runner, steps } = sequential[name] as { runner: Runner; steps: number };
    const { wall, cpu } = await perStep(runner, steps, 4_000);
    (timings[name] ??= []).push(wall);
    (cpuTimings[name] ??= []).push(cpu);
  }
  const wideNames = Object.keys(wide);
  for (let offset = 0; offset < wideNames.length; offset++) {
    const name = wideNames[(round + offset) % wideNames.length] as string;
    const { wallMs, cpuMs, heapPerRunKiB } = await concurrent(wide[name] as Runner, 1_000);
    (walls[name] ??= []).push(wallMs);
    (cpus[name] ??= []).push(cpuMs);
    (heaps[name] ??= []).push(heapPerRunKiB);
  }
}
const figure = (values: number[] | undefined) => median(values ?? [NaN]);
const tenSteps = figure(timings['loopstate S=10']);
const hundredSteps = figure(timings['loopstate S=100']);
const tenStepsCpu = figure(cpuTimings['loopstate S=10']);
const hundredStepsCpu = figure(cpuTimings['loopstate S=100']);
console.log(
  `run fixed cost (Node ${process.version}), ${rounds} interleaved rounds, medians; load average ${(await import('node:os')).loadavg()[0]?.toFixed(2)}`,
);
for (const [name, values] of Object.entries(timings))
  console.log(
    `${name.padEnd(20)} ${figure(values).toFixed(2).padStart(8)} µs/step wall ${figure(cpuTimings[name]).toFixed(2).padStart(8)} µs/step CPU`,
  );
console.log(
  `S = 10 ÷ S = 100 per step: ${(tenSteps / hundredSteps).toFixed(2)}× wall, ${(tenStepsCpu / hundredStepsCpu).toFixed(2)}× CPU`,
);
for (const name of Object.keys(wide))
  console.log(
    `1,000 concurrent, ${name.padEnd(12)} ${figure(walls[name]).toFixed(0).padStart(6)} ms wall ${figure(cpus[name]).toFixed(0).padStart(6)} ms CPU  peak heap ${figure(heaps[name]).toFixed(1)} KiB/run`,
  );
console.log(
  `1,000 concurrent: loopstate ÷ hand-written wall time ${(figure(walls.loopstate) / figure(walls['hand-written'])).toFixed(1)}×, CPU ${(figure(cpus.loopstate) / figure(cpus['hand-written'])).toFixed(1)}×`,
);
// The floor (with --floor): what plain XState costs on the same workload, and what loopstate adds above it.
if (floor) {
  const plainTen = figure(cpuTimings['plain XState S=10']);
  const plainHundred = figure(cpuTimings['plain XState S=100']);
  console.log(
    `plain XState: S = 10 ÷ S = 100 per step ${(plainTen / plainHundred).toFixed(2)}× CPU; loopstate ÷ plain XState CPU per step ${(tenStepsCpu / plainTen).toFixed(2)}× at S = 10, ${(hundredStepsCpu / plainHundred).toFixed(2)}× at S = 100, 1,000 concurrent ${(figure(cpus.loopstate) / figure(cpus['plain XState'])).toFixed(2)}×; plain XState ÷ hand-written, 1,000 concurrent: ${(figure(walls['plain XState']) / figure(walls['hand-written'])).toFixed(1)}× wall, ${(figure(cpus['plain XState']) / figure(cpus['hand-written'])).toFixed(1)}× CPU`,
  );
}
// The heap at 1,000 and 10,000 runs in flight, peak sampled and live (once each: 10,000 runs take a while).
const heapAt: Record<string, { peakKiB: number; liveKiB: number }> = {};
if (!process.argv.includes('--no-heap'))
  for (const runs of [1_000, 10_000])
    for (const [name, runner] of Object.entries(wide)) {
      const { heapPerRunKiB, liveHeapPerRunKiB } = await concurrent(runner, runs, true);
      heapAt[`${name} ${runs}`] = { peakKiB: heapPerRunKiB, liveKiB: liveHeapPerRunKiB };
      console.log(
        `${runs.toLocaleString('en-US')} in flight, ${name.padEnd(12)} peak sampled ${heapPerRunKiB.toFixed(1)} KiB/run, live after a full GC halfway ${liveHeapPerRunKiB.toFixed(1)} KiB/run`,
      );
    }
console.log(
  JSON.stringify({
    heapInFlightKiBPerRun: heapAt,
    perStepMicroseconds: Object.fromEntries(Object.entries(timings).map(([name, values]) => [name, figure(values)])),
    perStepCpuMicroseconds: Object.fromEntries(
      Object.entries(cpuTimings).map(([name, values]) => [name, figure(values)]),
    ),
    ratioTenToHundred: tenSteps / hundredSteps,
    ratioTenToHundredCpu: tenStepsCpu / hundredStepsCpu,
    concurrentCpuMs: Object.fromEntries(Object.entries(cpus).map(([name, values]) => [name, figure(values)])),
    concurrentWallMs: Object.fromEntries(Object.entries(walls).map(([name, values]) => [name, figure(values)])),
    concurrentPeakHeapKiBPerRun: Object.fromEntries(
      Object.entries(heaps).map(([name, values]) => [name, figure(values)]),
    ),
  }),
);
