/**
 * Limits switched off with `Infinity` survive a resume. A snapshot goes through JSON, where Infinity
 * becomes null, and a guard comparing a count with null is always past it: a resumed run stopped at
 * once as deadline_exceeded (found by `npm run bench:resume`).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, memoryStore, type Model, type Store } from 'loopstate';
import { freeLease } from './dead-owner.js';

const STEPS = 12;

function model(hangAt: number | null, onHang: () => void, calls: { made: number }): Model {
  return {
    id: 'scripted',
    generate() {
      calls.made += 1;
      const call = calls.made;
      const usage = { inputTokens: 50, outputTokens: 10 };
      if (call === hangAt) {
        onHang();
        return new Promise(() => undefined);
      }
      if (call < STEPS)
        return Promise.resolve({
          text: null,
          toolCalls: [{ id: `c${call}`, name: 'lookup', arguments: `{"key":"k${call}"}` }],
          usage,
        });
      return Promise.resolve({ text: 'done', toolCalls: [], usage });
    },
  };
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up.',
  input: z.object({ key: z.string() }),
  access: 'read',
  execute: ({ key }) => `value of ${key}`,
});

function loopOn(store: Store, generate: Model) {
  return createLoop({
    model: generate,
    tools: [lookup],
    store,
    // maxUncommittedSteps 1: a commit before every model call (the journal these cases hang or crash on).
    durable: { snapshotEvery: 2, maxUncommittedSteps: 1 },
    limits: {
      maxSteps: STEPS + 1,
      deadlineMs: Infinity,
      maxInputTokens: Infinity,
      maxOutputTokens: Infinity,
      maxCostUsd: Infinity,
      maxToolCalls: Infinity,
    },
  });
}

describe('a resumed run whose limits are switched off', () => {
  it('keeps them switched off and completes', async () => {
    const store = memoryStore();
    const calls = { made: 0 };
    let hung: () => void = () => undefined;
    const hanging = new Promise<void>((resolve) => (hung = resolve));
    void loopOn(store, model(STEPS, hung, calls)).run({ goal: 'go', runId: 'long' });
    await hanging;
    await freeLease(store, 'long');
    // The journal serves the first STEPS − 1 calls; only the last one is made again.
    calls.made = STEPS - 1;
    const result = await loopOn(
      store,
      model(null, () => undefined, calls),
    ).resume('long');
    expect(result.stopReason).toBe('completed');
    expect(result.steps).toBe(STEPS);
    expect(calls.made).toBe(STEPS);
    const runStart = result.trace.find((event) => event.type === 'run-start');
    expect(runStart?.type === 'run-start' ? runStart.limits : null).toMatchObject({
      deadlineMs: null,
      maxCostUsd: null,
    });
  });
});

describe('snapshots of a long run', () => {
  it('never cost more than the journal they save re-applying, so a step costs the same late in a run', async () => {
    const store = memoryStore();
    let snapshotBytes = 0,
      largestSnapshot = 0,
      snapshots = 0,
      journalBytes = 0;
    const counted: Store = Object.create(store) as Store;
    counted.writeSnapshot = (runId, row, lease) => {
      snapshots += 1;
      snapshotBytes += row.body.length;
      largestSnapshot = Math.max(largestSnapshot, row.body.length);
      return store.writeSnapshot(runId, row, lease);
    };
    counted.append = (runId, rows, lease, runBody) => {
      for (const row of rows) journalBytes += row.body.length;
      return store.append(runId, rows, lease, runBody);
    };
    const steps = 150;
    const calls = { made: 0 };
    const long: Model = {
      ...model(null, () => undefined, calls),
      generate: () => {
        calls.made += 1;
        const usage = { inputTokens: 50, outputTokens: 10 };
        return Promise.resolve(
          calls.made < steps
            ? {
                text: null,
                toolCalls: [{ id: `c${calls.made}`, name: 'lookup', arguments: `{"key":"k${calls.made}"}` }],
                usage,
              }
            : { text: 'done', toolCalls: [], usage },
        );
      },
    };
    const result = await createLoop({
      model: long,
      tools: [lookup],
      store: counted,
      durable: { snapshotEvery: 2, maxUncommittedSteps: 1 },
      limits: { maxSteps: steps, maxToolCalls: steps },
    }).run({ goal: 'go', runId: 'long' });
    expect(result.stopReason).toBe('completed');
    // A snapshot holds no history (the transcript is in the events, the trace in chunks): it stays small
    // however long the run, so it is written every `snapshotEvery` events once the journal since the last
    // one is as large as it.
    expect(snapshots).toBeGreaterThan(10);
    expect(largestSnapshot).toBeLessThan(8_000);
    // Each snapshot waits for as many journal bytes as the one before it, so together they stay within
    // the journal's size plus the first (small) one: twice the journal is a safe bound.
    expect(snapshotBytes).toBeLessThanOrEqual(2 * journalBytes);
  });
});
