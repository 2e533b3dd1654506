/**
 * The records a resume reads in bulk — the trace and transcript chunks, and the transcript part of each event
 * before the snapshot — checked by hand rather than by zod, which would cost a resume in proportion to the run.
 * Refused as `decode` in record-codec.ts refuses (`StoreRecordError`); the schemas in records.ts are the reference.
 */
import type { TraceEvent } from '../trace/trace-event.js';
import { StoreRecordError } from './durable-errors.js';
import {
  RECORD_SCHEMA_VERSION,
  schemaVersionSchema,
  type TraceRecord,
  type TranscriptChange,
  type TranscriptRecord,
} from './records.js';

const isString = (value: unknown): value is string => typeof value === 'string';
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The message shapes `messageSchema` accepts, checked by hand: a resume checks every message of the run's history. */
function isMessage(value: unknown): boolean {
  if (!isObject(value)) return false;
  const keys = Object.keys(value).length;
  switch (value.role) {
    case 'system':
    case 'user':
      return keys === 2 && isString(value.content);
    case 'tool':
      return keys === 3 && isString(value.toolCallId) && isString(value.content);
    case 'assistant': {
      const { content, toolCalls } = value;
      if (!(content === null || isString(content))) return false;
      if (toolCalls === undefined) return keys === 2;
      return (
        keys === 3 &&
        Array.isArray(toolCalls) &&
        toolCalls.every(
          (call) =>
            isObject(call) &&
            Object.keys(call).length === 3 &&
            isString(call.id) &&
            isString(call.name) &&
            isString(call.arguments),
        )
      );
    }
    default:
      return false;
  }
}

function isTranscriptChange(value: unknown): value is TranscriptChange {
  return (
    isObject(value) &&
    typeof value.replace === 'boolean' &&
    Number.isInteger(value.from) &&
    (value.from as number) >= 0 &&
    (value.taskMessageIndex === null || Number.isInteger(value.taskMessageIndex)) &&
    Array.isArray(value.messages) &&
    value.messages.every(isMessage)
  );
}

/** Whether a tracker triple's count is one `tripleChangesSchema` accepts (a safe whole number, not negative). */
export const isTripleCount = (count: unknown): boolean => Number.isSafeInteger(count) && (count as number) >= 0;

/** Whether a flat triples array holds a key and its count at `at` (an even index). */
export const isTriple = (triples: readonly unknown[], at: number): boolean =>
  typeof triples[at] === 'string' && isTripleCount(triples[at + 1]);

/** The refusal of a chunk whose `progress` is not the tracker's triples (its shape, or a count). */
export const NOT_TRIPLES =
  "not a valid record: progress is not the tracker's triples ({ whole, triples: [key, count, …] or counts by key })";

/**
 * What `tripleChangesSchema` accepts, checked by hand: a resume folds every triple of the task. `counts: false`
 * checks the shape alone, for a caller that checks each count as it folds them (a whole link holds thousands of
 * triples at 10,000 steps: each pass over them costs ~0.1 ms a thousand).
 */
function isTripleChanges(value: unknown, counts: boolean): boolean {
  if (!isObject(value) || Object.keys(value).length !== 2 || typeof value.whole !== 'boolean') return false;
  const { triples } = value;
  // This version's flat array (key, count, …), or an older chunk's object keyed by triple.
  if (Array.isArray(triples)) {
    if (triples.length % 2 !== 0) return false;
    if (counts) for (let at = 0; at < triples.length; at += 2) if (!isTriple(triples, at)) return false;
    return true;
  }
  if (!isObject(triples)) return false;
  if (counts) for (const key in triples) if (!isTripleCount(triples[key])) return false;
  return true;
}

/** The body's JSON, or the refusal a truncated or overwritten row gets. */
function parsedOrRefused(body: string, refuse: (problem: string) => StoreRecordError): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch (error) {
    throw refuse(`not valid JSON (truncated or overwritten): ${(error as Error).message}`);
  }
}

/**
 * An event record as this version's `encodeRecord` writes it (its keys in that order) carries its
 * transcript change between two markers that JSON cannot hold inside a string (a quote there is
 * escaped): only that part is parsed, a tenth of the record. Anything else — another version, a
 * superseding event, a record with the markers elsewhere — gives undefined, and is parsed whole.
 */
function quickTranscriptPart(body: string, runId: string, seq: number): unknown {
  const head = `{"schemaVersion":${RECORD_SCHEMA_VERSION},"kind":"event","runId":${JSON.stringify(runId)},"seq":${seq},"event":`;
  if (!body.startsWith(head) || body.includes('"supersedes":')) return undefined;
  const start = body.indexOf(TRANSCRIPT_START, head.length);
  if (start < 0 || body.indexOf(TRANSCRIPT_START, start + 1) >= 0) return undefined;
  const end = body.indexOf(TRANSCRIPT_END, start);
  if (end < 0) return undefined;
  try {
    return JSON.parse(body.slice(start + TRANSCRIPT_START.length, end));
  } catch {
    return undefined;
  }
}
/**
 * A trace chunk before the snapshot, checked by hand for what the trace schema asks of each event (a
 * type, the run id, a time): a resume reads every chunk of the run.
 */
export function decodeTraceChunk(body: string, runId: string, seq: number): TraceRecord {
  const refuse = (problem: string) => new StoreRecordError({ code: 'corrupt_record', runId, seq, problem });
  const value = parsedOrRefused(body, refuse);
  if (!isObject(value) || value.kind !== 'trace') throw refuse('not a valid record: expected a trace chunk');
  if (!schemaVersionSchema.safeParse(value.schemaVersion).success)
    throw refuse('not a valid record: no known schemaVersion');
  if (value.runId !== runId || value.seq !== seq)
    throw refuse(`it names ${String(value.runId)} seq ${String(value.seq)}, not where it is stored`);
  const { snapshotSeq, from, events, final } = value;
  if (
    !(final === undefined || final === true) ||
    !Number.isInteger(snapshotSeq) ||
    !Number.isInteger(from) ||
    (from as number) < 0 ||
    !Array.isArray(events) ||
    !events.every(
      (event) => isObject(event) && isString(event.type) && isString(event.runId) && typeof event.at === 'number',
    )
  )
    throw refuse('not a valid record: a trace chunk of another shape');
  return value as unknown as TraceRecord;
}

/**
 * The first event of a trace chunk that starts the trace, and the snapshot it was written with, read from a chunk
 * as this version writes it (`from` 0, not final) without parsing its other events: a resume asks only which
 * trace schema the run started with. The event is checked as `decodeTraceChunk` checks each; the rest of the
 * chunk is checked where the trace is read whole. Undefined for any other body: the caller decodes it whole.
 */
export function quickFirstTraceEvent(
  body: string,
  runId: string,
  seq: number,
): { snapshotSeq: number; event: TraceEvent } | undefined {
  const head = `{"schemaVersion":${RECORD_SCHEMA_VERSION},"kind":"trace","runId":${JSON.stringify(runId)},"seq":${seq},"snapshotSeq":`;
  if (!body.startsWith(head) || body.endsWith(',"final":true}')) return undefined;
  const eventsAt = body.indexOf(',"from":0,"events":[{', head.length);
  const snapshotSeq = Number(body.slice(head.length, eventsAt));
  if (eventsAt < 0 || !/^\d+$/.test(body.slice(head.length, eventsAt)) || !Number.isSafeInteger(snapshotSeq))
    return undefined;
  const start = eventsAt + ',"from":0,"events":['.length;
  const end = endOfObject(body, start);
  // The first event must be followed by the next event or the end of the list, and the body must end as a chunk
  // does: a stray quote or brace inside a damaged event could otherwise close it early as valid JSON.
  if (end < 0 || !(body[end] === ']' || body.startsWith(',{', end)) || !body.endsWith(']}')) return undefined;
  let event: unknown;
  try {
    event = JSON.parse(body.slice(start, end));
  } catch {
    return undefined;
  }
  if (!(isObject(event) && isString(event.type) && isString(event.runId) && typeof event.at === 'number'))
    return undefined;
  return { snapshotSeq, event: event as unknown as TraceEvent };
}

/** Where the JSON object that opens at `start` ends (just after its `}`), or -1 when it does not end in `text`. */
function endOfObject(text: string, start: number): number {
  let depth = 0;
  for (let at = start; at < text.length; at++) {
    const char = text.charCodeAt(at);
    if (char === 0x22) {
      // A string: skipped whole, its escapes with it (a brace inside is text).
      for (at++; at < text.length && text.charCodeAt(at) !== 0x22; at++) if (text.charCodeAt(at) === 0x5c) at++;
    } else if (char === 0x7b || char === 0x5b) depth++;
    else if ((char === 0x7d || char === 0x5d) && --depth === 0) return at + 1;
  }
  return -1;
}

/**
 * A transcript chunk (version 4), checked by hand for what its schema asks (a resume reads the chain of them:
 * every message of the history once, so zod's cost would grow with the run). `tripleCounts: false`: its triples'
 * counts are left for the caller to check as it folds them (refused then with `NOT_TRIPLES`).
 */
export function decodeTranscriptChunk(body: string, runId: string, seq: number, tripleCounts = true): TranscriptRecord {
  const refuse = (problem: string) => new StoreRecordError({ code: 'corrupt_record', runId, seq, problem });
  const value = parsedOrRefused(body, refuse);
  if (!isObject(value) || value.kind !== 'transcript') throw refuse('not a valid record: expected a transcript chunk');
  const version = value.schemaVersion;
  if (typeof version === 'number' && version > RECORD_SCHEMA_VERSION)
    throw new StoreRecordError({
      code: 'unsupported_record_version',
      runId,
      seq,
      problem: `schemaVersion ${version} is newer than this loopstate reads (${RECORD_SCHEMA_VERSION}); upgrade loopstate to resume it`,
    });
  if (!schemaVersionSchema.safeParse(version).success) throw refuse('not a valid record: no known schemaVersion');
  if (value.runId !== runId || value.seq !== seq)
    throw refuse(`it names ${String(value.runId)} seq ${String(value.seq)}, not where it is stored`);
  const { snapshotSeq, previous, change, progress } = value;
  if (progress !== undefined && !isTripleChanges(progress, tripleCounts)) throw refuse(NOT_TRIPLES);
  if (
    Object.keys(value).length !== (progress === undefined ? 7 : 8) ||
    !Number.isInteger(snapshotSeq) ||
    (snapshotSeq as number) < 0 ||
    !Number.isInteger(previous) ||
    (previous as number) < 0 ||
    (previous as number) >= seq ||
    !isTranscriptChange(change) ||
    Object.keys(change).length !== 4
  )
    throw refuse('not a valid record: a transcript chunk of another shape');
  return value as unknown as TranscriptRecord;
}

const PROGRESS_MARK = ',"progress":{"whole":';

/**
 * A transcript chunk read for its transcript only (a resume folds it past the end of the tracker's chain, or
 * the snapshot chains no triples): a chunk as this version writes it ends with its triples
 * (`,"progress":{"whole":…}}`, the last key, and a quote after a comma is never inside a JSON string), which are
 * then not parsed: with the trace off they are whole every thousand journal positions, most of a long chain's
 * bytes. The rest is checked as `decodeTranscriptChunk` checks a chunk; any other body is decoded whole (and
 * refused as that refuses it). Damage inside the triples part is not seen here: the tracker's chain decodes
 * every chunk it needs whole (chain-folding.ts folds it first), so such triples are never used.
 */
export function decodeTranscriptChunkChange(body: string, runId: string, seq: number): TranscriptRecord {
  const at = body.lastIndexOf(PROGRESS_MARK);
  if (at < 0 || !body.endsWith('}}')) return decodeTranscriptChunk(body, runId, seq);
  try {
    return decodeTranscriptChunk(`${body.slice(0, at)}}`, runId, seq);
  } catch {
    // Named as the whole body's own refusal.
    return decodeTranscriptChunk(body, runId, seq);
  }
}

const TRANSCRIPT_START = '"delta":{"transcript":';
const TRANSCRIPT_END = ',"traceFrom":';

/**
 * The transcript change an event record made (null for other records), and the seq it supersedes. The
 * record is checked for that part only (by hand, not by zod: a resume reads every event before the
 * snapshot, so this is the part of a resume that grows with the run): the snapshot stands for the rest.
 */
export function decodeTranscriptPart(
  body: string,
  runId: string,
  seq: number,
): { transcript: TranscriptChange; supersedes: number | undefined } | null {
  const refuse = (problem: string) => new StoreRecordError({ code: 'corrupt_record', runId, seq, problem });
  const quick = quickTranscriptPart(body, runId, seq);
  if (quick !== undefined) {
    if (!isTranscriptChange(quick)) throw refuse('not a valid record: delta.transcript is not a transcript change');
    return { transcript: quick, supersedes: undefined };
  }
  const value = parsedOrRefused(body, refuse);
  if (!isObject(value)) throw refuse('not a valid record: expected an object');
  const version = value.schemaVersion;
  if (typeof version === 'number' && version > RECORD_SCHEMA_VERSION)
    throw new StoreRecordError({
      code: 'unsupported_record_version',
      runId,
      seq,
      problem: `schemaVersion ${version} is newer than this loopstate reads (${RECORD_SCHEMA_VERSION}); upgrade loopstate to resume it`,
    });
  if (!schemaVersionSchema.safeParse(version).success || !isString(value.kind))
    throw refuse('not a valid record: no known schemaVersion and kind');
  if (value.runId !== runId || value.seq !== seq)
    throw refuse(`it names ${String(value.runId)} seq ${String(value.seq)}, not where it is stored`);
  if (value.kind !== 'event') return null;
  const transcript = isObject(value.delta) ? value.delta.transcript : undefined;
  if (!isTranscriptChange(transcript)) throw refuse('not a valid record: delta.transcript is not a transcript change');
  const { supersedes } = value;
  if (supersedes !== undefined && !(Number.isInteger(supersedes) && (supersedes as number) > 0))
    throw refuse('not a valid record: supersedes is not a positive integer');
  return { transcript, supersedes: supersedes as number | undefined };
}
