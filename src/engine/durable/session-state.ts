/**
 * The run's state outside the machine (transcript, trace, warnings, pending calls, progress, plan,
 * task outputs, tool health), as journal data: a full copy for snapshots, and per step only what
 * changed (appended messages, trace events and warnings; of the small fields, those that changed, told by
 * identity, value or revision), so a step's record costs the size of the step, not of the run.
 */
import { ProgressTracker, type ProgressTrackerScalars } from '../progress/index.js';
import type { PlanItem } from '../plan/plan-tool.js';
import { errorFields } from '../redaction/describe-thrown.js';
import type { PendingCall, RunSession } from '../runtime/run-session.js';
import { Transcript } from '../runtime/transcript.js';
import type { ToolHealth } from '../tools/index.js';
import { StoreRecordError } from './durable-errors.js';
import type { Message } from '../../contracts/model.js';
import type { TraceEvent } from '../trace/trace-event.js';
import type { EarlierTrace } from '../trace/run-trace.js';
import type { SessionDelta, SessionFields, SnapshotFields, SnapshotRecord } from './records.js';
import type { ChainedTriples } from './chain-folding.js';

/** Where the session stood after the last journalled event: the delta of the next one starts there. */
export interface SessionCursor {
  transcript: Transcript;
  revision: number;
  messages: number;
  trace: number;
  warnings: number;
  taskOutputKeys: number;
  /**
   * The progress tracker records its changes since the state at this cursor, and `fields` says where the other
   * fields stood (else the next delta carries the tracker and every field whole).
   */
  progressTracked: boolean;
  fields: FieldMarks;
}

/**
 * Where the small fields stood, to tell which changed by identity, value or revision (never by a deep compare):
 * the session replaces what it changes (pending calls, evaluation, error, plan items), tool health counts revisions.
 */
interface FieldMarks {
  taskIndex: number;
  pendingCalls: unknown;
  lastReply: string | null;
  lastEvaluation: unknown;
  fatalError: unknown;
  restingState: string | null;
  plan: unknown;
  health: number;
  unpricedModels: number;
  progress: ProgressTrackerScalars;
}

const marksOf = (session: RunSession, health: ToolHealth | null): FieldMarks => ({
  taskIndex: session.taskIndex,
  pendingCalls: session.pendingCalls,
  lastReply: session.lastReply,
  lastEvaluation: session.lastEvaluation,
  fatalError: session.fatalError,
  restingState: session.restingState,
  plan: session.plan?.items ?? null,
  health: health?.revision ?? -1,
  unpricedModels: session.unpricedModelIds.length,
  progress: session.progress.scalars(),
});

/** The tracker's changes since `marks`, without what did not change (version 5). */
function progressChanges(session: RunSession, marks: ProgressTrackerScalars): SessionFields['progress'] {
  const { restarted, triples, distinctObservationsHash, failures, stateDigest } = session.progress.takeChanges();
  const changes: SessionFields['progress'] = { kind: 'changes' };
  if (restarted) changes.restarted = true;
  for (const _key in triples) {
    changes.triples = triples;
    break;
  }
  if (distinctObservationsHash !== marks.distinctObservationsHash)
    changes.distinctObservationsHash = distinctObservationsHash;
  if (failures !== marks.failures) changes.failures = failures;
  if (stateDigest !== marks.stateDigest) changes.stateDigest = stateDigest;
  return changes;
}

/** The tracker whole, and from now on its changes only: the next delta carries just those. */
function wholeProgress(session: RunSession): SessionFields['progress'] {
  session.progress.trackChanges();
  session.progress.takeChanges();
  return { kind: 'whole', snapshot: session.progress.snapshot() };
}

export function cursorOf(session: RunSession, health: ToolHealth | null, progressTracked = true): SessionCursor {
  return {
    progressTracked,
    fields: marksOf(session, health),
    transcript: session.transcript,
    revision: session.transcript.revision,
    messages: session.transcript.messages.length,
    trace: session.traceLength,
    warnings: session.warnings.length,
    taskOutputKeys: Object.keys(session.taskOutputs).length,
  };
}

// The error's `detail` is left out: only the trace event recorded with the decision reads it, and the record schema is strict.
const pendingCallsOf = (session: RunSession) =>
  session.pendingCalls.map(({ call, fingerprint, refusal }) => ({
    request: call.request,
    status: call.status,
    args: call.args,
    error: call.error && { key: call.error.key, message: call.error.message },
    fingerprint,
    refusal,
  }));

function fieldsOf<Progress>(
  session: RunSession,
  health: ToolHealth | null,
  withTaskOutputs: boolean,
  progress: Progress,
) {
  return {
    taskIndex: session.taskIndex,
    pendingCalls: pendingCallsOf(session),
    lastReply: session.lastReply,
    lastEvaluation: session.lastEvaluation,
    fatalError: session.fatalError === null ? null : errorFields(session.fatalError),
    restingState: session.restingState,
    taskOutputs: withTaskOutputs ? { ...session.taskOutputs } : null,
    progress,
    plan: session.plan?.persistedItems() ?? null,
    health: health?.persistedCounters() ?? null,
    unpricedModels: session.unpricedModelIds,
  };
}

const taskMessageIndex = (transcript: Transcript): number | null => {
  const index = transcript.taskMessage === null ? -1 : transcript.messages.indexOf(transcript.taskMessage);
  return index < 0 ? null : index;
};

/** Where a transcript stood: the object (a new task or a restore makes another), its revision and length. */
export interface TranscriptMark {
  transcript: Transcript | null;
  revision: number;
  messages: number;
}

export const markOf = (transcript: Transcript): TranscriptMark => ({
  transcript,
  revision: transcript.revision,
  messages: transcript.messages.length,
});

/** The transcript's change since `mark`: the messages appended, or the whole transcript when it was replaced or trimmed. */
export function transcriptChange(transcript: Transcript, mark: TranscriptMark): SessionDelta['transcript'] {
  const replace =
    transcript !== mark.transcript ||
    transcript.revision !== mark.revision ||
    transcript.messages.length < mark.messages;
  const from = replace ? 0 : mark.messages;
  return {
    replace,
    from,
    messages: transcript.messages.slice(from),
    taskMessageIndex: taskMessageIndex(transcript),
  };
}

/**
 * Version 5: the fields that changed since `marks` (all of them without marks); the tracker's part always (its
 * digests move every step). Absent: unchanged; `null`: set to null. Costs a comparison a field.
 */
function changedFieldsOf(
  session: RunSession,
  health: ToolHealth | null,
  marks: FieldMarks | null,
  withTaskOutputs: boolean,
  progress: SessionFields['progress'],
): SessionFields {
  if (marks === null) return fieldsOf(session, health, withTaskOutputs, progress);
  const fields: SessionFields = { progress };
  if (session.taskIndex !== marks.taskIndex) fields.taskIndex = session.taskIndex;
  // Pending calls and an evaluation under review are written while they stand, changed or not: the checks of a
  // person's decision read them from the event the run stopped at alone (approval-checks, review-checks).
  if (session.pendingCalls !== marks.pendingCalls || session.pendingCalls.length > 0)
    fields.pendingCalls = pendingCallsOf(session);
  if (session.lastReply !== marks.lastReply) fields.lastReply = session.lastReply;
  if (session.lastEvaluation !== marks.lastEvaluation || session.lastEvaluation?.review !== undefined)
    fields.lastEvaluation = session.lastEvaluation;
  if (session.fatalError !== marks.fatalError)
    fields.fatalError = session.fatalError === null ? null : errorFields(session.fatalError);
  if (session.restingState !== marks.restingState) fields.restingState = session.restingState;
  if (withTaskOutputs) fields.taskOutputs = { ...session.taskOutputs };
  if (session.plan !== null && session.plan.items !== marks.plan) fields.plan = session.plan.persistedItems();
  if (health !== null && health.revision !== marks.health) fields.health = health.persistedCounters();
  const unpriced = session.unpricedModelIds;
  if (unpriced.length !== marks.unpricedModels) fields.unpricedModels = unpriced;
  return fields;
}

/**
 * Whether the session stands where `cursor` left it but for trace events and warnings added since (the model step
 * records its step-start, and a resumed run records it again): no message added, no small field moved, the
 * tracker's scalars as they were. A snapshot taken now of the trace and warnings up to the cursor's (`RecordedUpTo`)
 * is then the one that would have been taken at the cursor's event. Reads only; changes nothing.
 */
export function standsAt(session: RunSession, cursor: SessionCursor, health: ToolHealth | null): boolean {
  const { transcript } = session;
  const marks = cursor.fields;
  const progress = session.progress.scalars();
  return (
    transcript === cursor.transcript &&
    transcript.revision === cursor.revision &&
    transcript.messages.length === cursor.messages &&
    session.traceLength >= cursor.trace &&
    session.warnings.length >= cursor.warnings &&
    Object.keys(session.taskOutputs).length === cursor.taskOutputKeys &&
    session.taskIndex === marks.taskIndex &&
    // Replaced by an empty list at a step's start: none then, none now.
    session.pendingCalls.length === 0 &&
    (marks.pendingCalls as readonly unknown[]).length === 0 &&
    session.lastReply === marks.lastReply &&
    session.lastEvaluation === marks.lastEvaluation &&
    session.fatalError === marks.fatalError &&
    session.restingState === marks.restingState &&
    (session.plan?.items ?? null) === marks.plan &&
    (health?.revision ?? -1) === marks.health &&
    session.unpricedModelIds.length === marks.unpricedModels &&
    progress.schemaVersion === marks.progress.schemaVersion &&
    progress.distinctObservationsHash === marks.progress.distinctObservationsHash &&
    progress.failures === marks.progress.failures &&
    progress.stateDigest === marks.progress.stateDigest
  );
}

/** How much of the trace and the warnings a snapshot holds when not all of them (see `standsAt`). */
export interface RecordedUpTo {
  trace: number;
  warnings: number;
}

/** What changed since `cursor`. `health` is null when the run's health is shared (the caller's, not the run's). */
export function sessionDelta(session: RunSession, cursor: SessionCursor, health: ToolHealth | null): SessionDelta {
  return {
    transcript: transcriptChange(session.transcript, cursor),
    traceFrom: cursor.trace,
    trace: session.traceSince(cursor.trace),
    warningsFrom: cursor.warnings,
    warnings: session.warnings.slice(cursor.warnings),
    fields: changedFieldsOf(
      session,
      health,
      cursor.progressTracked ? cursor.fields : null,
      Object.keys(session.taskOutputs).length !== cursor.taskOutputKeys,
      cursor.progressTracked ? progressChanges(session, cursor.fields.progress) : wholeProgress(session),
    ),
  };
}

/**
 * The session for a snapshot: everything but the transcript, which is in the `transcript` chunk at
 * `transcriptChunk` and the chain before it; its length is kept to check the transcript folded on resume.
 */
export function sessionState(
  session: RunSession,
  health: ToolHealth | null,
  traceInChunks: boolean,
  transcriptChunk: number,
  upTo?: RecordedUpTo,
  chainFrom = 0,
): SnapshotRecord['session'] {
  const { transcript } = session;
  return {
    messages: transcript.messages.length,
    taskMessageIndex: taskMessageIndex(transcript),
    transcriptChunk,
    // Where the chains the chunk ends begin (0: not known, left out): a resume reads the chunks from there.
    ...(chainFrom > 0 ? { chainFrom } : {}),
    // The in-memory trace is in the journal's trace chunks, written with the snapshot.
    ...(traceInChunks
      ? { trace: [], traceLength: upTo?.trace ?? session.traceLength }
      : { trace: session.trace.slice(0, upTo?.trace ?? session.trace.length) }),
    warnings: session.warnings.slice(0, upTo?.warnings ?? session.warnings.length),
    // The tracker's triples are in the transcript chunk's chain (`takeChainLink`): the snapshot stays as small at step 10,000 as at 100.
    fields: fieldsOf(session, health, true, { kind: 'chained' as const, ...session.progress.scalars() }),
  };
}

interface Where {
  runId: string;
  seq: number;
}

function mismatch(where: Where, what: string): StoreRecordError {
  return new StoreRecordError({
    code: 'corrupt_record',
    runId: where.runId,
    seq: where.seq,
    problem: `${what} does not continue the journal before it`,
  });
}

/**
 * The tracker a record carries whole (or a version 5 snapshot with the triples of its chain), or null when it
 * carries changes to the one the session has.
 */
function restoredProgress(
  fields: SessionFields | SnapshotFields,
  where: Where,
  chained: ChainedTriples | null = null,
): ProgressTracker | null {
  const { progress } = fields;
  if (progress.kind === 'changes') return null;
  if (progress.kind === 'chained') {
    if (chained === null)
      throw new StoreRecordError({
        code: 'corrupt_record',
        runId: where.runId,
        seq: where.seq,
        problem: 'fields.progress is chained, but no chain of triples was read for it',
      });
    const { kind: _kind, ...scalars } = progress;
    return ProgressTracker.fromChain(scalars, chained.triples, chained.chain);
  }
  try {
    return ProgressTracker.restore(progress.snapshot);
  } catch (error) {
    throw new StoreRecordError({
      code: 'corrupt_record',
      runId: where.runId,
      seq: where.seq,
      problem: (error as Error).message,
    });
  }
}

function restoreFields(
  session: RunSession,
  health: ToolHealth | null,
  fields: SessionFields | SnapshotFields,
  where: Where,
  chained: ChainedTriples | null = null,
): void {
  const progress = restoredProgress(fields, where, chained);
  // Version 5 deltas carry only the fields that changed: an absent one keeps the value the session has.
  session.restoreFields({
    taskIndex: fields.taskIndex ?? session.taskIndex,
    pendingCalls:
      fields.pendingCalls === undefined
        ? [...session.pendingCalls]
        : fields.pendingCalls.map(({ request, status, args, error, fingerprint, refusal }): PendingCall => ({
            call: { request, tool: session.tools.get(request.name), status, args, error },
            fingerprint,
            refusal,
          })),
    lastReply: fields.lastReply === undefined ? session.lastReply : fields.lastReply,
    lastEvaluation: fields.lastEvaluation === undefined ? session.lastEvaluation : fields.lastEvaluation,
    fatalError:
      fields.fatalError === undefined
        ? session.fatalError
        : fields.fatalError === null
          ? null
          : Object.assign(new Error(fields.fatalError.message), fields.fatalError),
    restingState: fields.restingState === undefined ? session.restingState : fields.restingState,
    taskOutputs: fields.taskOutputs ?? null,
    progress,
    unpricedModels: fields.unpricedModels ?? session.unpricedModelIds,
  });
  if (fields.progress.kind === 'changes') {
    // What a version 5 record leaves out did not change.
    const { restarted, triples, distinctObservationsHash, failures, stateDigest } = fields.progress;
    const before = session.progress.scalars();
    session.progress.applyChanges({
      restarted: restarted ?? false,
      triples: triples ?? {},
      distinctObservationsHash: distinctObservationsHash ?? before.distinctObservationsHash,
      failures: failures ?? before.failures,
      stateDigest: stateDigest ?? before.stateDigest,
    });
  }
  if (fields.plan !== undefined && fields.plan !== null) session.plan?.restoreItems(fields.plan as PlanItem[]);
  if (fields.health !== undefined && fields.health !== null) health?.restoreCounters(fields.health);
}

/**
 * A parsed message rebuilt as the run builds its messages (the same keys in the same order), tool calls too.
 * Not frozen as parsed, nor spread: freezing objects that JSON.parse made (a spread copy may share their hidden
 * class) gives their shape a second transition, and every later JSON.parse of that shape — the next chunks, the
 * next resume's — leaves V8's fast path (measured: the chunks' parse took twice as long, a 10,000-step resume
 * a quarter longer).
 */
function builtMessage(message: Message): Message {
  switch (message.role) {
    case 'assistant':
      return message.toolCalls === undefined
        ? { role: 'assistant', content: message.content }
        : {
            role: 'assistant',
            content: message.content,
            toolCalls: message.toolCalls.map(({ id, name, arguments: args }) => ({ id, name, arguments: args })),
          };
    case 'tool':
      return { role: 'tool', toolCallId: message.toolCallId, content: message.content };
    default:
      return { role: message.role, content: message.content };
  }
}

function restoreTranscript(session: RunSession, change: SessionDelta['transcript'], where: Where): void {
  let transcript = session.transcript;
  if (change.replace) {
    transcript = new Transcript(session.transcript.fixedChars);
    session.restoreTranscript(transcript);
  } else if (change.from !== transcript.messages.length) {
    throw mismatch(where, `its transcript (from message ${change.from}, not ${transcript.messages.length})`);
  }
  for (const message of change.messages) transcript.append(builtMessage(message));
  transcript.taskMessage =
    change.taskMessageIndex === null ? null : (transcript.messages[change.taskMessageIndex] ?? null);
}

/** Applies one event record's delta to a session standing where the record's previous event left it. */
export function applyDelta(session: RunSession, health: ToolHealth | null, delta: SessionDelta, where: Where): void {
  if (delta.traceFrom !== session.traceLength && session.config.trace.inMemory)
    throw mismatch(where, `its trace (from event ${delta.traceFrom}, not ${session.traceLength})`);
  if (delta.warningsFrom !== session.warnings.length)
    throw mismatch(where, `its warnings (from ${delta.warningsFrom}, not ${session.warnings.length})`);
  restoreTranscript(session, delta.transcript, where);
  session.restoreRecorded(delta.trace, delta.warnings, false);
  restoreFields(session, health, delta.fields, where);
}

/**
 * Replaces the whole session with a snapshot's. `transcript`: the transcript rebuilt from the journal for
 * a snapshot that does not hold it (version 4: folded from its chunks; version 3: from the events before
 * it); a version 1 or 2 snapshot holds it whole.
 */
export function restoreSessionState(
  session: RunSession,
  health: ToolHealth | null,
  state: SnapshotRecord['session'],
  rebuilt: {
    transcript: readonly Message[] | null;
    trace: readonly TraceEvent[] | EarlierTrace | null;
    progress: ChainedTriples | null;
  },
  where: Where,
): void {
  const { transcript } = rebuilt;
  if (state.transcript !== undefined) restoreTranscript(session, state.transcript, where);
  else {
    const messages = transcript ?? [];
    if (messages.length !== state.messages)
      throw new StoreRecordError({
        code: 'corrupt_record',
        runId: where.runId,
        seq: where.seq,
        problem: `the snapshot's transcript has ${String(state.messages)} messages, the journal before it ${messages.length}`,
      });
    restoreTranscript(
      session,
      { replace: true, from: 0, messages: messages as Message[], taskMessageIndex: state.taskMessageIndex ?? null },
      where,
    );
  }
  session.restoreRecorded(state.traceLength === undefined ? state.trace : (rebuilt.trace ?? []), state.warnings, true);
  restoreFields(session, health, state.fields, where, rebuilt.progress);
}
