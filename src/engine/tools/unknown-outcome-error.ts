import { LoopstateError } from '../../contracts/errors.js';
import { unknownOutcomeAnswer } from '../prompts.js';

/**
 * Thrown in place of running a side-effecting call whose earlier attempt may have taken effect (its
 * intent was journalled, its outcome was not) when no `checkOutcome` can tell: the call ends as
 * `unknown_outcome` and the run stops with `needs_human`, never re-executed blindly.
 * @example
 * throw new UnknownOutcomeError({ tool: 'refund', idempotencyKey: 'run_1:3:call_0' });
 */
export class UnknownOutcomeError extends LoopstateError {
  readonly tool: string;
  readonly idempotencyKey: string;
  constructor({ tool, idempotencyKey }: { tool: string; idempotencyKey: string }) {
    super({
      code: 'unknown_outcome',
      // The model reads this message as the call's result.
      message: unknownOutcomeAnswer(tool, idempotencyKey),
    });
    this.tool = tool;
    this.idempotencyKey = idempotencyKey;
  }
}
