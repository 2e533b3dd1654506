/**
 * A run journalled by record schema 4 (the no-progress tracker whole in every snapshot, the session's small
 * fields whole in every event), kept as written (never regenerated): this loopstate still reads it, resumes it
 * exactly (the duplicate-observation signal counts the triples seen before the snapshot) and goes on writing
 * its own records after it.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createLoop, memoryStore, type Store } from 'loopstate';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';
import { loadRunFixture, readRunFixture, saveRunFixture } from './stored-run-fixture.js';
import { lookup, lookupModel } from './lookup-loop.js';
import { RECORD_SCHEMA_VERSION } from '../../src/engine/durable/records.js';
import { expectSameEnd, withoutResumes } from './same-end.js';

const fixturePath = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'records-v4.json');

/** Lookups of three keys in turn (each triple seen again every third step); the call at `hangAt` never answers. */
const model = (hangAt: number | null, onHang?: () => void) => lookupModel((call) => `k${call % 3}`, hangAt, onHang);

const loopOn = (store: Store, hangAt: number | null, onHang?: () => void) =>
  createLoop({
    model: model(hangAt, onHang),
    tools: [lookup],
    store,
    clock: virtualClock(),
    durable: { snapshotEvery: 2 },
    limits: { maxSteps: 40, maxToolCalls: 40 },
    noProgress: { repeatedToolCall: 1_000, unchangedState: 1_000, duplicateObservation: 8 },
  });

describe('a run journalled by record schema 4', () => {
  // Written by loopstate at 76fc999 (record schema 4): run with this file's loop, hung at its 9th model call.
  it.runIf(process.env.LOOPSTATE_WRITE_V4_FIXTURE === '1')('(writes the fixture)', async () => {
    expect(RECORD_SCHEMA_VERSION).toBe(4);
    const store = memoryStore();
    let hung: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (hung = resolve));
    void loopOn(store, 8, hung).run({ goal: 'go', runId: 'fixture-v4' });
    await reached;
    await freeLease(store, 'fixture-v4');
    await saveRunFixture(store, 'fixture-v4', fixturePath);
  });

  const fixture = () => readRunFixture(fixturePath);
  const loadFixture = () => loadRunFixture(fixturePath, 'fixture-v4');

  it('resumes exactly: the run stops where the uninterrupted one does, with its messages and trace', async () => {
    const expected = await loopOn(memoryStore(), null).run({ goal: 'go', runId: 'fixture-v4' });
    expect(expected.stopReason).toBe('no_progress');
    expect(expected.detail).toContain('duplicate_observation');
    expect(expected.steps).toBe(12);
    const store = await loadFixture();
    const snapshot = JSON.parse((await store.latestSnapshot('fixture-v4'))!.body);
    expect(snapshot).toMatchObject({ schemaVersion: 4 });
    // The tracker whole, with triples seen more than once: the signal depends on them.
    expect(Math.max(...(Object.values(snapshot.session.fields.progress.snapshot.triples) as number[]))).toBeGreaterThan(
      1,
    );
    const result = await loopOn(store, null).resume('fixture-v4');
    expectSameEnd(result, expected);
  });

  it('a second resume after records of this version follow the version 4 ones resumes exactly too', async () => {
    const expected = await loopOn(memoryStore(), null).run({ goal: 'go', runId: 'fixture-v4' });
    const store = await loadFixture();
    const lastV4 = Math.max(...fixture().journal.map((row) => row.seq));
    let hung: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (hung = resolve));
    void loopOn(store, 10, hung).resume('fixture-v4');
    await reached;
    await freeLease(store, 'fixture-v4');
    const newer = (await store.readJournal('fixture-v4', lastV4)).map((row) => JSON.parse(row.body));
    expect(newer.length).toBeGreaterThan(0);
    expect(newer.every((record) => record.schemaVersion === RECORD_SCHEMA_VERSION)).toBe(true);
    expect(JSON.parse((await store.latestSnapshot('fixture-v4'))!.body).seq).toBeGreaterThan(lastV4);
    const result = await loopOn(store, null).resume('fixture-v4');
    expect(result.stopReason).toBe(expected.stopReason);
    expect(result.detail).toBe(expected.detail);
    expect(result.steps).toBe(expected.steps);
    expect(result.messages).toEqual(expected.messages);
    expect(withoutResumes(result)).toEqual(withoutResumes(expected));
  });
});
