/**
 * Config and run input through createLoop: an explicit `undefined` keeps the default (it never
 * switches a budget off), `Infinity` switches one off on purpose, and user hooks that misbehave
 * (generateRunId, the clock, an abort reason) end the run with a named stop instead of a rejection.
 */
import { describe, expect, it } from 'vitest';
import { createLoop, DEFAULT_LIMITS, LoopConfigError, type Clock } from 'loopstate';
import { reply, scriptedModel, toolCall, virtualClock, type ScriptStep } from 'loopstate/testing';
import { createTestLoop, recordingTool, requestAt } from './helpers.js';

const GOAL = 'Look the record up and report it.';

/** A virtual clock that records the delay of every timer armed on it. */
function timerRecordingClock(): { clock: Clock; timers: number[] } {
  const inner = virtualClock();
  const timers: number[] = [];
  return {
    timers,
    clock: {
      now: () => inner.now(),
      sleep: (ms, signal) => inner.sleep(ms, signal),
      setTimer: (ms, callback) => (timers.push(ms), inner.setTimer(ms, callback)),
    },
  };
}

describe('an explicit undefined limit keeps its default through a whole run', () => {
  it('maxSteps: undefined still stops at the default step limit', async () => {
    const options: { maxSteps?: number } = {};
    const { tool } = recordingTool({});
    const steps: ScriptStep[] = Array.from({ length: DEFAULT_LIMITS.maxSteps + 5 }, (_, index) =>
      toolCall('lookup', { id: `R-${index}` }),
    );
    const model = scriptedModel(steps);
    const { loop } = createTestLoop({ model, tools: [tool], limits: { maxSteps: options.maxSteps } });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'max_steps', steps: DEFAULT_LIMITS.maxSteps });
    expect(model.calls).toHaveLength(DEFAULT_LIMITS.maxSteps);
  });

  it('deadlineMs: undefined arms the default deadline timer', async () => {
    const { clock, timers } = timerRecordingClock();
    const { loop } = createTestLoop(
      { model: scriptedModel([reply('done')]), limits: { deadlineMs: undefined } },
      clock as ReturnType<typeof virtualClock>,
    );

    const result = await loop.run({ goal: GOAL });

    expect(result.stopReason).toBe('completed');
    // The run's deadline, then the one model call's own timeout.
    expect(timers).toEqual([DEFAULT_LIMITS.deadlineMs, DEFAULT_LIMITS.modelCallTimeoutMs]);
  });

  it('maxToolResultBytes: undefined keeps results whole instead of cutting them to NaN bytes', async () => {
    const { tool } = recordingTool({ respond: () => 'r'.repeat(1_000) });
    const model = scriptedModel([toolCall('lookup', { id: 'R-1' }), reply('done')]);
    const { loop } = createTestLoop({ model, tools: [tool], limits: { maxToolResultBytes: undefined } });

    const result = await loop.run({ goal: GOAL });

    expect(requestAt(model, 1).at(-1)).toMatchObject({ role: 'tool', content: 'r'.repeat(1_000) });
    expect(result.warnings.join('\n')).not.toMatch(/cut from/);
  });
});

describe('Infinity switches a budget off explicitly', () => {
  it('deadlineMs: Infinity arms no deadline timer and the run completes', async () => {
    const { clock, timers } = timerRecordingClock();
    const { loop } = createTestLoop(
      { model: scriptedModel([reply('done')]), limits: { deadlineMs: Infinity, maxCostUsd: Infinity } },
      clock as ReturnType<typeof virtualClock>,
    );

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'completed', status: 'succeeded' });
    // No deadline timer: only the model call's own timeout was armed.
    expect(timers).toEqual([DEFAULT_LIMITS.modelCallTimeoutMs]);
  });

  it('maxInputTokens and maxOutputTokens: Infinity never stop a run for tokens', async () => {
    const model = scriptedModel([reply('done', { usage: { inputTokens: 10_000_000, outputTokens: 10_000_000 } })]);
    const { loop } = createTestLoop({
      model,
      limits: { maxInputTokens: Infinity, maxOutputTokens: Infinity, maxCostUsd: Infinity },
    });

    expect((await loop.run({ goal: GOAL })).stopReason).toBe('completed');
  });
});

describe('run input errors say "run input"', () => {
  it('rejects an empty goal and a non-string run id with LoopConfigError scope run_input', async () => {
    const { loop } = createTestLoop({ model: scriptedModel([reply('never requested')]) });

    await expect(loop.run({ goal: '' })).rejects.toThrow(/^Invalid run input:\n {2}- goal: expected a non-empty goal/);
    const error: unknown = await loop
      .run({ goal: GOAL, runId: 7 as unknown as string })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LoopConfigError);
    expect(error).toMatchObject({
      scope: 'run_input',
      code: 'invalid_config',
      issues: [{ path: 'runId', message: 'expected the run id as a string, got number' }],
    });
  });

  it('rejects a run input whose getter throws with LoopConfigError, not the raw error', async () => {
    const { loop } = createTestLoop({ model: scriptedModel([reply('never requested')]) });
    const input = {
      get goal(): string {
        throw new Error('goal unavailable');
      },
    };

    await expect(loop.run(input)).rejects.toMatchObject({
      name: 'LoopConfigError',
      issues: [{ path: 'goal', message: 'could not be read: goal unavailable' }],
    });
  });

  it('createLoop throws LoopConfigError for a config Proxy that throws', () => {
    const config = new Proxy(
      {},
      {
        ownKeys: () => {
          throw new Error('trap');
        },
      },
    );
    expect(() => createLoop(config as never)).toThrow(LoopConfigError);
  });
});

describe('user hooks that misbehave end the run, never reject it', () => {
  it.each([
    [
      'throws',
      () => {
        throw new Error('id service down');
      },
      'generateRunId threw: id service down',
    ],
    ['returns a number', () => 42 as unknown as string, 'generateRunId returned number; expected a non-empty string'],
    ['returns an empty string', () => '', 'generateRunId returned an empty string; expected a non-empty string'],
  ])('a generateRunId that %s ends the run as fatal_error', async (_name, generateRunId, message) => {
    const model = scriptedModel([reply('never requested')]);
    const { loop } = createTestLoop({ model, generateRunId });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'fatal_error',
      status: 'failed',
      error: { code: 'invalid_run_id', message },
    });
    expect(result.detail).toContain(message);
    expect(result.runId).toMatch(/^run_/);
    expect(model.calls).toHaveLength(0);
  });

  it('a clock whose now() throws mid-run ends the run as fatal_error', async () => {
    const inner = virtualClock();
    let reads = 0;
    const clock: Clock = {
      ...inner,
      now: () => {
        if (++reads > 3) throw new Error('clock unplugged');
        return inner.now();
      },
    };
    const { tool } = recordingTool({});
    const model = scriptedModel([toolCall('lookup', { id: 'R-1' }), reply('done')], {});
    const loop = createLoop({ model, tools: [tool], clock, generateRunId: () => 'run-clock' });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({
      stopReason: 'fatal_error',
      detail: 'run faulted: Error: clock unplugged',
      error: { message: 'clock unplugged' },
    });
  });

  it('a clock whose now() throws from the first read ends the run as fatal_error', async () => {
    const clock: Clock = {
      ...virtualClock(),
      now: () => {
        throw new Error('no time at all');
      },
    };
    const loop = createLoop({ model: scriptedModel([reply('done')]), clock });

    const result = await loop.run({ goal: GOAL });

    expect(result).toMatchObject({ stopReason: 'fatal_error', error: { message: 'no time at all' } });
  });

  it('a clock whose now() returns NaN ends the run as fatal_error instead of poisoning every budget', async () => {
    const clock: Clock = { ...virtualClock(), now: () => NaN };
    const loop = createLoop({ model: scriptedModel([reply('done')]), clock });

    expect(await loop.run({ goal: GOAL })).toMatchObject({
      stopReason: 'fatal_error',
      error: { code: 'clock_failed' },
    });
  });

  it('a clock whose setTimer throws ends the run as fatal_error', async () => {
    const clock: Clock = {
      ...virtualClock(),
      setTimer: () => {
        throw new Error('no timers here');
      },
    };
    const loop = createLoop({ model: scriptedModel([reply('never requested')]), clock });

    expect(await loop.run({ goal: GOAL })).toMatchObject({
      stopReason: 'fatal_error',
      error: { message: 'no timers here' },
    });
  });

  it('an already-aborted signal whose reason has throwing getters ends the run as cancelled', async () => {
    class HostileReason extends Error {
      override get message(): string {
        throw new Error('no message for you');
      }
    }
    const controller = new AbortController();
    controller.abort(new HostileReason());
    const { loop } = createTestLoop({ model: scriptedModel([reply('never requested')]) });

    const result = await loop.run({ goal: GOAL, signal: controller.signal });

    expect(result).toMatchObject({
      stopReason: 'cancelled',
      detail: expect.stringContaining('the abort reason could not be read'),
    });
  });

  it('an abort mid-run with a Proxy reason that throws ends the run as cancelled, with no uncaught exception', async () => {
    const controller = new AbortController();
    const hostile = new Proxy(
      {},
      {
        getPrototypeOf: () => {
          throw new Error('trap');
        },
        get: () => {
          throw new Error('trap');
        },
      },
    );
    const model = scriptedModel([
      () => {
        controller.abort(hostile);
        return reply('too late');
      },
    ]);
    const { loop } = createTestLoop({ model });

    const result = await loop.run({ goal: GOAL, signal: controller.signal });

    expect(result.stopReason).toBe('cancelled');
  });
});
