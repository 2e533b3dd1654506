/** Errors of durable runs: each names the run and what is wrong, with a stable code. */
import { LoopstateError } from '../../contracts/errors.js';

/**
 * A persisted record that cannot be trusted: not JSON (truncated), not the expected shape (corrupt),
 * or written by a newer loopstate (`unsupported_record_version`). It is refused whole, never half-read.
 * @example
 * try { await loop.resume(runId) } catch (error) { if (error instanceof StoreRecordError) console.error(error.runId, error.seq, error.problem) }
 */
export class StoreRecordError extends LoopstateError {
  readonly runId: string;
  /** The record's seq; null for the run's own metadata record. */
  readonly seq: number | null;
  readonly problem: string;
  constructor({
    code,
    runId,
    seq,
    problem,
  }: {
    code: 'corrupt_record' | 'unsupported_record_version';
    runId: string;
    seq: number | null;
    problem: string;
  }) {
    super({
      code,
      message: `Refused the ${seq === null ? 'metadata record' : `journal record at seq ${seq}`} of run ${runId}: ${problem}`,
    });
    this.runId = runId;
    this.seq = seq;
    this.problem = problem;
  }
}

/**
 * Why approvals given to `loop.resume` were refused; nothing of the run changed.
 * @example
 * const code: ApprovalErrorCode = 'approval_expired';
 */
export type ApprovalErrorCode =
  | 'approval_unknown_call'
  | 'approval_already_decided'
  | 'approval_expired'
  | 'approval_arguments_changed'
  | 'approvals_incomplete'
  | 'run_not_waiting';

/**
 * Approvals that fail closed: an unknown call, one decided already, one expired, arguments that changed
 * since the person saw them, a waiting call left undecided, or a run that is not waiting for approval.
 * @example
 * try { await loop.resume(runId, { approvals }) } catch (error) { if (error instanceof ApprovalError && error.code === 'approval_expired') askAgain(error.callId) }
 */
export class ApprovalError extends LoopstateError {
  declare readonly code: ApprovalErrorCode;
  readonly runId: string;
  readonly callId: string | null;
  constructor({
    code,
    runId,
    callId = null,
    message,
  }: {
    code: ApprovalErrorCode;
    runId: string;
    callId?: string | null;
    message: string;
  }) {
    super({ code, message });
    this.runId = runId;
    this.callId = callId;
  }
}

/**
 * Why a review decision given to `loop.resume` was refused; nothing of the run changed.
 * @example
 * const code: ReviewErrorCode = 'review_output_changed';
 */
export type ReviewErrorCode = 'review_not_pending' | 'review_already_decided' | 'review_output_changed';

/**
 * A review decision that fails closed: the run waits for no review (`review_not_pending`), the output was
 * decided otherwise already (`review_already_decided`), or `outputHash` names another output than the one
 * waiting (`review_output_changed`).
 * @example
 * try { await loop.resume(runId, { review: { accept: true, outputHash } }) } catch (error) { if (error instanceof ReviewError && error.code === 'review_output_changed') showAgain(runId) }
 */
export class ReviewError extends LoopstateError {
  declare readonly code: ReviewErrorCode;
  readonly runId: string;
  /** The hash the refused decision named; null when it named none. */
  readonly outputHash: string | null;
  constructor({
    code,
    runId,
    outputHash = null,
    message,
  }: {
    code: ReviewErrorCode;
    runId: string;
    outputHash?: string | null;
    message: string;
  }) {
    super({ code, message });
    this.runId = runId;
    this.outputHash = outputHash;
  }
}

/**
 * Why a run cannot be taken up.
 * @example
 * const code: RunAccessErrorCode = 'run_busy';
 */
export type RunAccessErrorCode = 'run_not_found' | 'run_exists' | 'run_busy' | 'definition_changed';

/**
 * A run that cannot be taken up now: not in the store (`run_not_found`), already there (`run_exists`),
 * held by another live resume or process (`run_busy`), or started by a loop with other tools, tasks or
 * plan setting than this one (`definition_changed`).
 * @example
 * try { await loop.resume(runId) } catch (error) { if (error instanceof RunAccessError && error.code === 'run_busy') retryLater() }
 */
export class RunAccessError extends LoopstateError {
  declare readonly code: RunAccessErrorCode;
  readonly runId: string;
  constructor({ code, runId, message }: { code: RunAccessErrorCode; runId: string; message: string }) {
    super({ code, message });
    this.runId = runId;
  }
}
