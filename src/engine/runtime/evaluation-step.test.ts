/**
 * Evaluators are bounded in time: an evaluator that never settles ends the run with `fatal_error` naming
 * `limits.evaluatorTimeoutMs`, even with the deadline switched off. Each test's evaluator really never
 * settles; it moves the run's virtual clock past the bound first, as a slow service would.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../constants.js';
import { LoopConfigError } from '../../contracts/errors.js';
import { evaluators, type Evaluator } from '../evaluators/index.js';
import { createLoop } from '../loop.js';
import { reply, scriptedModel } from '../../testing/index.js';
import { virtualClock, type VirtualClock } from '../../testing/virtual-clock.js';

const never = <Value>() => new Promise<Value>(() => undefined);

/** A custom evaluator that lets `elapseMs` pass on the clock, then never settles; it notes whether its signal aborted. */
function hangingEvaluator(clock: VirtualClock, elapseMs: number): { evaluator: Evaluator; aborted: () => boolean } {
  let signal: AbortSignal | undefined;
  const evaluator: Evaluator = {
    name: 'ticket-service',
    kind: 'rule',
    evaluate: (input) => {
      signal = input.signal;
      clock.advance(elapseMs);
      return never();
    },
  };
  return { evaluator, aborted: () => signal?.aborted === true };
}

describe('limits.evaluatorTimeoutMs', () => {
  it('stops a run whose evaluator never settles with fatal_error naming the limit, with deadlineMs: Infinity', async () => {
    const clock = virtualClock();
    const { evaluator, aborted } = hangingEvaluator(clock, 5_001);
    const model = scriptedModel([reply('the answer')]);
    const loop = createLoop({
      model,
      clock,
      evaluate: evaluator,
      limits: { deadlineMs: Infinity, evaluatorTimeoutMs: 5_000 },
    });

    const result = await loop.run({ goal: 'Answer.' });

    expect(result).toMatchObject({
      status: 'failed',
      stopReason: 'fatal_error',
      error: { code: 'evaluator_timeout' },
      rawOutput: 'the answer',
    });
    expect(result.detail).toBe(
      'run faulted: LoopstateError: evaluator "ticket-service" did not settle within limits.evaluatorTimeoutMs (5000 ms); make it settle sooner or raise limits.evaluatorTimeoutMs',
    );
    // Not a verdict on the output: the model is never asked to rewrite it.
    expect(model.calls).toHaveLength(1);
    expect(aborted()).toBe(true);
  });

  it('bounds an async rule by the default when evaluatorTimeoutMs is undefined', async () => {
    const clock = virtualClock();
    const limits: { evaluatorTimeoutMs?: number } = { evaluatorTimeoutMs: undefined };
    const rule = evaluators.rule(
      () => (clock.advance(DEFAULT_LIMITS.evaluatorTimeoutMs + 1), never<boolean>()),
      'must be confirmed',
    );
    const loop = createLoop({
      model: scriptedModel([reply('the answer')]),
      clock,
      evaluate: rule,
      limits: { deadlineMs: Infinity, ...limits },
    });

    const result = await loop.run({ goal: 'Answer.' });

    expect(result.stopReason).toBe('fatal_error');
    expect(result.detail).toContain(`within limits.evaluatorTimeoutMs (${DEFAULT_LIMITS.evaluatorTimeoutMs} ms)`);
    expect(result.trace.find((event) => event.type === 'run-start')).toMatchObject({
      limits: { evaluatorTimeoutMs: DEFAULT_LIMITS.evaluatorTimeoutMs },
    });
  });

  it('lets an evaluator within the bound give its verdict, and Infinity switches the bound off', async () => {
    for (const [evaluatorTimeoutMs, elapseMs] of [
      [5_000, 4_999],
      [Infinity, 10 * DEFAULT_LIMITS.evaluatorTimeoutMs],
    ] as const) {
      const clock = virtualClock();
      const slow: Evaluator = {
        name: 'slow',
        kind: 'rule',
        evaluate: async ({ parsed }) => (clock.advance(elapseMs), { passed: true, reason: 'ok', parsed }),
      };
      const loop = createLoop({
        model: scriptedModel([reply('the answer')]),
        clock,
        evaluate: slow,
        limits: { deadlineMs: Infinity, evaluatorTimeoutMs },
      });

      const result = await loop.run({ goal: 'Answer.' });

      expect(result).toMatchObject({ stopReason: 'completed', output: 'the answer' });
      expect(result.trace.find((event) => event.type === 'run-start')).toMatchObject({
        limits: { evaluatorTimeoutMs: Number.isFinite(evaluatorTimeoutMs) ? evaluatorTimeoutMs : null },
      });
    }
  });

  it('still ends on the deadline first when the deadline is the shorter bound', async () => {
    const clock = virtualClock();
    const { evaluator } = hangingEvaluator(clock, 2_000);
    const loop = createLoop({
      model: scriptedModel([reply('the answer')]),
      clock,
      evaluate: evaluator,
      limits: { deadlineMs: 1_000, evaluatorTimeoutMs: 5_000 },
    });

    expect((await loop.run({ goal: 'Answer.' })).stopReason).toBe('deadline_exceeded');
  });

  it.each([0, -1, 1.5, Number.NaN, '60s', 2 ** 31])(
    'refuses evaluatorTimeoutMs: %s before anything runs, naming the field',
    (value) => {
      const model = scriptedModel([reply('never asked')]);
      let thrown: unknown;
      try {
        createLoop({ model, limits: { evaluatorTimeoutMs: value as number } });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(LoopConfigError);
      expect((thrown as LoopConfigError).issues).toEqual([
        expect.objectContaining({
          path: 'limits.evaluatorTimeoutMs',
          message: expect.stringContaining('(or Infinity for no limit)'),
        }),
      ]);
      expect(model.calls).toHaveLength(0);
    },
  );
});
