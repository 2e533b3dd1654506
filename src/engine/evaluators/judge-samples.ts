/**
 * One verdict of several judge samples: a majority vote or a mean score, and a split vote handed to a
 * person when the judge asks for it (`reviewOnSplit`). Pure: the samples were paid for and counted already.
 */
import type { EvaluationResult } from './types.js';

/**
 * How a judge's samples make one verdict: `'majority'` passes when more than half passed; `'mean'` passes
 * when the mean score reaches the threshold (a verdict without a score counts 1 if it passed, else 0).
 * @example
 * const aggregate: JudgeAggregate = 'mean';
 */
export type JudgeAggregate = 'majority' | 'mean';

export interface JudgeSampleOptions {
  aggregate: JudgeAggregate;
  threshold: number;
  reviewOnSplit: boolean;
}

/**
 * The samples' one verdict. A failure's reason is every failing sample's distinct reason (each says what to
 * fix); a split vote with `reviewOnSplit` asks a person, its reason naming the votes.
 * @example
 * combineJudgeSamples(verdicts, { aggregate: 'majority', threshold: 0.5, reviewOnSplit: false }).passed
 */
export function combineJudgeSamples<Parsed>(
  verdicts: readonly EvaluationResult<Parsed>[],
  options: JudgeSampleOptions,
): EvaluationResult<Parsed> {
  const [first] = verdicts;
  if (first === undefined) throw new Error('a judge combined no samples');
  const passes = verdicts.filter((verdict) => verdict.passed).length;
  const failures = verdicts.length - passes;
  const votes = `${passes} of ${verdicts.length} judge samples passed`;
  const scores = verdicts.map((verdict) => verdict.score ?? (verdict.passed ? 1 : 0));
  const mean = scores.reduce((sum, score) => sum + score, 0) / scores.length;
  const tally = options.aggregate === 'mean' ? `${votes}, mean score ${round(mean)}` : votes;
  const distinct = (passed: boolean) => [
    ...new Set(verdicts.filter((verdict) => verdict.passed === passed).map((verdict) => verdict.reason)),
  ];
  if (options.reviewOnSplit && passes > 0 && failures > 0) {
    return {
      passed: false,
      needsReview: true,
      reason: `the judge samples disagree (${tally}); against: ${distinct(false).join(' | ')}`,
      parsed: first.parsed,
      score: mean,
    };
  }
  const passed = options.aggregate === 'mean' ? mean >= options.threshold : passes * 2 > verdicts.length;
  return {
    passed,
    reason: passed
      ? `${tally}: ${distinct(true)[0] ?? 'passed'}`
      : `${tally}: ${distinct(false).join(' | ') || 'no reason given'}`,
    parsed: first.parsed,
    score: mean,
  };
}

const round = (value: number) => Math.round(value * 1000) / 1000;
