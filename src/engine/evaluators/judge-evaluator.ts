/**
 * The optional LLM-judge layer: a model grades the output against written criteria. It costs
 * tokens and can be wrong, so it runs last and is never the only check (see `validateEvaluators`).
 */
import { z } from 'zod';
import { JudgeVerdictError } from './judge-verdict-error.js';
import type { Message, Model } from '../../contracts/model.js';
import type { Evaluator, EvaluationInput, EvaluationResult } from './types.js';
import { parseJsonOutput } from './parse-json-output.js';
import { formatZodIssues } from './schema-evaluator.js';
import { JUDGE_INSTRUCTIONS, judgeRequest } from '../prompts.js';

const judgeVerdictSchema = z.object({ passed: z.boolean(), reason: z.string() });

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
  const instructions = options.instructions ?? JUDGE_INSTRUCTIONS;
  const name = options.name ?? 'judge';
  return {
    name,
    kind: 'judge',
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
      const { passed, reason } = verdict.value;
      const fallbackReason = passed
        ? 'the judge accepted the output'
        : 'the judge rejected the output without giving a reason';
      return { passed, reason: reason.trim() || fallbackReason, parsed: input.parsed, ...spent };
    },
  };
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
