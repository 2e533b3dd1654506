/**
 * `evaluators.review`: asks a person to review an output instead of passing or failing it, when a predicate
 * says so. The run stops with `needs_human` (unless a later evaluator fails the output), and
 * `loop.resume(runId, { review })` accepts the output or feeds the person's reason back.
 */
import { LoopConfigError } from '../../contracts/errors.js';
import { thrownMessage } from '../redaction/describe-thrown.js';
import type { Evaluator, EvaluationInput, EvaluationResult } from './types.js';

/**
 * What `when` sees besides the parsed output.
 * @example
 * const context: ReviewContext = { output: '{"refund": 250}', taskId: 'main' };
 */
export interface ReviewContext {
  /** The model's reply text, unchanged. */
  output: string;
  taskId: string;
}

/**
 * Options of `evaluators.review`.
 * @example
 * const options: ReviewEvaluatorOptions<{ refund: number }> = { when: (order) => order.refund > 100, reason: 'refunds over $100 need a person' };
 */
export interface ReviewEvaluatorOptions<Parsed = unknown> {
  /** True: a person must review this output. It receives what the evaluator before it parsed (or the text). */
  when: (output: Parsed, context: ReviewContext) => boolean | Promise<boolean>;
  /** Why a person is asked, shown in `pendingReview.reason`; default 'a person must review this output'. */
  reason?: string;
  /** Evaluator name in traces and in `pendingReview.evaluator`; defaults to `review`. */
  name?: string;
}

const DEFAULT_REVIEW_REASON = 'a person must review this output';

/**
 * Asks a person when `when` returns true; passes the output on otherwise. A `when` that throws, or returns
 * anything but a boolean, fails the output with that said (a person is never asked by accident, nor skipped).
 * @example
 * const evaluate = evaluators.chain(evaluators.schema(Refund), evaluators.review({ when: (refund) => refund.amount > 100, reason: 'refunds over $100 need a person' }));
 */
export function reviewEvaluator<Parsed = unknown>(options: ReviewEvaluatorOptions<Parsed>): Evaluator<Parsed, Parsed> {
  if (typeof options?.when !== 'function')
    throw new LoopConfigError({
      issues: [{ path: 'review.when', message: 'expected a function (output, context) => boolean' }],
    });
  if (options.reason !== undefined && (typeof options.reason !== 'string' || options.reason.trim() === ''))
    throw new LoopConfigError({ issues: [{ path: 'review.reason', message: 'expected a non-empty string' }] });
  const reason = options.reason ?? DEFAULT_REVIEW_REASON;
  const name = options.name ?? 'review';
  return {
    name,
    kind: 'rule',
    mayRequestReview: true,
    async evaluate(input: EvaluationInput<Parsed>): Promise<EvaluationResult<Parsed>> {
      let asks: unknown;
      try {
        asks = await options.when(input.parsed, { output: input.output, taskId: input.taskId });
      } catch (error) {
        return { passed: false, reason: `${name}: when() threw: ${thrownMessage(error)}`, parsed: input.parsed };
      }
      if (asks === true) return { passed: false, needsReview: true, reason, parsed: input.parsed };
      if (asks === false) return { passed: true, reason: `${name}: no review needed`, parsed: input.parsed };
      return {
        passed: false,
        reason: `${name}: when() returned ${asks === null ? 'null' : typeof asks}, expected a boolean`,
        parsed: input.parsed,
      };
    },
  };
}
