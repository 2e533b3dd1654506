/**
 * The journal's chain of transcript chunks, one written with each snapshot: each holds the messages since the
 * chunk before it (which it names), or the transcript whole. A resume folds the chain back from its snapshot's
 * chunk to the last whole one, so the journal makes a chunk whole again now and then (see `CONSOLIDATE_AT`).
 */
import type { Message } from '../../contracts/model.js';
import { messageChars, type Transcript } from '../runtime/transcript.js';
import type { SessionDelta } from './records.js';
import { markOf, transcriptChange, type TranscriptMark } from './session-state.js';

/**
 * How far the messages chunked since the last whole transcript chunk grow, as a share of it, before a chunk holds the
 * transcript whole again: the whole chunks written add up to about (1 + 1/CONSOLIDATE_AT) times the transcript,
 * and a resume parses the whole chunk and at most a third of the chunks (1/CONSOLIDATE_AT = 2).
 */
export const CONSOLIDATE_AT = 0.5;

/** What a message weighs in a chunk: its text, and a little for the JSON around it. */
const MESSAGE_FRAMING = 32;

/** What messages weigh in a chunk (those from `from` on). */
const transcriptSize = (messages: readonly Message[], from = 0): number => {
  let size = 0;
  for (let index = from; index < messages.length; index++) size += messageChars(messages[index]!) + MESSAGE_FRAMING;
  return size;
};

/** A mark no transcript stands at: the change since it is the whole transcript. */
const WHOLE: TranscriptMark = { transcript: null, revision: 0, messages: 0 };

/** A transcript chunk's contents, as `TranscriptChain.take` gives them. */
export interface ChunkLink {
  /** The chunk this one continues (0: none). */
  previous: number;
  change: SessionDelta['transcript'];
  /** Made whole to consolidate the chain (not because the run replaced its transcript). */
  consolidated: boolean;
}

/**
 * Where the chain stands: its last chunk, and the size of the last whole one against what was chunked since.
 * @example
 * const chain = new TranscriptChain();
 * const { previous, change } = chain.take(seq, session.transcript); // then queue the chunk record
 */
export class TranscriptChain {
  /** The last chunk (seq 0: none yet, the next one holds the transcript whole) and where the transcript stood then. */
  private last: { seq: number; mark: TranscriptMark } = { seq: 0, mark: WHOLE };
  /** The size of the transcript the last whole chunk held, and of the messages chunked since. */
  private whole = { size: 0, since: 0 };
  /** The seq of the last whole chunk, or a seq before it (0: not known, the chain may start anywhere). */
  private wholeAt = 0;

  /** Whether the journal has a chunk yet (written with a snapshot, or continued from a restored one). */
  get started(): boolean {
    return this.last.seq !== 0;
  }

  /** A seq at or before the chain's last whole chunk: its chain is in the journal from there on. */
  get wholeSeq(): number {
    return this.wholeAt;
  }

  /**
   * Continues a restored run's chain from its snapshot's chunk, whose chain's whole chunk (at `wholeSeq`; 0 when
   * not known) held `wholeMessages`.
   */
  restore(seq: number, transcript: Transcript, wholeMessages: number, wholeSeq = 0): void {
    this.last = { seq, mark: markOf(transcript) };
    this.wholeAt = wholeSeq;
    const { messages } = transcript;
    const whole = Math.min(wholeMessages, messages.length);
    // The messages since the whole chunk are weighed one by one (at most half its size: see `CONSOLIDATE_AT`); the
    // whole chunk's from the transcript's running count, without reading its messages (thousands at 10,000 steps).
    const since = transcriptSize(messages, whole);
    this.whole = { size: transcript.messageChars + MESSAGE_FRAMING * messages.length - since, since };
  }

  /**
   * The next chunk, at `seq`: the messages since the last one or, once those chunked since the last whole chunk
   * reach `CONSOLIDATE_AT` of it, the transcript whole again (a replacement, as a new task's). A resume then folds
   * a few chunks, not one per snapshot of the run; the whole chunks grow geometrically, so what they write stays a
   * constant factor of the transcript, O(1) a step amortised.
   */
  take(seq: number, transcript: Transcript): ChunkLink {
    let change = transcriptChange(transcript, this.last.mark);
    const added = change.replace ? 0 : transcriptSize(change.messages);
    const consolidated = added > 0 && this.whole.since + added >= this.whole.size * CONSOLIDATE_AT;
    if (consolidated) change = transcriptChange(transcript, WHOLE);
    if (change.replace) {
      this.whole = { size: transcriptSize(change.messages), since: 0 };
      this.wholeAt = seq;
    } else this.whole.since += added;
    const previous = this.last.seq;
    this.last = { seq, mark: markOf(transcript) };
    return { previous, change, consolidated };
  }
}

/**
 * What `closed` (a result's messages) adds after `transcript`'s messages, when it begins with copies of them: the
 * notes a stop answers open calls with. Null when it does not (the record then keeps the messages whole).
 * @example
 * const closing = closingOf(session.transcript.messages, result.messages); // [] when no call was left open
 */
export function closingOf(transcript: readonly Message[], closed: readonly Message[]): Message[] | null {
  if (closed.length < transcript.length) return null;
  for (let index = 0; index < transcript.length; index++)
    if (!sameMessage(transcript[index]!, closed[index]!)) return null;
  return closed.slice(transcript.length);
}

/** Whether `b` is a copy of `a` (as `closedConversation` makes one): field by field, no allocation. */
function sameMessage(a: Message, b: Message): boolean {
  if (a.role !== b.role || a.content !== b.content) return false;
  if (a.role === 'tool') return a.toolCallId === (b as typeof a).toolCallId;
  if (a.role !== 'assistant') return true;
  const calls = a.toolCalls;
  const others = (b as typeof a).toolCalls;
  if (calls === undefined || others === undefined) return calls === others;
  if (calls.length !== others.length) return false;
  for (let index = 0; index < calls.length; index++) {
    const call = calls[index]!;
    const other = others[index]!;
    if (call.id !== other.id || call.name !== other.name || call.arguments !== other.arguments) return false;
  }
  return true;
}
