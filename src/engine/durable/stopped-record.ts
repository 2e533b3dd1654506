/**
 * The run record of a stop: finished, or waiting for a person (its pending approvals with their argument hashes and
 * expiry, or the review it waits for). The result's trace and messages stay in the journal's chunks when the
 * journal wrote them there; the record names where.
 */
import type { PendingApproval, PendingReview, RunResult } from '../runtime/run-result.js';
import { argumentsHash } from './approval-checks.js';
import type { PendingApprovalRecord, PendingReviewRecord, RunRecord } from './run-record.js';
import { reviewIdOf } from './review-id.js';

/** What the stop's record needs besides the run's record and result. */
export interface StopFacts {
  /** The seq of the event the run stopped on (a waiting run continues from it). */
  lastEventSeq: number;
  /** Where the journal keeps the result's trace, if it does. */
  resultTrace: RunRecord['resultTrace'];
  /** Where the journal keeps the result's messages, if it does. */
  resultMessages: RunRecord['resultMessages'];
  approvalExpiresAfterMs: number | null;
  /** The run's clock now (an approval's expiry counts from it). */
  now: number;
}

/**
 * The record of a run that stopped. The result's pending approvals gain their hashes and expiry and a waiting
 * review its id, in place: the caller hands the same result back.
 */
export function stoppedRecord(
  record: RunRecord,
  result: RunResult,
  { lastEventSeq, resultTrace, resultMessages, approvalExpiresAfterMs: expiresAfter, now }: StopFacts,
): RunRecord {
  const waiting =
    result.stopReason === 'needs_human' && (result.pendingApprovals.length > 0 || result.pendingReview !== null);
  const pendingApprovals: PendingApprovalRecord[] = waiting
    ? result.pendingApprovals.map(({ callId, tool, args }) => ({
        callId,
        tool,
        args: args ?? null,
        argumentsHash: argumentsHash(args),
        expiresAt: expiresAfter === null ? null : now + expiresAfter,
      }))
    : [];
  const withHashes: PendingApproval[] = result.pendingApprovals.map((approval, index) => ({
    ...approval,
    argumentsHash: pendingApprovals[index]?.argumentsHash ?? argumentsHash(approval.args),
    expiresAt: pendingApprovals[index]?.expiresAt ?? null,
  }));
  result.pendingApprovals = withHashes;
  const waitingReview = waiting ? result.pendingReview : null;
  if (waitingReview !== null) waitingReview.reviewId = reviewIdOf(lastEventSeq, waitingReview.outputHash);
  return {
    ...record,
    state: waiting ? 'waiting' : 'finished',
    waitingSeq: waiting ? lastEventSeq : null,
    pendingApprovals,
    // Written only while a review waits, so a record of a run without one reads as before.
    ...(waitingReview === null ? {} : { pendingReview: pendingReviewRecord(waitingReview) }),
    // Not a copy: the record is encoded (its JSON is the same) before the result is handed back.
    result: (resultTrace === undefined && resultMessages === undefined
      ? result
      : withoutHistory(
          result,
          resultTrace !== undefined,
          resultMessages !== undefined,
        )) as unknown as RunRecord['result'],
    ...(resultTrace === undefined ? {} : { resultTrace }),
    ...(resultMessages === undefined ? {} : { resultMessages }),
  };
}

/** The review a run waits for, as its record keeps it (the id is the stop's, `reviewIdOf`). */
function pendingReviewRecord({ reviewId: _id, ...pending }: PendingReview): PendingReviewRecord {
  return pending;
}

/**
 * The result with an empty trace and/or messages (stored in the journal's chunks instead), its own trace left
 * unread.
 */
function withoutHistory(result: RunResult, trace: boolean, messages: boolean): RunResult {
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(result))
    copy[key] = (trace && key === 'trace') || (messages && key === 'messages') ? [] : result[key as keyof RunResult];
  return copy as unknown as RunResult;
}
