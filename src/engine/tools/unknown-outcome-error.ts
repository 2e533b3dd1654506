import { LoopstateError } from '../../contracts/errors.js';
import { unknownOutcomeAnswer } from '../prompts.js';

/**
 * Thrown in place of running a side-effecting call whose earlier attempt may have taken effect (its
 * intent was journalled, its outcome was not) when no `checkOutcome` can tell, or by a tool whose call
 * was lost on the way (its server died before answering, `message` says so): the call ends as
 * `unknown_outcome` and the run stops with `needs_human`, never re-executed blindly.
 * @example
 * throw new UnknownOutcomeError({ tool: 'refund', idempotencyKey: 'run_1:3:call_0' });
 */
export class UnknownOutcomeError extends LoopstateError {
  readonly tool: string;
  readonly idempotencyKey: string;
  constructor({ tool, idempotencyKey, message }: { tool: string; idempotencyKey: string; message?: string }) {
    super({
      code: 'unknown_outcome',
      // The model reads this message as the call's result.
      message: message ?? unknownOutcomeAnswer(tool, idempotencyKey),
    });
    this.tool = tool;
    this.idempotencyKey = idempotencyKey;
  }
}
