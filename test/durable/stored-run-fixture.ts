/**
 * A run as an older loopstate stored it, kept as a fixture file: its run row, latest snapshot and journal rows.
 * The compatibility tests (records-v4, records-v5) load one into a memory store and resume it with this version.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { memoryStore, type Store, type StoreRow } from 'loopstate';

export interface StoredRunFixture {
  run: string;
  snapshot: StoreRow;
  journal: StoreRow[];
}

/** Writes what `store` holds of `runId` to `path` (run by the older version, whose records the fixture keeps). */
export async function saveRunFixture(store: Store, runId: string, path: string): Promise<void> {
  const fixture = {
    run: (await store.readRun(runId))!.body,
    snapshot: await store.latestSnapshot(runId),
    journal: await store.readJournal(runId, 0),
  };
  writeFileSync(path, `${JSON.stringify(fixture, null, 1)}\n`);
}

export const readRunFixture = (path: string): StoredRunFixture =>
  JSON.parse(readFileSync(path, 'utf8')) as StoredRunFixture;

/** A memory store holding the fixture's run as its version wrote it, its lease free. */
export async function loadRunFixture(path: string, runId: string): Promise<Store> {
  const { run, snapshot, journal } = readRunFixture(path);
  const store = memoryStore();
  const lease = { owner: 'fixture-loader', until: Date.now() + 60_000 };
  await store.createRun(runId, run, lease);
  await store.append(runId, journal, lease);
  await store.writeSnapshot(runId, snapshot, lease);
  await store.releaseLease(runId, lease.owner);
  return store;
}
