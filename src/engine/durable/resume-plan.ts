/**
 * Reads a run back from the store: the latest snapshot, the events after it (minus the one a
 * continued stop replaced), and what the effect in flight had journalled. Every record is validated
 * on the way in; one bad record refuses the whole run. The history before the snapshot is read from the
 * chunks written with the snapshots (a row per snapshot, not the events' rows): the transcript's chain and
 * the in-memory trace. Only a version 3 snapshot, which has no transcript chain, has its transcript
 * rebuilt from every event before it.
 */
import type { Store } from '../../contracts/store.js';
import type { TraceEvent } from '../trace/trace-event.js';
import type { EarlierTrace } from '../trace/run-trace.js';
import { StoreRecordError } from './durable-errors.js';
import type { Message } from '../../contracts/model.js';
import {
  type EventRecord,
  type IntentRecord,
  type ModelRecord,
  type SnapshotRecord,
  type ToolResultRecord,
  type TraceRecord,
  type TranscriptRecord,
  type Decisions,
  type ReviewDecision,
} from './records.js';
import { decodeJournalRecord, decodeSnapshotRecord } from './record-codec.js';
import { type ResultMessagesAt, type PendingReviewRecord } from './run-record.js';
import { decodeTraceChunk, decodeTranscriptChunkChange, quickFirstTraceEvent } from './chunk-records.js';
import {
  chainAt,
  historyAt,
  historyChain,
  transcriptBefore,
  transcriptChain,
  TRANSCRIPT_KINDS,
  type ChainedTriples,
  missingChunk,
} from './chain-folding.js';

/** How a run stopped for a person goes on: with their approvals, their review decision, or cancelled there. */
export type ContinueWith =
  | { kind: 'approvals'; waitingSeq: number; decisions: Decisions }
  | { kind: 'review'; waitingSeq: number; decision: ReviewDecision; pending: PendingReviewRecord }
  | { kind: 'cancel'; waitingSeq: number; message: string };

export interface ResumePlan {
  snapshot: SnapshotRecord | null;
  /** The transcript at the snapshot, rebuilt from the events before it; null when the snapshot holds it (or there is none). */
  transcript: Message[] | null;
  /**
   * The in-memory trace at the snapshot, put back from its chunks; null when the snapshot holds it (or there is
   * none). From a version 4 snapshot's chunks it is read when first wanted (`result.trace`), not to rebuild the run.
   */
  trace: TraceEvent[] | EarlierTrace | null;
  /** Version 5: the tracker's triples at the snapshot, folded from its transcript chunk's chain; null before. */
  progress: ChainedTriples | null;
  /**
   * How many messages the chain's first chunk (the one that holds the transcript whole) has; the messages after
   * them were chunked since. Null without a chain.
   */
  transcriptWhole: number | null;
  /** The seq of that chunk; null without a chain. */
  transcriptWholeSeq: number | null;
  events: EventRecord[];
  tail: { models: ModelRecord[]; intents: Map<string, IntentRecord>; results: Map<string, ToolResultRecord> };
  nextSeq: number;
  lastEventSeq: number;
  /** The `at` of the last event: a resumed run's clock continues from it. */
  lastAt: number | null;
  continueWith: ContinueWith | null;
}

/** The kinds of the rows written with snapshots: what a resume reads of the history before the latest one. */
export const CHUNK_KINDS: readonly string[] = ['trace', 'transcript'];
const TRACE_KINDS: readonly string[] = ['trace'];

export async function readResumePlan(store: Store, runId: string): Promise<ResumePlan> {
  const snapshotRow = await store.latestSnapshot(runId);
  const snapshot = snapshotRow === null ? null : decodeSnapshotRecord(snapshotRow.body, runId, snapshotRow.seq);
  const after = snapshot?.seq ?? 0;
  const chunk = snapshot?.session.transcriptChunk;
  // A version 3 snapshot (no transcript, no chain): the events before it are read for their transcript changes.
  const rebuild = snapshot !== null && snapshot.session.transcript === undefined && chunk === undefined;
  const traceLength = snapshot?.session.traceLength;
  // The trace chunks are read only for an in-memory trace (all of them: `result.trace` holds the whole trace).
  const traceFromChunks = traceLength !== undefined && !rebuild && chunk !== undefined;
  // Where the chains begin, when the snapshot names it: the transcript chunks before it are not read.
  const chainFrom = chunk === undefined ? undefined : snapshot?.session.chainFrom;
  const chainRead = chainFrom === undefined ? 0 : chainFrom - 1;
  const [rows, chunkRows, transcriptRows] = await Promise.all([
    store.readJournal(runId, rebuild ? 0 : after),
    // A store may ignore the kinds: they are filtered here again.
    traceFromChunks
      ? store.readJournal(runId, 0, chainFrom === undefined ? CHUNK_KINDS : TRACE_KINDS)
      : Promise.resolve([]),
    traceFromChunks && chainFrom !== undefined
      ? store.readJournal(runId, chainRead, TRANSCRIPT_KINDS)
      : Promise.resolve(null),
  ]);
  const before = rebuild ? rows.filter((row) => row.seq <= after) : [];
  // Chunks are written just after their snapshot's event: every chunk up to the snapshot's own.
  const trace =
    traceLength === undefined || (!rebuild && chunk === undefined)
      ? null
      : rebuild
        ? traceBefore(rows, after, traceLength, runId)
        : earlierTrace(chunkRows, after, traceLength, runId);
  const chained = snapshot?.session.fields.progress.kind === 'chained';
  if (chained && chunk === undefined)
    throw new StoreRecordError({
      code: 'corrupt_record',
      runId,
      seq: after,
      problem: 'its fields.progress is chained but it names no transcriptChunk holding the triples',
    });
  const history =
    chunk === undefined
      ? null
      : transcriptRows !== null
        ? chainAt(transcriptRows, chainRead, chunk, after, runId, chained)
        : traceFromChunks
          ? historyChain(chunkRows, chunk, after, runId, 0, new Map(), chained)!
          : await historyAt(store, runId, chunk, after, chained, chainFrom);
  const transcript = history?.messages ?? (rebuild ? transcriptBefore(before, runId) : null);
  const records = (rebuild ? rows.filter((row) => row.seq > after) : rows)
    .filter((row) => row.kind !== 'trace' && row.kind !== 'transcript')
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
    transcript,
    trace,
    progress: history?.progress ?? null,
    transcriptWhole: history?.whole ?? null,
    transcriptWholeSeq: history?.wholeSeq ?? null,
    events,
    tail,
    // Every row counts, trace chunks included: the next record must not take a seq one of them holds.
    nextSeq: rows.reduce((highest, row) => Math.max(highest, row.seq), after) + 1,
    lastEventSeq,
    lastAt: lastAt === null || Number.isNaN(lastAt) ? null : lastAt,
    continueWith: null,
  };
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
 * The trace at the snapshot after event `snapshotSeq`, left in its chunk rows (not inflated, not parsed) until
 * it is wanted: a resume then reads what grows with the run only for a caller that reads `result.trace`. The
 * rows are checked then, as `traceBefore` checks them.
 */
function earlierTrace(
  rows: readonly { seq: number; kind: string; body: string }[],
  snapshotSeq: number,
  length: number,
  runId: string,
): EarlierTrace {
  const traceRows = rows.filter((row) => row.kind === 'trace');
  let first: { event: TraceEvent | undefined } | null = null;
  return {
    length,
    load: () => traceBefore(traceRows, snapshotSeq, length, runId),
    // The run's first event, from the first chunk that starts the trace (the rebuild asks which trace schema it had).
    first: () => (first ??= { event: firstEvent(traceRows, snapshotSeq, runId) }).event,
  };
}

function firstEvent(
  rows: readonly { seq: number; kind: string; body: string }[],
  snapshotSeq: number,
  runId: string,
): TraceEvent | undefined {
  for (const row of rows) {
    // The first event alone when the chunk is as this version writes it (the trace is checked whole when read).
    const quick = quickFirstTraceEvent(row.body, runId, row.seq);
    if (quick !== undefined && quick.snapshotSeq <= snapshotSeq) return quick.event;
    const chunk = decodeTraceChunk(row.body, runId, row.seq);
    if (chunk.snapshotSeq <= snapshotSeq && !chunk.final && chunk.from === 0) return chunk.events[0];
  }
  return undefined;
}

/**
 * A stop's messages, for its recorded result (version 6): the transcript chain from the chunk the run record names
 * (written with the stop) back to its whole chunk, then the notes the stop closed open calls with. Reads the chunk
 * rows from the whole chunk on (`at.from`), parses the chain's alone; a chunk missing or damaged is refused
 * (`corrupt_record` naming its seq, or the run record's when the named chunk itself is missing).
 */
export async function readResultMessages(store: Store, runId: string, at: ResultMessagesAt): Promise<Message[]> {
  // The transcript chunks alone: the trace chunks' rows (their blobs) are not fetched to be passed over.
  const rows = await store.readJournal(runId, Math.max(0, at.from - 1), TRANSCRIPT_KINDS);
  const bySeq = new Map<number, { seq: number; kind: string; body: string }>();
  for (const row of rows) if (row.kind === 'transcript') bySeq.set(row.seq, row);
  if (!bySeq.has(at.seq))
    throw new StoreRecordError({
      code: 'corrupt_record',
      runId,
      seq: null,
      problem: `its resultMessages names the transcript chunk at seq ${at.seq}, which is not in the journal`,
    });
  const link = (seq: number, referrer: number): TranscriptRecord => {
    const row = bySeq.get(seq);
    if (row === undefined) throw missingChunk(runId, referrer, seq);
    return decodeTranscriptChunkChange(row.body, runId, seq);
  };
  const { messages } = transcriptChain(link, at.seq, at.seq, runId)!;
  if (messages.length !== at.messages)
    throw new StoreRecordError({
      code: 'corrupt_record',
      runId,
      seq: at.seq,
      problem: `its chain holds ${messages.length} messages; the run record's result has ${at.messages}`,
    });
  for (const message of at.closing) messages.push(message);
  return messages;
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
  const rows = (await store.readJournal(runId, 0, TRACE_KINDS)).filter(
    (row) => row.kind === 'trace' && row.seq <= at.seq,
  );
  return foldTrace(rows, runId, at.length, at.seq, () => true, "result's trace");
}

/** The events of a stop's trace from index `from` on (its final chunk's, or the whole trace from 0). */
export interface TraceTail {
  from: number;
  events: readonly TraceEvent[];
}

/**
 * The end of a stop's trace: its final chunk alone (the events from where it starts), read and parsed without the
 * chunks before it, for a caller that wants only what follows a known point (a continued stop's last batch). The
 * chunk is checked as `readResultTrace` checks it; one missing or not ending the trace where the record says is
 * refused (`corrupt_record`).
 */
export async function readResultTraceTail(
  store: Store,
  runId: string,
  at: { seq: number; length: number },
): Promise<TraceTail> {
  const row = (await store.readJournal(runId, at.seq - 1, TRACE_KINDS)).find(
    (row) => row.kind === 'trace' && row.seq === at.seq,
  );
  if (row === undefined)
    throw new StoreRecordError({
      code: 'corrupt_record',
      runId,
      seq: null,
      problem: `its resultTrace names the trace chunk at seq ${at.seq}, which is not in the journal`,
    });
  const chunk = decodeTraceChunk(row.body, runId, row.seq);
  if (chunk.final !== true || chunk.from + chunk.events.length !== at.length)
    throw new StoreRecordError({
      code: 'corrupt_record',
      runId,
      seq: row.seq,
      problem: `it is not the final trace chunk of ${at.length} events the run record's resultTrace names`,
    });
  return { from: chunk.from, events: chunk.events };
}

/** The events of a stop's trace at index `index` and after (none when it is not given). */
export function stopTraceAfter(tail: TraceTail | undefined, index: number): readonly TraceEvent[] {
  if (tail === undefined) return [];
  // Read from the snapshot's trace length or before (see `readStopTrace`): `index` is at or past `from`.
  return tail.events.slice(Math.max(0, index - tail.from));
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
