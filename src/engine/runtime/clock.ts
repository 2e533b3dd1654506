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

/** What a reusable timer calls when it fires: the call it is armed for. */
export interface TimerTarget {
  timedOut(): void;
}

/**
 * One timer a run re-arms for one call after another: its model calls' timeouts on the system clock. A
 * timer per call made a `Timeout`, its callback and its cancel function every call, all held across the call
 * while every other run in flight takes its turn, so promoted and left as old-generation garbage at every step.
 * @example
 * const timer = reusableTimer(systemClock); // null for any other clock
 * if (timer?.set(60_000, call)) { ... timer.clear(call); } // call.timedOut() if it fires first
 * timer?.close(); // at the run's end
 */
export interface ReusableTimer {
  /**
   * Arms the timer for `target`: false when it is armed for another target, was set up for another duration
   * or this platform's timers cannot be re-armed (the caller sets a timer of its own, as before).
   */
  set(ms: number, target: TimerTarget): boolean;
  /** Disarms it if it is armed for `target` (a call that settles after its timeout leaves the next call's alone). */
  clear(target: TimerTarget): void;
  /** Clears it for good: `set` returns false from then on. */
  close(): void;
}

/** Node's `Timeout`: re-armed in place by `refresh()`, kept from holding the process open by `unref()` while idle. */
interface RefreshableTimeout {
  refresh(): unknown;
  ref(): unknown;
  unref(): unknown;
}

function isRefreshable(handle: unknown): handle is RefreshableTimeout {
  const timeout = handle as Partial<RefreshableTimeout> | null;
  return (
    typeof timeout === 'object' &&
    timeout !== null &&
    typeof timeout.refresh === 'function' &&
    typeof timeout.ref === 'function' &&
    typeof timeout.unref === 'function'
  );
}

class RefreshedTimer implements ReusableTimer {
  #handle: ReturnType<typeof setTimeout> | undefined = undefined;
  #ms = -1;
  #target: TimerTarget | null = null;
  #closed = false;
  readonly #fire = (): void => {
    const target = this.#target;
    this.#target = null;
    target?.timedOut();
  };

  set(ms: number, target: TimerTarget): boolean {
    if (this.#closed || this.#target !== null) return false;
    const wait = Math.max(0, ms);
    if (this.#handle === undefined) {
      const handle = setTimeout(this.#fire, wait);
      if (!isRefreshable(handle)) {
        clearTimeout(handle);
        this.#closed = true;
        return false;
      }
      this.#handle = handle;
      this.#ms = wait;
    } else if (wait !== this.#ms) {
      return false;
    } else {
      const handle = this.#handle as unknown as RefreshableTimeout;
      handle.ref();
      handle.refresh();
    }
    this.#target = target;
    return true;
  }

  clear(target: TimerTarget): void {
    if (this.#target !== target) return;
    this.#target = null;
    // Left armed (re-armed by the next call's `refresh()`), but it no longer holds the process open; if it fires
    // first it finds no target.
    (this.#handle as unknown as RefreshableTimeout).unref();
  }

  close(): void {
    this.#closed = true;
    this.#target = null;
    if (this.#handle !== undefined) clearTimeout(this.#handle);
    this.#handle = undefined;
  }
}

/**
 * A timer a run can re-arm for its calls' timeouts, when `clock` is the system clock and the platform's timers
 * can be re-armed (Node's); null otherwise: a run on any other clock sets a timer a call through `clock.setTimer`.
 * @example
 * const timer = reusableTimer(systemClock);
 */
export function reusableTimer(clock: Clock): ReusableTimer | null {
  return clock === systemClock ? new RefreshedTimer() : null;
}
