/**
 * A clock for tests: time moves only when code sleeps or the test advances it, so backoffs,
 * deadlines and latencies are exact and instant (never real sleeps).
 */
import type { Clock } from '../engine/runtime/clock.js';

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
  /** The earliest timer due by `until`, looked up afresh each time: callbacks may cancel or add timers. */
  const nextDue = (until: number): [number, { dueAt: number; callback: () => void }] | undefined => {
    let next: [number, { dueAt: number; callback: () => void }] | undefined;
    for (const entry of timers)
      if (entry[1].dueAt <= until && (next === undefined || entry[1].dueAt < next[1].dueAt)) next = entry;
    return next;
  };
  const advance = (ms: number) => {
    if (!Number.isFinite(ms)) throw new RangeError(`virtualClock.advance: expected a finite number of ms, got ${ms}`);
    const until = now + Math.max(0, ms);
    for (let due = nextDue(until); due !== undefined; due = nextDue(until)) {
      const [id, timer] = due;
      timers.delete(id);
      // Each callback sees its own due time, so timers it sets are due relative to that.
      now = Math.max(now, timer.dueAt);
      timer.callback();
    }
    now = Math.max(now, until);
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
