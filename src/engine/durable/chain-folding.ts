/**
 * Folding the chains of transcript chunks back at a resume: each chunk written with a snapshot continues the one
 * before it (`previous`), so the transcript (back to the chunk that holds it whole) and, from version 5, the
 * no-progress tracker's triples (back to their last whole link) are rebuilt from a few chunks, not from every event.
 */
import type { Store } from '../../contracts/store.js';
import type { Message } from '../../contracts/model.js';
import type { ProgressChainState } from '../progress/index.js';
import { StoreRecordError } from './durable-errors.js';
import type { TranscriptChange, TranscriptRecord } from './records.js';
import {
  decodeTranscriptChunk,
  decodeTranscriptChunkChange,
  decodeTranscriptPart,
  isTriple,
  isTripleCount,
  NOT_TRIPLES,
} from './chunk-records.js';

/** The kind of the rows the chains are made of. */
export const TRANSCRIPT_KINDS: readonly string[] = ['transcript'];

/** The tracker's triples folded from a chain of transcript chunks, and where the chain stands (the next link continues it). */
export interface ChainedTriples {
  triples: Map<string, number>;
  chain: ProgressChainState;
  /** The seq of the chain's last whole link. */
  wholeSeq: number;
}

/** What a snapshot's chain of transcript chunks holds: the transcript, and (version 5) the tracker's triples. */
export interface History {
  messages: Message[];
  /** How many of them the chain's whole chunk holds, and its seq. */
  whole: number;
  wholeSeq: number;
  progress: ChainedTriples | null;
}

/** The transcript as the events before a snapshot left it: their changes folded, the superseded events' skipped. */
export function transcriptBefore(
  rows: readonly { seq: number; kind: string; body: string }[],
  runId: string,
): Message[] {
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
  for (const { seq, change } of changes)
    if (!superseded.has(seq)) messages = applyTranscriptChange(messages, change, runId, seq, 'the journal');
  return messages;
}

/**
 * How far back (in seqs) before its snapshot a resume first reads transcript chunks. A chain that reaches
 * further (no context ceiling: the next request holds the whole conversation) is read again from the start.
 */
export const TRANSCRIPT_WINDOW = 1_024;

/**
 * The history at a version 4 or 5 snapshot, reading only the chunks of the window before it when its chains end
 * there (the transcript's last replacement and the triples' last whole link are in it); else every chunk. Each
 * chunk is decoded once either way.
 */
export async function historyAt(
  store: Store,
  runId: string,
  head: number,
  snapshotSeq: number,
  chained: boolean,
  chainFrom: number | undefined,
): Promise<History> {
  const decoded = new Map<number, TranscriptRecord>();
  // The snapshot names where its chains begin: from there (else a window before it, then everything).
  const from = chainFrom === undefined ? Math.max(0, snapshotSeq - TRANSCRIPT_WINDOW) : chainFrom - 1;
  // The transcript chunks alone (the stores read them through their chunk index all the same).
  if (from > 0) {
    const rows = await store.readJournal(runId, from, TRANSCRIPT_KINDS);
    const folded = historyChain(rows, head, snapshotSeq, runId, from, decoded, chained);
    if (folded !== null) return folded;
    if (chainFrom !== undefined) throw beforeChainFrom(runId, snapshotSeq, chainFrom);
  }
  const rows = await store.readJournal(runId, 0, TRANSCRIPT_KINDS);
  return historyChain(rows, head, snapshotSeq, runId, 0, decoded, chained)!;
}

/**
 * Both chains from the snapshot's chunk, read from the chunk its `chainFrom` names (the rows after `readAfter`): a
 * chain that reaches before it is refused (`corrupt_record` at the snapshot), not read further back.
 */
export function chainAt(
  rows: readonly { seq: number; kind: string; body: string }[],
  readAfter: number,
  head: number,
  snapshotSeq: number,
  runId: string,
  chained: boolean,
): History {
  const history = historyChain(rows, head, snapshotSeq, runId, readAfter, new Map(), chained);
  if (history === null) throw beforeChainFrom(runId, snapshotSeq, readAfter + 1);
  return history;
}

function beforeChainFrom(runId: string, snapshotSeq: number, chainFrom: number): StoreRecordError {
  return new StoreRecordError({
    code: 'corrupt_record',
    runId,
    seq: snapshotSeq,
    problem: `its chains reach a transcript chunk before the one its chainFrom names (seq ${chainFrom})`,
  });
}

/** Both chains from the snapshot's chunk; null when either reaches before the rows read (after `readAfter`). */
export function historyChain(
  rows: readonly { seq: number; kind: string; body: string }[],
  head: number,
  snapshotSeq: number,
  runId: string,
  readAfter: number,
  decoded: Map<number, TranscriptRecord>,
  chained: boolean,
): History | null {
  const bySeq = new Map<number, { seq: number; kind: string; body: string }>();
  for (const row of rows) if (row.kind === 'transcript' && row.seq > readAfter) bySeq.set(row.seq, row);
  // The tracker's chain is folded first, its chunks decoded whole; the transcript's goes on from there (often
  // further back: to the last chunk holding the transcript whole) reading the other chunks' transcript only.
  let transcriptOnly = false;
  const link = (seq: number, referrer: number): TranscriptRecord | null => {
    const row = bySeq.get(seq);
    // Before the rows read: the caller reads further back.
    if (row === undefined && seq <= readAfter) return null;
    if (row === undefined) throw missingChunk(runId, referrer, seq);
    let record = decoded.get(seq);
    // A chunk read for its transcript only (by an earlier pass over a window) is read whole when its triples are wanted.
    if (record === undefined || (!transcriptOnly && record.progress === undefined && chained)) {
      // Decoded whole for the tracker's chain, which checks each triple's count as it folds them (one pass, not two).
      record = transcriptOnly
        ? decodeTranscriptChunkChange(row.body, runId, seq)
        : decodeTranscriptChunk(row.body, runId, seq, false);
      decoded.set(seq, record);
    }
    return record;
  };
  const progress = chained ? tripleChain(link, head, snapshotSeq, runId) : null;
  if (chained && progress === null) return null;
  transcriptOnly = true;
  const transcript = transcriptChain(link, head, snapshotSeq, runId);
  return transcript === null ? null : { ...transcript, progress };
}

/**
 * The tracker's triples at a version 5 snapshot: its chunk's and the chain's before it back to the last whole
 * link, folded from there (a chunk of the chain without triples — version 4 — is refused: the first version 5
 * chunk after one is whole).
 */
function tripleChain(
  link: (seq: number, referrer: number) => TranscriptRecord | null,
  head: number,
  snapshotSeq: number,
  runId: string,
): ChainedTriples | null {
  const chain: TranscriptRecord[] = [];
  for (let seq = head, referrer = snapshotSeq; ;) {
    if (seq === 0)
      throw new StoreRecordError({
        code: 'corrupt_record',
        runId,
        seq: referrer,
        problem: "the chain of the tracker's triples has no whole link (progress.whole) before it",
      });
    const record = link(seq, referrer);
    if (record === null) return null;
    if (record.progress === undefined)
      throw new StoreRecordError({
        code: 'corrupt_record',
        runId,
        seq,
        problem:
          "the transcript chunk carries no tracker triples (progress), yet a version 5 snapshot's chain reaches it",
      });
    chain.push(record);
    if (record.progress.whole) break;
    referrer = seq;
    seq = record.previous;
  }
  const wholeLink = chain.at(-1)!;
  // The links were decoded without their counts checked: each is checked here, in the one pass that folds it.
  const triples = new Map<string, number>();
  const fold = (link: TranscriptRecord): number => {
    const changed = link.progress!.triples;
    let folded = 0;
    // This version's flat array (key, count, …); an older chunk's object keyed by triple below.
    if (Array.isArray(changed)) {
      for (let at = 0; at < changed.length; at += 2) {
        if (!isTriple(changed, at))
          throw new StoreRecordError({ code: 'corrupt_record', runId, seq: link.seq, problem: NOT_TRIPLES });
        triples.set(changed[at] as string, changed[at + 1] as number);
      }
      return changed.length / 2;
    }
    for (const key in changed) {
      const count = changed[key]!;
      if (!isTripleCount(count))
        throw new StoreRecordError({ code: 'corrupt_record', runId, seq: link.seq, problem: NOT_TRIPLES });
      triples.set(key, count);
      folded += 1;
    }
    return folded;
  };
  const wholeSize = fold(wholeLink);
  // The writer lists a key once a link (it builds the array from a Map): a whole link naming one twice is damaged.
  if (triples.size !== wholeSize)
    throw new StoreRecordError({ code: 'corrupt_record', runId, seq: wholeLink.seq, problem: NOT_TRIPLES });
  let sinceWhole = 0;
  for (let index = chain.length - 2; index >= 0; index--) sinceWhole += fold(chain[index]!);
  return { triples, chain: { wholeSize, sinceWhole }, wholeSeq: wholeLink.seq };
}

/**
 * The transcript at a version 4 snapshot: its chunk and the chain before it (through `previous`) back to
 * the last chunk that replaced the transcript, folded from there. Chunks on no chain (their snapshot never
 * written), and those before that replacement, are not even parsed: with a context ceiling that trims the
 * conversation, a resume reads only what the next request can hold. Null when the chain reaches before the rows read.
 */
export function transcriptChain(
  link: (seq: number, referrer: number) => TranscriptRecord | null,
  head: number,
  snapshotSeq: number,
  runId: string,
): { messages: Message[]; whole: number; wholeSeq: number } | null {
  const chain: TranscriptRecord[] = [];
  // Each chunk's `previous` is below its own seq (checked when decoded): the walk ends.
  for (let seq = head, referrer = snapshotSeq; seq !== 0;) {
    const record = link(seq, referrer);
    if (record === null) return null;
    chain.push(record);
    // A chunk that replaced the transcript (a new task, a trimmed context, or the journal holding it whole again
    // now and then: see CONSOLIDATE_AT in transcript-chain.ts) holds all of it: the chunks before are not read.
    if (record.change.replace) break;
    referrer = seq;
    seq = record.previous;
  }
  let messages: Message[] = [];
  for (let index = chain.length - 1; index >= 0; index--) {
    const { seq, change } = chain[index]!;
    messages = applyTranscriptChange(messages, change, runId, seq, 'the chunk');
  }
  return { messages, whole: chain.at(-1)?.change.messages.length ?? 0, wholeSeq: chain.at(-1)?.seq ?? 0 };
}

/**
 * `messages` with a stored transcript change applied: replaced, or continued where it says it starts (a change
 * that does not continue `before` — the journal or the chunk before it — is refused).
 */
export function applyTranscriptChange(
  messages: Message[],
  change: TranscriptChange,
  runId: string,
  seq: number,
  before: 'the journal' | 'the chunk',
): Message[] {
  if (change.replace) messages = [];
  else if (change.from !== messages.length)
    throw new StoreRecordError({
      code: 'corrupt_record',
      runId,
      seq,
      problem: `its transcript (from message ${change.from}, not ${messages.length}) does not continue ${before} before it`,
    });
  for (const message of change.messages) messages.push(message);
  return messages;
}

/** The error for a transcript chunk (at `referrer`) continuing one at `seq` that the journal does not hold. */
export function missingChunk(runId: string, referrer: number, seq: number): StoreRecordError {
  return new StoreRecordError({
    code: 'corrupt_record',
    runId,
    seq: referrer,
    problem: `the transcript chunk it continues (seq ${seq}) is not in the journal`,
  });
}
