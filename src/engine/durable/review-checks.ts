/**
 * The checks that make a person's review decision fail closed, before anything of the run changes: the
 * decision is well formed, names the output that waits (by its hash, when given), and was not taken
 * otherwise already. The same decision sent again is told apart, so a retried request returns the result.
 */
import { z } from 'zod';
import { LoopConfigError } from '../../contracts/errors.js';
import { ReviewError } from './durable-errors.js';
import type { ResumePlan } from './resume-plan.js';
import type { ReviewDecision } from './records.js';
import type { DecidedReview, PendingReviewRecord, RunRecord } from './run-record.js';
import { reviewIdOf } from './review-id.js';
import type { ResolvedConfig } from '../config/config.js';
import type { Evaluator } from '../evaluators/types.js';

// Discriminated on `accept`, so a rejection without a reason is told as `review.reason`.
const reviewSchema = z.discriminatedUnion('accept', [
  z
    .object({
      accept: z.literal(true),
      outputHash: z.string().min(1).optional(),
      reviewId: z.string().min(1).optional(),
    })
    .strict(),
  z
    .object({
      accept: z.literal(false),
      reason: z.string().trim().min(1, 'say why, so the model can be told'),
      outputHash: z.string().min(1).optional(),
      reviewId: z.string().min(1).optional(),
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

/** The review a decision is for: `take` the one that waits, or `retried` (the decided stop it names, taken this same way). */
export type ReviewCheck = { verdict: 'take' | 'retried'; reviewId: string | null };

/**
 * `take`: the decision is for the stop that waits. `retried`: it is one the run took already, sent again
 * (answered with the run's result, as a plain resume is). Anything else throws a `ReviewError`.
 *
 * A decision names its stop by `reviewId` (exact), else by `outputHash`, else not at all. One without a
 * `reviewId` that repeats the last decision taken (same output, when it names one) is taken for a retried
 * request, never applied to the next stop: a run that stopped again on the same text, or on an output nobody
 * was shown, is decided only with that stop's `reviewId` (or, for another text, its `outputHash`).
 */
export function checkReview(record: RunRecord, decision: ReviewDecision): ReviewCheck {
  const { runId } = record;
  const pending = record.state === 'waiting' ? (record.pendingReview ?? null) : null;
  const pendingId = pending === null ? null : reviewIdOf(record.waitingSeq ?? 0, pending.outputHash);
  const hash = decision.outputHash ?? null;
  const id = decision.reviewId ?? null;
  const decided = record.decidedReviews ?? [];
  const last = decided.at(-1);
  const named = id === null ? hash : id;
  if (id !== null && id === pendingId) {
    if (hash !== null && hash !== pending?.outputHash) throw outputChanged(record, pending, pendingId, hash, hash);
    return { verdict: 'take', reviewId: pendingId };
  }
  const unboundRetry =
    id === null && last !== undefined && (hash === null || last.outputHash === hash) && sameDecision(last, decision);
  if (!unboundRetry && id === null && pending !== null && (hash === null || hash === pending.outputHash))
    return { verdict: 'take', reviewId: pendingId };
  const earlier = unboundRetry
    ? last
    : id !== null
      ? decided.findLast((review) => review.reviewId === id)
      : hash === null
        ? last
        : decided.findLast((review) => review.outputHash === hash);
  if (earlier !== undefined) {
    if (hash !== null && hash !== earlier.outputHash) throw outputChanged(record, pending, pendingId, named, hash);
    if (sameDecision(earlier, decision)) return { verdict: 'retried', reviewId: earlier.reviewId ?? null };
    throw new ReviewError({
      code: 'review_already_decided',
      runId,
      outputHash: hash,
      message: `the output ${earlier.outputHash} of task ${earlier.taskId} in run ${runId} was ${earlier.accept ? 'accepted' : 'rejected'} already; a review is decided once (the same decision sent again returns the run's result)`,
    });
  }
  if (pending !== null) throw outputChanged(record, pending, pendingId, named, hash);
  throw new ReviewError({
    code: 'review_not_pending',
    runId,
    outputHash: hash,
    message: `run ${runId} waits for no review${id === null ? '' : ` ${id}`} (it is ${record.state}${record.pendingApprovals.length > 0 ? ', waiting for approval of tool calls' : ''}); resume it without review`,
  });
}

function outputChanged(
  record: RunRecord,
  pending: PendingReviewRecord | null,
  pendingId: string | null,
  named: string | null,
  outputHash: string | null,
): ReviewError {
  const { runId } = record;
  return new ReviewError({
    code: pending === null ? 'review_not_pending' : 'review_output_changed',
    runId,
    outputHash,
    message:
      pending === null
        ? `run ${runId} waits for no review, and the decision names ${String(named)}, not the output of the stop it decided`
        : `run ${runId} waits for review ${String(pendingId)} of output ${pending.outputHash} (task ${pending.taskId}), not for ${String(named)}; show the person the output that waits`,
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

/**
 * Whether an evaluation of the loop may wait as a model call does (an LLM judge) or stop the run for a person's
 * review of its output: the journal then takes the wait's snapshot before it runs (see `RunJournal.beforeEffect`).
 */
export function evaluationMayWait(config: Pick<ResolvedConfig, 'evaluate' | 'tasks'>): boolean {
  const lists = [config.evaluate, ...(config.tasks ?? []).map((task) => task.evaluate)];
  return lists.some((list) =>
    ([] as (Evaluator | undefined)[])
      .concat(list as Evaluator | readonly Evaluator[] | undefined)
      .some(
        (evaluator) => evaluator !== undefined && (evaluator.kind === 'judge' || evaluator.mayRequestReview === true),
      ),
  );
}
