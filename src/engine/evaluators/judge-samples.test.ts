import { describe, expect, it } from 'vitest';
import { combineJudgeSamples, type JudgeSampleOptions } from './judge-samples.js';
import type { EvaluationResult } from './types.js';

const sample = (passed: boolean, reason: string, score?: number): EvaluationResult => ({
  passed,
  reason,
  parsed: 'out',
  ...(score === undefined ? {} : { score }),
});
const majority: JudgeSampleOptions = { aggregate: 'majority', threshold: 0.5, reviewOnSplit: false };

describe('combineJudgeSamples', () => {
  it('majority: more than half must pass (2 of 3 does, 2 of 4 does not)', () => {
    expect(combineJudgeSamples([sample(true, 'a'), sample(false, 'b'), sample(true, 'c')], majority)).toMatchObject({
      passed: true,
      reason: '2 of 3 judge samples passed: a',
    });
    const tie = combineJudgeSamples(
      [sample(true, 'a'), sample(false, 'vague'), sample(true, 'c'), sample(false, 'vague')],
      majority,
    );
    expect(tie).toMatchObject({ passed: false, reason: '2 of 4 judge samples passed: vague' });
  });

  it('mean: scores averaged against the threshold; a verdict without a score counts 1 or 0', () => {
    const mean = { ...majority, aggregate: 'mean' as const };
    const verdicts = [sample(true, 'a', 0.9), sample(false, 'b', 0.2), sample(true, 'c')];
    const passing = combineJudgeSamples(verdicts, { ...mean, threshold: 0.69 });
    expect(passing.passed).toBe(true);
    expect(passing.score).toBeCloseTo(0.7, 12);
    expect(combineJudgeSamples(verdicts, { ...mean, threshold: 0.71 })).toMatchObject({
      passed: false,
      reason: '2 of 3 judge samples passed, mean score 0.7: b',
    });
  });

  it('reviewOnSplit: any disagreement asks a person; unanimity decides alone', () => {
    const split = combineJudgeSamples([sample(true, 'ok'), sample(false, 'rude'), sample(false, 'rude')], {
      ...majority,
      reviewOnSplit: true,
    });
    expect(split).toMatchObject({
      passed: false,
      needsReview: true,
      reason: 'the judge samples disagree (1 of 3 judge samples passed); against: rude',
    });
    expect(
      combineJudgeSamples([sample(false, 'rude'), sample(false, 'rude')], { ...majority, reviewOnSplit: true }),
    ).not.toHaveProperty('needsReview');
  });
});
