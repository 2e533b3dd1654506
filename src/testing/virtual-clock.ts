/**
 * A clock for tests: time moves only when code sleeps or the test advances it, so backoffs,
 * deadlines and latencies are exact and instant (STYLE §9: never real sleeps).
 */
import type { Clock } from '../runtime/clock.js';

export interface VirtualClock extends Clock {
  /** Moves time forward, firing timers that fall due. */
  advance(ms: number): void;
}

/**
 * Creates a virtual clock starting at `startMs`. `sleep(ms)` advances time by `ms` at once.
 * @example
 * const clock = virtualClock();
 * const loop = createLoop({ model, clock, limits: { deadlineMs: 5_000 } });
 * // inside a tool: clock.advance(6_000) simulates a slow call that crosses the deadline
 */
export function virtualClock(startMs = 0): VirtualClock {
  let now = startMs;
  let nextTimerId = 0;
  const timers = new Map<number, { dueAt: number; callback: () => void }>();
  const advance = (ms: number) => {
    now += Math.max(0, ms);
    for (const [id, timer] of [...timers].sort((a, b) => a[1].dueAt - b[1].dueAt)) {
      if (timer.dueAt > now) break;
      timers.delete(id);
      timer.callback();
    }
  };
  return {
    now: () => now,
    advance,
    sleep: (ms, signal) => {
      if (signal.aborted) return Promise.reject(signal.reason);
      advance(ms);
      return signal.aborted ? Promise.reject(signal.reason) : Promise.resolve();
    },
    setTimer: (ms, callback) => {
      const id = nextTimerId++;
      timers.set(id, { dueAt: now + Math.max(0, ms), callback });
      return () => timers.delete(id);
    },
  };
}
