/**
 * The run's view of the injected clock. A `now()` that throws or returns a non-finite number, or a
 * `setTimer` that throws, must end the run as `fatal_error` rather than reject `run()` from wherever the
 * time was read: the guard records the first fault, keeps the last good time, and the driver stops the run.
 */
import { LoopstateError } from '../errors.js';
import type { Clock } from '../runtime/clock.js';
import { describeThrown } from './describe-thrown.js';

/**
 * A clock that never throws from `now()` or `setTimer`; `fault` holds the first failure of the one it wraps.
 * @example
 * const clock = guardClock(config.clock); clock.now(); if (clock.fault) stop(clock.fault);
 */
export interface GuardedClock extends Clock {
  readonly fault: Error | null;
}

/**
 * Wraps `clock` for one run.
 * @example
 * const clock = guardClock({ now: () => { throw new Error('no time') }, sleep, setTimer });
 * clock.now(); // 0, and clock.fault is a LoopstateError with code 'clock_failed'
 */
export function guardClock(clock: Clock): GuardedClock {
  let fault: Error | null = null;
  let lastTime = 0;
  const fail = (message: string, cause?: unknown) => {
    fault ??= new LoopstateError({ code: 'clock_failed', message, cause });
  };
  return {
    get fault() {
      return fault;
    },
    now: () => {
      try {
        const time: unknown = clock.now();
        if (typeof time === 'number' && Number.isFinite(time)) return (lastTime = time);
        fail(`clock.now() returned ${typeof time === 'number' ? String(time) : typeof time}, not a finite number`);
      } catch (error) {
        fail(`clock.now() threw: ${describeThrown(error)}`, error);
      }
      return lastTime;
    },
    sleep: (ms, signal) => clock.sleep(ms, signal),
    setTimer: (ms, callback) => {
      try {
        const cancel: unknown = clock.setTimer(ms, callback);
        if (typeof cancel !== 'function') return () => undefined;
        return () => {
          try {
            (cancel as () => void)();
          } catch (error) {
            fail(`clock.setTimer's cancel function threw: ${describeThrown(error)}`, error);
          }
        };
      } catch (error) {
        fail(`clock.setTimer() threw: ${describeThrown(error)}`, error);
        return () => undefined;
      }
    },
  };
}
