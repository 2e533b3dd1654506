/** What `loop.run()` returns: always a named stop reason, never only `failed = true`. */
import type { RunStatus, StopReason, Usage } from '../../../machines/types.js';
import type { Message } from '../../contracts/model.js';
import type { TraceEvent } from '../trace/trace-event.js';

/**
 * A tool call that stopped the run because it needs a person's approval.
 * @example
 * if (result.status === 'needs_human') for (const call of result.pendingApprovals) console.log(call.tool, call.args);
 */
export interface PendingApproval {
  callId: string;
  tool: string;
  args: unknown;
  /** With a store: the hash of the canonical arguments the approval is bound to (pass it back to bind a decision to them). */
  argumentsHash?: string;
  /** With a store: epoch ms after which an approval is refused as expired; null when it does not expire. */
  expiresAt?: number | null;
}

/**
 * An output that stopped the run because an evaluator asked a person to review it (`evaluators.review`, or a
 * judge's split vote with `reviewOnSplit`). Decide it with `loop.resume(runId, { review })`.
 * @example
 * if (result.pendingReview) await loop.resume(result.runId, { review: { accept: true, reviewId: result.pendingReview.reviewId! } });
 */
export interface PendingReview {
  /** The task whose output waits. */
  taskId: string;
  /** What the evaluators parsed from the reply: the task's output once a person accepts it. */
  output: unknown;
  /** The model's reply text that waits for review. */
  rawOutput: string;
  /** Why a person was asked: the evaluator's reason (a split judge vote lists the votes). */
  reason: string;
  /** The evaluator that asked. */
  evaluator: string;
  /** Digest of `rawOutput` (16 hex characters): pass it back in the decision to bind it to this output. */
  outputHash: string;
  /**
   * This very stop of the run (a run may stop again on the same output text): pass it back in the decision,
   * so that a retried request is told from a decision on the next stop. Null on a run without a `store`.
   */
  reviewId: string | null;
}

/**
 * What `loop.run()` returns: always a named stop reason, never only `failed = true`. `Output` is
 * the evaluated output's type, inferred by `createLoop` from an `evaluators.schema`.
 * @example
 * const result: RunResult = await loop.run({ goal });
 * if (result.stopReason !== 'completed') console.warn(result.detail, result.warnings);
 */
export interface RunResult<Output = unknown> {
  runId: string;
  status: RunStatus;
  stopReason: StopReason;
  /** Why it stopped, in words: which budget, which signal, which error. */
  detail: string;
  /**
   * The evaluated output of the last task when completed. Otherwise what the format evaluators
   * (json, schema) parsed from the last reply, even if a later rule failed; null when it did not
   * parse or was never evaluated.
   */
  output: Output | null;
  /** The last reply's text: what `output` was parsed from when completed; null when the model gave none. */
  rawOutput: string | null;
  /** Evaluated outputs of the tasks that passed, by task id (an object without a prototype, so any task id is a plain key). */
  taskOutputs: Record<string, unknown>;
  warnings: string[];
  usage: Usage;
  steps: number;
  trace: TraceEvent[];
  /**
   * The conversation of the (last) task as the model last saw it, instructions first: a plain copy
   * to store and pass back as `run({ messages })` for the next turn. Calls the run stopped before
   * answering are answered with a "not executed" note, so it is always a valid conversation.
   */
  messages: Message[];
  /** Tool calls awaiting approval when the run stopped with `needs_human`. */
  pendingApprovals: PendingApproval[];
  /** The output waiting for a person's review when the run stopped with `needs_human`; null otherwise. */
  pendingReview: PendingReview | null;
  /** The underlying error when the run stopped with `fatal_error`. */
  error?: { name: string; message: string; code?: string };
}
