/**
 * The in-memory trace lives in trace chunks written with each snapshot, not in the snapshot. A process that
 * dies between a chunk and its snapshot leaves a chunk no snapshot stands on: the resumed run writes the
 * next chunk over it, and a later resume still puts back the uninterrupted run's trace exactly. A stop's
 * recorded result holds no trace either: a final chunk is written with the stop, and the result read back
 * later has the very trace the run returned.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type RunResult, type Store } from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';
import { lookup, lookupModel } from './lookup-loop.js';
import { withoutResumes } from './same-end.js';

/** Six lookups, then an answer; the step at `hangAt` never answers. */
const model = (hangAt: number | null, onHang?: () => void) =>
  lookupModel((call) => (call >= 6 ? null : `k${call}`), hangAt, onHang);

const loopOn = (store: Store, hangAt: number | null, onHang?: () => void) =>
  createLoop({
    model: model(hangAt, onHang),
    tools: [lookup],
    store,
    clock: virtualClock(),
    // maxUncommittedSteps 1: a commit before every model call (the journal these cases hang or crash on).
    durable: { snapshotEvery: 2, maxUncommittedSteps: 1 },
  });

/** What `read` throws (a test fails when it throws nothing). */
function refusal(read: () => unknown): unknown {
  try {
    read();
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal, got none');
}

describe('trace chunks', () => {
  it('a chunk whose snapshot was never written is written over, and the trace comes back whole', async () => {
    const expected = await loopOn(memoryStore(), null).run({ goal: 'go', runId: 'r' });
    const store = memoryStore();
    // The third snapshot is never written (the process "dies" just after its chunk was committed).
    let snapshots = 0;
    const dying: Store = {
      ...store,
      writeSnapshot: (...args) =>
        ++snapshots === 3 ? Promise.reject(new Error('killed')) : store.writeSnapshot(...args),
    };
    await expect(loopOn(dying, null).run({ goal: 'go', runId: 'r' })).rejects.toThrow('killed');
    const rows = await store.readJournal('r', 0);
    const chunks = rows
      .filter((row) => row.kind === 'trace')
      .map((row) => JSON.parse(row.body) as { snapshotSeq: number; from: number });
    const latest = await store.latestSnapshot('r');
    expect(chunks.at(-1)!.snapshotSeq).toBeGreaterThan(latest!.seq);
    await freeLease(store, 'r');
    // Resumed, and stopped again at a later step by a hang, then resumed once more to the end.
    let hung: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (hung = resolve));
    void loopOn(store, 5, hung).resume('r');
    await reached;
    await freeLease(store, 'r');
    const overlapping = (await store.readJournal('r', 0))
      .filter((row) => row.kind === 'trace')
      .map((row) => JSON.parse(row.body) as { from: number });
    expect(overlapping.some((chunk, index) => index > 0 && chunk.from < overlapping[index - 1]!.from + 1)).toBe(true);
    const result = await loopOn(store, null).resume('r');
    expect(result.stopReason).toBe('completed');
    expect(result.messages).toEqual(expected.messages);
    expect(withoutResumes(result)).toEqual(withoutResumes(expected));
  });

  it('refuses a chunk that leaves a gap in the trace', async () => {
    const store = memoryStore();
    let hung: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (hung = resolve));
    void loopOn(store, 5, hung).run({ goal: 'go', runId: 'r' });
    await reached;
    await freeLease(store, 'r');
    const gap: Store = {
      ...store,
      readJournal: async (runId, afterSeq) =>
        (await store.readJournal(runId, afterSeq)).map((row) =>
          row.kind === 'trace'
            ? { ...row, body: row.body.replace(/"from":(\d+)/, (_all, from) => `"from":${Number(from) + 1}`) }
            : row,
        ),
    };
    // The trace before the snapshot is read when `result.trace` is (not to rebuild the run): the damage is
    // found there, named, and the resumed run's work is already committed.
    const result = await loopOn(gap, null).resume('r');
    expect(result.stopReason).toBe('completed');
    expect(refusal(() => result.trace)).toMatchObject({ code: 'corrupt_record', seq: expect.any(Number) });
    expect(refusal(() => JSON.stringify(result))).toMatchObject({ code: 'corrupt_record' });
    expect((await store.readRun('r'))?.body).toContain('"state":"finished"');
    // Read back from the store, the recorded result is refused the same way.
    await expect(loopOn(gap, null).resume('r')).rejects.toMatchObject({ code: 'corrupt_record' });
  });

  it("a resume leaves the trace before its snapshot in the journal until `result.trace` is read, then it is the uninterrupted run's", async () => {
    const expected = await loopOn(memoryStore(), null).run({ goal: 'go', runId: 'r' });
    const store = memoryStore();
    let hung: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (hung = resolve));
    void loopOn(store, 5, hung).run({ goal: 'go', runId: 'r' });
    await reached;
    await freeLease(store, 'r');
    // Counts how many trace chunk bodies the resume reads (a store's row may inflate its body when read).
    const read = new Set<number>();
    let chunks = 0;
    const counting: Store = {
      ...store,
      readJournal: async (...args) =>
        (await store.readJournal(...args)).map((row) => {
          if (row.kind !== 'trace') return row;
          chunks += 1;
          return {
            seq: row.seq,
            kind: row.kind,
            get body() {
              read.add(row.seq);
              return row.body;
            },
          };
        }),
    };
    const result = await loopOn(counting, null).resume('r');
    expect(result.stopReason).toBe('completed');
    expect(chunks).toBeGreaterThan(2);
    // The first chunk only (the rebuild asks which trace schema the run began with).
    expect(read.size).toBe(1);
    const json = JSON.parse(JSON.stringify(result)) as RunResult;
    expect(read.size).toBeGreaterThan(2);
    expect(withoutResumes(json)).toEqual(withoutResumes(expected));
    // Read once: the same array every time, and a plain property like any other result's.
    expect(result.trace).toBe(result.trace);
    expect(Object.getOwnPropertyDescriptor(result, 'trace')).toMatchObject({ writable: true, enumerable: true });
    expect(withoutResumes({ ...result })).toEqual(withoutResumes(expected));
    expect(withoutResumes(structuredClone(result))).toEqual(withoutResumes(expected));
    // The stop recorded the same trace: read back, the result is the one returned.
    expect(await loopOn(store, null).resume('r')).toEqual(result);
  });

  it("a stop's recorded result keeps its trace in the journal, and reads back as the run returned it", async () => {
    const store = memoryStore();
    const loop = loopOn(store, null);
    const live = await loop.run({ goal: 'go', runId: 'r' });
    const row = await store.readRun('r');
    const record = JSON.parse(row!.body) as { result: RunResult; resultTrace?: { seq: number; length: number } };
    expect(record.result.trace).toEqual([]);
    expect(record.resultTrace?.length).toBe(live.trace.length);
    expect(live.trace.length).toBeGreaterThan(0);
    // Read back by a finished run's resume and by cancel: the same result, trace included.
    expect(await loop.resume('r')).toEqual(live);
    expect(await loopOn(store, null).cancel('r')).toEqual(live);
  });

  it('a run stopped for approval, then continued: each stop reads back with its own trace', async () => {
    const store = memoryStore();
    const refund = defineTool({
      name: 'refund',
      description: 'Refund an order.',
      input: z.object({ order_id: z.string() }),
      access: 'destructive',
      execute: ({ order_id }) => ({ refunded: order_id }),
    });
    const loop = createLoop({
      model: scriptedModel([toolCall('lookup', { key: 'a' }), toolCall('refund', { order_id: 'O-7' }), reply('Done.')]),
      tools: [lookup, refund],
      store,
      clock: virtualClock(),
      durable: { snapshotEvery: 1, maxUncommittedSteps: 1 },
    });
    const stopped = await loop.run({ goal: 'go', runId: 'w' });
    expect(stopped.status).toBe('needs_human');
    expect(await loop.resume('w')).toEqual(stopped);
    const pending = stopped.pendingApprovals[0]!;
    const finished = await loop.resume('w', {
      approvals: { [pending.callId]: { approve: true, argumentsHash: pending.argumentsHash } },
    });
    expect(finished.stopReason).toBe('completed');
    expect(finished.trace.length).toBeGreaterThan(stopped.trace.length);
    expect(await loop.resume('w')).toEqual(finished);
  });

  it('refuses a result whose trace chunks do not add up to the recorded length', async () => {
    const store = memoryStore();
    await loopOn(store, null).run({ goal: 'go', runId: 'r' });
    const short: Store = {
      ...store,
      readJournal: async (runId, afterSeq) =>
        (await store.readJournal(runId, afterSeq)).filter(
          (row) => !(row.kind === 'trace' && row.body.includes('"final":true')),
        ),
    };
    await expect(loopOn(short, null).resume('r')).rejects.toMatchObject({ code: 'corrupt_record' });
  });
});
