/**
 * `result.output` and `result.rawOutput` through `createLoop`: parsed-or-null when a run stops
 * early, the evaluated value and its source text when it completes.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { evaluators } from 'loopstate';
import { reply, scriptedModel, toolCall } from 'loopstate/testing';
import { createTestLoop } from './helpers.js';

const GOAL = 'Total the order.';
const order = z.object({ total: z.number() });
const positiveTotal = evaluators.rule((value: { total: number }) => value.total > 0, 'total must be positive');

describe('result.output and result.rawOutput', () => {
  it('completed: output is the evaluated value, rawOutput the text it came from (prose and fence included)', async () => {
    const text = 'Here is the result:\n```json\n{"total": 3}\n```\nLet me know';
    const { loop } = createTestLoop({
      model: scriptedModel([reply(text)]),
      evaluate: [evaluators.schema(order), positiveTotal],
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', output: { total: 3 }, rawOutput: text });
  });

  it('a rule that keeps failing leaves the parsed last reply as output, not its text', async () => {
    const model = scriptedModel([reply('{"total": 0}'), reply('```json\n{"total": -1}\n```')]);
    const { loop } = createTestLoop({
      model,
      evaluate: [evaluators.schema(order), positiveTotal],
      limits: { maxRetries: 1 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'retries_exhausted',
      output: { total: -1 },
      rawOutput: '```json\n{"total": -1}\n```',
    });
  });

  it('a last reply that does not parse gives output null, even after an earlier reply parsed', async () => {
    const model = scriptedModel([reply('{"total": 0}'), reply('I could not compute it.')]);
    const { loop } = createTestLoop({
      model,
      evaluate: [evaluators.schema(order), positiveTotal],
      limits: { maxRetries: 1 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'retries_exhausted',
      output: null,
      rawOutput: 'I could not compute it.',
    });
  });

  it('a reply that was never evaluated (text beside a tool call) is rawOutput only', async () => {
    const model = scriptedModel([reply('{"total": 0}'), toolCall('missing_tool', {}, { text: '{"total": 5}' })]);
    const { loop } = createTestLoop({
      model,
      evaluate: [evaluators.schema(order), positiveTotal],
      limits: { maxSteps: 2 },
    });

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).not.toBe('completed');
    expect(result).toMatchObject({ output: null, rawOutput: '{"total": 5}' });
  });

  it('a run with no reply at all has both null', async () => {
    const controller = new AbortController();
    controller.abort();
    const { loop } = createTestLoop({ model: scriptedModel([]) });

    const result = await loop.run({ goal: GOAL, signal: controller.signal });

    expect(result).toMatchObject({ stopReason: 'cancelled', output: null, rawOutput: null });
  });
});
