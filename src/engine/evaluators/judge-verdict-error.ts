/** The error of an LLM judge that gave no verdict: kept apart from a failing verdict, which is fed back. */
import { LoopstateError } from '../../contracts/errors.js';

/**
 * An LLM judge answered with something that is not a verdict. It is not a verdict on the output,
 * so the loop never feeds it back to the main model: the run stops with `fatal_error`, its usage counted.
 * @example
 * throw new JudgeVerdictError({ judge: 'judge', message: 'the judge replied with no text', usage, modelId: 'gpt-4.1-mini' })
 */
export class JudgeVerdictError extends LoopstateError {
  readonly judge: string;
  readonly usage: { inputTokens: number; outputTokens: number } | undefined;
  readonly modelId: string | undefined;
  constructor(options: {
    judge: string;
    message: string;
    usage?: { inputTokens: number; outputTokens: number };
    modelId?: string;
  }) {
    super({
      code: 'judge_invalid_verdict',
      message: `LLM judge "${options.judge}" gave no usable verdict: ${options.message}`,
    });
    this.judge = options.judge;
    this.usage = options.usage;
    this.modelId = options.modelId;
  }
}
