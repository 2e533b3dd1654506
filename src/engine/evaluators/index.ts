/**
 * Evaluators: ordered layers, first failure wins — format, business rules, optional judge.
 */
import { jsonEvaluator } from './json-evaluator.js';
import { judgeEvaluator } from './judge-evaluator.js';
import { ruleEvaluator } from './rule-evaluator.js';
import { schemaEvaluator } from './schema-evaluator.js';
import { chainEvaluators } from './evaluator-chain.js';
import { reviewEvaluator } from './review-evaluator.js';

/**
 * Builders for the built-in evaluators, in the order they usually run; `chain` lists them with
 * each one typed from the one before it.
 * @example
 * const evaluate = [
 *   evaluators.schema(z.object({ status: z.string(), eta: z.number() })),
 *   evaluators.rule((order: { eta: number }) => order.eta >= 0, 'eta must not be negative'),
 *   evaluators.judge({ model, criteria: 'The status is explained in plain words.', samples: 3, reviewOnSplit: true }),
 *   evaluators.review({ when: (order: { eta: number }) => order.eta > 30, reason: 'late deliveries are checked by a person' }),
 * ];
 */
export const evaluators = Object.freeze({
  json: jsonEvaluator,
  schema: schemaEvaluator,
  rule: ruleEvaluator,
  judge: judgeEvaluator,
  review: reviewEvaluator,
  chain: chainEvaluators,
});

export type { Evaluator, EvaluatorKind, EvaluationInput, EvaluationResult } from './types.js';
export type { JsonEvaluatorOptions } from './json-evaluator.js';
export type { EvaluateOption, EvaluatorOutput, EvaluatorsOutput, LoopOutput } from './evaluator-output.js';
export { evaluatorList } from './evaluator-output.js';
export type { SchemaEvaluatorOptions } from './schema-evaluator.js';
export type { RuleEvaluatorOptions, RulePredicate } from './rule-evaluator.js';
export type { JudgeEvaluatorOptions } from './judge-evaluator.js';
export type { JudgeAggregate } from './judge-samples.js';
export type { ReviewEvaluatorOptions, ReviewContext } from './review-evaluator.js';
export { JUDGE_INSTRUCTIONS, JUDGE_SCORED_INSTRUCTIONS } from '../prompts.js';
export { JudgeVerdictError } from './judge-verdict-error.js';
export { formatZodIssues } from './schema-evaluator.js';
export { runEvaluators } from './run-evaluators.js';
export type { EvaluationSummary, RunEvaluatorsOptions } from './run-evaluators.js';
export { validateEvaluators } from './validate-evaluators.js';
export { parseJsonOutput, unwrapJsonFence } from './parse-json-output.js';
