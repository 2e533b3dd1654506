/**
 * A model call that does not answer at once is where a run waits and where a process mostly dies. The commit made
 * while it is out takes a snapshot of where the run stands, so a resume from there replays no event: it restores
 * the machine and the session from that snapshot, and goes on exactly as the uninterrupted run. A session that moved
 * since its last event (here: the prompt trace recorded before the call) gets no such snapshot, and its resume
 * replays from the snapshot before, as always. On real SQLite files, the dead process stood in for by a run whose
 * model call never answers, its lease freed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLoop, memoryStore, type LoopConfig, type ModelRequest, type Store } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';
import { lookup, lookupModel } from './lookup-loop.js';
import { expectSameEnd } from './same-end.js';

const scratch = mkdtempSync(join(tmpdir(), 'loopstate-snapshot-in-wait-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const STEPS = 50;

const loopOn = (
  store: Store,
  hangAt: number | null,
  options: { prompts?: boolean; onHang?: () => void; requests?: ModelRequest[] } = {},
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
    ...(options.prompts ? { trace: { prompts: true } } : {}),
  } satisfies LoopConfig);

/**
 * A run hung at call `hangAt` on a SQLite file once the commit made in that call's wait (and the snapshot written
 * after it, if any) is done, its lease freed. The commit's append and snapshot are awaited, not a time.
 */
async function hungRun(name: string, hangAt: number, prompts: boolean) {
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
  void loopOn(store, hangAt, { prompts, onHang: () => (hanging = true) }).run({ goal: 'go', runId: 'r' });
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

const uninterrupted = async (prompts: boolean) => {
  const requests: ModelRequest[] = [];
  const result = await loopOn(memoryStore(), null, { prompts, requests }).run({ goal: 'go', runId: 'r' });
  return { result, requests };
};

async function resumed(path: string, prompts: boolean) {
  const store = sqliteStore({ path });
  const requests: ModelRequest[] = [];
  try {
    const result = await loopOn(store, null, { prompts, requests }).resume('r');
    return { result, requests };
  } finally {
    await store.close();
  }
}

describe('a snapshot taken while a model call is out', () => {
  it.each([21, 30, 37])(
    'hung at call %i: the resume replays no event, and its next request is the uninterrupted run’s',
    async (hangAt) => {
      const expected = await uninterrupted(false);
      expect(expected.result.stopReason).toBe('completed');
      const hung = await hungRun(`plain-${hangAt}`, hangAt, false);
      // The snapshot stands at the last event the journal holds: nothing after it to replay.
      expect(hung.snapshotSeq).toBe(hung.lastEventSeq);
      const { result, requests } = await resumed(hung.path, false);
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
});
