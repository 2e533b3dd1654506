/**
 * A run's abort signal is made only when something reads it (a tool's, an evaluator's or a model adapter's
 * own signal is another, made on first read too): a run nobody asks makes no `AbortController` at all, and
 * one that is read hears cancel and the deadline as before.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, evaluators, type Evaluator, type Model } from 'loopstate';

const USAGE = { inputTokens: 10, outputTokens: 5 };

/** A model that calls `lookup` once, then answers JSON; it never reads its request's signal. */
function twoStepModel(): Model {
  let calls = 0;
  return {
    id: 'signal-test',
    generate: () =>
      Promise.resolve(
        calls++ === 0
          ? { text: null, toolCalls: [{ id: 'call_1', name: 'lookup', arguments: '{"key":"k"}' }], usage: USAGE }
          : { text: '{"done":true}', toolCalls: [], usage: USAGE },
      ),
  };
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a key up.',
  input: z.object({ key: z.string() }),
  access: 'read',
  execute: ({ key }) => `value of ${key}`,
});

let restore: (() => void) | null = null;
afterEach(() => {
  restore?.();
  restore = null;
});

/** Counts `new AbortController()` until the test ends. */
function countAbortControllers(): { readonly count: number } {
  const Original = globalThis.AbortController;
  let count = 0;
  globalThis.AbortController = class extends Original {
    constructor() {
      super();
      count++;
    }
  };
  restore = () => {
    globalThis.AbortController = Original;
  };
  return {
    get count() {
      return count;
    },
  };
}

describe("a run's abort signal", () => {
  it('is not made when no tool, evaluator or model reads it', async () => {
    const loop = createLoop({ model: twoStepModel(), tools: [lookup], evaluate: [evaluators.json()] });
    const made = countAbortControllers();
    const result = await loop.run({ goal: 'go' });
    expect(result.stopReason).toBe('completed');
    expect(result.steps).toBe(2);
    expect(made.count).toBe(0);
  });

  it("reaches an evaluator that reads its signal (the call's own, made then) as the cancel it is", async () => {
    const user = new AbortController();
    let seen: AbortSignal | null = null;
    const waitsForCancel: Evaluator = {
      name: 'waits-for-cancel',
      kind: 'format',
      evaluate: ({ signal, parsed }) => {
        seen = signal;
        const aborted = new Promise<never>((_resolve, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
        });
        user.abort(new Error('the user stopped it'));
        return aborted.then(() => ({ passed: true, reason: 'passed', parsed }));
      },
    };
    const loop = createLoop({ model: twoStepModel(), tools: [lookup], evaluate: [waitsForCancel] });
    const made = countAbortControllers();
    const result = await loop.run({ goal: 'go', signal: user.signal });
    expect(result.stopReason).toBe('cancelled');
    expect(result.detail).toContain('the user stopped it');
    expect(made.count).toBe(1);
    const signal = seen as AbortSignal | null;
    expect(signal?.aborted).toBe(true);
    expect((signal?.reason as Error).name).toBe('RunInterruption');
  });

  it('is already aborted, with the deadline, for an evaluator that first reads its signal after the deadline', async () => {
    let now = 0;
    let fire: (() => void) | null = null;
    const clock = {
      now: () => now,
      // The first timer is the run's deadline (armed before the first step); later ones are calls' timeouts.
      setTimer: (_ms: number, callback: () => void) => {
        fire ??= callback;
        return () => undefined;
      },
      sleep: () => Promise.resolve(),
    };
    let reason: unknown = null;
    const readsLate: Evaluator = {
      name: 'reads-late',
      kind: 'format',
      evaluate: (input) => {
        now = 5_000;
        fire?.();
        reason = input.signal.aborted ? input.signal.reason : 'not aborted';
        return { passed: true, reason: 'passed', parsed: input.parsed };
      },
    };
    const loop = createLoop({
      model: twoStepModel(),
      tools: [lookup],
      evaluate: [readsLate],
      clock,
      limits: { deadlineMs: 1_000 },
    });
    const result = await loop.run({ goal: 'go' });
    expect(result.stopReason).toBe('deadline_exceeded');
    expect((reason as Error).name).toBe('RunInterruption');
    expect((reason as Error).message).toContain('deadline of 1000 ms');
  });
});
