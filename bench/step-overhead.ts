/**
 * Micro-benchmark: engine overhead per step, loopstate against a hand-written loop doing the
 * same model and tool work, side by side in one process. Every guard, no-progress detection
 * and the in-memory trace are on. The full suite beside the peers is `bench/suite` (`npm run bench` in `bench/`).
 *
 *   npm run bench                   # runs of 50 and 400 steps, ~8,000 steps per side
 *   npm run bench -- 20,200,1000 4000  # history lengths, steps per side
 *   npm run bench -- 50,400 8000 file  # trace variant: default (OpenTelemetry through the global no-op tracer),
 *                                      # no-otel (otel: false), file (also a JSON lines file), prompts (file + prompt snapshots)
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createLoop,
  defineTool,
  evaluators,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type TraceOptions,
} from 'loopstate';

// Two history lengths side by side: flat per-step overhead shows that work does not grow with history.
const historyLengths = (process.argv[2] ?? '50,400').split(',').map(Number);
const stepsPerSide = Number(process.argv[3] ?? 8_000);
const traceVariant = process.argv[4] ?? 'default';
const traceFolder = mkdtempSync(join(tmpdir(), 'loopstate-bench-'));
const traceOption = (): TraceOptions | undefined => {
  switch (traceVariant) {
    case 'default':
      return undefined;
    case 'no-otel':
      return { otel: false };
    case 'file':
      return { file: join(traceFolder, 'bench.jsonl') };
    case 'prompts':
      return { file: join(traceFolder, 'bench.jsonl'), prompts: true };
    default:
      throw new Error(`unknown trace variant ${traceVariant}: expected default, no-otel, file or prompts`);
  }
};
/** A model with no latency: `steps - 1` tool calls with fresh arguments, then a final JSON answer. */
function instantModel(steps: number): Model & { reset(): void } {
  let call = 0;
  return {
    id: 'scripted',
    reset() {
      call = 0;
    },
    async generate(_request: ModelRequest): Promise<ModelResponse> {
      call++;
      const usage = { inputTokens: 50, outputTokens: 10 };
      if (call < steps) {
        return { text: null, toolCalls: [{ id: `c${call}`, name: 'lookup', arguments: `{"key":"k${call}"}` }], usage };
      }
      return { text: '{"done":true}', toolCalls: [], usage };
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

async function handWrittenRun(model: Model): Promise<number> {
  const messages: ModelRequest['messages'][number][] = [{ role: 'user', content: 'go' }];
  const signal = new AbortController().signal;
  for (let step = 1; ; step++) {
    const response = await model.generate({ messages, tools: [lookup.spec], signal });
    messages.push({ role: 'assistant', content: response.text, toolCalls: response.toolCalls });
    if (response.toolCalls.length === 0) {
      JSON.parse(response.text ?? '');
      return step;
    }
    for (const call of response.toolCalls) {
      const args = lookup.input.parse(JSON.parse(call.arguments));
      messages.push({
        role: 'tool',
        toolCallId: call.id,
        content: String(await lookup.execute(args, { signal, idempotencyKey: call.id, runId: 'r', callId: call.id })),
      });
    }
  }
}

async function measure(run: () => Promise<number>, runs: number): Promise<number> {
  for (let warmup = 0; warmup < Math.max(2, runs / 10); warmup++) await run();
  const started = performance.now();
  let steps = 0;
  for (let index = 0; index < runs; index++) steps += await run();
  return ((performance.now() - started) * 1000) / steps;
}

console.log(
  `loopstate step overhead (Node ${process.version}); every guard, no-progress detection and the in-memory trace on; trace variant: ${traceVariant}`,
);
console.log('steps/run   hand-written   loopstate   overhead   ratio');
for (const stepsPerRun of historyLengths) {
  const runs = Math.max(5, Math.round(stepsPerSide / stepsPerRun));
  const model = instantModel(stepsPerRun);
  const loop = createLoop({
    model,
    tools: [lookup],
    evaluate: [evaluators.json()],
    limits: {
      maxSteps: stepsPerRun,
      maxInputTokens: 1e12,
      maxOutputTokens: 1e12,
      maxCostUsd: 1e6,
      deadlineMs: 600_000,
    },
    noProgress: { planStall: stepsPerRun + 1 },
    trace: traceOption(),
  });
  const baseline = await measure(async () => {
    model.reset();
    return handWrittenRun(model);
  }, runs);
  const engine = await measure(async () => {
    model.reset();
    const result = await loop.run({ goal: 'go' });
    if (result.stopReason !== 'completed')
      throw new Error(`benchmark run stopped with ${result.stopReason}: ${result.detail}`);
    return result.steps;
  }, runs);
  const cells = [
    String(stepsPerRun).padStart(9),
    `${baseline.toFixed(2)} µs`.padStart(14),
    `${engine.toFixed(2)} µs`.padStart(11),
    `${(engine - baseline).toFixed(2)} µs`.padStart(10),
    `${(engine / baseline).toFixed(1)}x`.padStart(7),
  ];
  console.log(cells.join(' '));
}
rmSync(traceFolder, { recursive: true, force: true });
