/**
 * The ways a run stops and is resumed besides a crash in a model call's wait (snapshot-in-wait.test.ts): a run
 * stopped `needs_human` for an approval and resumed with it, and a run paused whose process died while it waited
 * for the pause to be lifted. Each resume's next requests must be the uninterrupted run's, and each must not pay
 * for what grows with the run where it need not: the approval's resume parses the stop's final trace chunk, not
 * every chunk of the trace; the paused run's resume replays no event (a snapshot taken at the pause). On real
 * SQLite files; the dead process is stood in for by a store whose calls never answer, its lease freed.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as current from 'loopstate';
import {
  memoryStore,
  type LoopConfig,
  type Model,
  type ModelRequest,
  type RunResult,
  type Store,
  type StoreRow,
} from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';
import { expectSameEnd, withoutResumes } from './same-end.js';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-resume-after-stops-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let files = 0;

const STEPS = 40;
/** The step whose call is destructive (the approval case). */
const CHARGE_AT = 29;

/** Call n asks for `lookup` (or `charge` at CHARGE_AT), and answers `done` at STEPS; `onCall` hears of each call. */
function model(requests: ModelRequest[], onCall: (call: number) => void = () => undefined): Model {
  return {
    id: 'scripted',
    generate(request) {
      requests.push(request);
      const call = request.messages.filter((message) => message.role === 'assistant').length;
      onCall(call);
      const usage = { inputTokens: 10, outputTokens: 2 };
      if (call >= STEPS) return Promise.resolve({ text: 'done', toolCalls: [], usage });
      const name = call === CHARGE_AT ? 'charge' : 'lookup';
      const toolCalls = [{ id: `c${call}`, name, arguments: JSON.stringify({ key: `k${call}` }) }];
      return Promise.resolve({ text: null, toolCalls, usage });
    },
  };
}

type Library = Pick<typeof current, 'createLoop' | 'defineTool'>;

/** The read-only tool every loop here calls. */
const lookupTool = (lib: Library = current) =>
  lib.defineTool({
    name: 'lookup',
    description: 'Look a key up',
    input: z.object({ key: z.string() }),
    access: 'read',
    execute: ({ key }) => `value ${key}`,
  });

/** Calls `lookup` until call `steps`, then answers `{"done":true}` (an output evaluators can check). */
function jsonAnswerModel(steps: number, requests: ModelRequest[] = []): Model {
  return {
    id: 'scripted',
    generate(request) {
      requests.push(request);
      const call = request.messages.filter((message) => message.role === 'assistant').length;
      const usage = { inputTokens: 10, outputTokens: 2 };
      if (call >= steps) return Promise.resolve({ text: '{"done":true}', toolCalls: [], usage });
      const toolCalls = [{ id: `c${call}`, name: 'lookup', arguments: JSON.stringify({ key: `k${call}` }) }];
      return Promise.resolve({ text: null, toolCalls, usage });
    },
  };
}

/** The loop, built with `lib` (this loopstate, or the build that wrote the fixture). */
const loopOn = (
  store: Store,
  requests: ModelRequest[],
  options: {
    approvals: boolean;
    onCall?: (call: number) => void;
    grouping?: { maxUncommittedSteps?: number; maxUncommittedMs?: number };
  },
  lib: Library = current,
) =>
  lib.createLoop({
    model: model(requests, options.onCall),
    tools: [
      lookupTool(lib),
      lib.defineTool({
        name: 'charge',
        description: 'Charge a key',
        input: z.object({ key: z.string() }),
        access: 'destructive',
        execute: ({ key }) => `charged ${key}`,
      }),
    ],
    store,
    clock: virtualClock(),
    durable: { snapshotEvery: 8, ...options.grouping },
    limits: { maxSteps: STEPS + 5, maxToolCalls: STEPS + 5 },
    // The uninterrupted run's charge needs no approval; the stopped run's does (the default).
    ...(options.approvals ? {} : { policy: { allow: ['read', 'write', 'destructive'], requireApproval: [] } }),
  } satisfies LoopConfig);

const uninterrupted = async () => {
  const requests: ModelRequest[] = [];
  const result = await loopOn(memoryStore(), requests, { approvals: false }).run({ goal: 'go', runId: 'r' });
  expect(result.stopReason).toBe('completed');
  return { result, requests };
};

/**
 * A run resumed with the approval of its charge went on as the uninterrupted run: the same requests from the one after
 * the charge's, and the same end (its trace, holding the stop and the decision, is each test's to compare).
 */
function expectGoesOnAsUninterrupted(
  result: RunResult,
  requests: ModelRequest[],
  expected: Awaited<ReturnType<typeof uninterrupted>>,
): void {
  expect(requests.map((request) => request.messages)).toEqual(
    expected.requests.slice(CHARGE_AT + 1).map((request) => request.messages),
  );
  expect(result.stopReason).toBe('completed');
  expect(result.steps).toBe(expected.result.steps);
  expect(result.messages).toEqual(expected.result.messages);
  expect(result.usage).toEqual(expected.result.usage);
}

/** A SQLite store whose rows' bodies, once read, are counted by kind (a body read is a chunk inflated and parsed). */
function bodiesCounted(path: string) {
  const inner = sqliteStore({ path });
  const bodiesRead = new Map<string, number>();
  const counted = (row: StoreRow): StoreRow => ({
    seq: row.seq,
    kind: row.kind,
    get body() {
      bodiesRead.set(row.kind, (bodiesRead.get(row.kind) ?? 0) + 1);
      return row.body;
    },
  });
  const store: Store = {
    ...inner,
    pausePollMs: inner.pausePollMs,
    readJournal: async (...args) => (await inner.readJournal(...args)).map(counted),
  };
  return { store, inner, bodiesRead };
}

describe('a run stopped for an approval, resumed with it', () => {
  it('replays no event, reads the stop’s final trace chunk (not the whole trace), and goes on as the uninterrupted run', async () => {
    const expected = await uninterrupted();
    const path = join(scratch, `approval-${files++}.db`);
    const first = sqliteStore({ path });
    const stopped = await loopOn(first, [], { approvals: true }).run({ goal: 'go', runId: 'r' });
    await first.close();
    expect(stopped.status).toBe('needs_human');
    const [pending] = stopped.pendingApprovals;
    expect(pending?.tool).toBe('charge');

    const { store, inner, bodiesRead } = bodiesCounted(path);
    const requests: ModelRequest[] = [];
    try {
      const traceChunks = (await inner.readJournal('r', 0, ['trace'])).length;
      expect(traceChunks).toBeGreaterThan(4);
      const result = await loopOn(store, requests, { approvals: true }).resume('r', {
        approvals: { [pending!.callId]: { approve: true, argumentsHash: pending!.argumentsHash } },
      });
      // Before `result.trace` is read: the stop's final chunk, and the first chunk's first event (the trace's schema).
      expect(bodiesRead.get('trace') ?? 0).toBeLessThanOrEqual(2);
      // A snapshot stands just before the reply that stopped the run (taken as the reply came): no event is replayed,
      // the stop's own is applied and replaced.
      expect(result.trace.find((event) => event.type === 'run-resume')).toMatchObject({ replayedEvents: 1 });
      expectGoesOnAsUninterrupted(result, requests, expected);
      // The whole trace is still there when read: the uninterrupted run's, with the stop and its decision in it.
      const trace = withoutResumes(result).filter(
        (event) => !['approval-requested', 'approval-decided', 'run-end'].includes(event.type),
      );
      const expectedTrace = withoutResumes(expected.result).filter((event) => event.type !== 'run-end');
      expect(trace.map((event) => event.type)).toEqual(expectedTrace.map((event) => event.type));
    } finally {
      await inner.close();
    }
  });
});

describe('a run stopped for a review of its output, resumed with the decision', () => {
  it('replays no event (a snapshot taken before the evaluation) and completes with the output as the run without review', async () => {
    const reviewed = (store: Store, requests: ModelRequest[], review: boolean) =>
      current.createLoop({
        model: jsonAnswerModel(STEPS, requests),
        tools: [lookupTool()],
        store,
        clock: virtualClock(),
        durable: { snapshotEvery: 8 },
        limits: { maxSteps: STEPS + 5, maxToolCalls: STEPS + 5 },
        evaluate: review
          ? current.evaluators.chain(
              current.evaluators.schema(z.object({ done: z.boolean() })),
              current.evaluators.review({ when: () => true, reason: 'a person checks every answer' }),
            )
          : current.evaluators.schema(z.object({ done: z.boolean() })),
      });
    const expected = await reviewed(memoryStore(), [], false).run({ goal: 'go', runId: 'r' });
    expect(expected.stopReason).toBe('completed');
    const path = join(scratch, `review-${files++}.db`);
    const first = sqliteStore({ path });
    const stopped = await reviewed(first, [], true).run({ goal: 'go', runId: 'r' });
    await first.close();
    expect(stopped.status).toBe('needs_human');
    const next = sqliteStore({ path });
    const requests: ModelRequest[] = [];
    try {
      const result = await reviewed(next, requests, true).resume('r', {
        review: { accept: true, reviewId: stopped.pendingReview!.reviewId! },
      });
      expect(result.trace.find((event) => event.type === 'run-resume')).toMatchObject({ replayedEvents: 1 });
      expect(requests).toEqual([]);
      expect(result.stopReason).toBe('completed');
      expect(result.output).toEqual(expected.output);
      expect(result.messages).toEqual(expected.messages);
      expect(result.usage).toEqual(expected.usage);
    } finally {
      await next.close();
    }
  });
});

describe('the snapshot before an evaluation', () => {
  it('is taken only for a loop whose evaluations may wait or stop for a review, never for a schema check', async () => {
    const snapshotsOf = async (evaluate: LoopConfig['evaluate']) => {
      const store = memoryStore();
      let written = 0;
      const counting: Store = {
        ...store,
        pausePollMs: store.pausePollMs,
        writeSnapshot: (...args) => {
          written += 1;
          return store.writeSnapshot(...args);
        },
      };
      // Ten steps: fewer events than a snapshot's interval (32), more than the wait's bound (8).
      const loop = current.createLoop({
        model: jsonAnswerModel(10),
        tools: [lookupTool()],
        store: counting,
        clock: virtualClock(),
        limits: { maxSteps: 20, maxToolCalls: 20 },
        evaluate,
      });
      const result = await loop.run({ goal: 'go', runId: 'r' });
      return { written, status: result.status };
    };
    const schema = current.evaluators.schema(z.object({ done: z.boolean() }));
    expect(await snapshotsOf(schema)).toEqual({ written: 0, status: 'succeeded' });
    expect(await snapshotsOf(undefined)).toEqual({ written: 0, status: 'succeeded' });
    const review = current.evaluators.review({ when: () => true, reason: 'a person checks every answer' });
    expect(await snapshotsOf(current.evaluators.chain(schema, review))).toEqual({
      written: 1,
      status: 'needs_human',
    });
  });
});

/** `inner` as a process that dies once `dies()` is called: none of its store calls answers from then on. */
function dying(inner: Store) {
  let dead = false;
  const store = new Proxy(inner, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        dead ? new Promise(() => undefined) : (value as (...a: unknown[]) => unknown).apply(target, args);
    },
  });
  return { store, dies: () => (dead = true) };
}

describe('a run stopped for an approval, resumed with it, then dead in its next model call', () => {
  it('the event that continues the stop carries the tracker’s changes, not the tracker whole, and a resume replays it to the same end', async () => {
    const expected = await uninterrupted();
    const path = join(scratch, `approval-crash-${files++}.db`);
    const inner = sqliteStore({ path });
    const stopped = await loopOn(inner, [], { approvals: true }).run({ goal: 'go', runId: 'r' });
    const [pending] = stopped.pendingApprovals;
    const { store, dies } = dying(inner);
    let died: () => void = () => undefined;
    const dead = new Promise<void>((resolve) => (died = resolve));
    // Dies as the first model call after the approval begins: the decision's event was committed before it.
    const onCall = (call: number) => {
      if (call !== CHARGE_AT + 1) return;
      dies();
      died();
    };
    void loopOn(store, [], { approvals: true, onCall }).resume('r', {
      approvals: { [pending!.callId]: { approve: true, argumentsHash: pending!.argumentsHash } },
    });
    await dead;
    await freeLease(inner, 'r');
    const rows = await inner.readJournal('r', 0);
    const continuing = rows
      .filter((row) => row.kind === 'event')
      .map(
        (row) =>
          JSON.parse(row.body) as { seq: number; supersedes?: number; delta: { fields: Record<string, unknown> } },
      )
      .find((event) => event.supersedes !== undefined);
    expect(continuing).toBeDefined();
    const progress = continuing!.delta.fields.progress as { kind: string; triples?: Record<string, number> };
    expect(progress.kind).toBe('changes');
    expect(progress).not.toHaveProperty('snapshot');
    // The resume below replays that event: no snapshot stands after it.
    expect((await inner.latestSnapshot('r'))!.seq).toBeLessThan(continuing!.seq);
    await inner.close();

    const next = sqliteStore({ path });
    const requests: ModelRequest[] = [];
    try {
      const result = await loopOn(next, requests, { approvals: true }).resume('r');
      expectGoesOnAsUninterrupted(result, requests, expected);
    } finally {
      await next.close();
    }
  });
});

/**
 * A run paused during step `pausedAt` whose process dies once the run waits for the pause to be lifted (its store
 * calls never answer from the run's second look at the control: what it commits on seeing the pause is committed),
 * its lease freed. Returns the store, still open, with the pause still set.
 */
async function pausedRun(
  inner: Store,
  pausedAt: number,
  lib: Library = current,
  grouping?: { maxUncommittedSteps?: number; maxUncommittedMs?: number },
): Promise<number> {
  let dead = false;
  let calls = 0;
  let pausedSeen = 0;
  let sawPause: () => void = () => undefined;
  const waiting = new Promise<void>((resolve) => (sawPause = resolve));
  const store = new Proxy(inner, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        if (dead) return new Promise(() => undefined);
        const answer = (await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args)) as unknown;
        if (key === 'readControl' && (answer as { paused: string | null }).paused !== null && ++pausedSeen === 2) {
          dead = true;
          sawPause();
        }
        return answer;
      };
    },
  });
  const pause = (call: number) => {
    calls = Math.max(calls, call + 1);
    if (call === pausedAt) void inner.setPaused('maintenance');
  };
  void loopOn(store, [], { approvals: false, onCall: pause, grouping }, lib).run({ goal: 'go', runId: 'r' });
  await waiting;
  await freeLease(inner, 'r');
  return calls;
}

describe('a run paused, its process dead while it waited, resumed once the pause is lifted', () => {
  /** The paused run, resumed with the pause lifted: its journal's events and snapshot, the resume's requests and result. */
  async function pausedThenResumed(
    pausedAt: number,
    grouping: { maxUncommittedSteps?: number; maxUncommittedMs?: number },
  ) {
    const path = join(scratch, `paused-${files++}.db`);
    const inner = sqliteStore({ path, pausePollMs: 1 });
    const calls = await pausedRun(inner, pausedAt, current, grouping);
    const events = (await inner.readJournal('r', 0)).filter((row) => row.kind === 'event');
    const snapshot = await inner.latestSnapshot('r');
    await inner.close();
    const next = sqliteStore({ path });
    const requests: ModelRequest[] = [];
    try {
      await next.setPaused(null);
      const result = await loopOn(next, requests, { approvals: false }).resume('r');
      return { calls, events, snapshot, requests, result };
    } finally {
      await next.close();
    }
  }

  it.each([13, 21, 30])(
    'paused during step %i, a commit before every model call: seen before the next step; the resume replays no event, and its next requests are the uninterrupted run’s',
    async (pausedAt) => {
      const expected = await uninterrupted();
      const { calls, events, snapshot, requests, result } = await pausedThenResumed(pausedAt, {
        maxUncommittedSteps: 1,
      });
      expect(calls).toBe(pausedAt + 1);
      // The snapshot stands at the last event the journal holds: nothing after it to replay.
      expect(snapshot?.seq).toBe(events.at(-1)!.seq);
      expect(result.trace.find((event) => event.type === 'run-resume')).toMatchObject({
        fromSeq: events.at(-1)!.seq,
        replayedEvents: 0,
      });
      expect(requests.map((request) => request.messages)).toEqual(
        expected.requests.slice(calls).map((request) => request.messages),
      );
      expectSameEnd(result, expected.result);
    },
  );

  it.each([
    // Groups of 16 (the default; only the step bound decides here): commits before calls 0, 16, 32. Seen by the
    // commit before call 16: a snapshot there, no event replayed.
    [13, 16, 0],
    // Seen before the round with a write of call 29 (the charge), before the group's next commit: the session then
    // holds the round's calls, which a snapshot does not, so the resume replays the events since the one before.
    [21, 30, 4],
  ])(
    'paused during step %i, steps grouped: seen after call %i; the resume replays %i events and its next requests are the uninterrupted run’s',
    async (pausedAt, callsMade, replayed) => {
      const expected = await uninterrupted();
      const { calls, events, snapshot, requests, result } = await pausedThenResumed(pausedAt, {
        maxUncommittedMs: Infinity,
      });
      expect(calls).toBe(callsMade);
      // Every step the run made is committed before it waits: the resume asks for none of them again.
      expect(events.filter((row) => row.seq > snapshot!.seq)).toHaveLength(replayed);
      expect(result.trace.find((event) => event.type === 'run-resume')).toMatchObject({ replayedEvents: replayed });
      expect(requests.map((request) => request.messages)).toEqual(
        expected.requests.slice(calls).map((request) => request.messages),
      );
      expectSameEnd(result, expected.result);
    },
  );
});

const fixturePath = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'records-stops-8ff18da.json');
const OLD_PAUSED_AT = 21;

interface StoredRun {
  run: string;
  snapshot: StoreRow | null;
  journal: StoreRow[];
}

const storedRun = async (store: Store): Promise<StoredRun> => ({
  run: (await store.readRun('r'))!.body,
  snapshot: await store.latestSnapshot('r'),
  journal: await store.readJournal('r', 0),
});

/** A SQLite file holding `stored` as the older version wrote it, its lease free. */
async function loaded(stored: StoredRun, path: string): Promise<Store> {
  const store = sqliteStore({ path });
  const lease = { owner: 'fixture-loader', until: Date.now() + 60_000 };
  await store.createRun('r', stored.run, lease);
  await store.append('r', stored.journal, lease);
  if (stored.snapshot !== null) await store.writeSnapshot('r', stored.snapshot, lease);
  await store.releaseLease('r', lease.owner);
  return store;
}

describe('stops written by loopstate at 8ff18da (no snapshot at a pause, the tracker whole after a decision)', () => {
  // LOOPSTATE_FIXTURE_BUILD=/tmp/before-s8 (a build of 8ff18da): its own library runs the loops and stores the rows.
  it.runIf(process.env.LOOPSTATE_FIXTURE_BUILD !== undefined)('(writes the fixture)', async () => {
    const root = process.env.LOOPSTATE_FIXTURE_BUILD!;
    const lib = (await import(join(root, 'dist/src/index.js'))) as Library;
    const old = (await import(join(root, 'dist/src/adapters/sqlite/index.js'))) as { sqliteStore: typeof sqliteStore };
    const approvalStore = old.sqliteStore({ path: join(scratch, `old-approval-${files++}.db`) });
    await loopOn(approvalStore, [], { approvals: true }, lib).run({ goal: 'go', runId: 'r' });
    const pausedStore = old.sqliteStore({ path: join(scratch, `old-paused-${files++}.db`), pausePollMs: 1 });
    await pausedRun(pausedStore, OLD_PAUSED_AT, lib);
    const written = { approval: await storedRun(approvalStore), paused: await storedRun(pausedStore) };
    writeFileSync(fixturePath, `${JSON.stringify(written)}\n`);
    await approvalStore.close();
  });

  const fixture = () => JSON.parse(readFileSync(fixturePath, 'utf8')) as { approval: StoredRun; paused: StoredRun };

  it('a run waiting for approval: approved, it goes on as the uninterrupted run', async () => {
    const expected = await uninterrupted();
    const store = await loaded(fixture().approval, join(scratch, `fixture-approval-${files++}.db`));
    const requests: ModelRequest[] = [];
    try {
      const waiting = await loopOn(store, [], { approvals: true }).resume('r');
      expect(waiting.status).toBe('needs_human');
      const [pending] = waiting.pendingApprovals;
      const result = await loopOn(store, requests, { approvals: true }).resume('r', {
        approvals: { [pending!.callId]: { approve: true, argumentsHash: pending!.argumentsHash } },
      });
      expectGoesOnAsUninterrupted(result, requests, expected);
      expect(result.trace.filter((event) => event.type === 'approval-decided')).toHaveLength(1);
    } finally {
      await store.close();
    }
  });

  it('a paused run whose process died: the events since its last snapshot are replayed, to the same end', async () => {
    const expected = await uninterrupted();
    const stored = fixture().paused;
    const store = await loaded(stored, join(scratch, `fixture-paused-${files++}.db`));
    const requests: ModelRequest[] = [];
    try {
      await store.setPaused(null);
      const result = await loopOn(store, requests, { approvals: false }).resume('r');
      const replayed = result.trace.find((event) => event.type === 'run-resume');
      expect(replayed).toMatchObject({ fromSeq: stored.snapshot!.seq });
      expect((replayed as { replayedEvents: number }).replayedEvents).toBeGreaterThan(0);
      expect(requests.map((request) => request.messages)).toEqual(
        expected.requests.slice(OLD_PAUSED_AT + 1).map((request) => request.messages),
      );
      expectSameEnd(result, expected.result);
    } finally {
      await store.close();
    }
  });
});
