/**
 * loopstate, imported from the repository's build (`dist/src/index.js` at the project root, built
 * with `npx tsc -p tsconfig.build.json`), so the suite measures whatever engine is checked out. Every
 * guard, no-progress detection and the in-memory trace are on; the limits are set so that nothing
 * stops a run early.
 */
import { z } from 'zod';
import { decide, lookupValue, sleep, TOOL_DESCRIPTION, TOOL_NAME, USAGE } from '../workload.mjs';

export const LOOPSTATE_ENTRY = new URL('../../../dist/src/index.js', import.meta.url);

/** The suite's loop on the shared workload; `store` (any loopstate `Store`) makes its runs durable. */
export async function createBenchLoop({ steps, latencyMs, store }) {
  const { createLoop, defineTool, evaluators } = await import(LOOPSTATE_ENTRY.href);
  const model = {
    id: 'bench-instant',
    async generate(request) {
      if (latencyMs > 0) await sleep(latencyMs);
      const call = decide(request.messages[request.messages.length - 1].content, steps);
      if (call === null) return { text: '{"done":true}', toolCalls: [], usage: USAGE };
      return { text: null, toolCalls: [{ id: call.callId, name: TOOL_NAME, arguments: call.arguments }], usage: USAGE };
    },
  };
  const lookup = defineTool({
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    input: z.object({ key: z.string() }),
    access: 'read',
    execute: ({ key }) => lookupValue(key),
  });
  return createLoop({
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
    ...(store ? { store } : {}),
  });
}

/** Fails unless the run completed in exactly `steps` steps and kept its trace. */
export function checkLoopResult(result, steps) {
  if (result.stopReason !== 'completed')
    throw new Error(`loopstate run stopped with ${result.stopReason}: ${result.detail}`);
  if (result.steps !== steps) throw new Error(`loopstate run took ${result.steps} steps, expected ${steps}`);
  if (!Array.isArray(result.trace) || result.trace.length === 0)
    throw new Error('loopstate run kept no in-memory trace');
}

export async function createRunner({ steps, latencyMs }) {
  const loop = await createBenchLoop({ steps, latencyMs });
  return {
    async run() {
      const result = await loop.run({ goal: 'go' });
      checkLoopResult(result, steps);
      return result.output;
    },
  };
}
