/**
 * What a durable run commits, and when, with `durable.maxUncommittedSteps` 0 or 1 (a commit before every model
 * call: commit-groups.test.ts has the commits grouped across steps), on a real SQLite file: one commit a step for a round of
 * idempotent calls (the reply, its event, the outcomes and the round's event together, before the next
 * model call), two with a call that is not idempotent (the reply with the intents before it runs, the
 * outcomes after), no row a resume would never read, and the pause and cancel flags answered by the
 * commit itself rather than asked again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Store, StoreRow } from 'loopstate';
import { sqliteStore } from 'loopstate/sqlite';
import {
  commitsPerStep,
  counted,
  groupedLoop,
  kindsIn,
  removeScratch,
  type Counted,
  type Round,
} from './counted-store.js';

afterAll(removeScratch);

describe.each([0, 1])('commits of a durable run, maxUncommittedSteps %i', (maxUncommittedSteps) => {
  function loopOn(
    counts: Counted,
    rounds: Round[],
    onModelCall?: (step: number) => Promise<void>,
    snapshotEvery?: number,
  ) {
    // No time bound: only the step bound decides.
    return groupedLoop(counts, rounds, onModelCall, snapshotEvery, { maxUncommittedSteps, maxUncommittedMs: Infinity });
  }

  it('a step of idempotent calls commits once, with the reply, the outcomes and both events; nothing a resume never reads', async () => {
    const counts = counted();
    const result = await loopOn(
      counts,
      Array.from({ length: 6 }, (): Round => ['lookup', 'lookup']),
    ).run({
      goal: 'read',
      runId: 'reads',
    });
    expect(result.stopReason).toBe('completed');
    expect(commitsPerStep(counts)).toEqual([1, 1, 1, 1, 1, 1]);
    // Each such commit: the reply's event and the round's event, no reply, intent or outcome rows.
    expect(counts.appends.slice(1, 7)).toEqual(Array.from({ length: 6 }, () => ['event', 'event']));
    const kinds = await kindsIn(counts.store, 'reads');
    expect(kinds.filter((kind) => kind !== 'event' && kind !== 'trace')).toEqual([]);
    // The commit before each model call answered the control: none asked again.
    expect(counts.readControls).toBe(0);
    await counts.store.close();
  });

  it('a snapshot is written after its step’s one commit, not with a commit of its own in the middle of the step', async () => {
    const counts = counted();
    // Every 3 events: after a reply's event (mid-step, before its round of reads) as often as after a round's.
    const result = await loopOn(
      counts,
      Array.from({ length: 8 }, (): Round => ['lookup']),
      undefined,
      3,
    ).run({ goal: 'read', runId: 'snapshots' });
    expect(result.stopReason).toBe('completed');
    expect(counts.snapshots.length).toBeGreaterThanOrEqual(3);
    expect(commitsPerStep(counts)).toEqual(Array.from({ length: 8 }, () => 1));
    // Each written once its event (and the chunks before it) were committed, and the latest is the one read.
    for (const snapshot of counts.snapshots) {
      expect(snapshot.committed).toContain(snapshot.seq);
      expect(snapshot.committed).toContain(snapshot.seq + 1); // its trace chunk
    }
    // sqliteStore writes each in the transaction of the commit that holds its events: no transaction of its own.
    expect(counts.snapshots.every((snapshot) => snapshot.inAppend)).toBe(true);
    expect(counts.writeSnapshots).toBe(0);
    expect((await counts.store.latestSnapshot('snapshots'))?.seq).toBe(counts.snapshots.at(-1)!.seq);
    await counts.store.close();
  });

  it('a wrapper that spreads sqliteStore and replaces writeSnapshot (an encrypting one) is given every snapshot there: none is stored unsealed', async () => {
    // As a user's wrapper of 0.1.0 would be: its append passes every argument on, its writeSnapshot and reads
    // transform bodies. The inner store's mark names its own writeSnapshot, not the wrapper's, so no snapshot may be
    // written by the inner append unseen (it would be stored as plain text the wrapper's reads refuse).
    const folder = mkdtempSync(join(tmpdir(), 'loopstate-wrapped-'));
    const inner = sqliteStore({ path: join(folder, 'wrapped.db') });
    const seal = (row: StoreRow): StoreRow => ({ ...row, body: `sealed:${row.body}` });
    const open = (row: StoreRow): StoreRow => {
      if (!row.body.startsWith('sealed:')) throw new Error(`plain text row at seq ${row.seq} kind ${row.kind}`);
      return { ...row, body: row.body.slice('sealed:'.length) };
    };
    let sealedSnapshots = 0;
    const wrapped: Store = {
      ...inner,
      pausePollMs: inner.pausePollMs,
      append: (runId, rows, ...rest) => inner.append(runId, rows.map(seal), ...rest),
      async writeSnapshot(runId, row, lease) {
        sealedSnapshots += 1;
        return inner.writeSnapshot(runId, seal(row), lease);
      },
      async readJournal(runId, afterSeq, kinds) {
        return (await inner.readJournal(runId, afterSeq, kinds)).map(open);
      },
      async latestSnapshot(runId) {
        const row = await inner.latestSnapshot(runId);
        return row === null ? null : open(row);
      },
    };
    const counts: Counted = { ...counted(), store: wrapped };
    const rounds = Array.from({ length: 8 }, (): Round => ['lookup']);
    const result = await loopOn(counts, rounds, undefined, 3).run({ goal: 'read', runId: 'wrapped' });
    expect(result.stopReason).toBe('completed');
    expect(sealedSnapshots).toBeGreaterThanOrEqual(3);
    const latest = await wrapped.latestSnapshot('wrapped');
    expect(latest?.kind).toBe('snapshot');
    expect(JSON.parse(latest!.body)).toBeTypeOf('object');
    await inner.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('a store whose append does not take a snapshot (one written before it could) is given each with writeSnapshot, after its events', async () => {
    const counts = counted();
    const inner = counts.store;
    // An append of five arguments, as every store had: the snapshot argument is not passed on, nor acknowledged.
    counts.store = {
      ...inner,
      pausePollMs: inner.pausePollMs,
      append: (runId, rows, lease, runBody, finishedAt) => inner.append(runId, rows, lease, runBody, finishedAt),
    };
    const rounds = Array.from({ length: 8 }, (): Round => ['lookup']);
    const result = await loopOn(counts, rounds, undefined, 3).run({ goal: 'read', runId: 'older-store' });
    expect(result.stopReason).toBe('completed');
    expect(counts.writeSnapshots).toBeGreaterThanOrEqual(3);
    expect(counts.snapshots.every((snapshot) => !snapshot.inAppend)).toBe(true);
    for (const snapshot of counts.snapshots) expect(snapshot.committed).toContain(snapshot.seq);
    expect((await counts.store.latestSnapshot('older-store'))?.seq).toBe(counts.snapshots.at(-1)!.seq);
    await counts.store.close();
  });

  it('a step with a call that is not idempotent commits twice: the reply with the intent before it runs, the outcome after', async () => {
    const counts = counted();
    const result = await loopOn(
      counts,
      Array.from({ length: 4 }, (): Round => ['charge']),
    ).run({
      goal: 'charge',
      runId: 'writes',
    });
    expect(result.stopReason).toBe('completed');
    expect(commitsPerStep(counts)).toEqual([2, 2, 2, 2]);
    // The intent is committed with the reply's event, before the charge runs.
    expect(counts.appends.filter((kinds) => kinds.includes('intent'))).toEqual(
      Array.from({ length: 4 }, () => ['event', 'intent']),
    );
    const kinds = await kindsIn(counts.store, 'writes');
    expect(kinds.filter((kind) => kind === 'intent')).toHaveLength(4);
    expect(kinds.filter((kind) => kind === 'model' || kind === 'tool-result')).toEqual([]);
    // Before a round with a write, the control is read (the intents' commit comes after that check).
    expect(counts.readControls).toBe(4);
    await counts.store.close();
  });

  it('a step whose write runs beside a read commits three times: the read’s outcome at once, while the write still runs', async () => {
    const counts = counted();
    const result = await loopOn(
      counts,
      Array.from({ length: 3 }, (): Round => ['lookup', 'charge']),
    ).run({
      goal: 'both',
      runId: 'mixed',
    });
    expect(result.stopReason).toBe('completed');
    expect(commitsPerStep(counts)).toEqual([3, 3, 3]);
    // Only the charge has an intent, committed with the reply's event before either call runs.
    expect(counts.appends.filter((kinds) => kinds.includes('intent'))).toEqual(
      Array.from({ length: 3 }, () => ['event', 'intent']),
    );
    await counts.store.close();
  });

  it('a store whose append answers nothing is asked readControl before each step instead', async () => {
    const counts = counted(true);
    const result = await loopOn(
      counts,
      Array.from({ length: 5 }, (): Round => ['lookup']),
    ).run({
      goal: 'read',
      runId: 'silent',
    });
    expect(result.stopReason).toBe('completed');
    // One before each model call (six) and before the evaluation of the answer; none before the rounds of reads.
    expect(counts.appendsAtModelCall).toHaveLength(6);
    expect(counts.readControls).toBe(7);
    await counts.store.close();
  });

  it('a cancel asked for during a model call is seen before the next step, through the commit’s answer', async () => {
    const counts = counted();
    let cancelled = false;
    const loop = loopOn(
      counts,
      Array.from({ length: 6 }, (): Round => ['lookup']),
      async (step) => {
        if (step !== 2) return;
        // Another process asks while the model is thinking.
        expect(await counts.store.requestCancel('to-cancel')).toBe(true);
        cancelled = true;
      },
    );
    const result = await loop.run({ goal: 'read', runId: 'to-cancel' });
    expect(cancelled).toBe(true);
    expect(result.stopReason).toBe('cancelled');
    // The third reply's round of reads ran (it is the rest of that step); no fourth model call was made.
    expect(counts.appendsAtModelCall).toHaveLength(3);
    expect(result.usage.toolCalls).toBe(3);
    expect(counts.readControls).toBe(0);
    await counts.store.close();
  });
});
