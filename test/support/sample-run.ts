/**
 * A small but eventful run for the viewer and inspector tests: a rate-limited call retried after a
 * backoff, a tool round, an answer the schema rejects, a reflection, and an accepted answer. It runs
 * on a virtual clock (each model call takes 350 ms, the tool 120 ms), so its trace is the same every time.
 */
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import {
  createLoop,
  defineTool,
  evaluators,
  type LoopConfig,
  type Model,
  type RunResult,
  type TraceEvent,
} from 'loopstate';
import { modelError, reply, scriptedModel, toolCall, virtualClock, type VirtualClock } from 'loopstate/testing';

const MODEL_LATENCY_MS = 350;
const TOOL_LATENCY_MS = 120;

/** The scripted model, each call taking `MODEL_LATENCY_MS` of the virtual clock. */
function slowScriptedModel(clock: VirtualClock): Model {
  const model = scriptedModel(
    [
      modelError({ status: 429, retryAfterMs: 200 }),
      toolCall('get_order_status', { order_id: 'O-101' }, { usage: { inputTokens: 180, outputTokens: 24 } }),
      reply('Order O-101 has shipped.', { usage: { inputTokens: 260, outputTokens: 12 } }),
      reply('{"order_id":"O-101","status":"shipped"}', { usage: { inputTokens: 330, outputTokens: 20 } }),
    ],
    { id: 'gpt-4.1-mini' },
  );
  return {
    id: model.id,
    generate: async (request) => {
      clock.advance(MODEL_LATENCY_MS);
      return model.generate(request);
    },
  };
}

/** The sample loop's config; `extra` adds options such as `inspect` or `trace`. */
export function sampleLoopConfig(clock: VirtualClock, extra: Partial<LoopConfig> = {}): LoopConfig {
  const getOrderStatus = defineTool({
    name: 'get_order_status',
    description: 'Looks an order up by id',
    input: z.object({ order_id: z.string() }),
    access: 'read',
    execute: async ({ order_id }) => {
      clock.advance(TOOL_LATENCY_MS);
      return { order_id, status: 'shipped' };
    },
  });
  return {
    model: slowScriptedModel(clock),
    instructions: 'Answer with JSON {"order_id", "status"}.',
    tools: [getOrderStatus],
    evaluate: evaluators.schema(z.object({ order_id: z.string(), status: z.string() })),
    limits: { maxSteps: 6, maxRetries: 2, maxCostUsd: 0.01, deadlineMs: 60_000 },
    clock,
    random: () => 0.5,
    generateRunId: () => 'run-sample',
    ...extra,
  };
}

/** Runs the sample loop once; every trace event is also appended to `jsonlPath` as one JSON line. */
export async function writeSampleTrace(jsonlPath: string): Promise<RunResult> {
  const clock = virtualClock(1_767_225_600_000);
  const onEvent = (event: TraceEvent) => appendFileSync(jsonlPath, `${JSON.stringify(event)}\n`);
  return createLoop(sampleLoopConfig(clock, { trace: { onEvent } })).run({
    goal: 'What is the status of order O-101?',
  });
}
