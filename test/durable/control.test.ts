/** Cancel, the store-wide pause (kill switch), and a finished run's recorded result. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type Store } from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock, type ScriptStep } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';

function loopOn(store: Store, script: ScriptStep[] = [toolCall('note', { text: 'a' }), reply('done')]) {
  const notes: string[] = [];
  const note = defineTool({
    name: 'note',
    description: 'Write a note',
    input: z.object({ text: z.string() }),
    access: 'write',
    execute: ({ text }) => {
      notes.push(text);
      return 'ok';
    },
  });
  const wipe = defineTool({
    name: 'wipe',
    description: 'Wipe',
    input: z.object({}),
    access: 'destructive',
    execute: () => 'wiped',
  });
  const model = scriptedModel(script);
  return {
    loop: createLoop({
      model,
      tools: [note, wipe],
      policy: { allow: ['read', 'write'] },
      clock: virtualClock(),
      store,
    }),
    notes,
    model,
  };
}

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('pause, the kill switch', () => {
  it('stops new steps of every run until lifted, then they go on', async () => {
    const store = memoryStore({ pausePollMs: 5 });
    const { loop, notes, model } = loopOn(store);
    await store.setPaused('incident 42');
    const running = loop.run({ goal: 'note a', runId: 'p1' });
    await tick(40);
    expect(model.calls).toHaveLength(0);
    expect(notes).toEqual([]);
    await store.setPaused(null);
    const result = await running;
    expect(result.stopReason).toBe('completed');
    expect(notes).toEqual(['a']);
  });

  it('a paused run can still be cancelled', async () => {
    const store = memoryStore({ pausePollMs: 5 });
    const { loop, model } = loopOn(store);
    await store.setPaused('maintenance');
    const running = loop.run({ goal: 'note a', runId: 'p2' });
    await tick(20);
    expect(await loop.cancel('p2')).toBeNull();
    const result = await running;
    expect(result.stopReason).toBe('cancelled');
    expect(model.calls).toHaveLength(0);
  });
});

describe('cancel', () => {
  it('records cancelled for a run waiting for approval; resuming returns that result', async () => {
    const store = memoryStore();
    const { loop } = loopOn(store, [toolCall('wipe', {})]);
    const stopped = await loop.run({ goal: 'wipe', runId: 'c1' });
    expect(stopped.status).toBe('needs_human');
    const cancelled = await loop.cancel('c1');
    expect(cancelled).toMatchObject({ status: 'failed', stopReason: 'cancelled' });
    expect((await loop.resume('c1')).stopReason).toBe('cancelled');
    await expect(
      loop.resume('c1', { approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } } }),
    ).rejects.toMatchObject({ code: 'approval_already_decided' });
  });

  it('cancels a run no process holds (crashed) without running anything', async () => {
    const store = memoryStore();
    const hang = () => new Promise<never>(() => undefined);
    const first = loopOn(store, [toolCall('note', { text: 'a' }), hang]);
    void first.loop.run({ goal: 'note a', runId: 'c2' });
    await tick(20);
    await freeLease(store, 'c2');
    const second = loopOn(store, []);
    const cancelled = await second.loop.cancel('c2');
    expect(cancelled?.stopReason).toBe('cancelled');
    expect(second.notes).toEqual([]);
    expect(cancelled?.usage.toolCalls).toBe(1);
  });

  it('is asked of the process that drives the run, which stops at its next step', async () => {
    const store = memoryStore({ pausePollMs: 5 });
    const { loop } = loopOn(store);
    await store.setPaused('hold');
    const running = loop.run({ goal: 'note a', runId: 'c3' });
    await tick(20);
    // Another loop object (another process, in effect) asks through the store.
    const other = loopOn(store, []);
    await store.requestCancel('c3');
    expect(await other.loop.cancel('c3').catch((error: unknown) => String(error))).toBeNull();
    await store.setPaused(null);
    expect((await running).stopReason).toBe('cancelled');
  });

  it('of a finished run returns its result unchanged', async () => {
    const { loop } = loopOn(memoryStore());
    const result = await loop.run({ goal: 'note a', runId: 'c4' });
    expect((await loop.cancel('c4'))?.stopReason).toBe(result.stopReason);
  });

  it('needs a store, and a known run', async () => {
    const plain = createLoop({ model: scriptedModel([]) });
    await expect(plain.cancel('x')).rejects.toMatchObject({ code: 'no_store' });
    await expect(plain.resume('x')).rejects.toMatchObject({ code: 'no_store' });
    const { loop } = loopOn(memoryStore());
    await expect(loop.cancel('nope')).rejects.toMatchObject({ code: 'run_not_found' });
    await loop.run({ goal: 'note a', runId: 'same' });
    await expect(loop.run({ goal: 'again', runId: 'same' })).rejects.toMatchObject({ code: 'run_exists' });
  });

  it('refuses to drive a run with a loop of other tools, tasks or plan setting', async () => {
    const store = memoryStore();
    const { loop } = loopOn(store, [toolCall('wipe', {})]);
    const stopped = await loop.run({ goal: 'wipe', runId: 'd1' });
    const other = createLoop({ model: scriptedModel([]), tools: [], store });
    await expect(
      other.resume('d1', { approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } } }),
    ).rejects.toMatchObject({ code: 'definition_changed' });
  });

  it('a cancel refused as definition_changed changes nothing: the run still waits, and its own loop approves it', async () => {
    const store = memoryStore();
    const { loop } = loopOn(store, [toolCall('wipe', {}), reply('wiped')]);
    const stopped = await loop.run({ goal: 'wipe', runId: 'd2' });
    const before = await store.readRun('d2');
    const other = createLoop({ model: scriptedModel([]), tools: [], store });
    await expect(other.cancel('d2')).rejects.toMatchObject({ code: 'definition_changed' });
    expect(await store.readRun('d2')).toEqual(before);
    expect(await store.readControl('d2')).toMatchObject({ cancelRequested: false });
    const done = await loop.resume('d2', { approvals: { [stopped.pendingApprovals[0]!.callId]: { approve: true } } });
    expect(done.stopReason, done.detail).toBe('completed');
  });
});

describe('pause on SQLite', () => {
  it('is seen by a run driven through another connection to the same file', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const { sqliteStore } = await import('loopstate/sqlite');
    const dir = mkdtempSync(join(tmpdir(), 'loopstate-pause-'));
    const path = join(dir, 'loops.db');
    const operator = sqliteStore({ path });
    const worker = sqliteStore({ path, pausePollMs: 5 });
    try {
      const { loop, model } = loopOn(worker);
      await operator.setPaused('deploy in progress');
      const running = loop.run({ goal: 'note a', runId: 's1' });
      await tick(40);
      expect(model.calls).toHaveLength(0);
      await operator.setPaused(null);
      expect((await running).stopReason).toBe('completed');
    } finally {
      await operator.close();
      await worker.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
