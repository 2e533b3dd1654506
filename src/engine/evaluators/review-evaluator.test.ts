import { describe, expect, it } from 'vitest';
import { LoopConfigError } from '../../contracts/errors.js';
import { reviewEvaluator } from './review-evaluator.js';
import type { EvaluationInput } from './types.js';

const input = <Parsed>(parsed: Parsed): EvaluationInput<Parsed> => ({
  output: JSON.stringify(parsed),
  parsed,
  signal: new AbortController().signal,
  taskId: 'refund',
});

describe('evaluators.review', () => {
  it('asks for a person when `when` is true, passes the output on when false; `when` sees parsed, text and task', async () => {
    const seen: unknown[] = [];
    const review = reviewEvaluator<{ amount: number }>({
      when: (refund, context) => {
        seen.push([refund, context]);
        return refund.amount > 100;
      },
      reason: 'refunds over 100 need a person',
    });
    expect(review).toMatchObject({ name: 'review', kind: 'rule', mayRequestReview: true });
    expect(await review.evaluate(input({ amount: 250 }))).toEqual({
      passed: false,
      needsReview: true,
      reason: 'refunds over 100 need a person',
      parsed: { amount: 250 },
    });
    expect(await review.evaluate(input({ amount: 50 }))).toMatchObject({ passed: true, parsed: { amount: 50 } });
    expect(seen[0]).toEqual([{ amount: 250 }, { output: '{"amount":250}', taskId: 'refund' }]);
  });

  it('fails, never asks nor passes by accident, when `when` throws or returns a non-boolean', async () => {
    const throwing = reviewEvaluator({
      when: () => {
        throw new Error('no price table');
      },
    });
    expect(await throwing.evaluate(input({}))).toMatchObject({
      passed: false,
      reason: 'review: when() threw: no price table',
    });
    expect((await throwing.evaluate(input({}))).needsReview).toBeUndefined();
    const sloppy = reviewEvaluator({ when: (() => 'yes') as never, name: 'manager' });
    expect(await sloppy.evaluate(input({}))).toMatchObject({
      passed: false,
      reason: 'manager: when() returned string, expected a boolean',
    });
  });

  it('refuses a missing `when` or an empty reason with the field named', () => {
    expect(() => reviewEvaluator({} as never)).toThrow(LoopConfigError);
    expect(() => reviewEvaluator({ when: () => true, reason: ' ' })).toThrow(/review\.reason/);
  });
});
