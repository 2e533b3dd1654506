import { describe, expect, it } from 'vitest';
import { StoreRecordError } from './durable-errors.js';
import { decodeTranscriptPart } from './chunk-records.js';
import { encodeRecord, RECORD_SCHEMA_VERSION, type EventRecord } from './records.js';

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
