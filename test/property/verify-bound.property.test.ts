/**
 * What `loopstate verify` reports is an upper bound on what runs really do: for random small loops (transport
 * attempts per call, a run-wide retry cap or none, tasks that stop or continue, an LLM judge, context summaries),
 * real runs through `createLoop` — a scripted model that fails transiently, answers, calls a tool or replies
 * empty as the choices say, a judge that fails and grades the same way — never make more model calls than the
 * report's worst case, and that figure never exceeds the bound the formula gives.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CONTEXT_SUMMARY_PROMPT } from '../../src/engine/prompts.js';
import { createLoop, defineTool, evaluators, type LoopConfig, type ModelRequest } from 'loopstate';
import { loopConfigOf } from '../../src/engine/loop.js';
import {
  emptyReply,
  modelError,
  reply,
  scriptedModel,
  toolCall,
  virtualClock,
  type ScriptStep,
} from 'loopstate/testing';
import { verifyLoopConfig } from '../../src/tooling/verify/verify-loop.js';
import { modelCallBound } from '../../src/tooling/verify/worst-case.js';
import { verifyModelOf } from '../../src/tooling/verify/verify-model.js';

const shape = fc.record({
  maxSteps: fc.integer({ min: 1, max: 4 }),
  maxTransportAttempts: fc.integer({ min: 1, max: 3 }),
  maxTransportRetries: fc.oneof(fc.constant(Infinity), fc.integer({ min: 0, max: 3 })),
  maxRetries: fc.integer({ min: 0, max: 2 }),
  tasks: fc.array(fc.constantFrom('stop' as const, 'continue' as const), { minLength: 1, maxLength: 2 }),
  judge: fc.boolean(),
  summarize: fc.boolean(),
});

type Shape = typeof shape extends fc.Arbitrary<infer T> ? T : never;

const isSummary = (request: ModelRequest) => request.messages[0]?.content === CONTEXT_SUMMARY_PROMPT;

/** The same step for every call: what it does comes from the next choice, cycled. */
function chooser(choices: readonly number[]): () => number {
  let index = 0;
  return () => choices[index++ % choices.length] ?? 0;
}

function loopOf(loopShape: Shape, choices: readonly number[]): LoopConfig {
  const next = chooser(choices);
  const lookup = defineTool({
    name: 'lookup',
    description: 'Look a record up',
    input: z.object({ id: z.string() }),
    access: 'read',
    execute: ({ id }) => ({ id, body: `${id} `.repeat(200) }),
  });
  let lookups = 0;
  const step: ScriptStep = (request) => {
    if (isSummary(request)) return next() % 2 === 0 ? modelError({ status: 503 }) : reply('Looked some records up.');
    switch (next() % 5) {
      case 0:
        return modelError({ status: 503 });
      case 1:
        return toolCall('lookup', { id: `R-${++lookups}` });
      case 2:
        return emptyReply();
      default:
        return reply(next() % 2 === 0 ? 'done' : '');
    }
  };
  const judgeStep: ScriptStep = () =>
    next() % 3 === 0
      ? modelError({ status: 503 })
      : reply(`{"passed": ${next() % 2 === 0}, "reason": "r${next() % 2}"}`);
  const model = scriptedModel(Array.from({ length: 400 }, () => step));
  const judge = scriptedModel(
    Array.from({ length: 400 }, () => judgeStep),
    { id: 'scripted' },
  );
  const evaluate = [
    evaluators.rule((text: string) => text.length > 0, 'say something'),
    ...(loopShape.judge ? [evaluators.judge({ model: judge, criteria: 'fine' })] : []),
  ];
  return {
    model,
    tools: [lookup],
    evaluate,
    tasks: loopShape.tasks.map((onFailure, index) => ({ id: `t${index}`, prompt: `task ${index}`, onFailure })),
    limits: {
      maxSteps: loopShape.maxSteps,
      maxTransportAttempts: loopShape.maxTransportAttempts,
      maxTransportRetries: loopShape.maxTransportRetries,
      maxRetries: loopShape.maxRetries,
      maxCostUsd: Infinity,
    },
    ...(loopShape.summarize
      ? { context: { strategy: 'summarize' as const, maxInputTokensPerCall: 300, keepTurns: 1 } }
      : {}),
    clock: virtualClock(),
    random: () => 0,
  };
}

describe('verify bounds real runs (property-based)', () => {
  it('no run makes more model calls than the reported worst case, nor the report more than the formula', async () => {
    let runs = 0;
    let reachedReported = 0;
    await fc.assert(
      fc.asyncProperty(
        shape,
        fc.array(fc.array(fc.nat(), { minLength: 1, maxLength: 40 }), { minLength: 4, maxLength: 4 }),
        async (loopShape, runChoices) => {
          const config = loopConfigOf(createLoop(loopOf(loopShape, [0])));
          if (config === undefined) throw new Error('no resolved config');
          const report = verifyLoopConfig(config);
          const reported = report.worstCase.modelCalls.value;
          expect(reported).not.toBeNull();
          const bound = modelCallBound(verifyModelOf(config)).value;
          expect(reported).toBeLessThanOrEqual(bound);
          for (const choices of runChoices) {
            const result = await createLoop(loopOf(loopShape, choices)).run({ goal: 'Look records up, then answer.' });
            runs += 1;
            if (result.usage.modelCalls === reported) reachedReported += 1;
            expect(result.usage.modelCalls, `${result.stopReason}: ${result.detail}`).toBeLessThanOrEqual(
              reported ?? 0,
            );
          }
        },
      ),
      { numRuns: 60 },
    );
    console.log(`[property] verify bound: ${runs} real runs, ${reachedReported} of them at the reported worst case`);
  }, 120_000);
});
