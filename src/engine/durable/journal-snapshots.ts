/**
 * The snapshots a durable run's journal takes, and the trace and transcript chunks written with them (see the design
 * note in run-journal.ts): when one is due (every `snapshotEvery` events, the journal since the last one at least as
 * large as it), the snapshot taken in a model call's wait, at a pause or before an approval, and the final chunks
 * written with the run's stop.
 */
import type { Actor } from 'xstate';
import type { LoopMachine } from '../../../machines/index.js';
import type { Message } from '../../contracts/model.js';
import type { TraceEvent } from '../trace/trace-event.js';
import type { EffectStep } from '../runtime/driver-hooks.js';
import type { RunSession } from '../runtime/run-session.js';
import type { ToolHealth } from '../tools/index.js';
import { RECORD_SCHEMA_VERSION, type SnapshotRecord } from './records.js';
import { encodeRecord } from './record-codec.js';
import type { ResultMessagesAt } from './run-record.js';
import type { ResumePlan } from './resume-plan.js';
import { TRANSCRIPT_WINDOW } from './chain-folding.js';
import { sessionState, standsAt, type RecordedUpTo, type SessionCursor } from './session-state.js';
import { closingOf, TranscriptChain } from './transcript-chain.js';
import type { JournalCommits } from './journal-commits.js';

/** What the snapshots read of their run's journal. */
export interface SnapshotJournal {
  readonly runId: string;
  readonly snapshotEvery: number;
  /** Each effect as a durable step of a workflow engine (the DBOS worker's), which commits at every event. */
  readonly effectStep: EffectStep | undefined;
  readonly commits: JournalCommits;
  /** The seq of the last event journalled. */
  lastEventSeq(): number;
  /** Takes the journal's next seq. */
  takeSeq(): number;
  /** The run's actor and session once the driver hands them over, the journal's cursor, and the run's own tool health. */
  standing(): {
    actor: Actor<LoopMachine> | null;
    session: RunSession | null;
    cursor: SessionCursor | null;
    health: ToolHealth | null;
  };
}

export class JournalSnapshots {
  private eventsSinceSnapshot = 0;
  /** The last snapshot's size: the next waits for the journal since it to be as large (see the design note in run-journal.ts). */
  private lastSnapshotBytes = 0;
  private readonly commits: JournalCommits;
  /** How much of the in-memory trace the journal's trace chunks hold (the next chunk starts there). */
  private traceChunked: number;
  /** The transcript chunks written with the snapshots, each continuing the one before. */
  private readonly transcriptChain = new TranscriptChain();
  /** The seq of the last transcript chunk whose tracker triples are whole (see `RunJournal.afterSend`). */
  private wholeLinkSeq = 0;

  constructor(
    private readonly journal: SnapshotJournal,
    plan: ResumePlan | null,
  ) {
    this.commits = journal.commits;
    // A snapshot whose trace is whole (version 2, or a run started before) leaves nothing in chunks: the first chunk holds it all.
    this.traceChunked = plan?.snapshot?.session.traceLength ?? 0;
  }

  /** A rebuilt run: the next chunk continues the snapshot's; after an older snapshot (none) it starts a chain, the transcript whole. */
  restoreChains(plan: ResumePlan, session: RunSession): void {
    const chunkSeq = plan.snapshot?.session.transcriptChunk;
    if (chunkSeq !== undefined)
      this.transcriptChain.restore(
        chunkSeq,
        session.transcript,
        plan.transcriptWhole ?? 0,
        plan.transcriptWholeSeq ?? 0,
      );
    this.wholeLinkSeq = plan.progress?.wholeSeq ?? 0;
  }

  /**
   * Queues the in-memory trace since the last chunk as a final chunk, for the stop's recorded result
   * (which then holds no trace: it is stored once). Returns where the run record finds it.
   */
  chunkFinalTrace(trace: { readonly length: number; since(from: number): TraceEvent[] }): {
    seq: number;
    length: number;
  } {
    const seq = this.journal.takeSeq();
    this.commits.queue({
      schemaVersion: RECORD_SCHEMA_VERSION,
      kind: 'trace',
      runId: this.journal.runId,
      seq,
      snapshotSeq: this.journal.lastEventSeq(),
      from: this.traceChunked,
      events: trace.since(this.traceChunked),
      final: true,
    });
    return { seq, length: trace.length };
  }

  /**
   * Queues the transcript's change since the chain's last chunk as a last chunk, for the stop's recorded result
   * (which then holds no messages: the history is stored once), and returns where the run record finds them; null
   * (the record then holds them whole) when `messages` (the result's) are not the transcript followed by notes that
   * close its open calls, the run has no session (it never started), or no chain of transcript chunks yet (a run
   * shorter than a snapshot: its messages are few, and a row of their own would cost more than it saves).
   */
  chunkFinalTranscript(messages: readonly Message[]): ResultMessagesAt | null {
    const transcript = this.journal.standing().session?.transcript;
    if (transcript === undefined || !this.transcriptChain.started) return null;
    const closing = closingOf(transcript.messages, messages);
    if (closing === null) return null;
    const seq = this.journal.takeSeq();
    const { previous, change } = this.transcriptChain.take(seq, transcript);
    // No tracker triples: no snapshot names this chunk, so no resume folds it.
    this.commits.queue({
      schemaVersion: RECORD_SCHEMA_VERSION,
      kind: 'transcript',
      runId: this.journal.runId,
      seq,
      snapshotSeq: this.journal.lastEventSeq(),
      previous,
      change,
    });
    return { seq, from: this.transcriptChain.wholeSeq, messages: transcript.messages.length, closing };
  }

  /** Counts an event the machine was sent, and takes a snapshot when one is due; whether it took one. */
  afterEvent(actor: Actor<LoopMachine>, session: RunSession): boolean {
    this.eventsSinceSnapshot += 1;
    const snapshot = actor.getSnapshot();
    if (
      this.eventsSinceSnapshot < this.journal.snapshotEvery ||
      this.commits.bytesQueued < this.lastSnapshotBytes ||
      snapshot.status !== 'active'
    )
      return false;
    this.takeSnapshot(actor, session);
    return true;
  }

  /**
   * Whether a snapshot is worth taking while the model call about to be awaited is out (see `snapshotInWait`): a
   * quarter of `snapshotEvery` events since the last one (so a run whose every call waits takes at most four times
   * the snapshots of one that never waits, and a resume after a crash in a wait replays fewer than a quarter), and the
   * journal since then at least as large as a snapshot (as in `afterSend`: snapshots never cost more than the
   * journal). Not for a workflow step (DBOS), which commits at every event.
   */
  snapshotInWaitDue(): boolean {
    return (
      this.journal.effectStep === undefined &&
      this.journal.standing().actor !== null &&
      this.eventsSinceSnapshot > 0 &&
      this.eventsSinceSnapshot * 4 >= this.journal.snapshotEvery &&
      this.commits.bytesQueued >= this.lastSnapshotBytes
    );
  }

  /**
   * A model call that does not answer at once is where a run waits, and where a process mostly dies: the commit
   * made meanwhile (see `JournalCommits.meanwhile`) takes a snapshot of where the run stands with it, so a resume
   * from there restores it with no event to replay. Taken only when the session stands where the last event left
   * it but for trace events and warnings recorded since (the model step's step-start, a prompt trace), which the
   * snapshot leaves out (`standsAt`): the state a snapshot at that event would have held. Else (a message added, a
   * field moved) the resume replays from the snapshot before, as always.
   */
  readonly snapshotInWait = (): void => {
    const { actor, session, cursor, health } = this.journal.standing();
    if (actor === null || session === null || cursor === null || !this.snapshotInWaitDue()) return;
    if (actor.getSnapshot().status !== 'active' || !standsAt(session, cursor, health)) return;
    // What the model step recorded before its call (its step-start, a prompt) is left out: a resume records it again.
    this.takeSnapshot(actor, session, { trace: cursor.trace, warnings: cursor.warnings });
  };

  /**
   * A pause may last hours, and the processes that drive runs restart meanwhile: as in a model call's wait (see
   * `snapshotInWait`), a snapshot of where the run stands is queued when any event came since the last one and the
   * session stands where the last event left it. Paid once a pause, never a step. Not for a workflow step (DBOS).
   */
  snapshotAtPause(session: RunSession): boolean {
    const { actor, cursor, health } = this.journal.standing();
    if (this.journal.effectStep !== undefined || actor === null || cursor === null || this.eventsSinceSnapshot === 0)
      return false;
    if (session.signal.aborted || actor.getSnapshot().status !== 'active' || !standsAt(session, cursor, health))
      return false;
    this.takeSnapshot(actor, session, { trace: cursor.trace, warnings: cursor.warnings });
    return true;
  }

  /**
   * Queues the machine's snapshot and the session's (written after the commit that holds the events before it),
   * with the trace and the transcript since their last chunks.
   */
  private takeSnapshot(actor: Actor<LoopMachine>, session: RunSession, upTo?: RecordedUpTo): void {
    const { health } = this.journal.standing();
    this.eventsSinceSnapshot = 0;
    const traceInChunks = session.config.trace.inMemory;
    if (traceInChunks) {
      // The trace since the last chunk, committed with the events before the snapshot.
      this.commits.queue({
        schemaVersion: RECORD_SCHEMA_VERSION,
        kind: 'trace',
        runId: this.journal.runId,
        seq: this.journal.takeSeq(),
        snapshotSeq: this.journal.lastEventSeq(),
        from: this.traceChunked,
        events:
          upTo === undefined
            ? session.traceSince(this.traceChunked)
            : session.traceSince(this.traceChunked).slice(0, upTo.trace - this.traceChunked),
      });
      this.traceChunked = upTo?.trace ?? session.traceLength;
    }
    // The transcript since the last chunk, committed (like the trace's) with the events before the snapshot.
    const transcriptChunkSeq = this.journal.takeSeq();
    const { previous, change, consolidated } = this.transcriptChain.take(transcriptChunkSeq, session.transcript);
    // The tracker's triples since the previous chunk (or all of them): the snapshot holds the rest of the tracker.
    // A chunk made whole here has them whole too, so both chains a resume folds end there (not a transcript
    // replaced by the run: under a context ceiling that is every chunk, and the triples outgrow it). With the trace off a
    // resume reads the chunks of a window before its snapshot first (a context ceiling bounds the transcript's
    // chain): the triples' chain is kept within it by a whole link once the last one would fall out of it
    // (checked at every chunk, and this chunk is a seq or two after its snapshot: a margin of 64).
    const progress = session.progress.takeChainLink(
      consolidated || (!traceInChunks && transcriptChunkSeq - this.wholeLinkSeq > TRANSCRIPT_WINDOW - 64),
    );
    this.commits.queue({
      schemaVersion: RECORD_SCHEMA_VERSION,
      kind: 'transcript',
      runId: this.journal.runId,
      seq: transcriptChunkSeq,
      snapshotSeq: this.journal.lastEventSeq(),
      previous,
      change,
      progress,
    });
    if (progress.whole) this.wholeLinkSeq = transcriptChunkSeq;
    const record: SnapshotRecord = {
      schemaVersion: RECORD_SCHEMA_VERSION,
      kind: 'snapshot',
      runId: this.journal.runId,
      seq: this.journal.lastEventSeq(),
      machine: actor.getPersistedSnapshot() as unknown as SnapshotRecord['machine'],
      // The first chunk both chains reach (each whole link's seq; 0 when one is not known): a resume reads from there.
      session: sessionState(
        session,
        health,
        traceInChunks,
        transcriptChunkSeq,
        upTo,
        Math.min(this.transcriptChain.wholeSeq, this.wholeLinkSeq),
      ),
    };
    const body = encodeRecord(record);
    this.lastSnapshotBytes = body.length;
    this.commits.bytesQueued = 0;
    // The snapshot stands on the events before it (and its chunks): it is written with the commit that holds them
    // (in its transaction, or right after it by a store whose append does not take it), the next one, made before
    // the next external effect as always — not with a commit of its own
    // in the middle of a step (one commit more every `snapshotEvery` events, and with `durability: 'full'` one
    // fsync more). A crash before it is written leaves the state of a crash before the snapshot was taken: its
    // chunks, if committed, are skipped (no snapshot names them) and a resume starts at the snapshot before.
    this.commits.pendingSnapshot = { seq: record.seq, kind: 'snapshot', body };
  }
}
