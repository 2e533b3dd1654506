import { describe, expect, it } from 'vitest';
import { ruleEvaluator } from './rule-evaluator.js';
import type { EvaluationInput, Evaluator } from './types.js';

const signal = new AbortController().signal;
const parsedInput = <Parsed>(parsed: Parsed): EvaluationInput<Parsed> => ({
  output: JSON.stringify(parsed),
  parsed,
  signal,
  taskId: 'main',
});

describe('evaluators.rule', () => {
  const positiveTotal = (order: { total: number }) => order.total > 0;

  it('passes when the predicate returns true and hands the parsed value on unchanged', async () => {
    const value = { total: 3 };
    const result = await ruleEvaluator(positiveTotal, 'total must be positive').evaluate(parsedInput(value));
    expect(result).toEqual({ passed: true, reason: 'rule passed: total must be positive', parsed: value });
    expect(result.parsed).toBe(value);
  });

  it('fails with the rule reason when the predicate returns false', async () => {
    const result = await ruleEvaluator(positiveTotal, 'total must be positive').evaluate(parsedInput({ total: 0 }));
    expect(result).toEqual({ passed: false, reason: 'total must be positive', parsed: { total: 0 } });
  });

  it('fails with the returned string instead of the rule reason', async () => {
    const rule = ruleEvaluator(
      (order: { total: number }) => order.total > 0 || `total is ${order.total}, must be > 0`,
      'total must be positive',
    );
    expect(await rule.evaluate(parsedInput({ total: -2 }))).toMatchObject({
      passed: false,
      reason: 'total is -2, must be > 0',
    });
  });

  it('falls back to the rule reason when the returned string is empty', async () => {
    expect(await ruleEvaluator(() => '', 'fallback').evaluate(parsedInput({}))).toMatchObject({
      passed: false,
      reason: 'fallback',
    });
  });

  it('turns a throwing predicate into a failure carrying the thrown message', async () => {
    // Typed as a plain Evaluator: the rule's parameter type is an assertion the run-time value can break.
    const rule: Evaluator = ruleEvaluator(
      (order: { items: unknown[] }) => order.items.length > 0,
      'the order has no items',
    );
    const result = await rule.evaluate(parsedInput({}));
    expect(result.passed).toBe(false);
    expect(result.reason).toMatch(/^the order has no items \(the rule threw: Cannot read properties of undefined/);
  });

  it('reports a thrown non-Error value too', async () => {
    const rule = ruleEvaluator(() => {
      throw 'plain string';
    }, 'checks');
    expect(await rule.evaluate(parsedInput({}))).toMatchObject({
      passed: false,
      reason: 'checks (the rule threw: plain string)',
    });
  });

  it('awaits async predicates, including rejections', async () => {
    expect(await ruleEvaluator(async () => true, 'r').evaluate(parsedInput({}))).toMatchObject({ passed: true });
    expect(await ruleEvaluator(async () => 'stock too low', 'r').evaluate(parsedInput({}))).toMatchObject({
      passed: false,
      reason: 'stock too low',
    });
    const rejecting = ruleEvaluator(async () => Promise.reject(new Error('db down')), 'r');
    expect(await rejecting.evaluate(parsedInput({}))).toMatchObject({
      passed: false,
      reason: 'r (the rule threw: db down)',
    });
  });

  it('fails a predicate that returns neither a boolean nor a string instead of passing it', async () => {
    const forgotReturn = ruleEvaluator((() => undefined) as unknown as () => boolean, 'must hold');
    expect(await forgotReturn.evaluate(parsedInput({}))).toMatchObject({
      passed: false,
      reason: 'must hold (the rule returned undefined, expected a boolean or a string)',
    });
    const truthyNumber = ruleEvaluator((() => 1) as unknown as () => boolean, 'must hold');
    expect((await truthyNumber.evaluate(parsedInput({}))).passed).toBe(false);
  });

  it('receives the raw text when no format evaluator ran', async () => {
    const rule = ruleEvaluator((text: string) => text.includes('O-101'), 'mention the order id');
    expect(
      await rule.evaluate({ output: 'Order O-101 shipped', parsed: 'Order O-101 shipped', signal, taskId: 't' }),
    ).toMatchObject({ passed: true });
  });

  it('is a rule evaluator named after its reason unless renamed', () => {
    expect(ruleEvaluator(() => true, 'total must be positive')).toMatchObject({
      name: 'rule: total must be positive',
      kind: 'rule',
    });
    expect(ruleEvaluator(() => true, 'x', { name: 'positive-total' }).name).toBe('positive-total');
  });
});
