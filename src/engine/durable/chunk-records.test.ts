import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TraceEvent } from '../trace/trace-event.js';
import { StoreRecordError } from './durable-errors.js';
import {
  decodeTraceChunk,
  decodeTranscriptChunk,
  decodeTranscriptChunkChange,
  decodeTranscriptPart,
  quickFirstTraceEvent,
} from './chunk-records.js';
import { RECORD_SCHEMA_VERSION, type EventRecord, type TraceRecord, type TranscriptRecord } from './records.js';
import { decodeJournalRecord, encodeRecord } from './record-codec.js';

const fields: EventRecord['delta']['fields'] = {
  taskIndex: 0,
  pendingCalls: [],
  lastReply: null,
  lastEvaluation: null,
  fatalError: null,
  restingState: 'RUNNING.acting',
  taskOutputs: null,
  progress: { kind: 'whole', snapshot: {} },
  plan: null,
  health: null,
  unpricedModels: [],
};

function event(seq: number, extra: Partial<EventRecord> = {}): EventRecord {
  return {
    schemaVersion: RECORD_SCHEMA_VERSION,
    kind: 'event',
    runId: 'r',
    seq,
    event: { type: 'tools.completed', at: 5 },
    delta: {
      transcript: {
        replace: false,
        from: 2,
        messages: [
          {
            role: 'assistant',
            content: null,
            toolCalls: [{ id: 'c1', name: 'look', arguments: '{"a":",\\"traceFrom\\":"}' }],
          },
          { role: 'tool', toolCallId: 'c1', content: 'a "quoted" ,"traceFrom": text' },
        ],
        taskMessageIndex: 0,
      },
      traceFrom: 0,
      trace: [],
      warningsFrom: 0,
      warnings: [],
      fields,
    },
    ...extra,
  };
}

describe('decodeTranscriptPart', () => {
  it('reads the transcript change of an event as written, markers inside strings and task outputs notwithstanding', () => {
    const record = event(7);
    expect(decodeTranscriptPart(encodeRecord(record), 'r', 7)).toEqual({
      transcript: record.delta.transcript,
      supersedes: undefined,
    });
  });

  it('reads an event whose task output holds the markers the quick read looks for whole, to the same result', () => {
    const record = event(8);
    record.delta.fields = { ...fields, taskOutputs: { main: { delta: { transcript: 'mine' }, traceFrom: 1 } } };
    expect(encodeRecord(record)).toContain('"delta":{"transcript":"mine"');
    expect(decodeTranscriptPart(encodeRecord(record), 'r', 8)?.transcript).toEqual(record.delta.transcript);
  });

  it('reads a superseding event whole, with the seq it supersedes', () => {
    const record = event(9, { supersedes: 4 });
    expect(decodeTranscriptPart(encodeRecord(record), 'r', 9)).toEqual({
      transcript: record.delta.transcript,
      supersedes: 4,
    });
  });

  it('gives null for records that are not events, and reads an older version whole', () => {
    const intent = { schemaVersion: 2, kind: 'intent', runId: 'r', seq: 3, key: 'k', tool: 't', args: null };
    expect(decodeTranscriptPart(JSON.stringify(intent), 'r', 3)).toBeNull();
    const old = { ...event(3), schemaVersion: 2 };
    expect(decodeTranscriptPart(JSON.stringify(old), 'r', 3)?.transcript).toEqual(old.delta.transcript);
  });

  it.each([
    ['a message of an unknown role', (body: string) => body.replace('"role":"tool"', '"role":"robot"')],
    ['a message with an extra key', (body: string) => body.replace('"toolCallId":"c1",', '"toolCallId":"c1","x":1,')],
    ['a transcript that starts at a negative message', (body: string) => body.replace('"from":2', '"from":-1')],
    ['truncated JSON', (body: string) => body.slice(0, 120)],
    ['a record moved to another seq', (body: string) => body.replace('"seq":7', '"seq":8')],
  ])('refuses %s as a corrupt record', (_name, damage) => {
    const body = damage(encodeRecord(event(7)));
    const error = (() => {
      try {
        decodeTranscriptPart(body, 'r', 7);
      } catch (thrown) {
        return thrown;
      }
      return null;
    })();
    expect(error).toBeInstanceOf(StoreRecordError);
    expect(error).toMatchObject({ code: 'corrupt_record', runId: 'r', seq: 7 });
  });

  it('refuses a record of a newer schema version', () => {
    const body = encodeRecord(event(7)).replace(`"schemaVersion":${RECORD_SCHEMA_VERSION}`, '"schemaVersion":99');
    expect(() => decodeTranscriptPart(body, 'r', 7)).toThrow(/schemaVersion 99 is newer/);
  });
});

/** A trace chunk as the run journal writes it (its keys in that order). */
function traceChunk(
  seq: number,
  events: unknown[],
  extra: { from?: number; final?: true; runId?: string } = {},
): string {
  const record = {
    schemaVersion: RECORD_SCHEMA_VERSION,
    kind: 'trace',
    runId: extra.runId ?? 'r',
    seq,
    snapshotSeq: seq - 1,
    from: extra.from ?? 0,
    events,
    ...(extra.final ? { final: true } : {}),
  } as unknown as TraceRecord;
  return encodeRecord(record);
}

describe('quickFirstTraceEvent', () => {
  const start = { type: 'run-start', runId: 'r', at: 1, schemaVersion: 2, goal: 'a {"brace": [and] "quote" \\ }' };

  it('reads the first event of a chunk that starts the trace, as decoding it whole does', () => {
    const body = traceChunk(9, [start, { type: 'machine-event', runId: 'r', at: 2, event: { type: '}' } }]);
    expect(quickFirstTraceEvent(body, 'r', 9)).toEqual({
      snapshotSeq: 8,
      event: decodeTraceChunk(body, 'r', 9).events[0],
    });
  });

  it('leaves every other chunk to the whole decode: a later or final chunk, another run or seq, a bad first event', () => {
    expect(quickFirstTraceEvent(traceChunk(9, [start], { from: 3 }), 'r', 9)).toBeUndefined();
    expect(quickFirstTraceEvent(traceChunk(9, [start], { final: true }), 'r', 9)).toBeUndefined();
    expect(quickFirstTraceEvent(traceChunk(9, [start], { runId: 'other' }), 'r', 9)).toBeUndefined();
    expect(quickFirstTraceEvent(traceChunk(9, [start]), 'r', 10)).toBeUndefined();
    const noTime = traceChunk(9, [{ type: 'run-start', runId: 'r' }]);
    expect(quickFirstTraceEvent(noTime, 'r', 9)).toBeUndefined();
    expect(() => decodeTraceChunk(noTime, 'r', 9)).toThrow(StoreRecordError);
    expect(quickFirstTraceEvent(traceChunk(9, [start]).slice(0, 120), 'r', 9)).toBeUndefined();
    expect(quickFirstTraceEvent(traceChunk(9, []), 'r', 9)).toBeUndefined();
  });

  it('leaves to the whole decode a first event that a stray quote and brace close early (damaged, still JSON)', () => {
    const whole = traceChunk(9, [{ type: 'run-start', runId: 'r', at: 1, x: '[', y: 'kept' }, start]);
    // `"x":"["` then `},"\\"",{` in place of `,"y":"kept"}`: the first object now ends after x, followed by a string.
    const damaged = whole.replace(',"y":"kept"}', '},"\\"",{"z":1}');
    expect(JSON.parse(damaged.slice(damaged.indexOf('"events":[') + 10, damaged.indexOf('},') + 1))).toMatchObject({
      x: '[',
    });
    expect(quickFirstTraceEvent(damaged, 'r', 9)).toBeUndefined();
    expect(() => decodeTraceChunk(damaged, 'r', 9)).toThrow(StoreRecordError);
  });

  it('finds where the first event ends whatever its strings and nesting hold', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string(), fc.jsonValue(), (payload, text, next) => {
        const first = { type: text, runId: 'r', at: 3, payload } as unknown as TraceEvent;
        const body = traceChunk(5, [first, { type: 'x', runId: 'r', at: 4, next }]);
        expect(quickFirstTraceEvent(body, 'r', 5)?.event).toEqual(decodeTraceChunk(body, 'r', 5).events[0]);
      }),
      { numRuns: 500 },
    );
  });
});

describe('decodeTranscriptChunkChange', () => {
  const chunk: TranscriptRecord = {
    schemaVersion: RECORD_SCHEMA_VERSION,
    kind: 'transcript',
    runId: 'r',
    seq: 9,
    snapshotSeq: 7,
    previous: 4,
    change: {
      replace: false,
      from: 3,
      messages: [
        // The mark the quick read cuts at, inside strings (escaped there: never the chunk's own).
        { role: 'tool', toolCallId: 'c1', content: 'text ,"progress":{"whole":true} }}' },
        { role: 'assistant', content: null, toolCalls: [{ id: 'c2', name: 'look', arguments: '{"progress":1}' }] },
      ],
      taskMessageIndex: 0,
    },
    progress: { whole: true, triples: { a1b2: 3 } },
  };

  it('reads a chunk as written for its transcript only: the same change, its triples not parsed', () => {
    const body = encodeRecord(chunk);
    const { progress, ...rest } = decodeTranscriptChunk(body, 'r', 9);
    expect(progress).toEqual(chunk.progress);
    expect(decodeTranscriptChunkChange(body, 'r', 9)).toEqual(rest);
    // Triples it does not read are not checked: a resume folds them only on the tracker's chain.
    expect(decodeTranscriptChunkChange(body.replace('"a1b2":3', '"a1b2":"many"'), 'r', 9)).toEqual(rest);
  });

  it("leaves the triples' counts to a caller that folds them (tripleCounts: false), their shape still checked", () => {
    const body = encodeRecord(chunk);
    const badCount = body.replace('"a1b2":3', '"a1b2":"many"');
    expect(() => decodeTranscriptChunk(badCount, 'r', 9)).toThrow(/progress is not the tracker's triples/);
    // One pass over a whole link's thousands of triples, not two: resume-plan's fold checks each count (and refuses).
    expect(decodeTranscriptChunk(badCount, 'r', 9, false).progress).toEqual({ whole: true, triples: { a1b2: 'many' } });
    for (const badShape of [
      body.replace('"whole":true', '"whole":"yes"'),
      body.replace('"triples":{"a1b2":3}', '"triples":[3]'),
    ])
      expect(() => decodeTranscriptChunk(badShape, 'r', 9, false)).toThrow(/progress is not the tracker's triples/);
  });

  it('reads the flat triples this version writes ([key, count, …]) as zod does, and refuses damaged ones', () => {
    const flat = { ...chunk, progress: { whole: true, triples: ['a1b2', 3, 'c3d4', 0] } } as TranscriptRecord;
    const body = encodeRecord(flat);
    expect(decodeTranscriptChunk(body, 'r', 9)).toEqual(flat);
    expect(decodeJournalRecord(body, 'r', 9)).toEqual(flat);
    const { progress: _progress, ...rest } = flat;
    expect(decodeTranscriptChunkChange(body, 'r', 9)).toEqual(rest);
    const damaged = (triples: unknown[]) => encodeRecord({ ...flat, progress: { whole: true, triples } } as never);
    for (const bad of [['a1b2'], ['a1b2', 'many'], [7, 3], ['a1b2', -1], ['a1b2', 1.5], ['a1b2', 3, 'c3d4']])
      expect(() => decodeTranscriptChunk(damaged(bad), 'r', 9)).toThrow(/progress is not the tracker's triples/);
    // tripleCounts: false checks the length alone; the fold checks each key and count.
    expect(() => decodeTranscriptChunk(damaged(['a1b2']), 'r', 9, false)).toThrow(/progress is not the tracker's/);
    expect(decodeTranscriptChunk(damaged(['a1b2', 'many']), 'r', 9, false).progress?.triples).toEqual(['a1b2', 'many']);
  });

  it('reads a chunk without triples (version 4) whole, and refuses a damaged one as the whole decode does', () => {
    const { progress: _progress, ...v4 } = chunk;
    expect(decodeTranscriptChunkChange(encodeRecord(v4), 'r', 9)).toEqual(v4);
    const body = encodeRecord(chunk);
    for (const damaged of [
      body.replace('"from":3', '"from":"3"'),
      body.replace('"role":"tool"', '"role":"robot"'),
      body.slice(0, body.length - 3),
      body.replace('"seq":9', '"seq":8'),
    ]) {
      const refusal = (decode: typeof decodeTranscriptChunk) => {
        try {
          decode(damaged, 'r', 9);
          return null;
        } catch (error) {
          return error;
        }
      };
      const whole = refusal(decodeTranscriptChunk);
      expect(whole).toBeInstanceOf(StoreRecordError);
      expect(refusal(decodeTranscriptChunkChange)).toEqual(whole);
      expect((refusal(decodeTranscriptChunkChange) as StoreRecordError).message).toBe((whole as Error).message);
    }
  });
});
