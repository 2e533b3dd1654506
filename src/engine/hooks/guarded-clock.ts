/**
 * The run's view of the injected clock. Inside an effect a failing `now()` throws, and the effect fails
 * outright (`fatal_error`, like any throwing user hook); a `now()` that returns NaN or a non-number
 * throws too, instead of poisoning every duration and budget. Where the driver reads the time outside
 * an effect (starting, stopping, reporting an interruption) it uses `safeNow`, which never throws, so
 * a broken clock can never reject `run()`.
 */
import { LoopstateError } from '../../contracts/errors.js';
import type { Clock } from '../runtime/clock.js';

/**
 * A clock whose `now()` only ever returns finite numbers (it throws otherwise), plus `safeNow()`.
 * @example
 * const clock = guardClock(config.clock); const at = clock.safeNow(); // never throws
 */
export interface GuardedClock extends Clock {
  /** The current time, or the last good one when the clock fails now. */
  safeNow(): number;
}

/**
 * Wraps `clock` for one run.
 * @example
 * const clock = guardClock({ ...virtualClock(), now: () => NaN });
 * clock.now(); // throws LoopstateError (code 'clock_failed'); clock.safeNow() is 0
 */
export function guardClock(clock: Clock): GuardedClock {
  let lastTime = 0;
  const now = (): number => {
    const time: unknown = clock.now();
    if (typeof time !== 'number' || !Number.isFinite(time)) {
      throw new LoopstateError({
        code: 'clock_failed',
        message: `clock.now() returned ${typeof time === 'number' ? String(time) : typeof time}, not a finite number`,
      });
    }
    return (lastTime = time);
  };
  return {
    now,
    safeNow: () => {
      try {
        return now();
      } catch {
        return lastTime;
      }
    },
    sleep: (ms, signal) => clock.sleep(ms, signal),
    setTimer: (ms, callback) => clock.setTimer(ms, callback),
  };
}

/**
 * The time from any clock without throwing: a guarded clock's `safeNow`, else `now()` with 0 on failure.
 * @example
 * const at = safeNow(session.config.clock);
 */
export function safeNow(clock: Clock): number {
  const guarded = clock as Partial<GuardedClock>;
  if (typeof guarded.safeNow === 'function') return guarded.safeNow();
  try {
    const time = clock.now();
    return Number.isFinite(time) ? time : 0;
  } catch {
    return 0;
  }
}
