/**
 * Micro-benchmark: engine overhead per step, loopstate against a hand-written loop doing the
 * same model and tool work, side by side in one process. Every guard, no-progress detection
 * and the in-memory trace are on. The target (issue 2) is <= 15 µs of overhead per step.
 *
 *   npm run bench            # defaults: 200 steps per run, 40 runs per side
 *   npm run bench -- 500 20  # steps per run, runs per side
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { createLoop, defineTool, evaluators, type Model, type ModelRequest, type ModelResponse } from '../src/index.js';

const stepsPerRun = Number(process.argv[2] ?? 200);
const runsPerSide = Number(process.argv[3] ?? 40);

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
      messages.push({ role: 'tool', toolCallId: call.id, content: String(await lookup.execute(args, { signal, idempotencyKey: call.id, runId: 'r', callId: call.id })) });
    }
  }
}

async function measure(label: string, run: () => Promise<number>): Promise<number> {
  for (let warmup = 0; warmup < 5; warmup++) await run();
  const started = performance.now();
  let steps = 0;
  for (let index = 0; index < runsPerSide; index++) steps += await run();
  const perStepUs = ((performance.now() - started) * 1000) / steps;
  console.log(`${label.padEnd(14)} ${perStepUs.toFixed(2).padStart(8)} µs/step  (${steps} steps)`);
  return perStepUs;
}

const model = instantModel(stepsPerRun);
const loop = createLoop({
  model,
  tools: [lookup],
  evaluate: [evaluators.json()],
  limits: { maxSteps: stepsPerRun, maxInputTokens: 1e9, maxOutputTokens: 1e9, maxCostUsd: 1e6, deadlineMs: 600_000 },
  noProgress: { planStall: stepsPerRun + 1 },
});

console.log(`loopstate step overhead: ${stepsPerRun} steps per run, ${runsPerSide} runs per side (Node ${process.version})`);
const baseline = await measure('hand-written', async () => {
  model.reset();
  return handWrittenRun(model);
});
const engine = await measure('loopstate', async () => {
  model.reset();
  const result = await loop.run({ goal: 'go' });
  if (result.stopReason !== 'completed') throw new Error(`benchmark run stopped with ${result.stopReason}: ${result.detail}`);
  return result.steps;
});
console.log(`overhead       ${(engine - baseline).toFixed(2).padStart(8)} µs/step  (ratio ${(engine / baseline).toFixed(2)}x)`);
