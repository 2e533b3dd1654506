/**
 * The evaluator contract: ordered layers — format, then business rules, then an
 * optional LLM judge — each handing what it parsed to the next; the first failure wins and its
 * reason is fed back to the model on retry.
 */
import type { ModelUsage } from '../../contracts/model.js';

/**
 * Which layer an evaluator belongs to: `format` parses and checks shape, `rule` checks business
 * predicates, `judge` asks a model (and must never be the only check).
 * @example
 * const kind: EvaluatorKind = 'rule';
 */
export type EvaluatorKind = 'format' | 'rule' | 'judge';

/**
 * What an evaluator sees. `parsed` is what the previous evaluator parsed; when no format
 * evaluator ran yet it is the raw `output` text itself.
 * @example
 * const input: EvaluationInput = { output: '{"a":1}', parsed: '{"a":1}', signal: new AbortController().signal, taskId: 'main' };
 */
export interface EvaluationInput<Parsed = unknown> {
  /** The model's final text, unchanged. */
  output: string;
  parsed: Parsed;
  /** Aborted on cancel or deadline; judges pass it to their model call. */
  signal: AbortSignal;
  taskId: string;
}

/**
 * One evaluator's verdict. `reason` is shown to the model on retry, so it should say what to fix.
 * @example
 * const verdict: EvaluationResult = { passed: false, reason: 'missing required fields: total', parsed: { items: [] } };
 */
export interface EvaluationResult<Parsed = unknown> {
  passed: boolean;
  reason: string;
  /** The value handed to the next evaluator (a format evaluator's parse result; others pass it through). */
  parsed: Parsed;
  /** Tokens a judge spent; absent for evaluators that call no model. */
  usage?: ModelUsage;
  /** The model that spent `usage`, so the driver can price it (a judge may use a different model than the loop). */
  modelId?: string;
  /**
   * True: neither a pass nor a failure — a person must review the output (`reason` says why; `passed` should be
   * false). The remaining evaluators still run and a failure among them wins; otherwise the run stops with
   * `needs_human` and `result.pendingReview`.
   */
  needsReview?: boolean;
  /** A judge's score in [0, 1], when it gave one (read by `aggregate: 'mean'`). */
  score?: number;
}

/**
 * An output check. Build them with `evaluators.json`, `evaluators.schema`, `evaluators.rule`,
 * `evaluators.judge`, or write your own. `Input` is the parsed value it receives, `Output` the one
 * it hands on; they type `result.output` (e.g. `evaluators.schema(S)` is an
 * `Evaluator<unknown, z.output<typeof S>>`) and are not checked at run time.
 * @example
 * const nonEmpty: Evaluator = {
 *   name: 'non-empty', kind: 'rule',
 *   evaluate: ({ output, parsed }) => ({ passed: output.trim() !== '', reason: 'the answer is empty', parsed }),
 * };
 */
export interface Evaluator<Input = unknown, Output = Input> {
  /** Names the evaluator in traces and in `failedEvaluator`. */
  readonly name: string;
  readonly kind: EvaluatorKind;
  /**
   * JSON Schema of the answer this evaluator accepts, when it knows one (`evaluators.schema` does).
   * The loop hands the first one of a task to the model as `responseFormat`.
   */
  readonly outputJsonSchema?: Record<string, unknown> | undefined;
  evaluate(input: EvaluationInput<Input>): EvaluationResult<Output> | Promise<EvaluationResult<Output>>;
  /**
   * Independent verdicts to ask for (a judge's `samples`); absent means 1. The evaluator list calls `evaluate`
   * this many times (a judge's budget is checked before each call) and makes one verdict of them with `combine`.
   */
  readonly samples?: number;
  /** One verdict of the `samples` verdicts, in call order; required when `samples` is over 1. */
  combine?(verdicts: readonly EvaluationResult<Output>[]): EvaluationResult<Output>;
  /** True when it may ask for a person's review (`needsReview`): `loopstate verify` then explores a review stop. */
  readonly mayRequestReview?: boolean;
}
