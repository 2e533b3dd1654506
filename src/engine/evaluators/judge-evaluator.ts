/**
 * The optional LLM-judge layer: a model grades the output against written criteria. It costs
 * tokens and can be wrong, so it runs last and is never the only check (see `validateEvaluators`).
 */
import { z } from 'zod';
import { JudgeVerdictError } from './judge-verdict-error.js';
import type { Message, Model } from '../../contracts/model.js';
import { LoopConfigError, type ConfigIssue } from '../../contracts/errors.js';
import type { Evaluator, EvaluationInput, EvaluationResult } from './types.js';
import { parseJsonOutput } from './parse-json-output.js';
import { formatZodIssues } from './schema-evaluator.js';
import { JUDGE_INSTRUCTIONS, JUDGE_SCORED_INSTRUCTIONS, judgeRequest } from '../prompts.js';
import { combineJudgeSamples, type JudgeAggregate } from './judge-samples.js';

const judgeVerdictSchema = z.object({
  passed: z.boolean(),
  reason: z.string(),
  score: z.number().min(0).max(1).optional(),
});

/**
 * Options of `evaluators.judge`.
 * @example
 * // scriptedModel and reply come from 'loopstate/testing'; pass a real Model to judge for real.
 * const judge = scriptedModel([reply('{"passed": true, "reason": "polite and short"}')]);
 * const options: JudgeEvaluatorOptions = { model: judge, criteria: 'Polite, under 80 words.' };
 */
export interface JudgeEvaluatorOptions {
  /** The judging model; its `id` prices the judge's usage, which may differ from the loop's model. */
  model: Model;
  /** What a passing output must satisfy, in plain words. */
  criteria: string;
  /** Replaces `JUDGE_INSTRUCTIONS` as the system prompt; it must still ask for the JSON verdict. */
  instructions?: string;
  /** Evaluator name in traces; defaults to `judge`. */
  name?: string;
  /**
   * Independent judge calls per evaluation (default 1), for noisy verdicts: each is checked against the
   * budgets before it is made, and the usage of every one is counted.
   */
  samples?: number;
  /**
   * How the samples make one verdict (default `'majority'`): `'majority'` passes when more than half passed;
   * `'mean'` passes when the mean score reaches `threshold` (a verdict without a `score` counts 1 if it passed,
   * 0 if not; the default instructions then ask for a score).
   */
  aggregate?: JudgeAggregate;
  /** The mean score an output needs with `aggregate: 'mean'`, in [0, 1]; default 0.5. */
  threshold?: number;
  /** With `samples` over 1: when the samples disagree (not unanimous), ask a person instead (default false). */
  reviewOnSplit?: boolean;
}

/**
 * Asks a model whether the raw output meets the criteria. The reply must be
 * `{"passed": boolean, "reason": string}` (a ```json fence is tolerated); anything else throws
 * `JudgeVerdictError` (the loop stops with `fatal_error`, never reflecting it to the main model).
 * The judge's token usage is returned with the verdict, or carried by the error.
 * @example
 * evaluators.judge({ model, criteria: 'The reply names the order id and a delivery date.' })
 */
export function judgeEvaluator<Parsed = unknown>(options: JudgeEvaluatorOptions): Evaluator<Parsed, Parsed> {
  const { model, criteria } = options;
  const samples = checkedSamples(options);
  const aggregate = options.aggregate ?? 'majority';
  const instructions = options.instructions ?? (aggregate === 'mean' ? JUDGE_SCORED_INSTRUCTIONS : JUDGE_INSTRUCTIONS);
  const name = options.name ?? 'judge';
  const threshold = options.threshold ?? 0.5;
  const reviewOnSplit = options.reviewOnSplit ?? false;
  return {
    name,
    kind: 'judge',
    ...(samples === 1
      ? {}
      : {
          samples,
          combine: (verdicts: readonly EvaluationResult<Parsed>[]) =>
            combineJudgeSamples(verdicts, { aggregate, threshold, reviewOnSplit }),
          ...(reviewOnSplit ? { mayRequestReview: true } : {}),
        }),
    async evaluate(input: EvaluationInput<Parsed>): Promise<EvaluationResult<Parsed>> {
      const messages: Message[] = [
        { role: 'system', content: instructions },
        { role: 'user', content: judgeRequest(criteria, input.output) },
      ];
      const response = await model.generate({ messages, tools: [], signal: input.signal });
      const spent = { usage: response.usage, modelId: model.id };
      const verdict = readVerdict(response.text);
      // Not a verdict on the output: feeding it back would ask the main model to fix what nobody judged.
      if (!verdict.ok)
        throw new JudgeVerdictError({
          judge: name,
          message: `the judge reply was unparseable: ${verdict.error}`,
          ...spent,
        });
      const { passed, reason, score } = verdict.value;
      const fallbackReason = passed
        ? 'the judge accepted the output'
        : 'the judge rejected the output without giving a reason';
      return {
        passed,
        reason: reason.trim() || fallbackReason,
        parsed: input.parsed,
        ...spent,
        ...(score === undefined ? {} : { score }),
      };
    },
  };
}

/** The options that shape the samples, checked when the judge is built: a bad one is a programming error. */
function checkedSamples(options: JudgeEvaluatorOptions): number {
  const { samples = 1, aggregate, threshold, reviewOnSplit } = options;
  const issues: ConfigIssue[] = [];
  if (!(Number.isInteger(samples) && samples >= 1))
    issues.push({ path: 'samples', message: 'expected a positive integer (or undefined for 1)' });
  if (aggregate !== undefined && aggregate !== 'majority' && aggregate !== 'mean')
    issues.push({ path: 'aggregate', message: "expected 'majority' or 'mean'" });
  if (threshold !== undefined && !(typeof threshold === 'number' && threshold >= 0 && threshold <= 1))
    issues.push({ path: 'threshold', message: 'expected a number from 0 to 1' });
  if (threshold !== undefined && aggregate !== 'mean')
    issues.push({ path: 'threshold', message: "only read with aggregate: 'mean'" });
  if (reviewOnSplit !== undefined && typeof reviewOnSplit !== 'boolean')
    issues.push({ path: 'reviewOnSplit', message: 'expected a boolean' });
  else if (reviewOnSplit === true && samples === 1)
    issues.push({ path: 'reviewOnSplit', message: 'needs samples over 1: one verdict cannot split' });
  if (issues.length > 0)
    throw new LoopConfigError({ issues: issues.map((issue) => ({ ...issue, path: `judge.${issue.path}` })) });
  return samples;
}

type VerdictOutcome = { ok: true; value: z.output<typeof judgeVerdictSchema> } | { ok: false; error: string };

function readVerdict(text: string | null): VerdictOutcome {
  if (text === null || text.trim() === '') return { ok: false, error: 'the judge replied with no text' };
  const parsed = parseJsonOutput(text);
  if (!parsed.ok) return { ok: false, error: parsed.error };
  const checked = judgeVerdictSchema.safeParse(parsed.value);
  if (!checked.success) {
    return {
      ok: false,
      error: `expected {"passed": boolean, "reason": string}: ${formatZodIssues(checked.error.issues)}`,
    };
  }
  return { ok: true, value: checked.data };
}
