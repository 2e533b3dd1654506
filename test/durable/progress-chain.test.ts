/**
 * Record schema 5: a snapshot no longer holds the no-progress tracker's (call, result) triples, which grew with
 * the task (an O(S²) run); the transcript chunk written with it carries them as a chain (every triple, or those
 * counted since the previous chunk). A snapshot costs the same at step 40 and 400, a resume rebuilds the tracker
 * exactly (the duplicate-observation signal stops the run where the uninterrupted one stops), and a damaged
 * chain is refused naming the record.
 */
import { describe, expect, it } from 'vitest';
import { createLoop, memoryStore, StoreRecordError, type Store } from 'loopstate';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';
import { lookup, lookupModel } from './lookup-loop.js';
import { withoutResumes } from './same-end.js';

/** `distinct` keys, then the same keys again in turn; the call at `hangAt` never answers. */
const model = (distinct: number, hangAt: number | null, onHang?: () => void) =>
  lookupModel((call) => `k${call % distinct}`, hangAt, onHang);

const loopOn = (store: Store, distinct: number, hangAt: number | null, onHang?: () => void) =>
  createLoop({
    model: model(distinct, hangAt, onHang),
    tools: [lookup],
    store,
    clock: virtualClock(),
    // maxUncommittedSteps 1: a commit before every model call (the journal these cases hang or crash on).
    durable: { snapshotEvery: 2, maxUncommittedSteps: 1 },
    limits: { maxSteps: 1_000, maxToolCalls: 1_000, deadlineMs: Infinity },
    noProgress: { repeatedToolCall: 1_000, unchangedState: 1_000, duplicateObservation: 3 },
  });

async function hangAt(store: Store, distinct: number, at: number, start: 'run' | 'resume'): Promise<void> {
  let hung: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => (hung = resolve));
  const loop = loopOn(store, distinct, at, hung);
  void (start === 'run' ? loop.run({ goal: 'go', runId: 'r' }) : loop.resume('r'));
  await reached;
  await freeLease(store, 'r');
}

interface Chunk {
  seq: number;
  previous: number;
  progress?: { whole: boolean; triples: (string | number)[] };
}
const chunksOf = async (store: Store): Promise<Chunk[]> =>
  (await store.readJournal('r', 0, ['transcript'])).map((row) => JSON.parse(row.body) as Chunk);

describe("the tracker's triples as a chain of transcript chunks", () => {
  it('a snapshot is as large at step 400 as at step 40: it holds no triple', async () => {
    const sizes: number[] = [];
    const store = memoryStore();
    const sized: Store = {
      ...store,
      writeSnapshot: (runId, row, lease) => {
        sizes.push(row.body.length);
        return store.writeSnapshot(runId, row, lease);
      },
    };
    await hangAt(sized, 1_000, 400, 'run');
    // A snapshot per step: the 40th and the 400th.
    expect(sizes.length).toBeGreaterThan(390);
    const snapshot = JSON.parse((await store.latestSnapshot('r'))!.body);
    expect(snapshot.session.fields.progress).toMatchObject({ kind: 'chained', schemaVersion: 3 });
    expect(JSON.stringify(snapshot)).not.toContain('triples');
    // Digits of growing counters only (steps, seqs, token counts); 360 more triples would be ~8,000 characters.
    expect(Math.abs(sizes[399]! - sizes[39]!)).toBeLessThan(100);
    // The chain: whole links now and then, changes between them; the writing costs about the changes.
    const chunks = await chunksOf(store);
    const whole = chunks.filter((chunk) => chunk.progress!.whole);
    expect(whole.length).toBeGreaterThan(3);
    expect(whole.length).toBeLessThan(20);
    // Flat, key then count (an object of thousands of keys parses slowly).
    for (const chunk of chunks) expect(Array.isArray(chunk.progress!.triples)).toBe(true);
    const written = chunks.reduce((sum, chunk) => sum + chunk.progress!.triples.length / 2, 0);
    // About the changes and the whole links: the tracker's own (at most the changes again) and those written with a
    // chunk holding the transcript whole (run-journal.ts CONSOLIDATE_AT: about twice the triples more).
    expect(written).toBeLessThan(4 * 400);
  });

  it.each([
    [5, 'an early stop (the chain is short)'],
    [23, 'a few links after a whole one'],
    [32, 'after the repeats began'],
  ])('a run resumed at its %ith model call stops where the uninterrupted one does (%s)', async (at) => {
    const expected = await loopOn(memoryStore(), 30, null).run({ goal: 'go', runId: 'r' });
    expect(expected.stopReason).toBe('no_progress');
    expect(expected.detail).toContain('duplicate_observation');
    expect(expected.steps).toBe(34);
    const store = memoryStore();
    await hangAt(store, 30, at, 'run');
    const head = (await chunksOf(store)).at(-1)!;
    expect(head.progress).toBeDefined();
    const result = await loopOn(store, 30, null).resume('r');
    expect(result.stopReason).toBe(expected.stopReason);
    expect(result.detail).toBe(expected.detail);
    expect(result.steps).toBe(expected.steps);
    expect(result.messages).toEqual(expected.messages);
    expect(withoutResumes(result)).toEqual(withoutResumes(expected));
  });

  it('a resume from a snapshot whose chain holds changes since a whole link, resumed again, still counts every triple', async () => {
    const expected = await loopOn(memoryStore(), 30, null).run({ goal: 'go', runId: 'r' });
    const store = memoryStore();
    await hangAt(store, 30, 26, 'run');
    const chunks = await chunksOf(store);
    // The snapshot's chunk carries changes only: the fold has to go back to a whole link.
    expect(chunks.at(-1)!.progress!.whole).toBe(false);
    await hangAt(store, 30, 32, 'resume');
    const result = await loopOn(store, 30, null).resume('r');
    expect(result.steps).toBe(expected.steps);
    expect(result.detail).toBe(expected.detail);
    expect(withoutResumes(result)).toEqual(withoutResumes(expected));
  });

  async function damaged(edit: (chunk: Record<string, unknown>) => void, which: 'head' | 'whole'): Promise<unknown> {
    const store = memoryStore();
    await hangAt(store, 30, 26, 'run');
    const chunks = await chunksOf(store);
    const target = which === 'head' ? chunks.at(-1)! : chunks.filter((chunk) => chunk.progress!.whole).at(-1)!;
    // The store hands the chunk out damaged (as a torn or overwritten row would be read).
    const reading: Store = {
      ...store,
      readJournal: async (...args) =>
        (await store.readJournal(...args)).map((row) => {
          if (row.seq !== target.seq) return row;
          const record = JSON.parse(row.body) as Record<string, unknown>;
          edit(record);
          return { ...row, body: JSON.stringify(record) };
        }),
    };
    return loopOn(reading, 30, null)
      .resume('r')
      .then(
        () => null,
        (error: unknown) => error,
      );
  }

  it.each<[Record<string, unknown>, string]>([
    [{ abc: 'two' }, 'not a number'],
    [{ abc: 1e300 }, 'beyond 2^53, as the schema refuses it'],
  ])(
    'a chunk whose triples (object form) are not counts is refused, naming the record and the field (%j: %s)',
    async (triples) => {
      const error = await damaged((chunk) => {
        (chunk.progress as { triples: unknown }).triples = triples;
      }, 'head');
      expect(error).toBeInstanceOf(StoreRecordError);
      expect(error).toMatchObject({ code: 'corrupt_record' });
      expect((error as Error).message).toMatch(/progress is not the tracker's triples/);
    },
  );

  it.each([
    [['abc'], 'a key without its count'],
    [['abc', 'two'], 'a count that is not a number'],
    [['abc', -1], 'a negative count'],
    [[3, 1], 'a key that is not text'],
    [['abc', 1e300], 'a count no JSON number holds exactly (beyond 2^53)'],
  ])('flat triples %j are refused, naming the record (%s)', async (triples) => {
    for (const which of ['head', 'whole'] as const) {
      const error = await damaged((chunk) => {
        (chunk.progress as { triples: unknown }).triples = triples;
      }, which);
      expect(error).toBeInstanceOf(StoreRecordError);
      expect(error).toMatchObject({ code: 'corrupt_record' });
      expect((error as Error).message).toMatch(/progress is not the tracker's triples/);
    }
  });

  it('a whole link that names a triple twice is refused, naming the record', async () => {
    const error = await damaged((chunk) => {
      const triples = (chunk.progress as { triples: unknown[] }).triples;
      (chunk.progress as { triples: unknown[] }).triples = [...triples, triples[0], 1];
    }, 'whole');
    expect(error).toBeInstanceOf(StoreRecordError);
    expect(error).toMatchObject({ code: 'corrupt_record' });
    expect((error as Error).message).toMatch(/progress is not the tracker's triples/);
  });

  it('a chain with no whole link (a version 4 chunk where it should be) is refused', async () => {
    const error = await damaged((chunk) => {
      delete chunk.progress;
    }, 'whole');
    expect(error).toBeInstanceOf(StoreRecordError);
    expect((error as Error).message).toMatch(/carries no tracker triples \(progress\)/);
  });
});
