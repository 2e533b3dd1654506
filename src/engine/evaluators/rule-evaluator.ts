/**
 * The business-rule layer: a predicate over the parsed output. A rule never crashes the run:
 * a throwing predicate is a failed check whose reason carries the thrown message.
 */
import { thrownMessage } from '../redaction/describe-thrown.js';
import type { Evaluator, EvaluationInput, EvaluationResult } from './types.js';

/**
 * A business predicate: `true` passes; `false` fails with the rule's reason; a string fails with
 * that string as the reason (say what to fix). May be async.
 * @example
 * const positiveTotal: RulePredicate<{ total: number }> = (order) => order.total > 0 || `total is ${order.total}, must be > 0`;
 */
export type RulePredicate<Parsed = unknown> = (parsed: Parsed) => boolean | string | Promise<boolean | string>;

/**
 * Options of `evaluators.rule`.
 * @example
 * const options: RuleEvaluatorOptions = { name: 'positive-total' };
 */
export interface RuleEvaluatorOptions {
  /** Evaluator name in traces; defaults to `rule: <reason>` so several rules stay apart. */
  name?: string;
}

/**
 * Checks a business predicate on what the earlier evaluators parsed (the raw text when none ran).
 * Inside `evaluators.chain(...)` the predicate's parameter is typed from the evaluator before it;
 * in a plain array, annotate it. The type is an assertion about that value, not a runtime check:
 * put a schema first.
 * @example
 * evaluators.rule((order: { items: unknown[] }) => order.items.length > 0, 'the order has no items')
 */
export function ruleEvaluator<Parsed = unknown>(
  predicate: RulePredicate<Parsed>,
  reason: string,
  options: RuleEvaluatorOptions = {},
): Evaluator<Parsed, Parsed> {
  return {
    name: options.name ?? `rule: ${reason}`,
    kind: 'rule',
    async evaluate(input: EvaluationInput<Parsed>): Promise<EvaluationResult<Parsed>> {
      let verdict: unknown;
      try {
        verdict = await predicate(input.parsed);
      } catch (error) {
        const message = thrownMessage(error);
        return { passed: false, reason: `${reason} (the rule threw: ${message})`, parsed: input.parsed };
      }
      if (verdict === true) return { passed: true, reason: `rule passed: ${reason}`, parsed: input.parsed };
      if (typeof verdict === 'string' && verdict !== '')
        return { passed: false, reason: verdict, parsed: input.parsed };
      if (verdict === false || verdict === '') return { passed: false, reason, parsed: input.parsed };
      // Strictly `true` passes, so a predicate that forgot to return fails loudly instead of passing.
      return {
        passed: false,
        reason: `${reason} (the rule returned ${describeVerdict(verdict)}, expected a boolean or a string)`,
        parsed: input.parsed,
      };
    },
  };
}

function describeVerdict(verdict: unknown): string {
  if (verdict === undefined) return 'undefined';
  if (verdict === null) return 'null';
  return typeof verdict;
}
