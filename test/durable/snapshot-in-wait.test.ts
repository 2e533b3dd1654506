/**
 * A model call that does not answer at once is where a run waits and where a process mostly dies. The commit made
 * while it is out takes a snapshot of where the run stands, so a resume from there replays no event: it restores
 * the machine and the session from that snapshot, and goes on exactly as the uninterrupted run. A session that moved
 * since its last event (here: its context trimmed to a ceiling before the call) gets no such snapshot, and its resume
 * replays from the snapshot before, as always. On real SQLite files, the dead process stood in for by a run whose
 * model call never answers, its lease freed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLoop, memoryStore, type LoopConfig, type Model, type ModelRequest, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';
import { lookup, lookupModel } from './lookup-loop.js';
import { expectSameEnd } from './same-end.js';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-snapshot-in-wait-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const STEPS = 50;
/** A context ceiling (tokens a request) the conversation passes after a few steps. */
const CEILING = 600;

const loopOn = (
  store: Store,
  hangAt: number | null,
  options: { ceiling?: number; onHang?: () => void; requests?: ModelRequest[] } = {},
) =>
  createLoop({
    model: lookupModel((call) => (call < STEPS ? `k${call}` : null), hangAt, options.onHang, options.requests),
    tools: [lookup],
    store,
    clock: virtualClock(),
    // Every step's commit waits for a later one (no bound of time under load): the steps since the run's first
    // commit are committed in the hanging call's wait, as the bench's grouped steps are.
    durable: { snapshotEvery: 8, maxUncommittedSteps: 1_000, maxUncommittedMs: Infinity },
    limits: { maxSteps: STEPS + 5, maxToolCalls: STEPS + 5 },
    ...(options.ceiling === undefined ? {} : { context: { maxInputTokensPerCall: options.ceiling, keepTurns: 1 } }),
  } satisfies LoopConfig);

/**
 * A run hung at call `hangAt` on a SQLite file once the commit made in that call's wait (and the snapshot written
 * after it, if any) is done, its lease freed. The commit's append and snapshot are awaited, not a time.
 */
async function hungRun(name: string, hangAt: number, ceiling?: number) {
  const path = join(scratch, `${name}.db`);
  const inner = sqliteStore({ path });
  let hanging = false;
  const writes: Promise<unknown>[] = [];
  let waitCommitted: () => void = () => undefined;
  const committed = new Promise<void>((resolve) => (waitCommitted = resolve));
  // The store as the run sees it: the writes made once the call hangs are kept to be awaited.
  const store = new Proxy(inner, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (key !== 'append' && key !== 'writeSnapshot') return value;
      return (...args: unknown[]) => {
        const written = (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (hanging) {
          writes.push(written);
          if (key === 'append') void written.then(() => waitCommitted());
        }
        return written;
      };
    },
  });
  void loopOn(store, hangAt, { ceiling, onHang: () => (hanging = true) }).run({ goal: 'go', runId: 'r' });
  await committed;
  // The snapshot (if one was taken) is written right after that append, in the same commit.
  await new Promise((resolve) => setImmediate(resolve));
  await Promise.all(writes);
  await freeLease(inner, 'r');
  const snapshot = await inner.latestSnapshot('r');
  const events = (await inner.readJournal('r', 0)).filter((row) => row.kind === 'event');
  await inner.close();
  return { path, snapshotSeq: snapshot?.seq ?? 0, lastEventSeq: events.at(-1)!.seq };
}

const uninterrupted = async (ceiling?: number) => {
  const requests: ModelRequest[] = [];
  const result = await loopOn(memoryStore(), null, { ceiling, requests }).run({ goal: 'go', runId: 'r' });
  return { result, requests };
};

async function resumed(path: string, ceiling?: number) {
  const store = sqliteStore({ path });
  const requests: ModelRequest[] = [];
  try {
    const result = await loopOn(store, null, { ceiling, requests }).resume('r');
    return { result, requests };
  } finally {
    await store.close();
  }
}

describe('a snapshot taken while a model call is out', () => {
  it.each([21, 30, 37])(
    'hung at call %i: the resume replays no event, and its next request is the uninterrupted run’s',
    async (hangAt) => {
      const expected = await uninterrupted();
      expect(expected.result.stopReason).toBe('completed');
      const hung = await hungRun(`plain-${hangAt}`, hangAt);
      // The snapshot stands at the last event the journal holds: nothing after it to replay.
      expect(hung.snapshotSeq).toBe(hung.lastEventSeq);
      const { result, requests } = await resumed(hung.path);
      const resume = result.trace.find((event) => event.type === 'run-resume');
      expect(resume).toMatchObject({ fromSeq: hung.lastEventSeq, replayedEvents: 0 });
      // The next request is the one the uninterrupted run made at that call, and so is every one after it.
      expect(requests[0]!.messages).toEqual(expected.requests[hangAt]!.messages);
      expect(requests.map((request) => request.messages)).toEqual(
        expected.requests.slice(hangAt).map((request) => request.messages),
      );
      expectSameEnd(result, expected.result);
    },
  );

  it('a session that moved before the call (its context trimmed to the ceiling) gets none: the resume replays as before', async () => {
    // The model counts its calls itself (a trimmed conversation no longer does): call n asks for k<n>.
    const counting = (from: number, hangAt: number | null, onHang?: () => void, requests?: ModelRequest[]): Model => {
      let call = from;
      return {
        id: 'counting',
        generate(request) {
          requests?.push(request);
          const n = call++;
          if (n === hangAt) {
            onHang?.();
            return new Promise(() => undefined);
          }
          const usage = { inputTokens: 10, outputTokens: 2 };
          if (n >= STEPS) return Promise.resolve({ text: 'done', toolCalls: [], usage });
          const toolCalls = [{ id: `c${n}`, name: 'lookup', arguments: JSON.stringify({ key: `k${n}` }) }];
          return Promise.resolve({ text: null, toolCalls, usage });
        },
      };
    };
    const trimmedLoop = (store: Store, model: Model) =>
      createLoop({
        model,
        tools: [lookup],
        store,
        clock: virtualClock(),
        durable: { snapshotEvery: 8, maxUncommittedSteps: 1_000, maxUncommittedMs: Infinity },
        limits: { maxSteps: STEPS + 5, maxToolCalls: STEPS + 5 },
        context: { maxInputTokensPerCall: CEILING, keepTurns: 1 },
      });
    const expectedRequests: ModelRequest[] = [];
    const expected = await trimmedLoop(memoryStore(), counting(0, null, undefined, expectedRequests)).run({
      goal: 'go',
      runId: 'r',
    });
    expect(expected.stopReason).toBe('completed');
    // The calls whose conversation was trimmed just before them (the step-start before each trim is its step's).
    const trimmedCalls: number[] = [];
    let step = 0;
    for (const event of expected.trace) {
      if (event.type === 'step-start') step = event.step;
      if (event.type === 'context-trimmed') trimmedCalls.push(step - 1);
    }
    const hangAt = trimmedCalls.find((call) => call >= 20)!;
    expect(hangAt).toBeDefined();
    const path = join(scratch, 'trimmed.db');
    const inner = sqliteStore({ path });
    let hung: () => void = () => undefined;
    const hanging = new Promise<void>((resolve) => (hung = resolve));
    void trimmedLoop(inner, counting(0, hangAt, hung)).run({ goal: 'go', runId: 'r' });
    await hanging;
    // The wait's commit (its timer was set before this one): the group of steps before the call, no snapshot.
    await new Promise((resolve) => setTimeout(resolve, 0));
    await inner.close().catch(() => undefined);
    const reopened = sqliteStore({ path });
    await freeLease(reopened, 'r');
    const requests: ModelRequest[] = [];
    const result = await trimmedLoop(reopened, counting(hangAt, null, undefined, requests)).resume('r');
    await reopened.close();
    const resume = result.trace.find((event) => event.type === 'run-resume') as { replayedEvents: number };
    expect(resume.replayedEvents).toBeGreaterThan(0);
    expect(requests.map((request) => request.messages)).toEqual(
      expectedRequests.slice(hangAt).map((request) => request.messages),
    );
    expectSameEnd(result, expected);
  });
});
