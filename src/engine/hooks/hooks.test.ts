import { describe, expect, it } from 'vitest';
import { virtualClock } from '../../testing/virtual-clock.js';
import { describeAbortReason } from './abort-reason.js';
import { guardClock, safeNow, unguarded } from './guarded-clock.js';
import { resolveRunId } from './run-id.js';

describe('guardClock', () => {
  it('passes time through while the clock works', () => {
    const clock = virtualClock(5);
    const guarded = guardClock(clock);
    expect(guarded.now()).toBe(5);
    expect(guarded.safeNow()).toBe(5);
  });

  it('throws from now() for NaN or a non-number, and safeNow() keeps the last good time', () => {
    const times: unknown[] = [7, NaN, 'soon'];
    const guarded = guardClock({ ...virtualClock(), now: () => times.shift() as number });
    expect(guarded.now()).toBe(7);
    expect(() => guarded.now()).toThrow(
      expect.objectContaining({ code: 'clock_failed', message: 'clock.now() returned NaN, not a finite number' }),
    );
    expect(guarded.safeNow()).toBe(7);
  });

  it('safeNow() never throws, for a guarded clock or a bare one', () => {
    const broken = {
      ...virtualClock(),
      now: (): number => {
        throw new Error('tick');
      },
    };
    expect(guardClock(broken).safeNow()).toBe(0);
    expect(safeNow(broken)).toBe(0);
    expect(safeNow(virtualClock(3))).toBe(3);
  });
});

describe('guardClock, per run', () => {
  it('shares its methods between runs (no closures a run: a run in flight holds its clock) and unwraps to the clock it guards', () => {
    const clock = virtualClock(1);
    const first = guardClock(clock);
    const second = guardClock(clock);
    expect(first).not.toBe(second);
    for (const method of ['now', 'safeNow', 'sleep', 'setTimer'] as const) expect(first[method]).toBe(second[method]);
    expect(Object.keys(first)).toEqual([]);
    expect(unguarded(first)).toBe(clock);
    expect(unguarded(clock)).toBe(clock);
  });

  it('keeps its last good time per run', () => {
    let time: unknown = 4;
    const clock = { ...virtualClock(), now: () => time as number };
    const first = guardClock(clock);
    expect(first.now()).toBe(4);
    const second = guardClock(clock);
    time = NaN;
    expect(first.safeNow()).toBe(4);
    expect(second.safeNow()).toBe(0);
  });
});

describe('resolveRunId', () => {
  const fallback = () => 'run_fallback';

  it('prefers the given id, then the generated one', () => {
    expect(resolveRunId('mine', () => 'gen', fallback)).toEqual({ runId: 'mine', fault: null });
    expect(resolveRunId(undefined, () => 'gen', fallback)).toEqual({ runId: 'gen', fault: null });
  });

  it.each([
    [
      'throws',
      () => {
        throw new Error('id service down');
      },
      'generateRunId threw: id service down',
    ],
    ['returns a number', () => 42 as unknown as string, 'generateRunId returned number; expected a non-empty string'],
    ['returns an empty string', () => '  ', 'generateRunId returned an empty string; expected a non-empty string'],
    ['returns null', () => null as unknown as string, 'generateRunId returned null; expected a non-empty string'],
  ])('falls back with a fault when generateRunId %s', (_name, generate, message) => {
    const { runId, fault } = resolveRunId(undefined, generate, fallback);
    expect(runId).toBe('run_fallback');
    expect(fault).toMatchObject({ code: 'invalid_run_id', message });
  });
});

describe('describeAbortReason', () => {
  it('uses an Error message, or a summary of any other reason', () => {
    expect(describeAbortReason(new Error('tab closed'))).toBe('tab closed');
    expect(describeAbortReason(undefined)).toBe('cancelled');
    expect(describeAbortReason({ why: 'user' })).toBe('{"why":"user"}');
  });

  it('never throws for a reason with throwing getters', () => {
    class Hostile extends Error {
      override get message(): string {
        throw new Error('no message');
      }
    }
    const proxy = new Proxy(
      {},
      {
        getPrototypeOf: () => {
          throw new Error('no prototype');
        },
      },
    );
    expect(describeAbortReason(new Hostile())).toBe('cancelled (the abort reason could not be read)');
    expect(describeAbortReason(proxy)).toBe('cancelled (the abort reason could not be read)');
  });
});
