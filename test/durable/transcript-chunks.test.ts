/**
 * The transcript at a snapshot lives in transcript chunks written with each snapshot (its change since the
 * previous chunk, which it names): a resume folds that chain instead of reading every event before the
 * snapshot. A process that dies between a chunk and its snapshot leaves a chunk on no chain; a damaged chain
 * is refused, naming the record; a run journalled by record schema 3 (no chunks) still resumes exactly, and
 * starts a chain from there.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createLoop,
  defineTool,
  memoryStore,
  StoreRecordError,
  type Model,
  type ModelRequest,
  type Store,
  type StoreRow,
} from 'loopstate';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';
import { TRANSCRIPT_WINDOW } from '../../src/engine/durable/chain-folding.js';
import { withoutResumes } from './same-end.js';

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up',
  input: z.object({ key: z.string() }),
  access: 'read',
  idempotent: true,
  execute: ({ key }) => `value ${key}`,
});

/** Eight lookups, then an answer; the call with `hangAt` replies in the conversation never answers. */
function model(hangAt: number | null, requests: ModelRequest[], onHang: () => void = () => undefined): Model {
  return {
    id: 'scripted',
    generate(request) {
      const given = request.messages.filter((message) => message.role === 'assistant').length;
      if (given === hangAt) {
        onHang();
        return new Promise(() => undefined);
      }
      requests.push(request);
      const usage = { inputTokens: 10, outputTokens: 2 };
      if (given >= 8) return Promise.resolve({ text: 'done', toolCalls: [], usage });
      return Promise.resolve({
        text: null,
        toolCalls: [{ id: `c${given}`, name: 'lookup', arguments: JSON.stringify({ key: `k${given}` }) }],
        usage,
      });
    },
  };
}

const loopOn = (store: Store, hangAt: number | null, requests: ModelRequest[] = [], onHang?: () => void) =>
  createLoop({
    model: model(hangAt, requests, onHang),
    tools: [lookup],
    store,
    clock: virtualClock(),
    // maxUncommittedSteps 1: a commit before every model call (the journal these cases hang or crash on).
    durable: { snapshotEvery: 2, maxUncommittedSteps: 1 },
  });

/** Runs (or resumes) the run until the model call at `hangAt` hangs, then frees its lease: a dead process. */
async function hangAt(store: Store, at: number, start: 'run' | 'resume'): Promise<void> {
  let hung: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => (hung = resolve));
  const loop = loopOn(store, at, [], hung);
  void (start === 'run' ? loop.run({ goal: 'go', runId: 'r' }) : loop.resume('r'));
  await reached;
  await freeLease(store, 'r');
}

const uninterrupted = async () => {
  const requests: ModelRequest[] = [];
  const result = await loopOn(memoryStore(), null, requests).run({ goal: 'go', runId: 'r' });
  return { result, requests };
};

interface Chunk {
  seq: number;
  snapshotSeq: number;
  previous: number;
  change: { replace: boolean; from: number; messages: unknown[] };
}
const chunksOf = async (store: Store): Promise<Chunk[]> =>
  (await store.readJournal('r', 0)).filter((row) => row.kind === 'transcript').map((row) => JSON.parse(row.body));

/** The chunks a resume folds: from `head` back (through `previous`) to the last one holding the transcript whole. */
function chainOf(chunks: readonly Chunk[], head: number): Chunk[] {
  const bySeq = new Map(chunks.map((chunk) => [chunk.seq, chunk]));
  const chain: Chunk[] = [];
  for (let seq = head; seq !== 0;) {
    const chunk = bySeq.get(seq)!;
    chain.push(chunk);
    if (chunk.change.replace) break;
    seq = chunk.previous;
  }
  return chain;
}

/** The store, with every journal row a read hands out noted (and the kinds each read asked for). */
function noting(store: Store, read: StoreRow[], kindsAsked: (readonly string[] | undefined)[] = []): Store {
  return {
    ...store,
    readJournal: async (...args) => {
      kindsAsked.push(args[2]);
      const rows = await store.readJournal(...args);
      read.push(...rows);
      return rows;
    },
  };
}

describe('transcript chunks', () => {
  it('a resume reads no event before the latest snapshot, and the next request is the uninterrupted run’s', async () => {
    const expected = await uninterrupted();
    const store = memoryStore();
    await hangAt(store, 6, 'run');
    const snapshotSeq = (await store.latestSnapshot('r'))!.seq;
    expect(snapshotSeq).toBeGreaterThan(10);
    const read: StoreRow[] = [];
    const requests: ModelRequest[] = [];
    const result = await loopOn(noting(store, read), null, requests).resume('r');
    // Only the chunks (one per snapshot) and what came after the snapshot: not the history's events.
    const history = read.filter((row) => row.seq <= snapshotSeq);
    expect(history.filter((row) => row.kind !== 'trace' && row.kind !== 'transcript')).toEqual([]);
    expect(read.some((row) => row.kind === 'transcript')).toBe(true);
    expect(requests[0]!.messages).toEqual(expected.requests[6]!.messages);
    expect(result.messages).toEqual(expected.result.messages);
    expect(withoutResumes(result)).toEqual(expected.result.trace);
    expect(result.usage).toEqual(expected.result.usage);
    expect(result.output).toEqual(expected.result.output);
  });

  it('a chunk whose snapshot was never written is on no chain: the resumed run continues the one before it', async () => {
    const expected = await uninterrupted();
    const store = memoryStore();
    let snapshots = 0;
    const dying: Store = {
      ...store,
      writeSnapshot: (...args) =>
        ++snapshots === 3 ? Promise.reject(new Error('killed')) : store.writeSnapshot(...args),
    };
    await expect(loopOn(dying, null).run({ goal: 'go', runId: 'r' })).rejects.toThrow('killed');
    const latest = (await store.latestSnapshot('r'))!;
    const before = await chunksOf(store);
    const orphan = before.at(-1)!;
    expect(orphan.snapshotSeq).toBeGreaterThan(latest.seq);
    await freeLease(store, 'r');
    await hangAt(store, 6, 'resume');
    const after = await chunksOf(store);
    const next = after.find((chunk) => chunk.seq > orphan.seq)!;
    // It continues the chunk the latest snapshot names, not the orphan.
    expect(next.previous).toBe(JSON.parse(latest.body).session.transcriptChunk);
    expect(next.previous).not.toBe(orphan.seq);
    const requests: ModelRequest[] = [];
    const result = await loopOn(store, null, requests).resume('r');
    expect(requests[0]!.messages).toEqual(expected.requests[6]!.messages);
    expect(result.messages).toEqual(expected.result.messages);
    expect(withoutResumes(result)).toEqual(expected.result.trace);
  });

  it('a chain with a chunk missing or not continuing the one before is refused, naming the record, and nothing is lost', async () => {
    const store = memoryStore();
    await hangAt(store, 6, 'run');
    const chunks = await chunksOf(store);
    const head = JSON.parse((await store.latestSnapshot('r'))!.body).session.transcriptChunk as number;
    // A chunk the resume needs: on the chain from the snapshot's chunk back to the last one holding the transcript whole.
    const chain = chainOf(chunks, head);
    expect(chain.length).toBeGreaterThan(1);
    const missing = chain[1]!;
    const dropping: Store = {
      ...store,
      readJournal: async (...args) => (await store.readJournal(...args)).filter((row) => row.seq !== missing.seq),
    };
    const refused = await loopOn(dropping, null)
      .resume('r')
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(StoreRecordError);
    expect(refused).toMatchObject({ code: 'corrupt_record', runId: 'r' });
    expect((refused as StoreRecordError).message).toContain(`the transcript chunk it continues (seq ${missing.seq})`);

    const shifted: Store = {
      ...store,
      readJournal: async (...args) =>
        (await store.readJournal(...args)).map((row) =>
          row.seq === head
            ? { ...row, body: row.body.replace(/"from":(\d+)/, (_m, n) => `"from":${Number(n) + 1}`) }
            : row,
        ),
    };
    const broken = await loopOn(shifted, null)
      .resume('r')
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(broken).toMatchObject({ code: 'corrupt_record', runId: 'r', seq: head });
    expect((broken as StoreRecordError).message).toMatch(/does not continue the chunk before it/);

    // The refusals changed nothing: the run resumes from the intact store.
    await freeLease(store, 'r');
    const result = await loopOn(store, null).resume('r');
    expect(result.stopReason).toBe('completed');
    expect(result.messages).toEqual((await uninterrupted()).result.messages);
  });

  it('a transcript replaced between snapshots (a new task) is chunked whole and comes back exactly', async () => {
    const tasks = [
      { id: 'first', prompt: 'look up four keys' },
      { id: 'second', prompt: 'look up the rest' },
    ];
    /** Each task: lookups until four assistant replies are in its conversation, then an answer. */
    const taskModel = (hang: number | null, requests: ModelRequest[], onHang: () => void = () => undefined): Model => {
      let calls = 0;
      return {
        id: 'scripted',
        generate(request) {
          if (calls++ === hang) {
            onHang();
            return new Promise(() => undefined);
          }
          requests.push(request);
          const given = request.messages.filter((message) => message.role === 'assistant').length;
          const usage = { inputTokens: 10, outputTokens: 2 };
          if (given >= 4) return Promise.resolve({ text: 'done', toolCalls: [], usage });
          return Promise.resolve({
            text: null,
            toolCalls: [{ id: `c${given}`, name: 'lookup', arguments: JSON.stringify({ key: `k${given}` }) }],
            usage,
          });
        },
      };
    };
    const loop = (store: Store, hang: number | null, requests: ModelRequest[], onHang?: () => void) =>
      createLoop({
        model: taskModel(hang, requests, onHang),
        tools: [lookup],
        tasks,
        store,
        clock: virtualClock(),
        durable: { snapshotEvery: 2, maxUncommittedSteps: 1 },
      });
    const expectedRequests: ModelRequest[] = [];
    const expected = await loop(memoryStore(), null, expectedRequests).run({ goal: 'go', runId: 'r' });
    expect(expected.stopReason).toBe('completed');
    const store = memoryStore();
    let hung: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (hung = resolve));
    // The second task's third call: the chunks since hold its conversation, begun afresh.
    void loop(store, 7, [], hung).run({ goal: 'go', runId: 'r' });
    await reached;
    await freeLease(store, 'r');
    expect((await chunksOf(store)).filter((chunk) => chunk.change.replace).length).toBeGreaterThan(1);
    const requests: ModelRequest[] = [];
    const result = await loop(store, null, requests).resume('r');
    expect(requests[0]!.messages).toEqual(expectedRequests[7]!.messages);
    expect(result.messages).toEqual(expected.messages);
    expect(result.taskOutputs).toEqual(expected.taskOutputs);
    expect(withoutResumes(result)).toEqual(expected.trace);

    // The chunks before the last one that replaced the transcript are not read: damaged, they change nothing.
    const again = memoryStore();
    const hungAgain = new Promise<void>((resolve) => void loop(again, 7, [], resolve).run({ goal: 'go', runId: 'r' }));
    await hungAgain;
    await freeLease(again, 'r');
    const lastReplace = (await chunksOf(again)).filter((chunk) => chunk.change.replace).at(-1)!;
    expect(lastReplace.previous).toBeGreaterThan(0);
    const damaged: Store = {
      ...again,
      readJournal: async (...args) =>
        (await again.readJournal(...args)).map((row) =>
          row.kind === 'transcript' && row.seq < lastReplace.seq ? { ...row, body: '{"damaged":' } : row,
        ),
    };
    const fromDamaged = await loop(damaged, null, []).resume('r');
    expect(fromDamaged.messages).toEqual(expected.messages);
  });
});

describe('transcript chunks under a context ceiling', () => {
  it('a trimmed conversation is chunked whole, and the resumed run’s requests are the uninterrupted run’s', async () => {
    const long = defineTool({
      name: 'lookup',
      description: 'Look a key up',
      input: z.object({ key: z.string() }),
      access: 'read',
      idempotent: true,
      execute: ({ key }) => `value ${key} `.repeat(40),
    });
    /** Seven lookups, then an answer: the next key from the last tool result in the (trimmed) conversation. */
    const trimmingModel = (hang: number | null, requests: ModelRequest[], onHang: () => void = () => undefined) => {
      let calls = 0;
      return {
        id: 'scripted',
        generate(request: ModelRequest) {
          if (calls++ === hang) {
            onHang();
            return new Promise<never>(() => undefined);
          }
          requests.push(request);
          const usage = { inputTokens: 10, outputTokens: 2 };
          const last = [...request.messages].reverse().find((message) => message.role === 'tool');
          const n = last === undefined ? 0 : Number(/value k(\d+)/.exec(last.content)?.[1] ?? 0) + 1;
          if (n >= 7) return Promise.resolve({ text: 'done', toolCalls: [], usage });
          return Promise.resolve({
            text: null,
            toolCalls: [{ id: `c${n}`, name: 'lookup', arguments: JSON.stringify({ key: `k${n}` }) }],
            usage,
          });
        },
      } satisfies Model;
    };
    const loop = (store: Store, hang: number | null, requests: ModelRequest[], onHang?: () => void) =>
      createLoop({
        model: trimmingModel(hang, requests, onHang),
        tools: [long],
        store,
        clock: virtualClock(),
        durable: { snapshotEvery: 2, maxUncommittedSteps: 1 },
        context: { maxInputTokensPerCall: 500, keepTurns: 1 },
      });
    const expectedRequests: ModelRequest[] = [];
    const expected = await loop(memoryStore(), null, expectedRequests).run({ goal: 'go', runId: 'r' });
    expect(expected.stopReason, expected.detail).toBe('completed');
    const store = memoryStore();
    await new Promise<void>((resolve) => void loop(store, 6, [], resolve).run({ goal: 'go', runId: 'r' }));
    await freeLease(store, 'r');
    const trimmed = (await chunksOf(store)).filter((chunk) => chunk.change.replace && chunk.previous > 0);
    expect(trimmed.length).toBeGreaterThan(0);
    const requests: ModelRequest[] = [];
    const result = await loop(store, null, requests).resume('r');
    expect(requests.map((request) => request.messages)).toEqual(
      expectedRequests.slice(6).map((request) => request.messages),
    );
    expect(result.messages).toEqual(expected.messages);
    expect(withoutResumes(result)).toEqual(expected.trace);
  });
});

describe('a long run with the trace off: the chain is read from near its snapshot', () => {
  const long = defineTool({
    name: 'lookup',
    description: 'Look a key up',
    input: z.object({ key: z.string() }),
    access: 'read',
    idempotent: true,
    execute: ({ key }) => `value ${key} `.repeat(20),
  });
  const STEPS = 600;
  /** STEPS lookups, then an answer: the next key from the last tool result in the (maybe trimmed) conversation. */
  const keyedModel = (hang: number | null, requests: ModelRequest[], onHang: () => void = () => undefined) => {
    let calls = 0;
    return {
      id: 'scripted',
      generate(request: ModelRequest) {
        if (calls++ === hang) {
          onHang();
          return new Promise<never>(() => undefined);
        }
        requests.push(request);
        const usage = { inputTokens: 10, outputTokens: 2 };
        const last = [...request.messages].reverse().find((message) => message.role === 'tool');
        const n = last === undefined ? 0 : Number(/value k(\d+)/.exec(last.content)?.[1] ?? 0) + 1;
        if (n >= STEPS) return Promise.resolve({ text: 'done', toolCalls: [], usage });
        return Promise.resolve({
          text: null,
          toolCalls: [{ id: `c${n}`, name: 'lookup', arguments: JSON.stringify({ key: `k${n}` }) }],
          usage,
        });
      },
    } satisfies Model;
  };
  const loop = (
    store: Store,
    ceiling: number | undefined,
    hang: number | null,
    requests: ModelRequest[],
    onHang?: () => void,
  ) =>
    createLoop({
      model: keyedModel(hang, requests, onHang),
      tools: [long],
      store,
      clock: virtualClock(),
      limits: { maxSteps: STEPS + 10, maxToolCalls: STEPS + 10 },
      trace: { inMemory: false },
      durable: { snapshotEvery: 2, maxUncommittedSteps: 1 },
      ...(ceiling === undefined ? {} : { context: { maxInputTokensPerCall: ceiling, keepTurns: 1 } }),
    });

  /** The uninterrupted run; then one hung near its end and resumed, with every journal row its resume read. */
  async function resumedNearTheEnd(ceiling: number | undefined) {
    const expectedRequests: ModelRequest[] = [];
    const expected = await loop(memoryStore(), ceiling, null, expectedRequests).run({ goal: 'go', runId: 'r' });
    expect(expected.stopReason, expected.detail).toBe('completed');
    const store = memoryStore();
    const hang = STEPS - 3;
    await new Promise<void>((resolve) => void loop(store, ceiling, hang, [], resolve).run({ goal: 'go', runId: 'r' }));
    await freeLease(store, 'r');
    const snapshotSeq = (await store.latestSnapshot('r'))!.seq;
    // The premise: the snapshot stands further into the journal than the window a resume first reads.
    expect(snapshotSeq).toBeGreaterThan(2 * TRANSCRIPT_WINDOW);
    const read: StoreRow[] = [];
    const kindsAsked: (readonly string[] | undefined)[] = [];
    const requests: ModelRequest[] = [];
    const result = await loop(noting(store, read, kindsAsked), ceiling, null, requests).resume('r');
    // The transcript chunks alone are asked for (the SQLite store reads them through its chunk index all the
    // same: sqlite-store.test.ts).
    for (const kinds of kindsAsked) if (kinds !== undefined) expect(kinds).toEqual(['transcript']);
    expect(kindsAsked.filter((kinds) => kinds !== undefined).length).toBeGreaterThan(0);
    expect(requests.map((request) => request.messages)).toEqual(
      expectedRequests.slice(hang).map((request) => request.messages),
    );
    expect(result.messages).toEqual(expected.messages);
    expect(withoutResumes(result)).toEqual(expected.trace);
    return { store, snapshotSeq, read };
  }

  it('under a context ceiling, a resume reads only the transcript chunks of the window before its snapshot', async () => {
    const { store, snapshotSeq, read } = await resumedNearTheEnd(500);
    const chunks = await chunksOf(store);
    expect(chunks.filter((chunk) => chunk.change.replace && chunk.previous > 0).length).toBeGreaterThan(10);
    const chunksRead = read.filter((row) => row.kind === 'transcript');
    expect(chunksRead.length).toBeGreaterThan(0);
    expect(chunksRead.every((row) => row.seq > snapshotSeq - TRANSCRIPT_WINDOW)).toBe(true);
    expect(chunksRead.length).toBeLessThan(chunks.length / 2);
  });

  it('without a ceiling, the transcript is chunked whole again now and then: the resume folds the chain from the last whole one', async () => {
    const { store, snapshotSeq, read } = await resumedNearTheEnd(undefined);
    const chunks = await chunksOf(store);
    // The transcript is never replaced by the run: the chunks holding it whole are the journal's own, each once
    // the messages chunked since the one before reached half of it (so they grow geometrically, a few in all).
    const whole = chunks.filter((chunk) => chunk.change.replace);
    expect(whole[0]!.previous).toBe(0);
    expect(whole.length).toBeGreaterThan(4);
    expect(whole.length).toBeLessThan(20);
    // (The first ones are as small as a chunk: a snapshot's messages.)
    for (let index = 4; index < whole.length; index++)
      expect(whole[index]!.change.messages.length).toBeGreaterThan(1.4 * whole[index - 1]!.change.messages.length);
    const head = JSON.parse((await store.latestSnapshot('r'))!.body).session.transcriptChunk as number;
    const chain = chainOf(chunks, head);
    expect(chain.at(-1)!.change.replace).toBe(true);
    expect(chain.length).toBeLessThan(chunks.length / 3 + 2);
    expect(read.some((row) => row.kind === 'transcript' && row.seq === chain.at(-1)!.seq)).toBe(true);
    // Chunks from before the window are read (again from the start) only when the last whole chunk lies there.
    const readBefore = read.some((row) => row.kind === 'transcript' && row.seq <= snapshotSeq - TRANSCRIPT_WINDOW);
    expect(readBefore).toBe(chain.at(-1)!.seq <= snapshotSeq - TRANSCRIPT_WINDOW);
  });
});

describe('a run journalled by record schema 3 (no transcript chunks)', () => {
  // Written by loopstate at dfa003f (record schema 3) with this file's model and loop, hung at its 4th model
  // call (snapshots every 2 events); kept as written, never regenerated.
  const fixture = JSON.parse(
    readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'records-v3.json'), 'utf8'),
  ) as { run: string; snapshot: StoreRow; journal: StoreRow[] };

  async function loadFixture(): Promise<Store> {
    const store = memoryStore();
    const lease = { owner: 'fixture-loader', until: Date.now() + 60_000 };
    // The fixture's run id is `fixture-v3`; this file's helpers drive `r`.
    const renamed = (body: string) => body.replaceAll('"fixture-v3"', '"r"');
    await store.createRun('r', renamed(fixture.run), lease);
    await store.append(
      'r',
      fixture.journal.map((row) => ({ ...row, body: renamed(row.body) })),
      lease,
    );
    await store.writeSnapshot('r', { ...fixture.snapshot, body: renamed(fixture.snapshot.body) }, lease);
    await store.releaseLease('r', lease.owner);
    return store;
  }

  it('resumes exactly, rebuilding the transcript from its events, and starts a chain that a later resume folds', async () => {
    const expected = await uninterrupted();
    const store = await loadFixture();
    expect(JSON.parse((await store.latestSnapshot('r'))!.body)).toMatchObject({ schemaVersion: 3 });
    expect(await chunksOf(store)).toEqual([]);
    // Resumed from the version 3 snapshot, hung again after snapshots of this version were written.
    const firstRequests: ModelRequest[] = [];
    let hung: () => void = () => undefined;
    const reached = new Promise<void>((resolve) => (hung = resolve));
    void loopOn(store, 6, firstRequests, hung).resume('r');
    await reached;
    await freeLease(store, 'r');
    expect(firstRequests[0]!.messages).toEqual(expected.requests[3]!.messages);
    const chain = await chunksOf(store);
    expect(chain[0]).toMatchObject({ previous: 0, change: { replace: true, from: 0 } });
    expect(JSON.parse((await store.latestSnapshot('r'))!.body).session.transcriptChunk).toBe(chain.at(-1)!.seq);
    const requests: ModelRequest[] = [];
    const result = await loopOn(store, null, requests).resume('r');
    expect(requests[0]!.messages).toEqual(expected.requests[6]!.messages);
    expect(result.stopReason).toBe('completed');
    expect(result.messages).toEqual(expected.result.messages);
    expect(result.usage).toEqual(expected.result.usage);
  });
});
