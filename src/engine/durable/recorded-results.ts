/**
 * A stop's recorded result, trace and messages, read back from the run record and the journal's trace and
 * transcript chunks it points to.
 */
import type { Message } from '../../contracts/model.js';
import type { Store } from '../../contracts/store.js';
import type { RunResult } from '../runtime/run-result.js';
import type { TraceEvent } from '../trace/trace-event.js';
import { decodeRunRecord } from './record-codec.js';
import { reviewIdOf } from './review-id.js';
import {
  readResultMessages,
  readResultTrace,
  readResultTraceTail,
  type ResumePlan,
  type TraceTail,
} from './resume-plan.js';
import type { RunRecord } from './run-record.js';

/** The result of the run's latest stop as recorded (finished or waiting), or null while it runs or when the store does not have it. */
export async function readLatestResult(store: Store, runId: string): Promise<RunResult | null> {
  const row = await store.readRun(runId);
  if (row === null) return null;
  const record = decodeRunRecord(row.body, runId);
  return record.state === 'running' ? null : readRecordedResult(store, record);
}

/**
 * The trace of the run's latest stop as recorded, read without its messages (a damaged transcript chunk does not
 * fail it); null while the run runs or when the store does not have it.
 */
export async function readLatestTrace(store: Store, runId: string): Promise<readonly TraceEvent[] | null> {
  const record = await readLatestStop(store, runId);
  if (record === null) return null;
  return record.resultTrace === undefined
    ? (record.result as unknown as RunResult).trace
    : readResultTrace(store, runId, record.resultTrace);
}

/**
 * The messages of the run's latest stop as recorded, read without its trace; null while the run runs or when the
 * store does not have it. A damaged chain of transcript chunks throws `StoreRecordError` naming the chunk's seq.
 */
export async function readLatestMessages(store: Store, runId: string): Promise<readonly Message[] | null> {
  const record = await readLatestStop(store, runId);
  if (record === null) return null;
  return record.resultMessages === undefined
    ? (record.result as unknown as RunResult).messages
    : readResultMessages(store, runId, record.resultMessages);
}

async function readLatestStop(store: Store, runId: string): Promise<RunRecord | null> {
  const row = await store.readRun(runId);
  if (row === null) return null;
  const record = decodeRunRecord(row.body, runId);
  return record.state === 'running' ? null : record;
}

/**
 * The trace a waiting run's stop recorded, from the snapshot the run is rebuilt from on (what the rebuilt run's
 * trace has not): its final chunk alone when that chunk starts there or before, else all of it. None when it
 * cannot be read (the resumed trace then lacks what followed the stop's event).
 */
export async function readStopTrace(store: Store, record: RunRecord, plan: ResumePlan | null): Promise<TraceTail> {
  try {
    if (record.resultTrace === undefined) return { from: 0, events: (record.result as unknown as RunResult).trace };
    // The final chunk holds the trace since the last chunk written, the snapshot's as a rule: a stop's trace is
    // not read whole (every chunk parsed) for its last few events.
    const rebuiltFrom = plan?.snapshot?.session.traceLength;
    if (rebuiltFrom !== undefined) {
      const tail = await readResultTraceTail(store, record.runId, record.resultTrace);
      if (tail.from <= rebuiltFrom) return tail;
    }
    return { from: 0, events: await readResultTrace(store, record.runId, record.resultTrace) };
  } catch {
    return { from: 0, events: [] };
  }
}

/** A stop's result as recorded, its trace put back from the journal's chunks when the record points there. */
export async function readRecordedResult(store: Store, record: RunRecord): Promise<RunResult> {
  const stored = record.result as unknown as RunResult;
  // A result recorded before reviews existed has no `pendingReview`: it waited for none.
  const result: RunResult =
    stored.pendingReview === undefined || stored.pendingReview === null
      ? { ...stored, pendingReview: null }
      : // Recorded before review ids: the id of the stop it waits at.
        {
          ...stored,
          pendingReview: {
            ...stored.pendingReview,
            reviewId:
              stored.pendingReview.reviewId ?? reviewIdOf(record.waitingSeq ?? 0, stored.pendingReview.outputHash),
          },
        };
  const [trace, messages] = await Promise.all([
    record.resultTrace === undefined ? result.trace : readResultTrace(store, record.runId, record.resultTrace),
    record.resultMessages === undefined
      ? result.messages
      : readResultMessages(store, record.runId, record.resultMessages),
  ]);
  return { ...result, trace, messages };
}
