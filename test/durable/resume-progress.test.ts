/**
 * A plain resume stands exactly where the run's last event left it, so the next event record carries only
 * the no-progress tracker's changes since then, not every (call, result) triple of the task again; a later
 * resume still counts every observation as the uninterrupted run did (the duplicate-observation signal
 * stops it at the same step).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type Model, type Store } from 'loopstate';
import { virtualClock } from 'loopstate/testing';
import { freeLease } from './dead-owner.js';

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up',
  input: z.object({ key: z.string() }),
  access: 'read',
  // The same result every time: each call is another sighting of one observation.
  execute: () => 'the same value',
});

/** The same lookup every step; the step at `hangAt` never answers. */
function model(hangAt: number | null, onHang: () => void = () => undefined): Model {
  return {
    id: 'scripted',
    generate(request) {
      const given = request.messages.filter((message) => message.role === 'assistant').length;
      if (given === hangAt) {
        onHang();
        return new Promise(() => undefined);
      }
      return Promise.resolve({
        text: null,
        toolCalls: [{ id: `c${given}`, name: 'lookup', arguments: JSON.stringify({ key: 'k' }) }],
        usage: { inputTokens: 10, outputTokens: 2 },
      });
    },
  };
}

const loopOn = (store: Store, hangAt: number | null, onHang?: () => void) =>
  createLoop({
    model: model(hangAt, onHang),
    tools: [lookup],
    store,
    clock: virtualClock(),
    durable: { snapshotEvery: 4 },
    limits: { maxSteps: 40, maxToolCalls: 40 },
    noProgress: { repeatedToolCall: 1_000, unchangedState: 1_000, duplicateObservation: 12 },
  });

async function hangAt(store: Store, step: number, start: (loop: ReturnType<typeof loopOn>) => unknown) {
  let hung: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => (hung = resolve));
  void start(loopOn(store, step, hung));
  await reached;
  await freeLease(store, 'r');
}

type Progress = { kind: string; snapshot?: unknown };
const progressOf = (body: string) =>
  (JSON.parse(body) as { delta?: { fields: { progress: Progress } } }).delta?.fields.progress;

describe('the no-progress tracker across resumes', () => {
  it('after a resume the next record carries the changes only, and the run stops where the uninterrupted one does', async () => {
    const expected = await loopOn(memoryStore(), null).run({ goal: 'go', runId: 'r' });
    expect(expected.stopReason).toBe('no_progress');
    expect(expected.detail).toContain('duplicate_observation');
    const store = memoryStore();
    await hangAt(store, 5, (loop) => loop.run({ goal: 'go', runId: 'r' }));
    const lastBefore = Math.max(...(await store.readJournal('r', 0)).map((row) => row.seq));
    await hangAt(store, 9, (loop) => loop.resume('r'));
    const after = (await store.readJournal('r', lastBefore)).filter((row) => row.kind === 'event');
    expect(after.length).toBeGreaterThan(0);
    // The first record after the resume: the tracker's changes, not the whole tracker.
    expect(progressOf(after[0]!.body)).toMatchObject({ kind: 'changes' });
    const result = await loopOn(store, null).resume('r');
    expect(result.stopReason).toBe(expected.stopReason);
    expect(result.detail).toBe(expected.detail);
    expect(result.steps).toBe(expected.steps);
    expect(result.messages).toEqual(expected.messages);
  });
});
