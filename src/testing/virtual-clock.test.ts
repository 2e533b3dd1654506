import { describe, expect, it, vi } from 'vitest';
import { virtualClock } from './virtual-clock.js';

const quiet = () => new AbortController().signal;

describe('virtualClock', () => {
  it('starts at 0 or at the given time and stands still until moved', () => {
    expect(virtualClock().now()).toBe(0);
    const clock = virtualClock(1_000);
    expect(clock.now()).toBe(1_000);
    expect(clock.now()).toBe(1_000);
  });

  it('moves forward by exactly what advance is given, and never backwards', () => {
    const clock = virtualClock(10);
    clock.advance(5);
    clock.advance(0.5);
    expect(clock.now()).toBe(15.5);
    clock.advance(-100);
    expect(clock.now()).toBe(15.5);
  });

  it('sleeps without waiting: the promise resolves and time has moved by ms', async () => {
    const clock = virtualClock(100);
    const sleep = clock.sleep(60_000, quiet());
    expect(clock.now()).toBe(60_100);
    await expect(sleep).resolves.toBeUndefined();
  });

  it('treats a negative sleep as zero', async () => {
    const clock = virtualClock(100);
    await clock.sleep(-5, quiet());
    expect(clock.now()).toBe(100);
  });

  it('fires a timer when time reaches its due time, not a moment before, and only once', () => {
    const clock = virtualClock();
    const callback = vi.fn();
    clock.setTimer(100, callback);
    clock.advance(99);
    expect(callback).not.toHaveBeenCalled();
    clock.advance(1);
    expect(callback).toHaveBeenCalledTimes(1);
    clock.advance(1_000);
    expect(callback).toHaveBeenCalledTimes(1);
  });

  it('schedules relative to the time the timer was set', () => {
    const clock = virtualClock();
    clock.advance(50);
    const callback = vi.fn();
    clock.setTimer(100, callback);
    clock.advance(99);
    expect(callback).not.toHaveBeenCalled();
    clock.advance(1);
    expect(callback).toHaveBeenCalledTimes(1);
  });

  it('fires a zero or negative delay timer on the next advance, even advance(0), not synchronously', () => {
    const clock = virtualClock();
    const zero = vi.fn();
    const negative = vi.fn();
    clock.setTimer(0, zero);
    clock.setTimer(-10, negative);
    expect(zero).not.toHaveBeenCalled();
    expect(negative).not.toHaveBeenCalled();
    clock.advance(0);
    expect(zero).toHaveBeenCalledTimes(1);
    expect(negative).toHaveBeenCalledTimes(1);
  });

  it('fires every timer crossed by one advance in due order, ties in the order they were set', () => {
    const clock = virtualClock();
    const fired: string[] = [];
    clock.setTimer(30, () => fired.push('30'));
    clock.setTimer(10, () => fired.push('10-first'));
    clock.setTimer(20, () => fired.push('20'));
    clock.setTimer(10, () => fired.push('10-second'));
    clock.setTimer(40, () => fired.push('40'));
    clock.advance(30);
    expect(fired).toEqual(['10-first', '10-second', '20', '30']);
    clock.advance(10);
    expect(fired).toEqual(['10-first', '10-second', '20', '30', '40']);
  });

  it('never fires a cancelled timer, and cancelling twice or after firing is harmless', () => {
    const clock = virtualClock();
    const cancelled = vi.fn();
    const kept = vi.fn();
    const cancel = clock.setTimer(10, cancelled);
    const cancelKept = clock.setTimer(10, kept);
    cancel();
    cancel();
    clock.advance(20);
    cancelKept();
    clock.advance(20);
    expect(cancelled).not.toHaveBeenCalled();
    expect(kept).toHaveBeenCalledTimes(1);
  });

  it('cancelling one timer leaves the others scheduled', () => {
    const clock = virtualClock();
    const fired: number[] = [];
    clock.setTimer(10, () => fired.push(1));
    const cancelSecond = clock.setTimer(10, () => fired.push(2));
    clock.setTimer(10, () => fired.push(3));
    cancelSecond();
    clock.advance(10);
    expect(fired).toEqual([1, 3]);
  });

  it('fires a timer set inside a timer callback on a later advance once it falls due', () => {
    const clock = virtualClock();
    const inner = vi.fn();
    clock.setTimer(10, () => clock.setTimer(5, inner));
    clock.advance(10);
    expect(inner).not.toHaveBeenCalled();
    clock.advance(4);
    expect(inner).not.toHaveBeenCalled();
    clock.advance(1);
    expect(inner).toHaveBeenCalledTimes(1);
  });

  it('fires timers that fall due during a sleep', async () => {
    const clock = virtualClock();
    const callback = vi.fn();
    clock.setTimer(1_000, callback);
    await clock.sleep(999, quiet());
    expect(callback).not.toHaveBeenCalled();
    await clock.sleep(1, quiet());
    expect(callback).toHaveBeenCalledTimes(1);
  });

  it('rejects a sleep on an already-aborted signal with its reason, without moving time', async () => {
    const clock = virtualClock(5);
    const controller = new AbortController();
    const reason = new Error('cancelled');
    controller.abort(reason);
    const callback = vi.fn();
    clock.setTimer(10, callback);
    await expect(clock.sleep(1_000, controller.signal)).rejects.toBe(reason);
    expect(clock.now()).toBe(5);
    expect(callback).not.toHaveBeenCalled();
  });

  it('rejects a sleep whose signal a timer aborts on the way, like a deadline crossed by a backoff', async () => {
    const clock = virtualClock();
    const controller = new AbortController();
    clock.setTimer(5_000, () => controller.abort('deadline'));
    await expect(clock.sleep(6_000, controller.signal)).rejects.toBe('deadline');
    expect(clock.now()).toBe(6_000);
  });

  it('keeps independent time and timers per clock', () => {
    const first = virtualClock();
    const second = virtualClock();
    const callback = vi.fn();
    second.setTimer(10, callback);
    first.advance(100);
    expect(second.now()).toBe(0);
    expect(callback).not.toHaveBeenCalled();
  });
});

describe('virtualClock timers fired by one advance', () => {
  it('does not fire a timer cancelled by an earlier timer in the same advance', () => {
    const clock = virtualClock();
    const fired: string[] = [];
    const cancelB = clock.setTimer(20, () => fired.push('B'));
    clock.setTimer(10, () => {
      fired.push('A');
      cancelB();
    });
    clock.advance(100);
    expect(fired).toEqual(['A']);
  });

  it('lets each callback see its own due time, and schedules nested timers from it', () => {
    const clock = virtualClock();
    const seen: [string, number][] = [];
    clock.setTimer(10, () => {
      seen.push(['A', clock.now()]);
      clock.setTimer(5, () => seen.push(['nested', clock.now()]));
    });
    clock.setTimer(30, () => seen.push(['C', clock.now()]));
    clock.advance(100);
    expect(seen).toEqual([
      ['A', 10],
      ['nested', 15],
      ['C', 30],
    ]);
    expect(clock.now()).toBe(100);
  });

  it('refuses a non-finite advance instead of poisoning the time', () => {
    const clock = virtualClock(5);
    expect(() => clock.advance(Number.NaN)).toThrow(RangeError);
    expect(() => clock.advance(Number.POSITIVE_INFINITY)).toThrow(RangeError);
    expect(clock.now()).toBe(5);
  });
});
