/**
 * Without a context ceiling the next request holds the whole conversation, so a resume needs every message of the
 * run. The journal holds the transcript whole again in a chunk now and then (once the messages chunked since the
 * last whole one reach half of it): a resume inflates and parses that chunk and the few after it, not one chunk
 * per snapshot. On a real SQLite file: the resumed run's requests are the uninterrupted run's, and a damaged
 * whole chunk is refused, naming it, with nothing lost.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createLoop, memoryStore, StoreRecordError, type ModelRequest, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';
import { lookup, lookupModel } from './lookup-loop.js';
import type { Message } from '../../src/contracts/model.js';
import { messageChars } from '../../src/engine/runtime/transcript.js';
import { CONSOLIDATE_AT } from '../../src/engine/durable/transcript-chain.js';
import { withoutResumes } from './same-end.js';

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
const scratch = mkdtempSync(join(tmpdir(), 'loopstate-consolidated-chunks-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const STEPS = 60;
const HANG = 56;

const loopOn = (store: Store, hangAt: number | null, onHang?: () => void, requests?: ModelRequest[]) =>
  createLoop({
    model: lookupModel((call) => (call < STEPS ? `k${call}` : null), hangAt, onHang, requests),
    tools: [lookup],
    store,
    clock: virtualClock(),
    // maxUncommittedSteps 1: a commit before every model call (the journal these cases hang or crash on).
    durable: { snapshotEvery: 2, maxUncommittedSteps: 1 },
    limits: { maxSteps: STEPS + 5, maxToolCalls: STEPS + 5 },
  });

interface Chunk {
  seq: number;
  previous: number;
  change: { replace: boolean; messages: unknown[] };
  progress: { whole: boolean };
}

/** A run of STEPS lookups hung at call HANG in a SQLite file, its lease freed: the chain a resume folds, and its whole chunk. */
async function hungRun(name: string) {
  const path = join(scratch, `${name}.db`);
  const store = sqliteStore({ path });
  await new Promise<void>((resolve) => void loopOn(store, HANG, resolve).run({ goal: 'go', runId: 'r' }));
  await freeLease(store, 'r');
  const rows = await store.readJournal('r', 0, ['transcript']);
  const chunks = new Map(rows.map((row) => [row.seq, JSON.parse(row.body) as Chunk]));
  const head = JSON.parse((await store.latestSnapshot('r'))!.body).session.transcriptChunk as number;
  const chain: Chunk[] = [];
  for (let seq = head; seq !== 0;) {
    const chunk = chunks.get(seq)!;
    chain.push(chunk);
    if (chunk.change.replace) break;
    seq = chunk.previous;
  }
  await store.close();
  return { path, chunks: [...chunks.values()], chain, whole: chain.at(-1)! };
}

const uninterrupted = async () => {
  const requests: ModelRequest[] = [];
  const result = await loopOn(memoryStore(), null, undefined, requests).run({ goal: 'go', runId: 'r' });
  return { result, requests };
};

describe('the transcript held whole again now and then', () => {
  it('a resume folds a short chain from the last whole chunk, and goes on as the uninterrupted run', async () => {
    const expected = await uninterrupted();
    expect(expected.result.stopReason).toBe('completed');
    const { path, chunks, chain, whole } = await hungRun('exact');
    // Not the run's first chunk: one the journal wrote whole again, with the tracker's triples whole too.
    expect(whole.previous).toBeGreaterThan(0);
    expect(whole.progress.whole).toBe(true);
    expect(whole.change.messages.length).toBeGreaterThan(2 * HANG * (2 / 3));
    expect(chain.length).toBeLessThan(chunks.length / 3 + 2);
    const requests: ModelRequest[] = [];
    const store = sqliteStore({ path });
    const result = await loopOn(store, null, undefined, requests).resume('r');
    await store.close();
    expect(requests.map((request) => request.messages)).toEqual(
      expected.requests.slice(HANG).map((request) => request.messages),
    );
    expect(result.messages).toEqual(expected.result.messages);
    expect(withoutResumes(result)).toEqual(expected.result.trace);
    expect(result.usage).toEqual(expected.result.usage);
  });

  it('a resumed run goes on holding the transcript whole where the rule says, counting what came before the resume', async () => {
    const hangUntil = (store: Store, at: number, start: 'run' | 'resume') =>
      new Promise<void>((resolve) => {
        const loop = loopOn(store, at, resolve);
        void (start === 'run' ? loop.run({ goal: 'go', runId: 'r' }) : loop.resume('r'));
      }).then(() => freeLease(store, 'r'));
    const store = memoryStore();
    await hangUntil(store, 30, 'run');
    const before = (await store.readJournal('r', 0, ['transcript'])).length;
    await hangUntil(store, STEPS - 1, 'resume');
    const chunks = (await store.readJournal('r', 0, ['transcript'])).map((row) => JSON.parse(row.body) as Chunk);
    // The rule (run-journal.ts), followed over the whole journal in order: a chunk is whole when the messages chunked
    // since the last whole one reach CONSOLIDATE_AT of it (a whole chunk's own new messages are those past the last).
    const size = (messages: readonly unknown[]) =>
      (messages as Message[]).reduce((sum, message) => sum + messageChars(message) + 32, 0);
    let whole = 0;
    let since = 0;
    const predicted: boolean[] = [];
    for (const [index, chunk] of chunks.entries()) {
      const messages = chunk.change.messages;
      let due: boolean;
      if (index === 0) due = true;
      else {
        const added = size(messages) - (chunk.change.replace ? whole + since : 0);
        due = added > 0 && since + added >= whole * CONSOLIDATE_AT;
      }
      predicted.push(due);
      if (chunk.change.replace) {
        whole = size(messages);
        since = 0;
      } else since += size(messages);
    }
    expect(chunks.map((chunk) => chunk.change.replace)).toEqual(predicted);
    // Whole chunks both before and after the resume.
    expect(predicted.slice(1, before).some(Boolean)).toBe(true);
    expect(predicted.slice(before).some(Boolean)).toBe(true);
  });

  it('a damaged whole chunk is refused, naming it; put back, the run resumes exactly', async () => {
    const expected = await uninterrupted();
    const { path, whole } = await hungRun('damaged');
    const db = new Database(path);
    const saved = db.prepare("SELECT body, packed FROM journal WHERE run_id = 'r' AND seq = ?").get(whole.seq) as {
      body: string;
      packed: Buffer | null;
    };
    const intact = JSON.stringify(whole);
    const damage = (body: string) =>
      db.prepare("UPDATE journal SET body = ?, packed = NULL WHERE run_id = 'r' AND seq = ?").run(body, whole.seq);
    const refusal = async () => {
      const store = sqliteStore({ path });
      try {
        return await loopOn(store, null)
          .resume('r')
          .then(
            () => null,
            (error: unknown) => error,
          );
      } finally {
        await store.close();
      }
    };
    // Cut short (a torn write), and a message of no known shape.
    damage(intact.slice(0, intact.length / 2));
    let refused = await refusal();
    expect(refused).toBeInstanceOf(StoreRecordError);
    expect(refused).toMatchObject({ code: 'corrupt_record', runId: 'r', seq: whole.seq });
    expect((refused as Error).message).toMatch(/not valid JSON/);
    damage(intact.replace('"role":"tool"', '"role":"robot"'));
    refused = await refusal();
    expect(refused).toMatchObject({ code: 'corrupt_record', runId: 'r', seq: whole.seq });
    expect((refused as Error).message).toMatch(/a transcript chunk of another shape/);
    // The refusals wrote nothing: put back, the chunk is read again and the run goes on exactly.
    db.prepare("UPDATE journal SET body = ?, packed = ? WHERE run_id = 'r' AND seq = ?").run(
      saved.body,
      saved.packed,
      whole.seq,
    );
    db.close();
    const store = sqliteStore({ path });
    const result = await loopOn(store, null).resume('r');
    await store.close();
    expect(result.stopReason).toBe('completed');
    expect(result.messages).toEqual(expected.result.messages);
    expect(withoutResumes(result)).toEqual(expected.result.trace);
  });
});
