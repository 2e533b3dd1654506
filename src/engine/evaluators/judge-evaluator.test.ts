import { describe, expect, it } from 'vitest';
import { ModelCallError } from '../../contracts/errors.js';
import { emptyReply, modelError, reply, scriptedModel, toolCall } from '../../testing/index.js';
import { JudgeVerdictError } from './judge-verdict-error.js';
import { judgeEvaluator } from './judge-evaluator.js';
import { JUDGE_INSTRUCTIONS } from '../prompts.js';
import type { EvaluationInput } from './types.js';

const criteria = 'The reply names the order id.';
const input = (output: string, signal = new AbortController().signal): EvaluationInput => ({
  output,
  parsed: { kept: true },
  signal,
  taskId: 'main',
});
const usage = { inputTokens: 300, outputTokens: 15 };

describe('evaluators.judge', () => {
  it('passes on a passing verdict, keeping parsed and reporting the judge usage and model', async () => {
    const model = scriptedModel([reply('{"passed": true, "reason": "mentions O-101"}', { usage })], {
      id: 'gpt-4.1-mini',
    });
    const result = await judgeEvaluator({ model, criteria }).evaluate(input('Order O-101 shipped.'));
    expect(result).toEqual({
      passed: true,
      reason: 'mentions O-101',
      parsed: { kept: true },
      usage,
      modelId: 'gpt-4.1-mini',
    });
  });

  it("fails with the judge's reason on a failing verdict", async () => {
    const model = scriptedModel([reply('{"passed": false, "reason": "no order id"}', { usage })]);
    expect(await judgeEvaluator({ model, criteria }).evaluate(input('It shipped.'))).toMatchObject({
      passed: false,
      reason: 'no order id',
      usage,
    });
  });

  it('accepts a fenced verdict', async () => {
    const model = scriptedModel([reply('```json\n{"passed": true, "reason": "ok"}\n```')]);
    expect((await judgeEvaluator({ model, criteria }).evaluate(input('x'))).passed).toBe(true);
  });

  it('sends the instructions, the criteria and the raw output, no tools, and the run signal', async () => {
    const model = scriptedModel([reply('{"passed": true, "reason": "ok"}')]);
    const controller = new AbortController();
    await judgeEvaluator({ model, criteria }).evaluate(input('Order O-101 shipped.', controller.signal));
    const [request] = model.calls;
    expect(request?.messages).toEqual([
      { role: 'system', content: JUDGE_INSTRUCTIONS },
      {
        role: 'user',
        content: 'Criteria:\nThe reply names the order id.\n\n<output>\nOrder O-101 shipped.\n</output>',
      },
    ]);
    expect(request?.tools).toEqual([]);
    expect(request?.signal).toBe(controller.signal);
  });

  it('uses custom instructions', async () => {
    const model = scriptedModel([reply('{"passed": true, "reason": "ok"}')]);
    await judgeEvaluator({ model, criteria, instructions: 'Grade kindly.' }).evaluate(input('x'));
    expect(model.calls[0]?.messages[0]).toEqual({ role: 'system', content: 'Grade kindly.' });
  });

  it.each([
    [
      'prose instead of JSON',
      reply('Looks good to me!', { usage }),
      /^the judge reply was unparseable: Unexpected token/,
    ],
    [
      'a non-boolean passed',
      reply('{"passed": "yes", "reason": "fine"}', { usage }),
      /^the judge reply was unparseable: expected \{"passed": boolean, "reason": string\}: passed: Invalid input: expected boolean, received string$/,
    ],
    [
      'a missing reason',
      reply('{"passed": true}', { usage }),
      /unparseable: .*reason: Invalid input: expected string, received undefined$/,
    ],
    ['no text at all', emptyReply({ usage }), /^the judge reply was unparseable: the judge replied with no text$/],
    [
      'a tool call',
      toolCall('lookup', {}, { usage }),
      /^the judge reply was unparseable: the judge replied with no text$/,
    ],
  ])(
    'throws JudgeVerdictError on %s (no verdict is never a verdict), carrying the usage spent',
    async (_label, step, reason) => {
      const model = scriptedModel([step]);
      const error = await Promise.resolve()
        .then(() => judgeEvaluator({ model, criteria }).evaluate(input('x')))
        .then(
          () => null,
          (thrown: unknown) => thrown,
        );
      expect(error).toBeInstanceOf(JudgeVerdictError);
      const verdictError = error as JudgeVerdictError;
      expect(verdictError.code).toBe('judge_invalid_verdict');
      expect(verdictError.message.replace(/^LLM judge "judge" gave no usable verdict: /, '')).toMatch(reason);
      expect(verdictError.usage).toEqual(usage);
    },
  );

  it('fills in a reason when the judge gives an empty one', async () => {
    const failing = scriptedModel([reply('{"passed": false, "reason": "  "}')]);
    expect(await judgeEvaluator({ model: failing, criteria }).evaluate(input('x'))).toMatchObject({
      passed: false,
      reason: 'the judge rejected the output without giving a reason',
    });
  });

  it('lets a failed model call propagate (runEvaluators reports it)', async () => {
    const model = scriptedModel([modelError({ status: 503 })]);
    await expect(judgeEvaluator({ model, criteria }).evaluate(input('x'))).rejects.toBeInstanceOf(ModelCallError);
  });

  it('is a judge evaluator named judge unless renamed', () => {
    const model = scriptedModel([]);
    expect(judgeEvaluator({ model, criteria })).toMatchObject({ name: 'judge', kind: 'judge' });
    expect(judgeEvaluator({ model, criteria, name: 'tone-judge' }).name).toBe('tone-judge');
  });
});
