import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from './clock.js';

/** Tracks whether a promise has settled, and how, without awaiting it. */
function track(promise: Promise<unknown>) {
  const state: { settled: 'pending' | 'resolved' | 'rejected'; reason: unknown } = {
    settled: 'pending',
    reason: undefined,
  };
  promise.then(
    () => (state.settled = 'resolved'),
    (reason: unknown) => {
      state.settled = 'rejected';
      state.reason = reason;
    },
  );
  return state;
}

describe('systemClock with the real wall clock', () => {
  it('sleeps for a tiny delay and resolves', async () => {
    await expect(systemClock.sleep(5, new AbortController().signal)).resolves.toBeUndefined();
  });

  it('reads the current wall-clock time', () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});

describe('systemClock with fake timers', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('takes now() from Date.now', () => {
    vi.setSystemTime(1_700_000_000_000);
    expect(systemClock.now()).toBe(1_700_000_000_000);
  });

  it('resolves sleep when its time is up and not a millisecond before', async () => {
    const sleep = track(systemClock.sleep(100, new AbortController().signal));
    await vi.advanceTimersByTimeAsync(99);
    expect(sleep.settled).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(sleep.settled).toBe('resolved');
  });

  it('treats a negative sleep as zero', async () => {
    const sleep = track(systemClock.sleep(-50, new AbortController().signal));
    await vi.advanceTimersByTimeAsync(0);
    expect(sleep.settled).toBe('resolved');
  });

  it('rejects at once with the reason of an already-aborted signal and schedules nothing', async () => {
    const controller = new AbortController();
    const reason = new Error('cancelled');
    controller.abort(reason);
    await expect(systemClock.sleep(1_000, controller.signal)).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("rejects with the signal's reason when aborted mid-sleep, and clears its timer", async () => {
    const controller = new AbortController();
    const sleep = track(systemClock.sleep(1_000, controller.signal));
    await vi.advanceTimersByTimeAsync(400);
    expect(vi.getTimerCount()).toBe(1);
    controller.abort('deadline');
    await vi.advanceTimersByTimeAsync(0);
    expect(sleep).toEqual({ settled: 'rejected', reason: 'deadline' });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stays resolved when the signal aborts after the sleep ended, and removes its listener', async () => {
    const controller = new AbortController();
    const remove = vi.spyOn(controller.signal, 'removeEventListener');
    const sleep = track(systemClock.sleep(10, controller.signal));
    await vi.advanceTimersByTimeAsync(10);
    expect(remove).toHaveBeenCalledWith('abort', expect.any(Function));
    controller.abort('late');
    await vi.advanceTimersByTimeAsync(0);
    expect(sleep.settled).toBe('resolved');
  });

  it('fires a timer after its delay, once', () => {
    const callback = vi.fn();
    systemClock.setTimer(50, callback);
    vi.advanceTimersByTime(49);
    expect(callback).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(callback).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1_000);
    expect(callback).toHaveBeenCalledTimes(1);
  });

  it('fires a negative-delay timer as a zero-delay one', () => {
    const callback = vi.fn();
    systemClock.setTimer(-10, callback);
    vi.advanceTimersByTime(0);
    expect(callback).toHaveBeenCalledTimes(1);
  });

  it('never fires a cancelled timer, and cancelling twice or after firing is harmless', () => {
    const cancelled = vi.fn();
    const fired = vi.fn();
    const cancel = systemClock.setTimer(50, cancelled);
    const cancelFired = systemClock.setTimer(10, fired);
    vi.advanceTimersByTime(20);
    cancel();
    cancel();
    cancelFired();
    vi.advanceTimersByTime(1_000);
    expect(cancelled).not.toHaveBeenCalled();
    expect(fired).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});
