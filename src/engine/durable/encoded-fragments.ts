/**
 * What a run journals twice is encoded once. An event record's delta holds the messages appended and the trace
 * events recorded since the previous event; the transcript and trace chunks written with a snapshot hold them
 * again (a resume reads the chunks, not the events). The JSON text of each delta's messages and trace events is
 * kept, by where they stand in the transcript and the trace, until the chunk that holds them is written: the
 * chunk joins those texts (and stringifies only what no event holds: the machine's own trace, a transcript
 * replaced) instead of serialising the same objects again. Every body is `encodeRecord`'s, byte for byte: a kept
 * text is used only where the chunk holds the very objects it was made from (the transcript's messages are frozen;
 * trace events are not changed once recorded), and anything else is stringified as before.
 */
import {
  encodeRecord,
  type EventRecord,
  type JournalRecord,
  type TraceRecord,
  type TranscriptRecord,
} from './records.js';

/** Consecutive items of the transcript or the trace, as an event's delta held them, and their JSON text. */
interface Fragment {
  items: readonly unknown[];
  /** The items' JSON texts joined by commas (the array's text without its brackets). */
  text: string;
}

/**
 * A string no record holds by chance (a fresh random nonce per process; the control character is escaped in JSON):
 * a chunk's list is written as it, and the list's text put in its place.
 */
const MARK = `\u0001loopstate-fragment-${globalThis.crypto.randomUUID()}`;
const MARK_LIST = [MARK];
const MARK_TEXT = JSON.stringify(MARK_LIST);

export class EncodedFragments {
  /** Fragments by the index of their first item: in the trace, and in the transcript. */
  private readonly trace = new Map<number, Fragment>();
  private readonly messages = new Map<number, Fragment>();
  /** The machine's events since the last trace chunk, by object, and their texts (a `machine-event` holds each). */
  private readonly machineEvents = new Map<object, string>();
  /** Whether a trace chunk was written since the last transcript chunk (without one, the trace is not chunked). */
  private traceChunked = false;

  /**
   * A journal record's body, as `encodeRecord` writes it: an event's arrays kept for the chunks, a chunk's built
   * from them.
   * @example
   * const fragments = new EncodedFragments();
   * const body = fragments.encode(record); // === encodeRecord(record)
   */
  encode(record: JournalRecord): string {
    switch (record.kind) {
      case 'event':
        return this.event(record);
      case 'trace':
        return this.traceChunk(record);
      case 'transcript':
        return this.transcriptChunk(record);
      default:
        return encodeRecord(record);
    }
  }

  /**
   * The event's body, written from its parts' texts in the order `encodeRecord` writes them (the record's keys, the
   * delta's and its transcript change's as the journal and `sessionDelta` make them, checked here); its messages',
   * trace events' and event's texts are kept for the chunks. A record of another shape (a superseding event, other
   * keys, a number JSON writes otherwise) is left to `encodeRecord` and keeps none.
   */
  private event(record: EventRecord): string {
    const { delta, event } = record;
    const transcript = delta?.transcript;
    if (
      !sameKeys(record, EVENT_KEYS) ||
      !sameKeys(delta, DELTA_KEYS) ||
      !sameKeys(transcript, CHANGE_KEYS) ||
      !isPlainObject(event) ||
      !Array.isArray(delta.trace) ||
      !Array.isArray(transcript.messages) ||
      typeof transcript.replace !== 'boolean' ||
      !(transcript.taskMessageIndex === null || Number.isSafeInteger(transcript.taskMessageIndex)) ||
      ![record.schemaVersion, record.seq, transcript.from, delta.traceFrom, delta.warningsFrom].every(
        Number.isSafeInteger,
      )
    )
      return encodeRecord(record);
    let eventText: string, messagesText: string, traceText: string, rest: string;
    try {
      eventText = JSON.stringify(event);
      messagesText = JSON.stringify(transcript.messages);
      traceText = JSON.stringify(delta.trace);
      rest = `"warningsFrom":${delta.warningsFrom},"warnings":${JSON.stringify(delta.warnings)},"fields":${JSON.stringify(delta.fields)}}}`;
    } catch {
      // A bigint (written as its text by `encodeRecord`): this record keeps no fragments.
      return encodeRecord(record);
    }
    if (transcript.messages.length > 0)
      this.messages.set(transcript.replace ? 0 : transcript.from, {
        items: transcript.messages,
        text: messagesText.slice(1, -1),
      });
    if (delta.trace.length > 0) this.trace.set(delta.traceFrom, { items: delta.trace, text: traceText.slice(1, -1) });
    this.machineEvents.set(event, eventText);
    return `{"schemaVersion":${record.schemaVersion},"kind":"event","runId":${JSON.stringify(record.runId)},"seq":${record.seq},"event":${eventText},"delta":{"transcript":{"replace":${transcript.replace},"from":${transcript.from},"messages":${messagesText},"taskMessageIndex":${transcript.taskMessageIndex}},"traceFrom":${delta.traceFrom},"trace":${traceText},${rest}`;
  }

  private traceChunk(record: TraceRecord): string {
    this.traceChunked = true;
    if (!Array.isArray(record.events)) return encodeRecord(record);
    try {
      return withList(record, 'events', listText(this.trace, record.from, record.events, this.machineEvents));
    } catch {
      return encodeRecord(record);
    } finally {
      dropBefore(this.trace, record.from + record.events.length);
      this.machineEvents.clear();
    }
  }

  private transcriptChunk(record: TranscriptRecord): string {
    // A run whose trace is not chunked keeps no trace fragments.
    if (!this.traceChunked) {
      this.trace.clear();
      this.machineEvents.clear();
    }
    this.traceChunked = false;
    const { change } = record;
    if (!Array.isArray(change?.messages)) return encodeRecord(record);
    const start = change.replace ? 0 : change.from;
    try {
      return withList(record, 'change', listText(this.messages, start, change.messages));
    } catch {
      return encodeRecord(record);
    } finally {
      dropBefore(this.messages, start + change.messages.length);
    }
  }
}

/**
 * The JSON text of `items` (which stand at `start` on), built from the fragments that hold the very same items there
 * and, for a `machine-event` whose event is among `machineEvents`, that event's text; the others stringified (throws
 * as `JSON.stringify` does: the caller then leaves the record to `encodeRecord`).
 */
function listText(
  fragments: ReadonlyMap<number, Fragment>,
  start: number,
  items: readonly unknown[],
  machineEvents?: ReadonlyMap<object, string>,
): string {
  const parts: string[] = [];
  let gapFrom = 0;
  const gapTo = (to: number) => {
    if (to > gapFrom) parts.push(JSON.stringify(items.slice(gapFrom, to)).slice(1, -1));
  };
  for (let index = 0; index < items.length;) {
    const fragment = fragments.get(start + index);
    if (fragment !== undefined && holds(fragment.items, items, index)) {
      gapTo(index);
      parts.push(fragment.text);
      index += fragment.items.length;
      gapFrom = index;
      continue;
    }
    const text = machineEvents === undefined ? undefined : machineEventText(items[index], machineEvents);
    if (text !== undefined) {
      gapTo(index);
      parts.push(text);
      gapFrom = index + 1;
    }
    index++;
  }
  gapTo(items.length);
  return `[${parts.join(',')}]`;
}

/**
 * A `machine-event` trace event's text with its event's text as the event record holds it: the rest stringified with
 * the event last (`{…,"event":0}`, then the text in place of the 0); undefined for any other item.
 */
function machineEventText(item: unknown, machineEvents: ReadonlyMap<object, string>): string | undefined {
  const event = (item as { type?: unknown; event?: unknown } | null)?.event;
  if ((item as { type?: unknown }).type !== 'machine-event' || typeof event !== 'object' || event === null)
    return undefined;
  const eventText = machineEvents.get(event);
  if (eventText === undefined) return undefined;
  const rest = JSON.stringify({ ...(item as object), event: 0 });
  return rest.endsWith(',"event":0}') ? `${rest.slice(0, -2)}${eventText}}` : undefined;
}

/** The keys of an event record, its delta and its transcript change, in the order the journal writes them. */
const EVENT_KEYS = ['schemaVersion', 'kind', 'runId', 'seq', 'event', 'delta'];
const DELTA_KEYS = ['transcript', 'traceFrom', 'trace', 'warningsFrom', 'warnings', 'fields'];
const CHANGE_KEYS = ['replace', 'from', 'messages', 'taskMessageIndex'];

/** Whether `value` is a plain object whose own keys are `keys`, in that order, none of them undefined. */
function sameKeys(value: unknown, keys: readonly string[]): value is Record<string, unknown> {
  if (!isPlainObject(value)) return false;
  let index = 0;
  for (const key in value) {
    if (keys[index] !== key || !Object.hasOwn(value, key) || value[key] === undefined) return false;
    index++;
  }
  return index === keys.length;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' &&
  value !== null &&
  Object.getPrototypeOf(value) === Object.prototype &&
  typeof (value as { toJSON?: unknown }).toJSON !== 'function';

/** Whether `items` hold the fragment's very objects from `index` on. */
function holds(fragment: readonly unknown[], items: readonly unknown[], index: number): boolean {
  if (index + fragment.length > items.length) return false;
  for (let at = 0; at < fragment.length; at++) if (fragment[at] !== items[index + at]) return false;
  return true;
}

function dropBefore(fragments: Map<number, Fragment>, end: number): void {
  for (const at of fragments.keys()) if (at < end) fragments.delete(at);
}

/**
 * The record's text with `key`'s value written as `list` (a trace chunk's events) or, for `change`, the change with
 * its messages written as `list`: the rest stringified, the list put in the marked place.
 */
function withList(record: TraceRecord | TranscriptRecord, key: 'events' | 'change', list: string): string {
  const marked =
    key === 'events'
      ? { ...record, events: MARK_LIST }
      : { ...record, change: { ...(record as TranscriptRecord).change, messages: MARK_LIST } };
  const body = JSON.stringify(marked);
  const at = body.indexOf(MARK_TEXT);
  if (at < 0 || body.includes(MARK_TEXT, at + MARK_TEXT.length)) return encodeRecord(record);
  return body.slice(0, at) + list + body.slice(at + MARK_TEXT.length);
}
