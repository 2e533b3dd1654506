/**
 * Where the loop reads time and sets timers; inject a virtual one in tests.
 * @example
 * createLoop({ model, clock: virtualClock() }); // from 'loopstate/testing'
 */
export interface Clock {
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  /** Calls `callback` after `ms` unless the returned cancel function runs first. */
  setTimer(ms: number, callback: () => void): () => void;
}

/**
 * The wall clock.
 * @example
 * createLoop({ model, clock: systemClock })
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const timer = setTimeout(
        () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    }),
  setTimer: (ms, callback) => {
    const timer = setTimeout(callback, Math.max(0, ms));
    return () => clearTimeout(timer);
  },
};
