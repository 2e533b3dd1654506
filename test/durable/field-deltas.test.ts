/**
 * Record schema 5: an event carries only the session fields that changed since the previous event (absent:
 * unchanged, `null`: set to null), the snapshot keeps them whole, a resume folds them. A field set back to null
 * (the last reply when a new task starts) is written as null and folded as null, not kept as it was.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type Model, type RunResult, type Store } from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock, type ScriptStep } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';
import { decodeJournalRecord } from '../../src/engine/durable/record-codec.js';

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up',
  input: z.object({ key: z.string() }),
  access: 'read',
  idempotent: true,
  execute: ({ key }) => `value ${key}`,
});

/** Task one answers at once; task two looks things up until maxSteps stops the run (no reply of its own). */
const SCRIPT: ScriptStep[] = [
  reply('the answer to one'),
  toolCall('lookup', { key: 'a' }),
  toolCall('lookup', { key: 'b' }),
  toolCall('lookup', { key: 'c' }),
  toolCall('lookup', { key: 'd' }),
];

/** `world.calls`: the model calls made so far, shared by a run and its resume (the script goes on where it was). */
function loopOn(store: Store, hangAt: number | null, onHang: () => void = () => undefined, world = { calls: 0 }) {
  const model: Model = {
    id: 'scripted',
    generate: async (request) => {
      const index = world.calls++;
      if (index === hangAt) return new Promise<never>(() => onHang());
      return scriptedModel([SCRIPT[index]!]).generate(request);
    },
  };
  return createLoop({
    model,
    tools: [lookup],
    store,
    clock: virtualClock(),
    tasks: [
      { id: 'one', prompt: 'Answer one' },
      { id: 'two', prompt: 'Look up two' },
    ],
    // No snapshot: a resume folds every event's fields from the first.
    // maxUncommittedSteps 1: a commit before every model call (the journal these cases hang or crash on).
    durable: { snapshotEvery: 1_000, maxUncommittedSteps: 1 },
    limits: { maxSteps: 4 },
    noProgress: { repeatedToolCall: 1_000, unchangedState: 1_000 },
  });
}

type Fields = Record<string, unknown>;
const eventFields = async (store: Store): Promise<{ type: string; fields: Fields }[]> =>
  (await store.readJournal('r', 0, ['event'])).map((row) => {
    const record = JSON.parse(row.body) as { event: { type: string }; delta: { fields: Fields } };
    return { type: record.event.type, fields: record.delta.fields };
  });

const comparable = (result: RunResult) => ({
  ...result,
  trace: result.trace.filter((event) => event.type !== 'run-resume'),
});

describe('session fields as deltas', () => {
  it('an event carries the fields that changed only; the first carries them all', async () => {
    const store = memoryStore();
    const result = await loopOn(store, null).run({ goal: 'go', runId: 'r' });
    expect(result.stopReason).toBe('max_steps');
    const events = await eventFields(store);
    expect(Object.keys(events[0]!.fields).sort()).toEqual(
      [
        'fatalError',
        'health',
        'lastEvaluation',
        'lastReply',
        'pendingCalls',
        'plan',
        'progress',
        'restingState',
        'taskIndex',
        'taskOutputs',
        'unpricedModels',
      ].sort(),
    );
    const later = events.slice(1);
    // Never changed in this run: never written again.
    for (const field of ['fatalError', 'plan', 'unpricedModels'])
      expect(later.filter((event) => field in event.fields).map((event) => event.type)).toEqual([]);
    // Tool health moves with tool calls only: a model reply's event leaves it out.
    const replies = later.filter((event) => event.type === 'model.responded');
    expect(replies.length).toBeGreaterThan(2);
    expect(replies.filter((event) => 'health' in event.fields)).toEqual([]);
    // The tracker's part without what did not change: a reply counts no triple, and its round's results were new.
    for (const { fields } of replies) {
      expect(fields.progress).toMatchObject({ kind: 'changes', stateDigest: expect.any(String) });
      expect(Object.keys(fields.progress as object)).not.toContain('triples');
      expect(Object.keys(fields.progress as object)).not.toContain('failures');
    }
    // The task index is written where it changes (task two starts), not on every event after.
    expect(later.filter((event) => 'taskIndex' in event.fields).map((event) => event.fields.taskIndex)).toEqual([1]);
  });

  it('a reply set back to null by a new task is written as null, and a resume folds it as null', async () => {
    const expected = await loopOn(memoryStore(), null).run({ goal: 'go', runId: 'r' });
    // Stopped in task two before it replied: its raw output is task two's last reply, none (not task one's).
    expect(expected.rawOutput).toBeNull();
    const store = memoryStore();
    let hung: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (hung = resolve));
    const world = { calls: 0 };
    void loopOn(store, 3, hung, world).run({ goal: 'go', runId: 'r' });
    await reached;
    await freeLease(store, 'r');
    // The hung call is asked again.
    world.calls -= 1;
    const events = await eventFields(store);
    const withReply = events.filter((event) => 'lastReply' in event.fields).map((event) => event.fields.lastReply);
    expect(withReply).toEqual([null, 'the answer to one', null]);
    const result = await loopOn(store, null, undefined, world).resume('r');
    expect(result.rawOutput).toBeNull();
    expect(comparable(result)).toEqual(comparable(expected));
  });

  it('an event of version 4 or before without every field is refused, naming the field', () => {
    const body = (schemaVersion: number) =>
      JSON.stringify({
        schemaVersion,
        kind: 'event',
        runId: 'r',
        seq: 1,
        event: { type: 'x', at: 0 },
        delta: {
          transcript: { replace: false, from: 0, messages: [], taskMessageIndex: null },
          traceFrom: 0,
          trace: [],
          warningsFrom: 0,
          warnings: [],
          fields: { progress: { kind: 'whole', snapshot: null }, taskIndex: 0 },
        },
      });
    expect(() => decodeJournalRecord(body(4), 'r', 1)).toThrow(/delta\.fields\.pendingCalls: missing/);
    expect(decodeJournalRecord(body(5), 'r', 1)).toMatchObject({ delta: { fields: { taskIndex: 0 } } });
    const changes = (schemaVersion: number) =>
      body(schemaVersion).replace('{"kind":"whole","snapshot":null}', '{"kind":"changes","restarted":false}');
    expect(() => decodeJournalRecord(changes(4), 'r', 1)).toThrow(/delta\.fields\.progress\.stateDigest: missing/);
    expect(decodeJournalRecord(changes(5), 'r', 1)).toMatchObject({
      delta: { fields: { progress: { kind: 'changes' } } },
    });
  });
});
