/**
 * Reads a run back from the store: the latest snapshot, the events after it (minus the one a
 * continued stop replaced), and what the effect in flight had journalled. Every record is validated
 * on the way in; one bad record refuses the whole run.
 */
import type { Store } from '../../contracts/store.js';
import {
  decodeJournalRecord,
  decodeSnapshotRecord,
  type EventRecord,
  type IntentRecord,
  type ModelRecord,
  type SnapshotRecord,
  type ToolResultRecord,
  type Decisions,
} from './records.js';

/** How a run stopped for approval goes on: with the person's decisions, or cancelled there. */
export type ContinueWith =
  | { kind: 'approvals'; waitingSeq: number; decisions: Decisions }
  | { kind: 'cancel'; waitingSeq: number; message: string };

export interface ResumePlan {
  snapshot: SnapshotRecord | null;
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
  const records = (await store.readJournal(runId, after)).map((row) => decodeJournalRecord(row.body, runId, row.seq));
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
    events,
    tail,
    nextSeq: Math.max(after, ...records.map((record) => record.seq)) + 1,
    lastEventSeq,
    lastAt: lastAt === null || Number.isNaN(lastAt) ? null : lastAt,
    continueWith: null,
  };
}
