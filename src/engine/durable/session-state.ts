/**
 * The run's state outside the machine (transcript, trace, warnings, pending calls, progress, plan,
 * task outputs, tool health), as journal data: a full copy for snapshots, and per step only what
 * changed (appended messages, trace events and warnings; the small fields whole), so a step's record
 * costs the size of the step, not of the run.
 */
import { ProgressTracker } from '../progress/index.js';
import type { PlanItem } from '../plan/plan-tool.js';
import { errorFields } from '../redaction/describe-thrown.js';
import type { PendingCall, RunSession } from '../runtime/run-session.js';
import { Transcript } from '../runtime/transcript.js';
import type { ToolHealth } from '../tools/index.js';
import { StoreRecordError } from './durable-errors.js';
import type { Message } from '../../contracts/model.js';
import type { TraceEvent } from '../trace/trace-event.js';
import type { EarlierTrace } from '../trace/run-trace.js';
import type { SessionDelta, SessionFields, SnapshotRecord } from './records.js';

/** Where the session stood after the last journalled event: the delta of the next one starts there. */
export interface SessionCursor {
  transcript: Transcript;
  revision: number;
  messages: number;
  trace: number;
  warnings: number;
  taskOutputKeys: number;
  /** The progress tracker records its changes since the state at this cursor (else the next delta carries it whole). */
  progressTracked: boolean;
}

/** The tracker whole, and from now on its changes only: the next delta carries just those. */
function wholeProgress(session: RunSession): SessionFields['progress'] {
  session.progress.trackChanges();
  session.progress.takeChanges();
  return { kind: 'whole', snapshot: session.progress.snapshot() };
}

export function cursorOf(session: RunSession, progressTracked = true): SessionCursor {
  return {
    progressTracked,
    transcript: session.transcript,
    revision: session.transcript.revision,
    messages: session.transcript.messages.length,
    trace: session.traceLength,
    warnings: session.warnings.length,
    taskOutputKeys: Object.keys(session.taskOutputs).length,
  };
}

function fieldsOf(
  session: RunSession,
  health: ToolHealth | null,
  withTaskOutputs: boolean,
  progress: SessionFields['progress'],
): SessionFields {
  return {
    taskIndex: session.taskIndex,
    // The error's `detail` is left out: only the trace event recorded with the decision reads it, and the record schema is strict.
    pendingCalls: session.pendingCalls.map(({ call, fingerprint, refusal }) => ({
      request: call.request,
      status: call.status,
      args: call.args,
      error: call.error && { key: call.error.key, message: call.error.message },
      fingerprint,
      refusal,
    })),
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

/** What changed since `cursor`. `health` is null when the run's health is shared (the caller's, not the run's). */
export function sessionDelta(session: RunSession, cursor: SessionCursor, health: ToolHealth | null): SessionDelta {
  return {
    transcript: transcriptChange(session.transcript, cursor),
    traceFrom: cursor.trace,
    trace: session.traceSince(cursor.trace),
    warningsFrom: cursor.warnings,
    warnings: session.warnings.slice(cursor.warnings),
    fields: fieldsOf(
      session,
      health,
      Object.keys(session.taskOutputs).length !== cursor.taskOutputKeys,
      cursor.progressTracked ? { kind: 'changes', ...session.progress.takeChanges() } : wholeProgress(session),
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
): SnapshotRecord['session'] {
  const { transcript } = session;
  return {
    messages: transcript.messages.length,
    taskMessageIndex: taskMessageIndex(transcript),
    transcriptChunk,
    // The in-memory trace is in the journal's trace chunks, written with the snapshot.
    ...(traceInChunks ? { trace: [], traceLength: session.traceLength } : { trace: [...session.trace] }),
    warnings: [...session.warnings],
    fields: fieldsOf(session, health, true, { kind: 'whole', snapshot: session.progress.snapshot() }),
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

/** The tracker a record carries whole, or null when it carries changes to the one the session has. */
function restoredProgress(fields: SessionFields, where: Where): ProgressTracker | null {
  if (fields.progress.kind === 'changes') return null;
  try {
    return ProgressTracker.restore(fields.progress.snapshot);
  } catch (error) {
    throw new StoreRecordError({
      code: 'corrupt_record',
      runId: where.runId,
      seq: where.seq,
      problem: (error as Error).message,
    });
  }
}

function restoreFields(session: RunSession, health: ToolHealth | null, fields: SessionFields, where: Where): void {
  const progress = restoredProgress(fields, where);
  session.restoreFields({
    taskIndex: fields.taskIndex,
    pendingCalls: fields.pendingCalls.map(({ request, status, args, error, fingerprint, refusal }): PendingCall => ({
      call: { request, tool: session.tools.get(request.name), status, args, error },
      fingerprint,
      refusal,
    })),
    lastReply: fields.lastReply,
    lastEvaluation: fields.lastEvaluation,
    fatalError:
      fields.fatalError === null ? null : Object.assign(new Error(fields.fatalError.message), fields.fatalError),
    restingState: fields.restingState,
    taskOutputs: fields.taskOutputs,
    progress,
    unpricedModels: fields.unpricedModels,
  });
  if (fields.progress.kind === 'changes') session.progress.applyChanges(fields.progress);
  if (fields.plan !== null) session.plan?.restoreItems(fields.plan as PlanItem[]);
  if (fields.health !== null) health?.restoreCounters(fields.health);
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
  rebuilt: { transcript: readonly Message[] | null; trace: readonly TraceEvent[] | EarlierTrace | null },
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
  restoreFields(session, health, state.fields, where);
}
