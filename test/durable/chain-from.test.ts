/**
 * A snapshot names the first chunk its chains reach (`session.chainFrom`: the transcript's last whole chunk or the
 * triples' last whole link, the earlier): a resume reads the transcript chunk rows from there, not from seq 0. On a
 * real SQLite file: the rows read, the resumed run's next requests and whole trace against the uninterrupted run's,
 * a snapshot whose `chainFrom` lies refused naming it, and a journal written by loopstate at 052bb80 (no
 * `chainFrom`) resumed exactly.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type BetterSqlite3 from 'better-sqlite3';
import { z } from 'zod';
import { afterAll, describe, expect, it } from 'vitest';
import * as current from 'loopstate';
import { memoryStore, StoreRecordError, type ModelRequest, type Store, type StoreRow } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';
import { lookupModel } from './lookup-loop.js';
import { withoutResumes } from './same-end.js';

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-chain-from-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const fixturePath = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'records-chain-from-052bb80.json');

const STEPS = 60;
const HANG = 56;
/** The fixture's run (kept small on disk): still long enough for a chunk written whole again. */
const OLD_STEPS = 24;
const OLD_HANG = 21;

type Library = Pick<typeof current, 'createLoop' | 'defineTool' | 'memoryStore'>;

/** The lookup loop of lookup-loop.ts, built with `lib` (this loopstate, or the build that wrote the fixture). */
function loopOn(
  lib: Library,
  store: Store,
  hangAt: number | null,
  options: { inMemory?: boolean; onHang?: () => void; requests?: ModelRequest[]; steps?: number } = {},
) {
  const steps = options.steps ?? STEPS;
  const lookup = lib.defineTool({
    name: 'lookup',
    description: 'Look a key up',
    input: z.object({ key: z.string() }),
    access: 'read',
    idempotent: true,
    execute: ({ key }) => `value ${key}`,
  });
  return lib.createLoop({
    model: lookupModel((call) => (call < steps ? `k${call}` : null), hangAt, options.onHang, options.requests),
    tools: [lookup],
    store,
    clock: virtualClock(),
    // maxUncommittedSteps 1: a commit before every model call (the journal these cases hang on).
    durable: { snapshotEvery: 2, maxUncommittedSteps: 1 },
    limits: { maxSteps: steps + 5, maxToolCalls: steps + 5 },
    ...(options.inMemory === false ? { trace: { inMemory: false } } : {}),
  });
}

interface Chunk {
  seq: number;
  previous: number;
  change: { replace: boolean };
  progress: { whole: boolean };
}

/** The first chunk the snapshot's chains reach: back through `previous` to the transcript's and the triples' whole links. */
async function chainStart(store: Store): Promise<{ first: number; snapshot: { session: { chainFrom?: number } } }> {
  const chunks = new Map(
    (await store.readJournal('r', 0, ['transcript'])).map((row) => [row.seq, JSON.parse(row.body) as Chunk]),
  );
  const snapshot = JSON.parse((await store.latestSnapshot('r'))!.body) as {
    session: { transcriptChunk: number; chainFrom?: number };
  };
  let first = snapshot.session.transcriptChunk;
  let transcriptDone = false;
  let triplesDone = false;
  for (let seq = first; !(transcriptDone && triplesDone); seq = chunks.get(seq)!.previous) {
    const chunk = chunks.get(seq)!;
    first = seq;
    transcriptDone ||= chunk.change.replace;
    triplesDone ||= chunk.progress.whole;
  }
  return { first, snapshot };
}

/** A SQLite store whose journal reads are written down: (after seq, kinds). */
function watched(path: string): { store: Store; reads: { after: number; kinds: readonly string[] | undefined }[] } {
  const inner = sqliteStore({ path });
  const reads: { after: number; kinds: readonly string[] | undefined }[] = [];
  const store: Store = {
    ...inner,
    pausePollMs: inner.pausePollMs,
    readJournal(runId, afterSeq, kinds) {
      reads.push({ after: afterSeq, kinds });
      return inner.readJournal(runId, afterSeq, kinds);
    },
  };
  return { store, reads };
}

async function withStore<T>(path: string, use: (store: Store) => Promise<T>): Promise<T> {
  const store = sqliteStore({ path });
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

async function hungRun(name: string, inMemory = true): Promise<string> {
  const path = join(scratch, `${name}.db`);
  const store = sqliteStore({ path });
  await new Promise<void>(
    (resolve) => void loopOn(current, store, HANG, { inMemory, onHang: resolve }).run({ goal: 'go', runId: 'r' }),
  );
  await freeLease(store, 'r');
  await store.close();
  return path;
}

const uninterrupted = async (inMemory = true, steps = STEPS) => {
  const requests: ModelRequest[] = [];
  const result = await loopOn(current, memoryStore(), null, { inMemory, requests, steps }).run({
    goal: 'go',
    runId: 'r',
  });
  return { result, requests };
};

describe("a snapshot names its chains' first chunk", () => {
  for (const inMemory of [true, false])
    it(`a resume reads the transcript chunks from there and goes on as the uninterrupted run (in-memory trace ${inMemory ? 'on' : 'off'})`, async () => {
      const expected = await uninterrupted(inMemory);
      const path = await hungRun(`exact-${inMemory}`, inMemory);
      const { store, reads } = watched(path);
      const { first, snapshot } = await chainStart(store);
      // Not the run's first chunk: the chain begins at a chunk the journal wrote whole again.
      expect(first).toBeGreaterThan(HANG);
      expect(snapshot.session.chainFrom).toBe(first);
      reads.length = 0;
      const requests: ModelRequest[] = [];
      const result = await loopOn(current, store, null, { inMemory, requests }).resume('r');
      const transcriptReads = reads.filter((read) => read.kinds?.includes('transcript') === true);
      expect(transcriptReads.length).toBeGreaterThan(0);
      for (const read of transcriptReads) expect(read.after).toBe(first - 1);
      if (inMemory) expect(reads.some((read) => read.after === 0 && read.kinds?.includes('trace'))).toBe(true);
      expect(requests.map((request) => request.messages)).toEqual(
        expected.requests.slice(HANG).map((request) => request.messages),
      );
      expect(result.messages).toEqual(expected.result.messages);
      expect(result.usage).toEqual(expected.result.usage);
      // The whole trace, the earlier part read from its chunks (from seq 0) when `result.trace` is read.
      if (inMemory) expect(withoutResumes(result)).toEqual(expected.result.trace);
      await store.close();
    });

  it('a chainFrom after the first chunk its chains reach is refused, naming the snapshot; put back, the run resumes', async () => {
    const expected = await uninterrupted();
    const path = await hungRun('lying');
    const db = new Database(path);
    const saved = db.prepare("SELECT seq, body, packed FROM snapshots WHERE run_id = 'r'").get() as {
      seq: number;
      body: string;
      packed: Buffer | null;
    };
    const { seq } = saved;
    const body = (await withStore(path, (store) => store.latestSnapshot('r')))!.body;
    const snapshot = JSON.parse(body) as { session: { chainFrom: number } };
    const chainFrom = snapshot.session.chainFrom;
    snapshot.session.chainFrom = chainFrom + 1;
    db.prepare("UPDATE snapshots SET body = ?, packed = NULL WHERE run_id = 'r'").run(JSON.stringify(snapshot));
    const store = sqliteStore({ path });
    const refused = await loopOn(current, store, null)
      .resume('r')
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(StoreRecordError);
    expect(refused).toMatchObject({ code: 'corrupt_record', seq });
    expect((refused as Error).message).toContain(`before the one its chainFrom names (seq ${chainFrom + 1})`);
    // Nothing lost: put back, the run resumes to the uninterrupted run's end.
    await freeLease(store, 'r');
    db.prepare("UPDATE snapshots SET body = ?, packed = ? WHERE run_id = 'r'").run(saved.body, saved.packed);
    db.close();
    const result = await loopOn(current, store, null).resume('r');
    expect(result.messages).toEqual(expected.result.messages);
    expect(withoutResumes(result)).toEqual(expected.result.trace);
    await store.close();
  });
});

interface Fixture {
  run: string;
  snapshot: StoreRow;
  journal: StoreRow[];
}

describe('a journal written by loopstate at 052bb80 (snapshots without chainFrom)', () => {
  // LOOPSTATE_FIXTURE_BUILD=/tmp/before-r11 (a build of 052bb80): its own library runs the loop and stores the rows.
  it.runIf(process.env.LOOPSTATE_FIXTURE_BUILD !== undefined)('(writes the fixture)', async () => {
    const root = process.env.LOOPSTATE_FIXTURE_BUILD!;
    const lib = (await import(join(root, 'dist/src/index.js'))) as Library;
    const store = lib.memoryStore();
    await new Promise<void>(
      (resolve) =>
        void loopOn(lib, store, OLD_HANG, { onHang: resolve, steps: OLD_STEPS }).run({ goal: 'go', runId: 'r' }),
    );
    await freeLease(store, 'r');
    const written: Fixture = {
      run: (await store.readRun('r'))!.body,
      snapshot: (await store.latestSnapshot('r'))!,
      journal: await store.readJournal('r', 0),
    };
    writeFileSync(fixturePath, `${JSON.stringify(written)}\n`);
  });

  it('resumes into a SQLite file exactly as the uninterrupted run goes on, its transcript chunks read from the start', async () => {
    const fixture = JSON.parse(readFileSync(fixturePath, 'utf8')) as Fixture;
    expect(JSON.parse(fixture.snapshot.body)).not.toHaveProperty('session.chainFrom');
    // A chunk written whole again after the first: a chainFrom would have named it.
    const chunks = fixture.journal
      .filter((row) => row.kind === 'transcript')
      .map((row) => JSON.parse(row.body) as Chunk);
    expect(chunks.some((chunk) => chunk.previous > 0 && chunk.change.replace && chunk.progress.whole)).toBe(true);
    const expected = await uninterrupted(true, OLD_STEPS);
    const { store, reads } = watched(join(scratch, 'old.db'));
    const lease = { owner: 'fixture-loader', until: Date.now() + 60_000 };
    await store.createRun('r', fixture.run, lease);
    await store.append('r', fixture.journal, lease);
    await store.writeSnapshot('r', fixture.snapshot, lease);
    await store.releaseLease('r', lease.owner);
    reads.length = 0;
    const requests: ModelRequest[] = [];
    const result = await loopOn(current, store, null, { requests, steps: OLD_STEPS }).resume('r');
    // Without chainFrom the chunks are read from the start, as before.
    expect(reads.some((read) => read.after === 0 && read.kinds?.includes('transcript'))).toBe(true);
    expect(requests.map((request) => request.messages)).toEqual(
      expected.requests.slice(OLD_HANG).map((request) => request.messages),
    );
    expect(result.messages).toEqual(expected.result.messages);
    expect(result.usage).toEqual(expected.result.usage);
    expect(withoutResumes(result)).toEqual(expected.result.trace);
    await store.close();
  });
});
