/**
 * What a person can do to a stored run from `loopstate runs` or the console, each through the loop's own
 * `resume` / `cancel` (the same checks, the same typed errors), and those errors as a code and a message.
 */
import { LoopstateError, type Loop, type ResumeOptions, type ReviewInput, type RunResult } from '../../index.js';
import { thrownMessage } from '../../internal.js';

/**
 * One decision or command on a stored run.
 * @example
 * const action: RunAction = { kind: 'reject', runId: 'run-1', callId: 'c3', reason: 'refunds over $100 need a manager' };
 */
export type RunAction =
  | { kind: 'approve'; runId: string; callId: string; argumentsHash?: string }
  | { kind: 'reject'; runId: string; callId: string; reason: string; argumentsHash?: string }
  | { kind: 'review'; runId: string; accept: true; outputHash?: string; reviewId?: string }
  | { kind: 'review'; runId: string; accept: false; reason: string; outputHash?: string; reviewId?: string }
  | { kind: 'cancel'; runId: string }
  | { kind: 'resume'; runId: string };

/** The review decision a review action hands to `loop.resume`. */
export function reviewOf(action: RunAction): ReviewInput | undefined {
  if (action.kind !== 'review') return undefined;
  const bound = {
    ...(action.outputHash === undefined ? {} : { outputHash: action.outputHash }),
    ...(action.reviewId === undefined ? {} : { reviewId: action.reviewId }),
  };
  return action.accept ? { accept: true, ...bound } : { accept: false, reason: action.reason, ...bound };
}

/** The approvals an approve or reject action hands to `loop.resume`. */
export function approvalsOf(action: RunAction): NonNullable<ResumeOptions['approvals']> | undefined {
  const bound = (hash: string | undefined) => (hash === undefined ? {} : { argumentsHash: hash });
  if (action.kind === 'approve') return { [action.callId]: { approve: true, ...bound(action.argumentsHash) } };
  if (action.kind === 'reject')
    return { [action.callId]: { approve: false, reason: action.reason, ...bound(action.argumentsHash) } };
  return undefined;
}

/**
 * Performs the action through the loop: the run's result after it (null: a cancel that another process
 * will act on at its next commit). Throws what `loop.resume` / `loop.cancel` throw.
 * @example
 * const result = await performAction(loop, { kind: 'approve', runId: 'run-1', callId: 'c3' });
 */
export async function performAction(loop: Loop, action: RunAction): Promise<RunResult | null> {
  switch (action.kind) {
    case 'approve':
    case 'reject':
      return loop.resume(action.runId, { approvals: approvalsOf(action)! });
    case 'review': {
      return loop.resume(action.runId, { review: reviewOf(action)! });
    }
    case 'cancel':
      return loop.cancel(action.runId);
    case 'resume':
      return loop.resume(action.runId);
  }
}

/**
 * A thrown error as a person reads it: its stable code (`unexpected` for anything not loopstate's) and message.
 * @example
 * const { code, message } = describeActionError(error); // { code: 'approval_already_decided', message: 'call c3 of run-1 was decided already; ...' }
 */
export function describeActionError(error: unknown): { code: string; message: string } {
  return {
    code: error instanceof LoopstateError ? error.code : 'unexpected',
    message: thrownMessage(error),
  };
}
