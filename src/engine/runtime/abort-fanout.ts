/**
 * Waiting on a run's abort without paying for it per call. On Node 20 an `AbortController` costs a few µs
 * to make and an EventTarget listener about as much to add and remove; a model call and a tool call each
 * needed both, although most model adapters and tools never look at their signal. Here the run's signal
 * gets one listener for the whole run (`AbortFanout`), and a call's own signal is made on first read
 * (`LazySignal`).
 */

const NOTHING_TO_FORGET = (): void => undefined;

/**
 * One 'abort' listener on a signal, shared by every effect that waits on it.
 * @example
 * const aborts = new AbortFanout(runSignal);
 * const forget = aborts.subscribe((reason) => call.abort(reason));
 * try { await aborts.race(work) } finally { forget() }
 */
export class AbortFanout {
  readonly #waiters = new Set<(reason: unknown) => void>();
  readonly #onAbort = (): void => this.#fire();

  constructor(readonly signal: AbortSignal) {
    if (!signal.aborted) signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** Takes the one listener off the signal: for a fanout that lives shorter than its signal. */
  dispose(): void {
    this.signal.removeEventListener('abort', this.#onAbort);
    this.#waiters.clear();
  }

  /** Calls `onAbort` once when the signal aborts (at once if it has); returns the function that forgets it. */
  subscribe(onAbort: (reason: unknown) => void): () => void {
    if (this.signal.aborted) {
      onAbort(this.signal.reason);
      return NOTHING_TO_FORGET;
    }
    this.#waiters.add(onAbort);
    return () => this.#waiters.delete(onAbort);
  }

  /**
   * Settles with `promise`, or rejects with the abort reason as soon as the signal aborts: an effect that
   * ignores its signal must not hang the run past its deadline.
   */
  race<T>(promise: Promise<T>): Promise<T> {
    if (this.signal.aborted) {
      // Abandoned, but its own rejection must not surface as an unhandled one.
      promise.catch(() => undefined);
      return Promise.reject(this.signal.reason as Error);
    }
    return new Promise<T>((resolve, reject) => {
      const forget = this.subscribe(reject);
      promise.then(
        (value) => {
          forget();
          resolve(value);
        },
        (error: unknown) => {
          forget();
          reject(error as Error);
        },
      );
    });
  }

  #fire(): void {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    const reason: unknown = this.signal.reason;
    for (const waiter of waiters) {
      try {
        waiter(reason);
      } catch {
        // One waiter's failure must not keep the others from hearing of the abort.
      }
    }
  }
}

/**
 * An abort signal made on first read, and aborted by `abort(reason)` whether or not anyone has read it yet
 * (a later read gets a signal that is already aborted, with that reason).
 * @example
 * const call = new LazySignal();
 * const request = { messages, tools, get signal() { return call.signal } };
 */
export class LazySignal {
  #controller: AbortController | null = null;
  #aborted = false;
  #reason: unknown = undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  get signal(): AbortSignal {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Aborts once; later calls keep the first reason. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}
