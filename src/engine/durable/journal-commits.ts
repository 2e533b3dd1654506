/**
 * A durable run's commits: the records queued since the last one, and when they go to the store.
 *
 * Commits happen one after the other, in seq order, and a flush joins the commit that has not taken its rows
 * yet (so the calls of one round that flush one after the other share it). Before a model call the commit may
 * wait for a later one, across steps of idempotent calls only, within `maxUncommittedSteps` replies and
 * `maxUncommittedMs` since the last commit ended (see `mayWait`); what must be durable first sets `mustCommit`.
 * The run journal decides what to queue and when a commit is due; this decides what a commit holds.
 */
import { appendTakesSnapshot, type Lease, type RunControl, type Store, type StoreRow } from '../../contracts/store.js';
import { type IntentRecord, type JournalRecord, type ModelRecord, type ToolResultRecord } from './records.js';
import { encodeRecord } from './record-codec.js';

/** A record whose row is written only if no event follows it in its commit. */
type PendingEffectRecord = ModelRecord | IntentRecord | ToolResultRecord;

/** How far the commits before model calls may be grouped (see `JournalCommits.mayWait`); 0 or absent: never. */
export interface CommitBounds {
  maxUncommittedSteps?: number;
  maxUncommittedMs?: number;
}

export class JournalCommits {
  /**
   * Records not yet committed, and the run body to commit with them. Events and chunks are encoded when
   * queued (they describe the session as it is now); a model reply, an intent or a tool outcome is encoded
   * only if its commit has no event after it (see `commitRows`), and it is never changed once queued.
   */
  private pending: (StoreRow | PendingEffectRecord)[] = [];
  private pendingRunBody: string | undefined = undefined;
  private pendingFinishedAt: number | undefined = undefined;
  /** A snapshot taken and not yet written: written with the next commit (which holds its events), or right after it. */
  pendingSnapshot: StoreRow | null = null;
  /** Set by `finish`: the commit it makes is the run's last (see `flush`). */
  private finishing = false;
  /** The commit under way: commits happen one after the other, in seq order. */
  private committing: Promise<void> = Promise.resolve();
  /** A commit that waits for the one under way and has not taken its rows yet: a flush meanwhile joins it. */
  private scheduled: Promise<void> | null = null;
  /**
   * Commits started so far, and the run's control as the latest commit that answered it found it, or as the journal
   * read it since (`at`: when it was asked for, performance.now(); `commit`: the commits started by then).
   */
  private commitsStarted = 0;
  private controlSeen: { control: RunControl; commit: number; at: number } | null = null;
  /**
   * Whether something queued since the last commit must be durable before the next model call: the run's
   * first records, a write round's outcomes, an evaluation's or a backoff's outcome, a decision on a stop (the
   * journal sets it). Else the commit may wait, within bounds: `uncommittedCalls` model calls begun since the
   * last commit started (a call that failed counts: its failure is uncommitted too), which ended at
   * `lastCommitAt` (performance.now()).
   */
  mustCommit = true;
  private uncommittedCalls = 0;
  private lastCommitAt = 0;
  /** Characters of the rows encoded since the journal last set it to 0 (its snapshots' spacing). */
  bytesQueued = 0;
  /** The first commit that failed, if one did: the journal ends the drive with it. */
  writeFailure: unknown = null;

  constructor(
    private readonly store: Store,
    private readonly runId: string,
    private readonly lease: () => Lease,
    private readonly bounds: CommitBounds,
    /** A workflow step (DBOS) commits at every event: its commits never wait. */
    private readonly workflowStep: boolean,
  ) {}

  /** Commits started so far (see `controlSince`). */
  get started(): number {
    return this.commitsStarted;
  }

  /** The control a commit started after the `since`-th found (the same round trip), or null. */
  controlSince(since: number): RunControl | null {
    return this.controlSeen !== null && this.controlSeen.commit > since ? this.controlSeen.control : null;
  }

  /**
   * For a step grouped into the commit before it (see `mayWait`): the latest control found (by the last commit, or
   * read by the journal since: `noteControl`), if it was asked for less than `maxUncommittedMs` ago and no commit
   * started after it, else null (the journal then reads it). A grouped step reads no control of its own: a read
   * between the engine's steps costs ~30-40 µs here (a system call, and the cold caches after it), a third of what
   * the journal adds to an instant step. So a pause or a cancel is seen within the bounds that grouping already puts
   * on what a crash repeats: `maxUncommittedMs` and `maxUncommittedSteps` model calls.
   */
  recentControl(): RunControl | null {
    const { maxUncommittedMs = 0 } = this.bounds;
    const seen = this.controlSeen;
    // Not while a later commit is under way (one started in a model call's wait): the group's bound on model calls
    // counts from that commit's start, so the control must be as recent.
    return seen !== null && seen.commit === this.commitsStarted && performance.now() - seen.at < maxUncommittedMs
      ? seen.control
      : null;
  }

  /**
   * A control the journal read itself (a paused run's looks, a read before a step), asked for at `askedAt` when
   * `commit` commits had started: a grouped step after it takes this, not an older one.
   */
  noteControl(control: RunControl, askedAt: number, commit: number): void {
    if (this.controlSeen === null || askedAt >= this.controlSeen.at)
      this.controlSeen = { control, commit, at: askedAt };
  }

  /**
   * Queues a record for the next commit. Only what must be durable before the next external effect is
   * committed (the journal flushes then): a model reply with its event before the next model call (or a later
   * one, see `mayWait`) or a tool that is not idempotent, such a tool's intent before it runs, its outcome
   * before the next effect; the rest rides along.
   */
  queue(record: JournalRecord, runBody?: string): void {
    if (record.kind === 'model' || record.kind === 'intent' || record.kind === 'tool-result') this.pending.push(record);
    else {
      const row: StoreRow = { seq: record.seq, kind: record.kind, body: encodeRecord(record) };
      this.bytesQueued += row.body.length;
      this.pending.push(row);
    }
    if (runBody !== undefined) this.pendingRunBody = runBody;
  }

  /**
   * Commits the queued records (and a queued run body) in one append, after any commit still under way.
   * A group commit: what is queued until that append starts goes with it.
   */
  flush(runBody?: string, finishedAt?: number): Promise<void> {
    if (runBody !== undefined) this.pendingRunBody = runBody;
    if (finishedAt !== undefined) this.pendingFinishedAt = finishedAt;
    if (this.scheduled !== null) return this.scheduled;
    if (this.pending.length === 0 && this.pendingRunBody === undefined && this.pendingSnapshot === null)
      return this.committing;
    const { store } = this;
    const commit = this.committing.then(async () => {
      this.scheduled = null;
      // After a failed commit only tools' outcomes are appended. A commit chained behind it holding a tool's intent
      // (queued while it was out) would make that intent durable, its tool run, and its outcome never be (the
      // failure ends the drive at the next event): a resume could not tell whether the tool took effect. But the
      // outcome of a call already running (its intent durable before the failure) is kept, so a resume serves it.
      if (this.writeFailure !== null && !this.onlyOutcomesPending()) throw this.writeFailure;
      const rows = this.commitRows(this.pending);
      const body = this.pendingRunBody;
      const at = this.pendingFinishedAt;
      const snapshot = this.pendingSnapshot;
      const last = this.finishing;
      this.pending = [];
      this.pendingRunBody = undefined;
      this.pendingFinishedAt = undefined;
      this.pendingSnapshot = null;
      this.mustCommit = false;
      this.uncommittedCalls = 0;
      const started = ++this.commitsStarted;
      let snapshotWritten = false;
      if (rows.length > 0 || body !== undefined) {
        // The snapshot goes with the rows (one transaction) when the store can, but not in the run's last commit:
        // a snapshot that fails then must not take the run's end with it (see below). A wrapper that replaced the
        // store's `writeSnapshot` no longer matches its mark, and is given every snapshot there.
        const withRows = snapshot !== null && !last && store[appendTakesSnapshot] === store.writeSnapshot;
        // The control is read inside the append, before its commit's fsync or round trip: its age counts from here.
        const asked = performance.now();
        const outcome = await store.append(this.runId, rows, this.lease(), body, at, withRows ? snapshot : undefined);
        // A read the journal asked for after this commit began (it waited on a slow store meanwhile) is newer.
        if (outcome && (this.controlSeen === null || asked >= this.controlSeen.at))
          this.controlSeen = { control: outcome, commit: started, at: asked };
        snapshotWritten = outcome?.snapshotWritten === true;
      }
      // From its end (an fsync may take long): what waits after it has waited that long at most.
      this.lastCommitAt = performance.now();
      // Every row up to the snapshot's seq is committed now (this commit or one before it, in seq order): a store that
      // did not write it with them is given it now.
      if (snapshot !== null && !snapshotWritten) {
        const written = store.writeSnapshot(this.runId, snapshot, this.lease());
        // The run's last commit holds how it ended: a snapshot that then fails to be written only makes a later
        // resume (of a run that waits for a decision) start at the snapshot before, so the run's end stands.
        await (last ? written.catch(() => undefined) : written);
      }
    });
    // The next commit waits for this one whether it failed or not; the failure is the caller's to see, and it is
    // kept before the next commit starts (which then refuses to append).
    this.committing = commit.catch((error: unknown) => {
      this.writeFailure ??= error;
    });
    const seen = commit.catch((error: unknown) => {
      this.writeFailure ??= error;
      throw error;
    });
    this.scheduled = seen;
    return seen;
  }

  /** Whether what waits for the next commit is tools' outcomes alone (no intent, event, chunk, run body or snapshot). */
  private onlyOutcomesPending(): boolean {
    if (this.pendingRunBody !== undefined || this.pendingSnapshot !== null) return false;
    for (const item of this.pending) if (item.kind !== 'tool-result') return false;
    return true;
  }

  /** Commits what is queued, with the run's metadata once it stopped (and when it finished): the run's last commit. */
  finish(runBody: string, finishedAt: number | undefined): Promise<void> {
    this.finishing = true;
    return this.flush(runBody, finishedAt);
  }

  /**
   * Whether the commit before a model call may wait for a later one: nothing queued must be durable before
   * it (only steps whose tool rounds were idempotent only, each of which a crash simply repeats: the model
   * asked again, the calls run again under their keys), fewer than `maxUncommittedSteps` model calls began
   * since the last commit (so with this one, a crash repeats at most that many model calls: 1, or 0, is a
   * commit before every model call), and the last commit is younger than `maxUncommittedMs`. Never for a
   * workflow step (DBOS commits at every event).
   */
  mayWait(): boolean {
    const { maxUncommittedSteps = 0, maxUncommittedMs = 0 } = this.bounds;
    return (
      !this.mustCommit &&
      !this.workflowStep &&
      this.uncommittedCalls < maxUncommittedSteps &&
      performance.now() - this.lastCommitAt < maxUncommittedMs
    );
  }

  /**
   * Waits for `reply` (a model call's), committing what waits for a commit (a group of steps, see `mayWait`) if
   * the reply does not come at once (any hosted model, or one that hangs): its latency hides the commit, and a
   * crash meanwhile repeats none of those steps. An instant reply comes first (microtasks) and cancels it.
   */
  async meanwhile<Reply>(reply: Reply | Promise<Reply>, snapshotDue = false): Promise<Reply> {
    if (!snapshotDue && this.pending.length === 0 && this.pendingSnapshot === null) return reply;
    const timer = setTimeout(snapshotDue ? this.snapshotThenCommit : this.commitNow, 0);
    const before = this.commitsStarted;
    try {
      return await reply;
    } finally {
      clearTimeout(timer);
      // A commit begun in the wait counted no call from its start, but this call's reply is not in it: it is.
      if (this.commitsStarted !== before) this.uncommittedCalls += 1;
    }
  }

  /**
   * Set by the journal: queues a snapshot of where the run stands, called in a model call's wait (when `meanwhile`
   * is told one is due) just before that wait's commit.
   */
  beforeWaitCommit: () => void = () => undefined;

  private readonly snapshotThenCommit = (): void => {
    try {
      this.beforeWaitCommit();
    } catch (error) {
      // Run from a timer: a snapshot that cannot be taken ends the drive at its next event, as a failed write does,
      // instead of escaping as an uncaught exception.
      this.writeFailure ??= error;
      return;
    }
    this.commitNow();
  };

  /** A commit started from a timer: a failure is kept in `writeFailure`, which ends the drive. */
  private readonly commitNow = (): void => {
    this.flush().catch(() => undefined);
  };

  /** A model call begins (after its commit, or without one: see `mayWait`). */
  callBegins(): void {
    this.uncommittedCalls += 1;
  }

  /**
   * The rows of one commit. A model reply, intent or tool outcome that an event of the same commit follows
   * is left out: a resume serves only the records after the last event (the event holds what they said),
   * so such a row would never be read. Its seq stays taken: a journal may have gaps.
   */
  private commitRows(queued: readonly (StoreRow | PendingEffectRecord)[]): StoreRow[] {
    let lastEvent = -1;
    for (const item of queued) if (item.kind === 'event') lastEvent = item.seq;
    const rows: StoreRow[] = [];
    for (const item of queued) {
      if ('body' in item) rows.push(item);
      else if (item.seq > lastEvent) {
        const body = encodeRecord(item);
        this.bytesQueued += body.length;
        rows.push({ seq: item.seq, kind: item.kind, body });
      }
    }
    return rows;
  }
}
