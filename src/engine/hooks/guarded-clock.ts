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
  return new RunClock(clock);
}

/**
 * One object a run, its methods on the prototype: a run in flight holds it across every model call, so four
 * closures and their context would be promoted with every run (what a run holds is what its peak heap is).
 */
class RunClock implements GuardedClock {
  readonly #clock: Clock;
  #lastTime = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  now(): number {
    const time: unknown = this.#clock.now();
    if (typeof time !== 'number' || !Number.isFinite(time)) {
      throw new LoopstateError({
        code: 'clock_failed',
        message: `clock.now() returned ${typeof time === 'number' ? String(time) : typeof time}, not a finite number`,
      });
    }
    return (this.#lastTime = time);
  }

  /** The clock it guards. */
  get source(): Clock {
    return this.#clock;
  }

  safeNow(): number {
    try {
      return this.now();
    } catch {
      return this.#lastTime;
    }
  }

  sleep(ms: number, signal: AbortSignal): Promise<void> {
    return this.#clock.sleep(ms, signal);
  }

  setTimer(ms: number, callback: () => void): () => void {
    return this.#clock.setTimer(ms, callback);
  }
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

/**
 * The clock a run's guarded clock wraps (the injected one), or `clock` itself when it is not a guarded clock.
 * @example
 * unguarded(session.config.clock) === systemClock; // for a loop on the wall clock
 */
export function unguarded(clock: Clock): Clock {
  return clock instanceof RunClock ? clock.source : clock;
}
