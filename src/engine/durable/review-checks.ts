/**
 * The checks that make a person's review decision fail closed, before anything of the run changes: the
 * decision is well formed, names the output that waits (by its hash, when given), and was not taken
 * otherwise already. The same decision sent again is told apart, so a retried request returns the result.
 */
import { z } from 'zod';
import { LoopConfigError } from '../../contracts/errors.js';
import { ReviewError } from './durable-errors.js';
import type { ResumePlan } from './resume-plan.js';
import type { DecidedReview, ReviewDecision, RunRecord } from './records.js';

// Discriminated on `accept`, so a rejection without a reason is told as `review.reason`.
const reviewSchema = z.discriminatedUnion('accept', [
  z.object({ accept: z.literal(true), outputHash: z.string().min(1).optional() }).strict(),
  z
    .object({
      accept: z.literal(false),
      reason: z.string().trim().min(1, 'say why, so the model can be told'),
      outputHash: z.string().min(1).optional(),
    })
    .strict(),
]);

/** The review decision given to `resume`, or undefined without one; a malformed one is refused as run input. */
export function checkedReview(review: unknown): ReviewDecision | undefined {
  if (review === undefined) return undefined;
  const parsed = reviewSchema.safeParse(review);
  if (parsed.success) return parsed.data;
  throw new LoopConfigError({
    scope: 'run_input',
    issues: parsed.error.issues.map((issue) => ({
      path: ['review', ...issue.path.map(String)].join('.'),
      message:
        issue.path.length === 0 && issue.code !== 'unrecognized_keys'
          ? 'expected { accept: true } or { accept: false, reason }'
          : issue.message,
    })),
  });
}

const sameDecision = (decided: DecidedReview, decision: ReviewDecision) =>
  decided.accept === decision.accept && (decision.accept || decided.reason === decision.reason);

/**
 * `take`: the decision is for the output that waits. `retried`: it is one the run took already, sent again
 * (answered with the run's result, as a plain resume is). Anything else throws a `ReviewError`.
 */
export function checkReview(record: RunRecord, decision: ReviewDecision): 'take' | 'retried' {
  const { runId } = record;
  const pending = record.state === 'waiting' ? (record.pendingReview ?? null) : null;
  const hash = decision.outputHash ?? null;
  if (pending !== null && (hash === null || hash === pending.outputHash)) return 'take';
  const decided = record.decidedReviews ?? [];
  const earlier = hash === null ? decided.at(-1) : decided.findLast((review) => review.outputHash === hash);
  if (earlier !== undefined) {
    if (sameDecision(earlier, decision)) return 'retried';
    throw new ReviewError({
      code: 'review_already_decided',
      runId,
      outputHash: hash,
      message: `the output ${earlier.outputHash} of task ${earlier.taskId} in run ${runId} was ${earlier.accept ? 'accepted' : 'rejected'} already; a review is decided once (the same decision sent again returns the run's result)`,
    });
  }
  if (pending !== null)
    throw new ReviewError({
      code: 'review_output_changed',
      runId,
      outputHash: hash,
      message: `run ${runId} waits for a review of output ${pending.outputHash} (task ${pending.taskId}), not of ${String(hash)}; show the person the output that waits`,
    });
  throw new ReviewError({
    code: 'review_not_pending',
    runId,
    outputHash: hash,
    message: `run ${runId} waits for no review (it is ${record.state}${record.pendingApprovals.length > 0 ? ', waiting for approval of tool calls' : ''}); resume it without review`,
  });
}

/** The journal must end at the very stop the person decided on: an evaluation that asked for a review of that output. */
export function checkReviewStop(record: RunRecord, plan: ResumePlan): void {
  const stop = plan.events.at(-1);
  const asked = stop?.delta.fields.lastEvaluation?.review;
  const event = stop?.event as { type?: string; needsReview?: boolean } | undefined;
  if (
    stop === undefined ||
    stop.seq !== record.waitingSeq ||
    event?.type !== 'evaluation.completed' ||
    event.needsReview !== true ||
    asked?.outputHash !== record.pendingReview?.outputHash
  ) {
    throw new ReviewError({
      code: 'review_not_pending',
      runId: record.runId,
      message: `run ${record.runId}'s journal does not end at the review it waits for (seq ${String(record.waitingSeq)})`,
    });
  }
}
