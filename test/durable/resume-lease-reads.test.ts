/**
 * A resume reads the run's row twice on its way to the next model call (the record, then again under the
 * lease), not three times: the lease is taken over from the owner seen with the record, and the row is read
 * again only when that fails. A dead owner's lease is taken over all the same; a live one's is refused.
 */
import { execFileSync } from 'node:child_process';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, RunAccessError, type Model, type Store } from 'loopstate';
import { freeLease } from './dead-owner.js';

const lookup = defineTool({
  name: 'lookup',
  description: 'Look something up.',
  input: z.object({}),
  access: 'read',
  execute: () => 'found',
});

/** Two steps: a lookup, then the answer; the second call hangs when `hang` is set (a process that died there). */
function model(hang: boolean): Model {
  return {
    id: 'lease-reads',
    async generate(request) {
      const call = request.messages.filter((message) => message.role === 'assistant').length + 1;
      const usage = { inputTokens: 10, outputTokens: 5 };
      if (call === 1) return { text: null, toolCalls: [{ id: 'c1', name: 'lookup', arguments: '{}' }], usage };
      if (hang) return new Promise(() => undefined);
      return { text: 'done', toolCalls: [], usage };
    },
  };
}

/** The store, with the reads of the run's row counted. */
function counting(store: Store): { store: Store; readRuns: () => number } {
  let readRuns = 0;
  return {
    store: {
      ...store,
      pausePollMs: store.pausePollMs,
      async readRun(runId) {
        readRuns += 1;
        return store.readRun(runId);
      },
    },
    readRuns: () => readRuns,
  };
}

const loopOn = (store: Store, hang: boolean) =>
  createLoop({
    model: model(hang),
    store,
    tools: [lookup],
    limits: { maxSteps: 2 },
    noProgress: { unchangedState: 1_000 },
  });

/** A run left at its second model call by a process that is gone. */
async function hung(store: Store, runId: string): Promise<void> {
  let called: () => void = () => undefined;
  const calledTwice = new Promise<void>((resolve) => (called = resolve));
  let calls = 0;
  void createLoop({
    model: {
      id: 'lease-reads',
      generate: (request) => {
        if (++calls === 2) called();
        return model(true).generate(request);
      },
    },
    store,
    tools: [lookup],
    limits: { maxSteps: 2 },
    noProgress: { unchangedState: 1_000 },
  }).run({ goal: 'go', runId });
  await calledTwice;
}

describe('the lease a resume takes', () => {
  it('reads the run row twice before the next model call (was three times), the lease free', async () => {
    const inner = memoryStore();
    await hung(inner, 'free');
    await freeLease(inner, 'free');
    const { store, readRuns } = counting(inner);
    let atCall = -1;
    const result = await createLoop({
      model: {
        id: 'lease-reads',
        generate: (request) => {
          atCall = readRuns();
          return model(false).generate(request);
        },
      },
      store,
      tools: [lookup],
      limits: { maxSteps: 2 },
      noProgress: { unchangedState: 1_000 },
    }).resume('free');
    expect(result.stopReason).not.toBe('fatal_error');
    expect(result.steps).toBe(2);
    expect(atCall).toBe(2);
  });

  it("takes a dead process's lease over without reading the row a third time", async () => {
    const inner = memoryStore();
    await hung(inner, 'dead');
    const held = (await inner.readRun('dead'))!;
    // A process of this host that has exited: its pid, in an owner id of the form the loop writes.
    const deadPid = Number(execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']));
    const deadOwner = `${hostname()}:${deadPid}:00000000.00000000`;
    await inner.releaseLease('dead', held.leaseOwner!);
    expect(await inner.acquireLease('dead', { owner: deadOwner, until: Date.now() + 600_000 }, Date.now())).toBe(true);
    const { store, readRuns } = counting(inner);
    const result = await loopOn(store, false).resume('dead');
    expect(result.steps).toBe(2);
    // Record, again under the lease; and no more at the end than before this change (the release reads none).
    expect(readRuns()).toBe(2);
  });

  it("refuses a live owner's lease (run_busy, naming the holder)", async () => {
    const inner = memoryStore();
    await hung(inner, 'live');
    const { store } = counting(inner);
    const refused = await loopOn(store, false)
      .resume('live')
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(RunAccessError);
    expect((refused as RunAccessError).code).toBe('run_busy');
    expect((refused as RunAccessError).message).toContain(`process ${process.pid} on`);
  });

  it('a lease that changed hands after the record was read: read again, and taken over when that holder is dead', async () => {
    const inner = memoryStore();
    await hung(inner, 'moved');
    await freeLease(inner, 'moved');
    const deadPid = Number(execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']));
    const deadOwner = `${hostname()}:${deadPid}:00000000.00000001`;
    let moved = false;
    const { store, readRuns } = counting({
      ...inner,
      pausePollMs: inner.pausePollMs,
      // Between the resume's read and its lease, a process took the lease, and died.
      async acquireLease(runId, lease, now, takeOverFrom) {
        if (!moved) {
          moved = true;
          expect(await inner.acquireLease(runId, { owner: deadOwner, until: now + 600_000 }, now)).toBe(true);
        }
        return inner.acquireLease(runId, lease, now, takeOverFrom);
      },
    });
    const result = await loopOn(store, false).resume('moved');
    expect(moved).toBe(true);
    expect(result.steps).toBe(2);
    expect(readRuns()).toBe(3);
  });
});
