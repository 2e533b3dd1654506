import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { reply, scriptedModel } from '../../testing/index.js';
import { evaluators, runEvaluators } from './index.js';
import type { EvaluationInput, Evaluator } from './types.js';

const options = (output: string, signal = new AbortController().signal) => ({ output, signal, taskId: 'task-1' });

/** An evaluator that records what it saw and answers with a fixed verdict. */
function probe(name: string, passed: boolean, parsed?: unknown): Evaluator & { seen: EvaluationInput[] } {
  const seen: EvaluationInput[] = [];
  return {
    name,
    kind: 'rule',
    seen,
    evaluate(input) {
      seen.push(input);
      return {
        passed,
        reason: `${name} ${passed ? 'ok' : 'failed'}`,
        parsed: parsed === undefined ? input.parsed : parsed,
      };
    },
  };
}

describe('runEvaluators', () => {
  it('passes an empty list with the output as parsed and zero usage', async () => {
    expect(await runEvaluators([], options('plain text'))).toEqual({
      passed: true,
      reason: 'passed',
      parsed: 'plain text',
      usage: { inputTokens: 0, outputTokens: 0 },
      usageByModel: {},
      failedEvaluator: null,
      review: null,
      formatted: { value: 'plain text' },
    });
  });

  it('reports what the format layer parsed even when a later rule fails, and null when a format check fails or never ran', async () => {
    const list = [
      evaluators.json(),
      evaluators.schema(z.object({ total: z.number() }).transform(({ total }) => ({ total, cents: total * 100 }))),
      evaluators.rule((order: { total: number }) => order.total > 0, 'total must be positive'),
    ];
    expect(await runEvaluators(list, options('{"total": 0}'))).toMatchObject({
      passed: false,
      formatted: { value: { total: 0, cents: 0 } },
    });
    expect(await runEvaluators(list, options('{"total": "0"}'))).toMatchObject({
      passed: false,
      failedEvaluator: 'schema',
      formatted: null,
    });
    expect(await runEvaluators(list, options('not json'))).toMatchObject({
      passed: false,
      failedEvaluator: 'json',
      formatted: null,
    });
    const ruleFirst = [probe('early', false), evaluators.json()];
    expect(await runEvaluators(ruleFirst, options('{"a": 1}'))).toMatchObject({
      failedEvaluator: 'early',
      formatted: null,
    });
    expect(await runEvaluators([probe('only-rule', false)], options('text'))).toMatchObject({
      passed: false,
      formatted: { value: 'text' },
    });
  });

  it('hands each evaluator what the previous one parsed, plus the output, signal and task id', async () => {
    const controller = new AbortController();
    const first = probe('first', true, { step: 1 });
    const second = probe('second', true);
    const summary = await runEvaluators([first, second], options('raw', controller.signal));
    expect(first.seen[0]).toEqual({ output: 'raw', parsed: 'raw', signal: controller.signal, taskId: 'task-1' });
    expect(second.seen[0]?.parsed).toEqual({ step: 1 });
    expect(summary).toMatchObject({ passed: true, reason: 'passed', parsed: { step: 1 }, failedEvaluator: null });
  });

  it("reads the caller's signal through getters every call shares, and sees an abort that comes between evaluators", async () => {
    const controller = new AbortController();
    const first: Evaluator = {
      name: 'aborts',
      kind: 'rule',
      evaluate(input) {
        controller.abort(new Error('stop after the first'));
        return { passed: true, reason: 'ok', parsed: input.parsed };
      },
    };
    const [seenA, seenB] = [probe('a', true), probe('b', true)];
    await runEvaluators([seenA], options('x'));
    await runEvaluators([seenB], options('y'));
    // What an input reads its signal from (the hidden source): no getter of its own per call (a closure over the
    // call on V8's map of the object), one on a shared prototype.
    const sourceOf = (input: EvaluationInput) => {
      const [key] = Object.getOwnPropertySymbols(input);
      return (input as unknown as Record<symbol, object>)[key as symbol] as object;
    };
    const [a, b] = [sourceOf(seenA.seen[0] as EvaluationInput), sourceOf(seenB.seen[0] as EvaluationInput)];
    expect(Object.getOwnPropertyDescriptor(a, 'aborted')).toBeUndefined();
    expect(Object.getOwnPropertyDescriptor(a, 'reason')).toBeUndefined();
    expect(Object.getPrototypeOf(a)).toBe(Object.getPrototypeOf(b));
    const later = probe('later', true);
    await expect(runEvaluators([first, later], options('z', controller.signal))).rejects.toThrow(
      'stop after the first',
    );
    expect(later.seen).toHaveLength(0);
  });

  it('stops at the first failure: its reason and name win and later evaluators do not run', async () => {
    const later = probe('later', true);
    const summary = await runEvaluators(
      [probe('first', true), probe('breaks', false, { partial: true }), later],
      options('x'),
    );
    expect(summary).toMatchObject({
      passed: false,
      reason: 'breaks failed',
      parsed: { partial: true },
      failedEvaluator: 'breaks',
    });
    expect(later.seen).toHaveLength(0);
  });

  it('chains the built-in layers: json parses, schema validates, rule checks the parsed value', async () => {
    const list = [
      evaluators.json({ requiredFields: ['total'] }),
      evaluators.schema(z.object({ total: z.number() })),
      evaluators.rule((order: { total: number }) => order.total > 0, 'total must be positive'),
    ];
    expect(await runEvaluators(list, options('```json\n{"total": 5}\n```'))).toMatchObject({
      passed: true,
      parsed: { total: 5 },
    });
    expect(await runEvaluators(list, options('{"total": 0}'))).toMatchObject({
      passed: false,
      failedEvaluator: 'rule: total must be positive',
      reason: 'total must be positive',
    });
    expect(await runEvaluators(list, options('{"sum": 0}'))).toMatchObject({
      failedEvaluator: 'json',
      reason: 'missing required fields: total',
    });
  });

  it('reports a throwing evaluator as a failure with its message', async () => {
    const throwing: Evaluator = {
      name: 'custom',
      kind: 'rule',
      evaluate() {
        throw new Error('lookup table missing');
      },
    };
    const after = probe('after', true);
    const summary = await runEvaluators([throwing, after], options('x'));
    expect(summary).toMatchObject({
      passed: false,
      reason: 'evaluator "custom" threw: lookup table missing',
      failedEvaluator: 'custom',
      parsed: 'x',
    });
    expect(after.seen).toHaveLength(0);
  });

  it('fails an evaluator that returns a malformed verdict instead of passing it', async () => {
    const malformed = { name: 'loose', kind: 'rule', evaluate: () => ({ passed: 'yes' }) } as unknown as Evaluator;
    expect(await runEvaluators([malformed], options('x'))).toMatchObject({
      passed: false,
      failedEvaluator: 'loose',
      reason: 'evaluator "loose" returned an invalid result (expected { passed, reason, parsed })',
    });
  });

  it('sums judge usage across judges and splits it by model', async () => {
    const cheap = scriptedModel(
      [reply('{"passed": true, "reason": "ok"}', { usage: { inputTokens: 100, outputTokens: 10 } })],
      { id: 'gpt-4.1-nano' },
    );
    const strong = scriptedModel(
      [reply('{"passed": true, "reason": "ok"}', { usage: { inputTokens: 200, outputTokens: 20 } })],
      { id: 'gpt-4.1' },
    );
    const again = scriptedModel(
      [reply('{"passed": false, "reason": "too long"}', { usage: { inputTokens: 1, outputTokens: 2 } })],
      { id: 'gpt-4.1-nano' },
    );
    const list = [
      evaluators.rule(() => true, 'always'),
      evaluators.judge({ model: cheap, criteria: 'a' }),
      evaluators.judge({ model: strong, criteria: 'b' }),
      evaluators.judge({ model: again, criteria: 'c', name: 'length-judge' }),
    ];
    const summary = await runEvaluators(list, options('text'));
    expect(summary).toMatchObject({ passed: false, reason: 'too long', failedEvaluator: 'length-judge' });
    expect(summary.usage).toEqual({ inputTokens: 301, outputTokens: 32 });
    expect(summary.usageByModel).toEqual({
      'gpt-4.1-nano': { inputTokens: 101, outputTokens: 12 },
      'gpt-4.1': { inputTokens: 200, outputTokens: 20 },
    });
  });

  it('does not run (or pay) a judge after a cheaper check failed', async () => {
    const judgeModel = scriptedModel([reply('{"passed": true, "reason": "ok"}')]);
    const summary = await runEvaluators(
      [evaluators.json(), evaluators.judge({ model: judgeModel, criteria: 'x' })],
      options('not json'),
    );
    expect(summary).toMatchObject({
      passed: false,
      failedEvaluator: 'json',
      usage: { inputTokens: 0, outputTokens: 0 },
    });
    expect(judgeModel.calls).toHaveLength(0);
  });

  it('rejects with the abort reason when the signal is already aborted, running nothing', async () => {
    const controller = new AbortController();
    controller.abort(new Error('cancelled by user'));
    const first = probe('first', true);
    await expect(runEvaluators([first], options('x', controller.signal))).rejects.toThrow('cancelled by user');
    expect(first.seen).toHaveLength(0);
  });

  it('rethrows an error raised because the run was cancelled mid-evaluation rather than calling it a verdict', async () => {
    const controller = new AbortController();
    const cancelling: Evaluator = {
      name: 'slow',
      kind: 'judge',
      evaluate({ signal }) {
        controller.abort();
        signal.throwIfAborted();
        return { passed: true, reason: 'unreachable', parsed: null };
      },
    };
    await expect(
      runEvaluators([evaluators.rule(() => true, 'r'), cancelling], options('x', controller.signal)),
    ).rejects.toMatchObject({ name: 'AbortError' });
  });
});

describe('runEvaluators rethrow option', () => {
  const throwing = (error: Error): Evaluator => ({
    name: 'flaky-judge',
    kind: 'judge',
    evaluate: () => {
      throw error;
    },
  });

  it('propagates the errors it selects, and still turns the others into failed verdicts', async () => {
    const transient = new Error('429');
    const options = {
      output: '{}',
      signal: new AbortController().signal,
      taskId: 'main',
      rethrow: (error: unknown) => error === transient,
    };
    await expect(runEvaluators([throwing(transient)], options)).rejects.toBe(transient);
    const other = await runEvaluators([throwing(new Error('bug'))], options);
    expect(other).toMatchObject({
      passed: false,
      reason: 'evaluator "flaky-judge" threw: bug',
      failedEvaluator: 'flaky-judge',
    });
  });
});
