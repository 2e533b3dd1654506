/**
 * A durable run's journal and its hooks into the driver.
 *
 * Design: the journal holds, under (runId, seq), every event the machine is sent — written before the
 * machine sees it — together with what that step changed in the session outside the machine (a
 * delta: appended messages, trace events and warnings, the small fields that changed). Records are
 * committed in groups (see journal-commits.ts). Every `snapshotEvery` events (see journal-snapshots.ts) the
 * machine's persisted snapshot and the session's small fields (all of them) are written too, with the in-memory
 * trace since the last snapshot as a trace chunk; the snapshot holds no history, so it stays small however long the run (but it still waits for
 * the journal since the last one to be as large as it, so snapshots never cost more than the journal). With
 * it goes a transcript chunk: the transcript's change since the previous chunk, which it names, and the
 * no-progress tracker's triples counted since then (or all of them), so a resume folds that chain (one row
 * per snapshot) instead of reading every event before the snapshot.
 * Resume restores the latest snapshot and re-applies the events after it (their deltas, then the
 * events themselves to the actor, which reproduces the transitions' trace and warnings): nothing is
 * executed again, and the state comes back exactly as it was, clock readings included, because it is
 * read back rather than recomputed. Only the effect that was in flight when the process died runs
 * again, and its journalled parts are served from the journal: tool calls that finished
 * (`tool-result`), tool calls that started (`intent`, written for calls that are not idempotent only:
 * settled by `checkOutcome`, or ending as `unknown_outcome`, the run stopping with `needs_human`), and a
 * model response committed before its event (`model`: only journals of an earlier loopstate hold one in
 * their tail; a reply is now committed with its event). Idempotent calls simply run again under their keys.
 */
import type { Actor } from 'xstate';
import type { LoopMachine } from '../../../machines/index.js';
import type { LoopEvent, LoopLimits } from '../../../machines/types.js';
import { isWellFormedResponse } from '../../contracts/model-response-schema.js';
import type { Message, Model, ModelRequest, ModelResponse } from '../../contracts/model.js';
import { thrownMessage } from '../redaction/describe-thrown.js';
import { knownMetadata } from '../trace/model-facts.js';
import type { TraceEvent } from '../trace/trace-event.js';
import type { DriverHooks, EffectKind, EffectStep, RestoreTarget } from '../runtime/driver-hooks.js';
import { RunInterruption } from '../runtime/interruption.js';
import type { RunSession } from '../runtime/run-session.js';
import type { Lease, RunControl, Store } from '../../contracts/store.js';
import { isCallerFault, type Tool, type ToolContext, type ToolHealth } from '../tools/index.js';
import { UnknownOutcomeError } from '../tools/unknown-outcome-error.js';
import {
  RECORD_SCHEMA_VERSION,
  type ApprovalDecision,
  type EventRecord,
  type ReviewDecision,
  type JournalRecord,
} from './records.js';
import { type ResultMessagesAt } from './run-record.js';
import { stopTraceAfter, type ResumePlan, type TraceTail } from './resume-plan.js';
import { applyDelta, cursorOf, restoreSessionState, sessionDelta, type SessionCursor } from './session-state.js';
import { applyApprovals } from './approval-decision.js';
import { mayWaitForApproval } from './approval-checks.js';
import { evaluationMayWait } from './review-checks.js';
import { applyReview } from './review-decision.js';
import { withRunLimits } from './recorded-limits.js';
import { migrateTransportCounters } from './transport-counters-migration.js';
import { lookUp, serialised, served, type ToolOutcome } from './tool-outcome.js';
import { JournalCommits } from './journal-commits.js';
import { JournalSnapshots } from './journal-snapshots.js';

export interface RunJournalOptions {
  store: Store;
  runId: string;
  /** The lease to write with, renewed on every call. */
  lease: () => Lease;
  /** The run's metadata once it continues from a stop (state running, the calls decided), written with the superseding event. */
  continuedRunBody: string | undefined;
  snapshotEvery: number;
  /**
   * Commits before a model call are grouped across steps of idempotent calls only while fewer than
   * `maxUncommittedSteps` model calls began since the last commit and the last commit is younger than
   * `maxUncommittedMs` (a monotonic wall clock); 0 for either (or absent) commits before every model call.
   */
  maxUncommittedSteps?: number;
  maxUncommittedMs?: number;
  /** The rebuilt run to continue, or null for a new run. */
  plan: ResumePlan | null;
  /** Whether the run's tool health is its own (persisted) or the caller's shared one (not persisted). */
  ownsHealth: boolean;
  /** Each effect as a durable step of a workflow engine (the DBOS worker's); absent in the embedded mode. */
  effectStep?: EffectStep;
  /** The run's limits (its tenant's share in place): a restored snapshot's give way to them. */
  limits: LoopLimits;
  /** Warned once the run is rebuilt or started: the resuming loop's limits differ from the run's. */
  limitsWarning: string | null;
  /**
   * A run continuing from a stop: the stop's recorded trace, from index `from` on (at most the trace length of the
   * snapshot the run is rebuilt from). What it recorded after the event it stopped on is in no event's delta; its
   * `learning-saved` (the leg's last batch) is put back into the rebuilt trace.
   */
  stopTrace?: TraceTail;
}

export class RunJournal implements DriverHooks {
  readonly machineSnapshot;
  readonly effectStep: EffectStep | undefined;
  /** Whether the loop's evaluations may wait (a judge) or stop for a review; worked out at the first evaluation. */
  private evaluationMayWait: boolean | undefined = undefined;
  private nextSeq: number;
  private lastEventSeq: number;
  private modelCallsSinceEvent = 0;
  private cursor: SessionCursor | null = null;
  /**
   * Whether the tool round under way has a call that is not idempotent: its calls then wait for the commit
   * of the reply (and that call's intent) before they run; a round of idempotent calls only runs at once.
   */
  private roundHasWrites = true;
  /** A round with a call that is not idempotent ran: its event is committed before the next model call too. */
  private writeRoundRan = false;
  /** What is queued for the store, and when it is committed. */
  private readonly commits: JournalCommits;
  /** The snapshots, and the trace and transcript chunks written with them. */
  private readonly snapshots: JournalSnapshots;
  /** Tool calls running now: an outcome is committed at once while another call of its round still runs. */
  private toolsRunning = 0;
  private health: ToolHealth | null = null;
  /** The run's session, once the driver hands it over (`restore`): its transcript is chunked at the stop. */
  private session: RunSession | null = null;
  /** The run's actor, handed over with the session: a snapshot taken while a model call is awaited is of it. */
  private actor: Actor<LoopMachine> | null = null;
  /** What the event the run stopped at (for approval) is replaced with, once rebuilt. */
  private superseding: { seq: number; approvals?: Record<string, ApprovalDecision>; review?: ReviewDecision } | null =
    null;
  /** The effect in flight when the run was interrupted: its journalled parts, served instead of run. */
  private readonly tail: ResumePlan['tail'];
  /** Said once, with the run's first new record: after the rebuild, or after a fresh start's run-start. */
  private limitsWarning: string | null;
  constructor(private readonly options: RunJournalOptions) {
    const machine = options.plan?.snapshot?.machine;
    this.machineSnapshot = (
      machine === undefined ? undefined : withRunLimits(migrateTransportCounters(machine), options.limits)
    ) as DriverHooks['machineSnapshot'];
    this.limitsWarning = options.limitsWarning;
    this.nextSeq = options.plan?.nextSeq ?? 1;
    this.lastEventSeq = options.plan?.lastEventSeq ?? 0;
    this.tail = options.plan?.tail ?? { models: [], intents: new Map(), results: new Map() };
    this.effectStep = options.effectStep;
    this.commits = new JournalCommits(
      options.store,
      options.runId,
      options.lease,
      { maxUncommittedSteps: options.maxUncommittedSteps, maxUncommittedMs: options.maxUncommittedMs },
      options.effectStep !== undefined,
    );
    this.snapshots = new JournalSnapshots(
      {
        runId: options.runId,
        snapshotEvery: options.snapshotEvery,
        effectStep: options.effectStep,
        commits: this.commits,
        lastEventSeq: () => this.lastEventSeq,
        takeSeq: () => this.takeSeq(),
        standing: () => ({ actor: this.actor, session: this.session, cursor: this.cursor, health: this.health }),
      },
      options.plan,
    );
    this.commits.beforeWaitCommit = this.snapshots.snapshotInWait;
  }

  /** The seq of the last event journalled. */
  get lastSeq(): number {
    return this.lastEventSeq;
  }

  private get runId(): string {
    return this.options.runId;
  }

  private queue(record: JournalRecord, runBody?: string): void {
    this.commits.queue(record, runBody);
  }

  private flush(): Promise<void> {
    return this.commits.flush();
  }

  /** Commits what is queued, with the run's metadata once it stopped (and when it finished): the run's last commit. */
  finish(runBody: string, finishedAt: number | undefined): Promise<void> {
    return this.commits.finish(runBody, finishedAt);
  }

  /** See `JournalSnapshots.chunkFinalTrace`. */
  chunkFinalTrace(trace: { readonly length: number; since(from: number): TraceEvent[] }): {
    seq: number;
    length: number;
  } {
    return this.snapshots.chunkFinalTrace(trace);
  }

  /** See `JournalSnapshots.chunkFinalTranscript`. */
  chunkFinalTranscript(messages: readonly Message[]): ResultMessagesAt | null {
    return this.snapshots.chunkFinalTranscript(messages);
  }

  private takeSeq(): number {
    return this.nextSeq++;
  }

  async restore({ actor, session, health, send, deliver }: RestoreTarget): Promise<boolean> {
    this.health = this.options.ownsHealth ? health : null;
    this.session = session;
    this.actor = actor;
    const plan = this.options.plan;
    // A run interrupted before its first event has nothing to rebuild: it starts afresh.
    if (plan === null || (plan.snapshot === null && plan.events.length === 0)) {
      this.cursor = cursorOf(session, this.health, false);
      return false;
    }
    session.whileReplaying(() => {
      if (plan.snapshot !== null)
        restoreSessionState(session, this.health, plan.snapshot.session, plan, {
          runId: this.runId,
          seq: plan.snapshot.seq,
        });
      this.snapshots.restoreChains(plan, session);
      // Cursors of a rebuilt run carry the progress tracker whole in the next record (it was restored, not
      // tracked) unless it is found below to stand where the last event left it.
      this.cursor = cursorOf(session, this.health, false);
      const stoppedAt = plan.continueWith?.waitingSeq ?? null;
      for (const record of plan.events) {
        // The event that replaces the stop's carries what changed since the event before it, the stop's own changes
        // to the tracker included (tracked from here): not the tracker whole, unless the stop's record held it whole.
        if (record.seq === stoppedAt && record.delta.fields.progress.kind === 'changes') {
          session.progress.trackChanges();
          session.progress.takeChanges();
          this.cursor = cursorOf(session, this.health, true);
        }
        applyDelta(session, this.health, record.delta, { runId: this.runId, seq: record.seq });
        // The event the run stopped at is replaced, not replayed: the rebuilt run stands just before it.
        if (record.seq === stoppedAt) break;
        send(record.event as LoopEvent);
        this.cursor = cursorOf(session, this.health, false);
      }
      // The stop's last batch was written after the event it stopped on: its trace keeps it (sinks had it then).
      if (plan.continueWith !== null)
        for (const event of stopTraceAfter(this.options.stopTrace, session.traceLength))
          if (event.type === 'learning-saved') session.record(event);
    });
    // A plain resume stands exactly where its last event left the run, so the next record carries only the
    // tracker's changes since then, not every triple of the task again. A continued stop's next event
    // replaces the stop's (a later resume applies it to the state before that event): it carries what changed
    // since that state (see above), or the tracker whole.
    if (plan.continueWith === null) {
      session.progress.trackChanges();
      session.progress.takeChanges();
      this.cursor = cursorOf(session, this.health, true);
    }
    session.record({
      type: 'run-resume',
      runId: this.runId,
      at: plan.lastAt ?? 0,
      fromSeq: plan.snapshot?.seq ?? 0,
      replayedEvents: plan.events.length,
    });
    this.warnOfLimits(session, plan.lastAt ?? 0);
    const stop = plan.events.at(-1);
    if (plan.continueWith !== null && stop !== undefined) {
      this.superseding = { seq: stop.seq };
      if (plan.continueWith.kind === 'approvals') {
        // Own entries (fromEntries defines them): a call id may be `__proto__`.
        this.superseding.approvals = Object.fromEntries(plan.continueWith.decisions);
        await deliver(
          applyApprovals(session, stop.event as LoopEvent, plan.continueWith.decisions, actor.getSnapshot().context),
        );
      } else if (plan.continueWith.kind === 'review') {
        this.superseding.review = plan.continueWith.decision;
        await deliver(
          applyReview(session, stop.event as LoopEvent, plan.continueWith.decision, plan.continueWith.pending),
        );
      } else {
        await deliver({ type: 'run.cancelRequested', at: stop.event.at, message: plan.continueWith.message });
      }
    }
    return true;
  }

  async beforeSend(event: LoopEvent, session: RunSession): Promise<void> {
    // A journal write inside the effect failed (a model response or a tool intent not recorded): the
    // effect saw it as the model's or the tool's failure, which it was not. That outcome is neither
    // journalled nor shown to the machine; the store's error ends the drive, and a resume redoes the
    // effect from what the journal holds.
    if (this.commits.writeFailure !== null) throw this.commits.writeFailure;
    // A run started afresh on resume (interrupted before its first event): after its run-start.
    this.warnOfLimits(session, event.at);
    const cursor = this.cursor ?? cursorOf(session, this.health);
    const record: EventRecord = {
      schemaVersion: RECORD_SCHEMA_VERSION,
      kind: 'event',
      runId: this.runId,
      seq: this.takeSeq(),
      event: event as EventRecord['event'],
      delta: sessionDelta(session, cursor, this.health),
      ...(this.superseding === null
        ? {}
        : {
            supersedes: this.superseding.seq,
            ...(this.superseding.approvals ? { approvals: this.superseding.approvals } : {}),
            ...(this.superseding.review ? { review: this.superseding.review } : {}),
          }),
    };
    const runBody = this.superseding === null ? undefined : this.options.continuedRunBody;
    // A decision on a stop (approvals, a review, a continue), or a write round's event (its outcomes may be
    // committed already), is durable before the next model call.
    if (this.superseding !== null || this.writeRoundRan) this.commits.mustCommit = true;
    this.writeRoundRan = false;
    this.superseding = null;
    this.queue(record, runBody);
    // A workflow step (DBOS) records its outcome inside the step: the step's result is durable with it.
    if (this.effectStep !== undefined) await this.flush();
    this.lastEventSeq = record.seq;
    this.modelCallsSinceEvent = 0;
  }

  private warnOfLimits(session: RunSession, at: number): void {
    if (this.limitsWarning === null) return;
    session.warn(this.limitsWarning, at);
    this.limitsWarning = null;
  }

  async afterSend(actor: Actor<LoopMachine>, session: RunSession): Promise<void> {
    this.cursor = cursorOf(session, this.health);
    if (!this.snapshots.afterEvent(actor, session)) return;
    // A workflow step (DBOS) commits at every event: the snapshot goes with the next one's commit, or now.
    if (this.effectStep !== undefined) await this.flush();
  }

  commit(): Promise<void> {
    return this.flush();
  }

  async beforeEffect(session: RunSession, controller: AbortController, kind: EffectKind): Promise<boolean> {
    const { store } = this.options;
    // Before the next external effect: the last effect's outcome and the events since are committed. A tool
    // round commits in its calls instead (see `execute`): with its intents, or not before it runs at all.
    const since = this.commits.started;
    let committed = kind !== 'runTools';
    if (!committed) {
      this.roundHasWrites = hasWrites(session);
      this.writeRoundRan = this.roundHasWrites;
      // A round of idempotent calls only is the rest of the step its model call began: a pause or a cancel
      // is seen at the next step's commit or control read, not between the two.
      if (!this.roundHasWrites) return committed;
    } else if (kind === 'callModel' && this.commits.mayWait()) {
      // Steps of idempotent calls only, grouped into one commit (see `mayWait`): the latest control found stands
      // for them (see `recentControl`), else it is read.
      committed = false;
    } else {
      // Before an evaluation (a judge waits as a model call does, a review stops the run at its outcome): the wait's
      // snapshot, under its bound, goes with this commit; a resume from the outcome then replays no event.
      if (kind === 'evaluate' && (this.evaluationMayWait ??= evaluationMayWait(session.config)))
        this.snapshots.snapshotInWait();
      await this.flush();
      // An evaluation's or a backoff's outcome is committed before the next model call (an LLM judge is not
      // paid again for a commit saved).
      if (kind !== 'callModel') this.commits.mustCommit = true;
    }
    if (kind === 'callModel') this.commits.callBegins();
    // The control the commit just made found (the same round trip); for a grouped step, the latest one found (by
    // the last commit or a read since) within `maxUncommittedMs`; else read now (always before a round with a write).
    let control =
      this.commits.controlSince(since) ??
      (kind === 'callModel' && !committed ? this.commits.recentControl() : null) ??
      (await this.readControl());
    // Paused before a model call: a snapshot of where the run stands (once a pause) lets a resume after a restart
    // meanwhile replay no event; it goes with the commit below, or with one of its own. (Before a round with a write
    // the session holds the round's calls, which a snapshot does not: a resume then replays from the one before.)
    const snapshotted =
      kind === 'callModel' &&
      control.paused !== null &&
      !control.cancelRequested &&
      this.snapshots.snapshotAtPause(session);
    // A group held back for a pause (it may last hours, and processes restart meanwhile) or a cancel is committed
    // first: the steps it holds are not repeated, and the run's record shows where it stands. Grouped steps take the
    // control of the commit before them, so a pause set meanwhile may be found first before a round with a write.
    if (
      snapshotted ||
      ((kind === 'callModel' || kind === 'runTools') &&
        !committed &&
        (control.cancelRequested || control.paused !== null))
    ) {
      await this.flush();
      committed = true;
      // The flush counted no model call as begun since it: this one is.
      if (kind === 'callModel') this.commits.callBegins();
    }
    for (;;) {
      if (control.cancelRequested) {
        controller.abort(new RunInterruption('cancelled', 'cancelled through loop.cancel'));
        return committed;
      }
      if (control.paused === null || session.signal.aborted) return committed;
      // Paused: no new step until the pause is lifted (a cancel or the deadline still ends the run).
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, store.pausePollMs);
        function done() {
          clearTimeout(timer);
          session.signal.removeEventListener('abort', done);
          resolve();
        }
        session.signal.addEventListener('abort', done, { once: true });
      });
      // A grouped step after the pause is lifted takes this look, not the commit's that found the pause.
      control = await this.readControl();
    }
  }

  /** The run's control read from the store, and kept as the latest one found (see `JournalCommits.recentControl`). */
  private async readControl(): Promise<RunControl> {
    const askedAt = performance.now();
    const commit = this.commits.started;
    const control = await this.options.store.readControl(this.runId);
    this.commits.noteControl(control, askedAt, commit);
    return control;
  }

  /** The model call: a response journalled before the interruption is served, a new one queued for the next commit. */
  async generate(model: Model, request: ModelRequest): Promise<ModelResponse> {
    const index = this.modelCallsSinceEvent++;
    const served = this.tail.models.find((record) => record.afterEvent === this.lastEventSeq && record.index === index);
    if (served !== undefined) return served.response;
    const afterEvent = this.lastEventSeq;
    // A group whose commit waited (see `beforeEffect`) is committed while a model that does not answer at once works.
    const response = await this.commits.meanwhile(model.generate(request), this.snapshots.snapshotInWaitDue());
    // A reply that may stop the run for an approval, come before any wait's snapshot: the run still stands where its
    // last event left it, as in the wait, and a snapshot of that lets the resume with the decision replay no event.
    if (this.session !== null && mayWaitForApproval(response, this.session)) this.snapshots.snapshotInWait();
    // A malformed response is the driver's to refuse (fatal_error); it is not worth serving again.
    if (isWellFormedResponse(response)) {
      const { text, toolCalls, usage, metadata } = response;
      this.queue({
        schemaVersion: RECORD_SCHEMA_VERSION,
        kind: 'model',
        runId: this.runId,
        seq: this.takeSeq(),
        afterEvent,
        index,
        // The metadata too, so a resumed run traces and warns about a served reply as it would the live one.
        response: { text, toolCalls: [...toolCalls], usage, ...knownMetadata(metadata) },
      });
      // Committed with its event before anything depends on it: before the next model call, before a
      // tool that is not idempotent runs, or with the run's stop (a crash before that asks the model again).
    }
    return response;
  }

  /**
   * A tool call. One that is not idempotent has its intent committed before it runs (with the reply and
   * the round's other intents), and the calls of its round wait for that commit too; a round of idempotent
   * calls only runs at once and commits with its outcomes before the next effect.
   */
  async execute(tool: Tool, args: unknown, context: ToolContext): Promise<unknown> {
    const key = context.idempotencyKey;
    const finished = this.tail.results.get(key);
    if (finished !== undefined) return served(finished.outcome);
    // In flight from here to its outcome: a call of the round that settles meanwhile commits at once.
    this.toolsRunning += 1;
    try {
      return await this.executeOnce(tool, args, context, key);
    } finally {
      this.toolsRunning -= 1;
    }
  }

  private async executeOnce(tool: Tool, args: unknown, context: ToolContext, key: string): Promise<unknown> {
    const started = this.tail.intents.has(key);
    if (started && !tool.idempotent) {
      const lookup = await lookUp(tool, args, context);
      if (lookup.status === 'done') {
        await this.recordOutcome(key, tool, { kind: 'returned', text: serialised(lookup.result) });
        return lookup.result;
      }
      // not_done: the lookup proved it never took effect, so it runs now, under the same key.
      if (lookup.status !== 'not_done') throw new UnknownOutcomeError({ tool: tool.name, idempotencyKey: key });
    }
    // A snapshot waiting for this commit is written first, in a commit of its own: a snapshot write that fails
    // after the intent is durable would end the run before the tool runs, and a resume could not tell it never
    // did (its outcome unknown). Failing before the intent, it leaves the call to run on resume.
    if (!started && !tool.idempotent && this.commits.pendingSnapshot !== null) await this.flush();
    // An idempotent call needs no intent: after a crash it runs again under the same key whatever the journal says.
    if (!started && !tool.idempotent)
      this.queue({
        schemaVersion: RECORD_SCHEMA_VERSION,
        kind: 'intent',
        runId: this.runId,
        seq: this.takeSeq(),
        key,
        tool: tool.name,
        args: args ?? null,
      });
    // The intent (with everything queued before it) is durable before the tool runs.
    if (!tool.idempotent || this.roundHasWrites) await this.flush();
    let value: unknown;
    try {
      value = await tool.execute(args, context);
    } catch (error) {
      await this.recordOutcome(key, tool, {
        kind: 'threw',
        name: error instanceof Error ? error.name : 'Error',
        message: thrownMessage(error),
        callerFault: isCallerFault(error),
      });
      throw error;
    }
    await this.recordOutcome(key, tool, { kind: 'returned', text: serialised(value) });
    return value;
  }

  /**
   * Queues a tool's outcome: committed with the round's event before the next effect, or, in a round with
   * a call that is not idempotent, at once while another call of the round still runs (it may run for long;
   * a crash meanwhile must not lose this one).
   */
  private async recordOutcome(key: string, tool: Tool, outcome: ToolOutcome): Promise<void> {
    this.queue({
      schemaVersion: RECORD_SCHEMA_VERSION,
      kind: 'tool-result',
      runId: this.runId,
      seq: this.takeSeq(),
      key,
      tool: tool.name,
      outcome,
    });
    // This call counts itself among those running. An idempotent call of a round of them only would just
    // run again; in a round with a write it commits too, so the round's calls settle in the order a
    // resumed round (its finished calls served at once) settles them.
    if (this.toolsRunning > 1 && (!tool.idempotent || this.roundHasWrites)) await this.flush();
  }
}

/** Whether a call of the tool round about to run is not idempotent (its intent must be durable before it runs). */
function hasWrites(session: RunSession): boolean {
  return session.pendingCalls.some(
    ({ call, refusal }) =>
      call.status === 'ready' && refusal === null && session.tools.get(call.request.name)?.idempotent !== true,
  );
}
