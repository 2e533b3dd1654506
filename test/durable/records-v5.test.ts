/**
 * A run journalled by loopstate at 2faa308 (record schema 5, before the journal held the transcript whole again
 * now and then): one transcript chunk per snapshot, only the first holding the transcript whole, so a resume folds
 * every chunk back to it. Kept as written (never regenerated): this loopstate still reads it, resumes it exactly
 * (the duplicate-observation stop counts the triples seen before the snapshot), and its first chunk after the
 * resume holds the transcript whole, so a later resume folds the chain from there.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createLoop, memoryStore, type ModelRequest, type Store } from 'loopstate';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';
import { loadRunFixture, readRunFixture, saveRunFixture } from './stored-run-fixture.js';
import { lookup, lookupModel } from './lookup-loop.js';
import { expectSameEnd, withoutResumes } from './same-end.js';

const fixturePath = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'records-v5.json');

/**
 * Lookups of sixteen keys in turn; the call at `hangAt` never answers. The fixture is this loop run by 2faa308's
 * build (memoryStore, runId `fixture-v5`), hung at its 24th model call, its lease freed, the store's rows saved.
 */
const loopOn = (store: Store, hangAt: number | null, onHang?: () => void, requests?: ModelRequest[]) =>
  createLoop({
    model: lookupModel((call) => `k${call % 16}`, hangAt, onHang, requests),
    tools: [lookup],
    store,
    clock: virtualClock(),
    durable: { snapshotEvery: 2 },
    limits: { maxSteps: 60, maxToolCalls: 60 },
    noProgress: { repeatedToolCall: 1_000, unchangedState: 1_000, duplicateObservation: 9 },
  });

interface Chunk {
  schemaVersion: number;
  seq: number;
  previous: number;
  change: { replace: boolean; messages: unknown[] };
  progress: { whole: boolean };
}

const fixture = () => readRunFixture(fixturePath);
const loadFixture = () => loadRunFixture(fixturePath, 'fixture-v5');

const chunksOf = async (store: Store): Promise<Chunk[]> =>
  (await store.readJournal('fixture-v5', 0, ['transcript'])).map((row) => JSON.parse(row.body) as Chunk);

describe('a run journalled by loopstate at 2faa308 (a chain of transcript chunks, none whole after the first)', () => {
  // Written by loopstate at 2faa308 (this file and stored-run-fixture.ts copied into that checkout): run with this file's loop, hung at its
  // 24th model call.
  it.runIf(process.env.LOOPSTATE_WRITE_V5_FIXTURE === '1')('(writes the fixture)', async () => {
    const store = memoryStore();
    let hung: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (hung = resolve));
    void loopOn(store, 24, hung).run({ goal: 'go', runId: 'fixture-v5' });
    await reached;
    await freeLease(store, 'fixture-v5');
    await saveRunFixture(store, 'fixture-v5', fixturePath);
  });

  it('is the chain a resume used to fold back to its start', async () => {
    const chunks = await chunksOf(await loadFixture());
    expect(chunks.length).toBeGreaterThan(20);
    expect(chunks.every((chunk) => chunk.schemaVersion === 5)).toBe(true);
    expect(chunks.filter((chunk) => chunk.change.replace).map((chunk) => chunk.previous)).toEqual([0]);
  });

  it('resumes exactly: the next request and the stop are the uninterrupted run’s', async () => {
    const expectedRequests: ModelRequest[] = [];
    const expected = await loopOn(memoryStore(), null, undefined, expectedRequests).run({
      goal: 'go',
      runId: 'fixture-v5',
    });
    expect(expected.stopReason).toBe('no_progress');
    expect(expected.detail).toContain('duplicate_observation');
    expect(expected.steps).toBe(26);
    const requests: ModelRequest[] = [];
    const result = await loopOn(await loadFixture(), null, undefined, requests).resume('fixture-v5');
    expect(requests[0]!.messages).toEqual(expectedRequests[24]!.messages);
    expectSameEnd(result, expected);
  });

  it('the first chunk after the resume holds the transcript whole; a second resume folds from it, exactly', async () => {
    const expected = await loopOn(memoryStore(), null).run({ goal: 'go', runId: 'fixture-v5' });
    const store = await loadFixture();
    const lastOld = Math.max(...fixture().journal.map((row) => row.seq));
    let hung: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (hung = resolve));
    void loopOn(store, 25, hung).resume('fixture-v5');
    await reached;
    await freeLease(store, 'fixture-v5');
    const newer = (await chunksOf(store)).filter((chunk) => chunk.seq > lastOld);
    expect(newer.length).toBeGreaterThan(0);
    // Consolidated at once: the chunks since the old chain's only whole one outweigh it many times.
    expect(newer[0]).toMatchObject({ change: { replace: true }, progress: { whole: true } });
    const snapshot = JSON.parse((await store.latestSnapshot('fixture-v5'))!.body);
    expect(snapshot.session.transcriptChunk).toBe(newer.at(-1)!.seq);
    // The second resume reads no chunk of the old chain's body: it stops at the whole one.
    const parsed: number[] = [];
    const watching: Store = {
      ...store,
      readJournal: async (...args) =>
        (await store.readJournal(...args)).map((row) =>
          row.kind !== 'transcript'
            ? row
            : {
                ...row,
                get body() {
                  parsed.push(row.seq);
                  return row.body;
                },
              },
        ),
    };
    const result = await loopOn(watching, null).resume('fixture-v5');
    expect(parsed.length).toBeGreaterThan(0);
    expect(parsed.every((seq) => seq >= newer[0]!.seq)).toBe(true);
    expect(result.stopReason).toBe(expected.stopReason);
    expect(result.detail).toBe(expected.detail);
    expect(result.steps).toBe(expected.steps);
    expect(result.messages).toEqual(expected.messages);
    expect(withoutResumes(result)).toEqual(withoutResumes(expected));
  });
});
