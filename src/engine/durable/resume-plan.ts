/**
 * Reads a run back from the store: the latest snapshot, the events after it (minus the one a
 * continued stop replaced), and what the effect in flight had journalled. Every record is validated
 * on the way in; one bad record refuses the whole run.
 */
import type { Store } from '../../contracts/store.js';
import type { TraceEvent } from '../trace/trace-event.js';
import { StoreRecordError } from './durable-errors.js';
import type { Message } from '../../contracts/model.js';
import {
  decodeJournalRecord,
  decodeTraceChunk,
  decodeTranscriptPart,
  type TranscriptChange,
  decodeSnapshotRecord,
  type EventRecord,
  type IntentRecord,
  type ModelRecord,
  type SnapshotRecord,
  type ToolResultRecord,
  type TraceRecord,
  type Decisions,
  type PendingReviewRecord,
  type ReviewDecision,
} from './records.js';

/** How a run stopped for a person goes on: with their approvals, their review decision, or cancelled there. */
export type ContinueWith =
  | { kind: 'approvals'; waitingSeq: number; decisions: Decisions }
  | { kind: 'review'; waitingSeq: number; decision: ReviewDecision; pending: PendingReviewRecord }
  | { kind: 'cancel'; waitingSeq: number; message: string };

export interface ResumePlan {
  snapshot: SnapshotRecord | null;
  /** The transcript at the snapshot, rebuilt from the events before it; null when the snapshot holds it (or there is none). */
  transcript: Message[] | null;
  /** The in-memory trace at the snapshot, put back from its chunks; null when the snapshot holds it (or there is none). */
  trace: TraceEvent[] | null;
  events: EventRecord[];
  tail: { models: ModelRecord[]; intents: Map<string, IntentRecord>; results: Map<string, ToolResultRecord> };
  nextSeq: number;
  lastEventSeq: number;
  /** The `at` of the last event: a resumed run's clock continues from it. */
  lastAt: number | null;
  continueWith: ContinueWith | null;
}

export async function readResumePlan(store: Store, runId: string): Promise<ResumePlan> {
  const snapshotRow = await store.latestSnapshot(runId);
  const snapshot = snapshotRow === null ? null : decodeSnapshotRecord(snapshotRow.body, runId, snapshotRow.seq);
  const after = snapshot?.seq ?? 0;
  // A snapshot without the transcript: the events before it are read for their transcript changes only.
  const rebuild = snapshot !== null && snapshot.session.transcript === undefined;
  const rows = await store.readJournal(runId, rebuild ? 0 : after);
  const before = rebuild ? rows.filter((row) => row.seq <= after) : [];
  const traceLength = snapshot?.session.traceLength;
  // Chunks are written just after their snapshot's event: every chunk up to the snapshot's own.
  const trace = rebuild && traceLength !== undefined ? traceBefore(rows, after, traceLength, runId) : null;
  const records = (rebuild ? rows.filter((row) => row.seq > after) : rows)
    .filter((row) => row.kind !== 'trace')
    .map((row) => decodeJournalRecord(row.body, runId, row.seq));
  const superseded = new Set<number>();
  for (const record of records)
    if (record.kind === 'event' && record.supersedes !== undefined) superseded.add(record.supersedes);
  const events: EventRecord[] = [];
  for (const record of records) if (record.kind === 'event' && !superseded.has(record.seq)) events.push(record);
  const lastEventSeq = events.at(-1)?.seq ?? after;
  const tail: ResumePlan['tail'] = { models: [], intents: new Map(), results: new Map() };
  for (const record of records) {
    if (record.seq <= lastEventSeq) continue;
    if (record.kind === 'model') tail.models.push(record);
    else if (record.kind === 'intent') tail.intents.set(record.key, record);
    else if (record.kind === 'tool-result') tail.results.set(record.key, record);
  }
  const lastAt =
    events.at(-1)?.event.at ??
    (snapshot === null ? null : Number((snapshot.machine.context as { lastEventAt?: unknown }).lastEventAt ?? NaN));
  return {
    snapshot,
    transcript: rebuild ? transcriptBefore(before, runId) : null,
    trace,
    events,
    tail,
    // Every row counts, trace chunks included: the next record must not take a seq one of them holds.
    nextSeq: rows.reduce((highest, row) => Math.max(highest, row.seq), after) + 1,
    lastEventSeq,
    lastAt: lastAt === null || Number.isNaN(lastAt) ? null : lastAt,
    continueWith: null,
  };
}

/** The transcript as the events before a snapshot left it: their changes folded, the superseded events' skipped. */
function transcriptBefore(rows: readonly { seq: number; kind: string; body: string }[], runId: string): Message[] {
  const changes: { seq: number; change: TranscriptChange }[] = [];
  const superseded = new Set<number>();
  for (const row of rows) {
    // Only events change the transcript: the other rows (a trace chunk is large) are not parsed here.
    if (row.kind !== 'event') continue;
    const part = decodeTranscriptPart(row.body, runId, row.seq);
    if (part === null) continue;
    if (part.supersedes !== undefined) superseded.add(part.supersedes);
    changes.push({ seq: row.seq, change: part.transcript });
  }
  let messages: Message[] = [];
  for (const { seq, change } of changes) {
    if (superseded.has(seq)) continue;
    if (change.replace) messages = [];
    else if (change.from !== messages.length)
      throw new StoreRecordError({
        code: 'corrupt_record',
        runId,
        seq,
        problem: `its transcript (from message ${change.from}, not ${messages.length}) does not continue the journal before it`,
      });
    for (const message of change.messages) messages.push(message);
  }
  return messages;
}

/**
 * The trace at the snapshot after event `snapshotSeq`: its chunks in seq order, each from where it says it
 * starts (a chunk written again after a crash overlaps the one whose snapshot was never written).
 */
function traceBefore(
  rows: readonly { seq: number; kind: string; body: string }[],
  snapshotSeq: number,
  length: number,
  runId: string,
): TraceEvent[] {
  return foldTrace(rows, runId, length, snapshotSeq, (chunk) => chunk.snapshotSeq <= snapshotSeq && !chunk.final);
}

/**
 * A stop's trace, for its recorded result: every chunk up to the stop's final one (an earlier stop's final
 * chunk, or a chunk whose snapshot was never written, is overlapped by the chunks after it).
 */
export async function readResultTrace(
  store: Store,
  runId: string,
  at: { seq: number; length: number },
): Promise<TraceEvent[]> {
  const rows = (await store.readJournal(runId, 0)).filter((row) => row.kind === 'trace' && row.seq <= at.seq);
  return foldTrace(rows, runId, at.length, at.seq, () => true, "result's trace");
}

function foldTrace(
  rows: readonly { seq: number; kind: string; body: string }[],
  runId: string,
  length: number,
  where: number,
  include: (chunk: TraceRecord) => boolean,
  what = "snapshot's trace",
): TraceEvent[] {
  const trace: TraceEvent[] = [];
  for (const row of rows) {
    if (row.kind !== 'trace') continue;
    const chunk = decodeTraceChunk(row.body, runId, row.seq);
    if (!include(chunk)) continue;
    if (chunk.from > trace.length)
      throw new StoreRecordError({
        code: 'corrupt_record',
        runId,
        seq: row.seq,
        problem: `its trace (from event ${chunk.from}, not ${trace.length}) does not continue the journal before it`,
      });
    trace.length = chunk.from;
    for (const event of chunk.events) trace.push(event);
  }
  if (trace.length !== length)
    throw new StoreRecordError({
      code: 'corrupt_record',
      runId,
      seq: where,
      problem: `the ${what} has ${length} events, its chunks ${trace.length}`,
    });
  return trace;
}
