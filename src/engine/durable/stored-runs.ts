/**
 * The runs a store holds, as `loopstate runs list` and the console show them: each run record decoded
 * through the record schema (never read by hand), its state turned into the run status a result would
 * carry, and what it waits for (approvals with their arguments, or a review of its output).
 */
import type { RunStatus } from '../../../machines/types.js';
import type { Store } from '../../contracts/store.js';
import { LoopstateError } from '../../contracts/errors.js';
import { StoreRecordError } from './durable-errors.js';
import { reviewIdOf } from './review-id.js';
import { decodeRunRecord } from './record-codec.js';
import { type PendingApprovalRecord, type PendingReviewRecord, type RunRecord } from './run-record.js';

/**
 * An output waiting for a person's review, as the run record holds it (from an `evaluators.review` stop).
 * @example
 * if (run.pendingReview) console.log(run.pendingReview.reason, run.pendingReview.reviewId);
 */
export type StoredPendingReview = PendingReviewRecord & { reviewId: string };

/**
 * One run of a store, as listed.
 * @example
 * const { runs } = await listStoredRuns(store, { status: 'needs_human' });
 * for (const run of runs) console.log(run.runId, run.pendingApprovals.map((call) => call.tool));
 */
export interface StoredRun {
  runId: string;
  /** `running` also for a run whose process died: only a resume can tell. */
  status: RunStatus;
  /** The record's own state: running (or crashed), waiting (for approvals or a review), finished. */
  state: RunRecord['state'];
  /** How it last stopped; null while it runs. */
  stopReason: string | null;
  detail: string | null;
  goal: string | null;
  steps: number | null;
  /** Epoch ms it finished; null when it has not. */
  finishedAt: number | null;
  pendingApprovals: PendingApprovalRecord[];
  pendingReview: StoredPendingReview | null;
}

/** A run whose record could not be decoded: listed with the problem, never hiding the other runs. */
export interface UnreadableRun {
  runId: string;
  problem: string;
}

/**
 * A page of `listStoredRuns`.
 * @example
 * const page = await listStoredRuns(store, { limit: 20 });
 * if (page.next !== null) await listStoredRuns(store, { limit: 20, after: page.next });
 */
export interface StoredRunPage {
  runs: StoredRun[];
  unreadable: UnreadableRun[];
  /** The run id to pass as `after` for the next page; null when this page reaches the end. */
  next: string | null;
}

/** The statuses `listStoredRuns` filters by. */
export const STORED_RUN_STATUSES: readonly RunStatus[] = ['running', 'needs_human', 'succeeded', 'failed'];

/**
 * Options of `listStoredRuns`.
 * @example
 * const options: ListStoredRunsOptions = { status: 'needs_human', limit: 20 };
 */
export interface ListStoredRunsOptions {
  status?: RunStatus;
  /** Runs per page (default 50). */
  limit?: number;
  after?: string;
}

const DEFAULT_LIMIT = 50;
/** Rows read from the store at a time while filtering by status. */
const SCAN_PAGE = 200;

const isString = (value: unknown): value is string => typeof value === 'string';

/**
 * A run record (as the store keeps it) decoded and summarised; throws `StoreRecordError` for a corrupt one.
 * @example
 * const row = await store.readRun(runId);
 * const run = row === null ? null : storedRunOf({ ...row, finishedAt: null });
 */
export function storedRunOf(row: { runId: string; body: string; finishedAt: number | null }): StoredRun {
  const record = decodeRunRecord(row.body, row.runId);
  const result = record.state === 'running' ? null : (record.result as Record<string, unknown> | null);
  const status: RunStatus =
    record.state === 'running'
      ? 'running'
      : record.state === 'waiting'
        ? 'needs_human'
        : (((STORED_RUN_STATUSES as readonly unknown[]).includes(result?.status)
            ? result?.status
            : 'failed') as RunStatus);
  return {
    runId: row.runId,
    status,
    state: record.state,
    stopReason: isString(result?.stopReason) ? result.stopReason : null,
    detail: isString(result?.detail) ? result.detail : null,
    goal: record.input.goal ?? null,
    steps: typeof result?.steps === 'number' ? result.steps : null,
    finishedAt: row.finishedAt,
    pendingApprovals: record.state === 'waiting' ? record.pendingApprovals : [],
    pendingReview:
      record.state === 'waiting' && record.pendingReview
        ? { ...record.pendingReview, reviewId: reviewIdOf(record.waitingSeq ?? 0, record.pendingReview.outputHash) }
        : null,
  };
}

/**
 * One page of the store's runs in run id order, `status` only when given; a run whose record cannot be
 * read is listed under `unreadable` with the reason. Needs a store with `listRuns`.
 * @example
 * const { runs, next } = await listStoredRuns(sqliteStore({ path: 'loops.db' }), { status: 'needs_human' });
 */
export async function listStoredRuns(store: Store, options: ListStoredRunsOptions = {}): Promise<StoredRunPage> {
  if (typeof store.listRuns !== 'function')
    throw new LoopstateError({
      code: 'store_cannot_list',
      message: 'this store has no listRuns method, so its runs cannot be listed; use a store of this loopstate version',
    });
  const limit = options.limit ?? DEFAULT_LIMIT;
  const runs: StoredRun[] = [];
  const unreadable: UnreadableRun[] = [];
  let after = options.after;
  for (;;) {
    const want = options.status === undefined ? limit - runs.length - unreadable.length : SCAN_PAGE;
    const rows = await store.listRuns(after === undefined ? { limit: want } : { limit: want, after });
    for (const [index, row] of rows.entries()) {
      after = row.runId;
      try {
        const run = storedRunOf(row);
        if (options.status === undefined || run.status === options.status) runs.push(run);
      } catch (error) {
        if (!(error instanceof StoreRecordError)) throw error;
        unreadable.push({ runId: row.runId, problem: error.message });
      }
      if (runs.length + unreadable.length >= limit)
        return { runs, unreadable, next: index < rows.length - 1 || rows.length === want ? row.runId : null };
    }
    if (rows.length < want) return { runs, unreadable, next: null };
  }
}
