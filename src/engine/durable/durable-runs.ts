/**
 * Runs, resumes and cancels durable runs: the run's metadata record (state, pending approvals, final
 * result), the lease that lets exactly one process drive a run, and the checks that make approvals
 * fail closed. The driver itself only sees `RunJournal`'s hooks.
 */
import type { ResolvedConfig, RunInput } from '../config/config.js';
import { defaultRunId, resolveRunId } from '../hooks/run-id.js';
import { driveRun } from '../runtime/driver.js';
import type { RunResult } from '../runtime/run-result.js';
import type { EffectStep } from '../runtime/driver-hooks.js';
import type { Message } from '../../contracts/model.js';
import type { Lease, Store } from '../../contracts/store.js';
import type { ToolHealth } from '../tools/index.js';
import {
  argumentsHash,
  checkApprovals,
  checkArgumentsUnchanged,
  checkedApprovals,
  wereTaken,
} from './approval-checks.js';
import { ApprovalError, RunAccessError } from './durable-errors.js';
import { checkedReview, checkReview, checkReviewStop } from './review-checks.js';
import { reviewIdOf } from './review-id.js';
import { LoopConfigError } from '../../contracts/errors.js';
import { continuingClock, journalledModel, journalledTools } from './journalled-effects.js';
import { deadOwner, describeLeaseHolder, newLeaseOwner, noteLeaseLeft } from './lease-owner.js';
import { RECORD_SCHEMA_VERSION, type ApprovalDecision, type Decisions, type ReviewDecision } from './records.js';
import { decodeRunRecord, encodeRecord } from './record-codec.js';
import { type PendingReviewRecord, type DecidedReview, type RunRecord } from './run-record.js';
import { limitsKeptWarning, recordLimits, runLimits } from './recorded-limits.js';
import { readResumePlan, type ContinueWith, type ResumePlan } from './resume-plan.js';
import type { TraceEvent } from '../trace/trace-event.js';
import { resultTraceView } from '../trace/run-trace.js';
import {
  readLatestMessages,
  readLatestResult,
  readLatestTrace,
  readRecordedResult,
  readStopTrace,
} from './recorded-results.js';
import { RunJournal } from './run-journal.js';
import { stoppedRecord } from './stopped-record.js';
import { heldLimits, holdShare, settleShare, tenantStopNote } from './tenant-ledger.js';

export { argumentsHash };

/**
 * A person's decision on one call waiting for approval. `argumentsHash` (from `pendingApprovals`) binds
 * the decision to the arguments the person saw.
 * @example
 * const decision: ApprovalInput = { approve: false, reason: 'refunds over $100 need a manager' };
 */
export type ApprovalInput = ApprovalDecision;

/**
 * A person's decision on an output waiting for review (`result.pendingReview`): accept it (the task completes
 * with it) or reject it with a reason the model is told (a reflection retry). `reviewId` (from
 * `pendingReview`) binds the decision to the stop the person saw, `outputHash` only to the output's text.
 * @example
 * const decision: ReviewInput = { accept: false, reason: 'the refund amount is wrong', reviewId: pending.reviewId! };
 */
export type ReviewInput = ReviewDecision;

/**
 * Options of `loop.resume`.
 * @example
 * await loop.resume(runId, { approvals: { call_1: { approve: true } } });
 */
export interface ResumeOptions {
  /**
   * Decisions by call id, one for every call in `result.pendingApprovals`. The same decisions sent again
   * (a retried request) return the run's result; another decision on a decided call is refused.
   */
  approvals?: Readonly<Record<string, ApprovalInput>>;
  /**
   * The decision on the output in `result.pendingReview`, bound to that stop by its `reviewId`. The same
   * decision sent again returns the run's result (never applied to a stop the run reached since); another
   * decision on a decided stop, or one for a stop or output that does not wait, is a `ReviewError`.
   */
  review?: ReviewInput;
  signal?: AbortSignal;
}

/** How a workflow engine drives a run (the DBOS worker): each effect as one of its durable steps. */
export interface DrivingOptions {
  effectStep?: EffectStep;
}

/** The record of a review decision the run took. */
function decidedReview(pending: PendingReviewRecord, decision: ReviewDecision, waitingSeq: number): DecidedReview {
  return {
    reviewId: reviewIdOf(waitingSeq, pending.outputHash),
    outputHash: pending.outputHash,
    taskId: pending.taskId,
    accept: decision.accept,
    reason: decision.accept ? null : decision.reason,
  };
}

export class DurableRuns {
  /** Runs this loop object drives now, by id: `cancel` aborts them directly. */
  private readonly active = new Map<string, AbortController>();

  constructor(
    private readonly resolved: ResolvedConfig,
    private readonly store: Store,
  ) {}

  private lease(owner: string): () => Lease {
    return () => ({ owner, until: Date.now() + this.resolved.durable.leaseMs });
  }

  async run(input: RunInput, driving: DrivingOptions = {}): Promise<RunResult> {
    const { runId, fault } = resolveRunId(input.runId, this.resolved.generateRunId, defaultRunId);
    // A run id hook that fails: the run ends as fatal_error at once, with nothing to persist under an id.
    if (fault !== null) return driveRun(this.resolved, this.resolved.toolHealth, input);
    const owner = newLeaseOwner();
    const record: RunRecord = {
      schemaVersion: RECORD_SCHEMA_VERSION,
      kind: 'run',
      runId,
      state: 'running',
      waitingSeq: null,
      pendingApprovals: [],
      decidedCalls: [],
      result: null,
      definition: this.definition(),
      limits: recordLimits(this.resolved.limits),
      tenantHold: null,
      input: {
        ...(input.goal === undefined ? {} : { goal: input.goal }),
        ...(input.messages === undefined ? {} : { messages: [...input.messages] }),
      },
    };
    if (!(await this.store.createRun(runId, encodeRecord(record), this.lease(owner)()))) {
      throw new RunAccessError({
        code: 'run_exists',
        runId,
        message: `run ${runId} exists in the store already; resume it with loop.resume(${JSON.stringify(runId)}) or pick another runId`,
      });
    }
    try {
      return await this.drive(record, owner, null, input.signal, true, driving);
    } finally {
      await this.release(runId, owner);
    }
  }

  async resume(runId: string, options: ResumeOptions = {}, driving: DrivingOptions = {}): Promise<RunResult> {
    const asked = checkedApprovals(options.approvals);
    const askedReview = checkedReview(options.review);
    const { record: before, leaseOwner } = await this.readRecordRow(runId);
    const approvals = await this.decisionsToTake(before, asked);
    const review = this.reviewToTake(before, askedReview);
    if (before.state === 'finished') await this.settle(before);
    if (before.state === 'finished' || (before.state === 'waiting' && approvals === undefined && review === undefined))
      return readRecordedResult(this.store, before);
    const owner = await this.takeLease(runId, leaseOwner);
    try {
      // Read again under the lease: a resume that won a race may have decided these calls (or this review) meanwhile.
      const record = await this.readRecord(runId);
      const decisions = await this.decisionsToTake(record, approvals);
      const decision = this.reviewToTake(record, review);
      if (
        record.state === 'finished' ||
        (record.state === 'waiting' && decisions === undefined && decision === undefined)
      )
        return await readRecordedResult(this.store, record);
      return await this.drive(
        record,
        owner,
        this.continuation(record, decisions, decision),
        options.signal,
        false,
        driving,
      );
    } finally {
      await this.release(runId, owner);
    }
  }

  /** How a waiting run goes on with the person's decisions; null for a run that was not waiting (a crash). */
  private continuation(
    record: RunRecord,
    decisions: Decisions | undefined,
    review: ReviewDecision | undefined,
  ): ContinueWith | null {
    if (record.state !== 'waiting') return null;
    const waitingSeq = record.waitingSeq ?? 0;
    if (decisions !== undefined) return { kind: 'approvals', waitingSeq, decisions };
    const pending = record.pendingReview ?? null;
    if (review !== undefined && pending !== null) return { kind: 'review', waitingSeq, decision: review, pending };
    return null;
  }

  /**
   * The review decision for the run to take, or undefined when there is none: none was given, or it is the very
   * one it took already (a retried request). Any other decision that does not fit is refused before anything changes.
   */
  private reviewToTake(record: RunRecord, decision: ReviewDecision | undefined): ReviewDecision | undefined {
    if (decision === undefined) return undefined;
    return checkReview(record, decision).verdict === 'take' ? decision : undefined;
  }

  /**
   * Checks decisions as `resume` would before it changes anything (typed `ApprovalError`s), for a
   * caller that hands them to another process: the DBOS worker's `approve`. `retried`: the very
   * decisions the run took already, sent again.
   */
  async checkDecisions(runId: string, approvals: unknown): Promise<{ state: RunRecord['state']; retried: boolean }> {
    const checked = checkedApprovals(approvals) ?? new Map<string, ApprovalDecision>();
    const record = await this.readRecord(runId);
    return { state: record.state, retried: (await this.decisionsToTake(record, checked)) === undefined };
  }

  /**
   * As `checkDecisions`, for a review decision (typed `ReviewError`s). `reviewId`: the stop the decision is
   * for (null only for a stop decided before review ids), to send it on bound to that stop.
   */
  async checkReviewDecision(
    runId: string,
    review: unknown,
  ): Promise<{ state: RunRecord['state']; retried: boolean; reviewId: string | null }> {
    const decision = checkedReview(review);
    if (decision === undefined)
      throw new LoopConfigError({ scope: 'run_input', issues: [{ path: 'review', message: 'expected a decision' }] });
    const record = await this.readRecord(runId);
    const { verdict, reviewId } = checkReview(record, decision);
    return { state: record.state, retried: verdict === 'retried', reviewId };
  }

  /**
   * The decisions for the run to take, or undefined when there are none: none were given, or they are the
   * very ones it took already (a retried request, answered with the run's result as a plain resume is).
   * Any other decision that does not fit is refused before anything changes.
   */
  private async decisionsToTake(record: RunRecord, decisions: Decisions | undefined): Promise<Decisions | undefined> {
    if (decisions === undefined) return undefined;
    try {
      checkApprovals(record, decisions, this.resolved.clock.now());
    } catch (error) {
      if (
        error instanceof ApprovalError &&
        error.code === 'approval_already_decided' &&
        (await wereTaken(this.store, record, decisions))
      )
        return undefined;
      throw error;
    }
    return decisions;
  }

  /** The result of the run's latest stop as recorded (finished or waiting), or null while it runs or when the store does not have it. */
  latestResult(runId: string): Promise<RunResult | null> {
    return readLatestResult(this.store, runId);
  }

  /**
   * The trace of the run's latest stop as recorded, read without its messages (a damaged transcript chunk does not
   * fail it); null while the run runs or when the store does not have it.
   */
  latestTrace(runId: string): Promise<readonly TraceEvent[] | null> {
    return readLatestTrace(this.store, runId);
  }

  /**
   * The messages of the run's latest stop as recorded, read without its trace; null while the run runs or when the
   * store does not have it. A damaged chain of transcript chunks throws `StoreRecordError` naming the chunk's seq.
   */
  latestMessages(runId: string): Promise<readonly Message[] | null> {
    return readLatestMessages(this.store, runId);
  }

  /** The run's recorded state (`running`, `waiting`, `finished`), or null for a run the store does not have. */
  async state(runId: string): Promise<RunRecord['state'] | null> {
    const row = await this.store.readRun(runId);
    return row === null ? null : decodeRunRecord(row.body, runId).state;
  }

  /** Cancels the run: now, if no process holds it (the recorded result is returned), else at its owner's next commit (null). */
  async cancel(runId: string): Promise<RunResult | null> {
    const running = this.active.get(runId);
    if (running) {
      running.abort();
      return null;
    }
    // Read (and its definition checked) before the cancel is stored: a cancel that is refused changes nothing.
    const before = await this.readRecord(runId);
    if (before.state === 'finished') {
      await this.settle(before);
      return readRecordedResult(this.store, before);
    }
    if (!(await this.store.requestCancel(runId)))
      throw new RunAccessError({ code: 'run_not_found', runId, message: `no run ${runId} in the store` });
    const owner = newLeaseOwner();
    const current = await this.store.readRun(runId);
    if (
      !(await this.store.acquireLease(runId, this.lease(owner)(), Date.now(), deadOwner(current?.leaseOwner ?? null)))
    )
      return null;
    try {
      const record = await this.readRecord(runId);
      if (record.state === 'finished') return await readRecordedResult(this.store, record);
      const continueWith: ContinueWith | null =
        record.state === 'waiting'
          ? {
              kind: 'cancel',
              waitingSeq: record.waitingSeq ?? 0,
              message: `cancelled through loop.cancel while waiting for ${record.pendingReview ? 'a review of its output' : 'approval'}`,
            }
          : null;
      return await this.drive(record, owner, continueWith, undefined, false);
    } finally {
      await this.release(runId, owner);
    }
  }

  /**
   * Frees the lease once the drive is over, best effort: when the store is down (the very failure that
   * may have ended the drive) the lease stays, and this process takes it back at once on a resume; the
   * drive's own outcome is what the caller hears.
   */
  private async release(runId: string, owner: string): Promise<void> {
    try {
      await this.store.releaseLease(runId, owner);
      noteLeaseLeft(runId, null);
    } catch {
      noteLeaseLeft(runId, owner);
    }
  }

  private definition(): RunRecord['definition'] {
    return {
      tools: [...this.resolved.tools.keys()].sort(),
      tasks: this.resolved.tasks?.map((task) => task.id) ?? null,
      plan: this.resolved.plan,
    };
  }

  private async readRecord(runId: string): Promise<RunRecord> {
    return (await this.readRecordRow(runId)).record;
  }

  /** The run's record, checked against this loop's definition, and who held its lease when it was read. */
  private async readRecordRow(runId: string): Promise<{ record: RunRecord; leaseOwner: string | null }> {
    const row = await this.store.readRun(runId);
    if (row === null)
      throw new RunAccessError({ code: 'run_not_found', runId, message: `no run ${runId} in the store` });
    const record = decodeRunRecord(row.body, runId);
    const ours = JSON.stringify(this.definition());
    // A finished run's result is readable by any loop; driving one on needs the loop it was started with.
    if (record.state !== 'finished' && JSON.stringify(record.definition) !== ours) {
      throw new RunAccessError({
        code: 'definition_changed',
        runId,
        message: `run ${runId} was started by a loop with ${JSON.stringify(record.definition)}; this loop has ${ours}. Resume it with the loop it was started with`,
      });
    }
    return { record, leaseOwner: row.leaseOwner };
  }

  /**
   * The run's lease for a new owner, taken over from `seenOwner` (who held it when the record was read) if that
   * drive is over. Only when that fails is the run read again (a round trip less on the way to the next call):
   * if the lease changed hands since, it is taken over from the new holder if that drive is over.
   */
  private async takeLease(runId: string, seenOwner: string | null): Promise<string> {
    const owner = newLeaseOwner();
    if (await this.store.acquireLease(runId, this.lease(owner)(), Date.now(), deadOwner(seenOwner))) return owner;
    const row = await this.store.readRun(runId);
    if (
      row !== null &&
      row.leaseOwner !== seenOwner &&
      (await this.store.acquireLease(runId, this.lease(owner)(), Date.now(), deadOwner(row.leaseOwner)))
    )
      return owner;
    // Read again: the row read before may predate the holder that just won the lease.
    const holder = (await this.store.readRun(runId)) ?? row;
    const held = describeLeaseHolder(holder?.leaseOwner ?? null, holder?.leaseUntil ?? 0, Date.now());
    throw new RunAccessError({
      code: 'run_busy',
      runId,
      message: `run ${runId} is being driven by another resume or process: ${held}; try again when it stops or its lease expires`,
    });
  }

  /** A finished run's tenant hold, settled (again: settling twice changes nothing, so a crash between finishing and settling is repaired). */
  private async settle(record: RunRecord): Promise<void> {
    if (record.tenantHold !== null && record.result !== null)
      await settleShare(
        this.store,
        record.tenantHold.tenantId,
        record.runId,
        (record.result as unknown as RunResult).usage,
      );
  }

  /** Drives the run (new, or rebuilt from the journal) to its next stop and records how it stopped. */
  private async drive(
    started: RunRecord,
    owner: string,
    continueWith: ContinueWith | null,
    signal: AbortSignal | undefined,
    isNew: boolean,
    driving: DrivingOptions = {},
  ): Promise<RunResult> {
    const { runId } = started;
    const tenant = this.resolved.tenant;
    // The run's own limits, whatever this loop's are; a run recorded before limits were takes this loop's, from now on.
    const limits = runLimits(started.limits, this.resolved.limits);
    let record: RunRecord = { ...started, schemaVersion: RECORD_SCHEMA_VERSION, limits: recordLimits(limits) };
    if (tenant !== undefined && record.tenantHold === null) {
      // Taken once per run (a resume after a crash in between finds the same hold in the ledger).
      record = { ...record, tenantHold: await holdShare(this.store, tenant, runId, limits) };
      await this.store.append(runId, [], this.lease(owner)(), encodeRecord(record));
    }
    const plan: ResumePlan | null = isNew ? null : await readResumePlan(this.store, runId);
    if (plan !== null) {
      plan.continueWith = continueWith;
      if (continueWith?.kind === 'approvals') checkArgumentsUnchanged(record, plan, continueWith.decisions);
      if (continueWith?.kind === 'review') checkReviewStop(record, plan);
    }
    const lease = this.lease(owner);
    const decidedCalls =
      continueWith === null || continueWith.kind === 'review'
        ? record.decidedCalls
        : [
            ...record.decidedCalls,
            ...(continueWith.kind === 'approvals'
              ? continueWith.decisions.keys()
              : record.pendingApprovals.map(({ callId }) => callId)),
          ];
    const decidedReviews =
      continueWith?.kind === 'review'
        ? [
            ...(record.decidedReviews ?? []),
            decidedReview(continueWith.pending, continueWith.decision, continueWith.waitingSeq),
          ]
        : record.decidedReviews;
    // A waiting run's result (and where its trace and messages are) goes once it continues.
    const { resultTrace: _stale, resultMessages: _staleMessages, pendingReview: _decided, ...rest } = record;
    const continued: RunRecord = {
      ...rest,
      decidedCalls,
      ...(decidedReviews === undefined ? {} : { decidedReviews }),
    };
    const continuedRunBody =
      continueWith === null
        ? undefined
        : encodeRecord({
            ...continued,
            state: 'running',
            waitingSeq: null,
            pendingApprovals: [],
            result: null,
          });
    const sharedHealth: ToolHealth | undefined = this.resolved.toolHealth;
    const held = heldLimits(limits, record.tenantHold);
    const journal = new RunJournal({
      store: this.store,
      runId,
      lease,
      snapshotEvery: this.resolved.durable.snapshotEvery,
      maxUncommittedSteps: this.resolved.durable.maxUncommittedSteps,
      maxUncommittedMs: this.resolved.durable.maxUncommittedMs,
      plan,
      ownsHealth: sharedHealth === undefined,
      continuedRunBody,
      limits: held,
      limitsWarning: isNew ? null : limitsKeptWarning(limits, this.resolved.limits),
      ...(driving.effectStep === undefined ? {} : { effectStep: driving.effectStep }),
      ...(continueWith === null || record.result === null
        ? {}
        : { stopTrace: await readStopTrace(this.store, record, plan) }),
    });
    const config: ResolvedConfig = {
      ...this.resolved,
      limits: held,
      model: journalledModel(this.resolved.model, journal),
      tools: journalledTools(this.resolved.tools, journal),
      clock: continuingClock(this.resolved.clock, plan?.lastAt ?? null),
    };
    const controller = new AbortController();
    this.active.set(runId, controller);
    const stopHeartbeat = this.heartbeat(runId, lease);
    // Not AbortSignal.any: on Node 20 the caller's signal keeps every signal combined from it for good, a
    // leak for a long-lived signal shared by many runs. One listener instead, taken off when the run ends.
    const onAbort = () => controller.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    let result: RunResult;
    try {
      result = await driveRun(config, sharedHealth, { ...record.input, runId, signal: controller.signal }, journal);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      stopHeartbeat();
      this.active.delete(runId);
    }
    const note = result.stopReason === 'budget_exhausted' ? tenantStopNote(limits, record.tenantHold) : null;
    if (note !== null) result.detail = `${result.detail} (${note})`;
    // The trace is stored once: in the journal's trace chunks, the run record pointing at the last one.
    // Its length and its last events only: a resumed run's earlier events stay in the journal until `result.trace` is read.
    const trace = resultTraceView(result);
    const resultTrace = this.resolved.trace.inMemory && trace.length > 0 ? journal.chunkFinalTrace(trace) : undefined;
    // So are the messages: in the journal's transcript chunks, the run record naming the last (written now).
    const resultMessages = journal.chunkFinalTranscript(result.messages) ?? undefined;
    const stopped = stoppedRecord(continued, result, {
      lastEventSeq: journal.lastSeq,
      resultTrace,
      resultMessages,
      approvalExpiresAfterMs: this.resolved.durable.approvalExpiresAfterMs,
      now: this.resolved.clock.now(),
    });
    // The events still queued and the run's new metadata: one commit.
    // Finished at the wall clock's time (not the run's clock): `prune` compares it with the caller's `Date.now()`.
    await journal.finish(encodeRecord(stopped), stopped.state === 'finished' ? Date.now() : undefined);
    if (stopped.state === 'finished') await this.settle(stopped);
    return result;
  }

  /**
   * Renews the lease while the run waits (a backoff, a pause, a long tool call) without writing: a live
   * owner keeps its run. Stops on the first refusal: the run is someone else's then, and its next
   * journal write fails with `StoreConflictError`.
   */
  private heartbeat(runId: string, lease: () => Lease): () => void {
    const timer = setInterval(
      () => {
        this.store.append(runId, [], lease()).catch(() => clearInterval(timer));
      },
      Math.max(10, Math.floor(this.resolved.durable.leaseMs / 3)),
    );
    // Never holds a Node, Bun or Deno process open; a browser's timers have no unref.
    (timer as { unref?: () => unknown }).unref?.();
    return () => clearInterval(timer);
  }
}
