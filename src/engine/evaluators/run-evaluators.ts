/**
 * Runs an ordered evaluator list: each evaluator receives what the previous one
 * parsed, the first failure wins and later evaluators do not run (so a judge is never paid for
 * an output that already failed a cheap check).
 */
import type { ModelUsage } from '../../contracts/model.js';
import { thrownMessage } from '../redaction/describe-thrown.js';
import { withSignal } from '../runtime/signal-property.js';
import type { Evaluator, EvaluationInput, EvaluationResult } from './types.js';

/**
 * What `runEvaluators` needs besides the list.
 * @example
 * const options: RunEvaluatorsOptions = { output: '{"a":1}', signal: AbortSignal.timeout(5_000), taskId: 'main' };
 */
export interface RunEvaluatorsOptions {
  output: string;
  signal: AbortSignal;
  taskId: string;
  /**
   * Errors an evaluator throws that are not a verdict on the output and should propagate instead,
   * e.g. a judge's transient transport error, which the loop retries in its own layer.
   */
  rethrow?: (error: unknown) => boolean;
  /**
   * Asked before each judge runs, with the tokens judges spent so far in this list: a reason to
   * skip it (the budget is spent) or null. A skipped judge fails the list with that reason.
   */
  mayRunJudge?: (evaluator: Evaluator, spentByModel: Readonly<Record<string, ModelUsage>>) => string | null;
}

/**
 * The combined verdict of an evaluator list.
 * @example
 * const summary: EvaluationSummary = { passed: true, reason: 'passed', parsed: { a: 1 }, usage: { inputTokens: 0, outputTokens: 0 }, usageByModel: {}, failedEvaluator: null, formatted: { value: { a: 1 } } };
 */
export interface EvaluationSummary {
  passed: boolean;
  /** `passed` when every evaluator passed, else the failing evaluator's reason (fed back to the model). */
  reason: string;
  /** The last parsed value: the output text when the list is empty. */
  parsed: unknown;
  /** Tokens spent by judges that ran, summed; zeros when none ran. */
  usage: ModelUsage;
  /** The same usage split by the model that spent it, for pricing. */
  usageByModel: Record<string, ModelUsage>;
  /** Name of the evaluator that failed, or null when all passed. */
  failedEvaluator: string | null;
  /**
   * Set when no evaluator failed but one asked for a person's review: `passed` is false and `reason` is why
   * (every asking evaluator's reason, joined); null otherwise.
   */
  review: { evaluator: string; reason: string } | null;
  /**
   * What the format evaluators made of the output when every one of them passed (the output text
   * itself when the list has none), even if a later rule or judge failed; null when one failed or
   * did not run. A run that stops before completing reports this as its `output`.
   */
  formatted: { value: unknown } | null;
}

/** Key for usage an evaluator reported without naming its model. */
const UNKNOWN_MODEL_ID = 'unknown';

/**
 * Runs evaluators in order; stops at the first failure. An evaluator that throws is reported as
 * a failure with its message, except when the run's signal was aborted: cancellation is rethrown,
 * because it is not a verdict on the output.
 * @example
 * const summary = await runEvaluators([evaluators.json({ requiredFields: ['status'] })], { output, signal, taskId: 'main' });
 * if (!summary.passed) console.log(summary.failedEvaluator, summary.reason);
 */
export function runEvaluators(list: readonly Evaluator[], options: RunEvaluatorsOptions): Promise<EvaluationSummary> {
  return runEvaluatorsUnder(list, options, new SignalAbort(options.signal));
}

/**
 * The caller's signal as an `EvaluationAbort`. Its `aborted` and `reason` are getters on this prototype, one for
 * every call: an object literal's getters are closures of their own per call, described on V8's map of the object,
 * which keeps them (and what they reach) past young collections.
 */
class SignalAbort implements EvaluationAbort {
  constructor(readonly signal: AbortSignal) {}

  get aborted(): boolean {
    return this.signal.aborted;
  }

  get reason(): unknown {
    return this.signal.reason;
  }
}

/**
 * The abort an evaluation runs under: checked through `aborted` and `reason`, its `signal` read only when an
 * evaluator asks for it (a run's own abort makes its signal then).
 */
export interface EvaluationAbort {
  readonly aborted: boolean;
  readonly reason: unknown;
  readonly signal: AbortSignal;
}

/**
 * `runEvaluators` under the run's abort (the driver's): the same verdicts, without reading the signal of a
 * run whose evaluators never look at it. `options.signal` is not read.
 * @example
 * const summary = await runEvaluatorsUnder(list, { output, taskId: 'main' }, session.aborts);
 */
export async function runEvaluatorsUnder(
  list: readonly Evaluator[],
  options: Omit<RunEvaluatorsOptions, 'signal'>,
  abort: EvaluationAbort,
): Promise<EvaluationSummary> {
  const { output, taskId, rethrow, mayRunJudge } = options;
  const usageByModel = new Map<string, ModelUsage>();
  const total: ModelUsage = { inputTokens: 0, outputTokens: 0 };
  let formatsToPass = list.filter((evaluator) => evaluator.kind === 'format').length;
  let formatted: EvaluationSummary['formatted'] = formatsToPass === 0 ? { value: output } : null;
  const reviews: { evaluator: string; reason: string }[] = [];
  const summarize = (
    passed: boolean,
    reason: string,
    parsed: unknown,
    failedEvaluator: string | null,
  ): EvaluationSummary => ({
    passed,
    reason,
    parsed,
    usage: total,
    usageByModel: Object.fromEntries(usageByModel),
    failedEvaluator,
    review: null,
    formatted,
  });
  const addUsage = (result: EvaluationResult) => {
    if (!result.usage) return;
    total.inputTokens += result.usage.inputTokens;
    total.outputTokens += result.usage.outputTokens;
    const modelId = result.modelId ?? UNKNOWN_MODEL_ID;
    const previous = usageByModel.get(modelId) ?? { inputTokens: 0, outputTokens: 0 };
    usageByModel.set(modelId, {
      inputTokens: previous.inputTokens + result.usage.inputTokens,
      outputTokens: previous.outputTokens + result.usage.outputTokens,
    });
  };

  let parsed: unknown = output;
  for (const evaluator of list) {
    const samples = evaluator.samples ?? 1;
    const verdicts: EvaluationResult[] = [];
    for (let sample = 0; sample < samples; sample++) {
      // As `signal.throwIfAborted()`, without making the signal.
      if (abort.aborted) throw abort.reason;
      // Each sample is a judge call of its own: paid for before it is made, with what the samples before it spent.
      const refusal =
        evaluator.kind === 'judge' ? (mayRunJudge?.(evaluator, Object.fromEntries(usageByModel)) ?? null) : null;
      if (refusal !== null) return summarize(false, refusal, parsed, evaluator.name);
      let result: EvaluationResult;
      try {
        // The signal third, as the input's keys always came (one shared getter: see signal-property.ts).
        const input = withSignal({ output, parsed }, abort) as EvaluationInput;
        input.taskId = taskId;
        result = await evaluator.evaluate(input);
      } catch (error) {
        if (abort.aborted || rethrow?.(error) === true) throw error;
        const message = thrownMessage(error);
        return summarize(false, `evaluator "${evaluator.name}" threw: ${message}`, parsed, evaluator.name);
      }
      if (!isEvaluationResult(result)) {
        return summarize(
          false,
          `evaluator "${evaluator.name}" returned an invalid result (expected { passed, reason, parsed })`,
          parsed,
          evaluator.name,
        );
      }
      addUsage(result);
      verdicts.push(result);
    }
    const result = combined(evaluator, verdicts, parsed);
    parsed = result.parsed;
    if (result.needsReview === true) {
      reviews.push({ evaluator: evaluator.name, reason: result.reason });
      continue;
    }
    if (result.passed && evaluator.kind === 'format' && --formatsToPass === 0) formatted = { value: parsed };
    if (!result.passed) return summarize(false, result.reason, parsed, evaluator.name);
  }
  const [firstReview] = reviews;
  if (firstReview === undefined) return summarize(true, 'passed', parsed, null);
  // Nothing failed, so a person decides: every evaluator that asked says why.
  const reason = reviews.map((review) => review.reason).join('; ');
  return { ...summarize(false, reason, parsed, null), review: { evaluator: firstReview.evaluator, reason } };
}

/** The evaluator's one verdict: its only one, or its `combine` of the samples (a throwing combine fails the output). */
function combined(evaluator: Evaluator, verdicts: readonly EvaluationResult[], parsed: unknown): EvaluationResult {
  const [first] = verdicts;
  // createLoop refuses samples below 1; a list run directly with one still gets no pass by accident.
  if (first === undefined)
    return { passed: false, reason: `evaluator "${evaluator.name}" asked for no samples`, parsed };
  if (evaluator.combine === undefined) return first;
  try {
    const result = evaluator.combine(verdicts);
    if (isEvaluationResult(result)) return result;
  } catch (error) {
    return {
      passed: false,
      reason: `evaluator "${evaluator.name}" threw: ${thrownMessage(error)}`,
      parsed: first.parsed,
    };
  }
  return {
    passed: false,
    reason: `evaluator "${evaluator.name}" combined its samples into an invalid result (expected { passed, reason, parsed })`,
    parsed: first.parsed,
  };
}

// Evaluators may be user code written in plain JavaScript; a malformed verdict must not pass by accident.
function isEvaluationResult(value: unknown): value is EvaluationResult {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<EvaluationResult>;
  return typeof candidate.passed === 'boolean' && typeof candidate.reason === 'string';
}
