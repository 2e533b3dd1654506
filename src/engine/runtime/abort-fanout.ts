/**
 * Waiting on a run's abort without paying for it per call. On Node 20 an `AbortController` costs a few µs
 * to make and an EventTarget listener about as much to add and remove; a model call and a tool call each
 * needed both, although most model adapters and tools never look at their signal. Here the run's signal
 * gets one listener for the whole run (`AbortFanout`), or is not made at all unless something reads it
 * (`RunAbort`), and a call's own signal is made on first read (`LazySignal`).
 */

const NOTHING_TO_FORGET = (): void => undefined;

/**
 * A waiter that is an object rather than a function: `watch` keeps the object itself, so a caller that has
 * an object per call anyway (`callWithTimeout`'s) needs no closure to hear of the abort, nor one to forget it.
 * @example
 * const call = { onAbort: (reason: unknown) => console.log('stopped', reason) };
 * run.watch(call); // ... later
 * run.unwatch(call);
 */
export interface AbortWatcher {
  onAbort(reason: unknown): void;
}

type Waiter = ((reason: unknown) => void) | AbortWatcher;

/**
 * Waiters on an abort, told once when it happens: the base of `AbortFanout` (over a given signal) and
 * `RunAbort` (a run's own abort, its signal made on first read). Effects wait through `subscribe` and `race`,
 * and ask `aborted` and `reason`, without reading `signal`.
 * @example
 * const waitOn = (aborts: AbortWaiters, work: Promise<string>) => (aborts.aborted ? null : aborts.race(work));
 */
export abstract class AbortWaiters {
  /**
   * The oldest waiter, while it is the only one or the others came after it: a run's model calls wait one at
   * a time, and a `Set` that has one waiter added and deleted each step makes a new table every other step.
   */
  #first: Waiter | null = null;
  /** The other waiters, in the order they came (all later than `#first`); made on the first second waiter. */
  #waiters: Set<Waiter> | null = null;

  abstract get aborted(): boolean;
  abstract get reason(): unknown;
  abstract get signal(): AbortSignal;

  /** Calls `onAbort` once when the signal aborts (at once if it has); returns the function that forgets it. */
  subscribe(onAbort: (reason: unknown) => void): () => void {
    if (this.aborted) {
      onAbort(this.reason);
      return NOTHING_TO_FORGET;
    }
    this.#add(onAbort);
    return () => this.#remove(onAbort);
  }

  #add(waiter: Waiter): void {
    if (this.#first === waiter) return;
    if (this.#first === null && (this.#waiters === null || this.#waiters.size === 0)) this.#first = waiter;
    else (this.#waiters ??= new Set()).add(waiter);
  }

  #remove(waiter: Waiter): void {
    if (this.#first === waiter) this.#first = null;
    else this.#waiters?.delete(waiter);
  }

  /** Calls `watcher.onAbort` once when the signal aborts (at once if it has), until `unwatch(watcher)`. */
  watch(watcher: AbortWatcher): void {
    if (this.aborted) watcher.onAbort(this.reason);
    else this.#add(watcher);
  }

  /** Forgets a watcher given to `watch` (nothing, if it was told or never watched). */
  unwatch(watcher: AbortWatcher): void {
    this.#remove(watcher);
  }

  /**
   * Settles with `promise`, or rejects with the abort reason as soon as the signal aborts: an effect that
   * ignores its signal must not hang the run past its deadline.
   */
  race<T>(promise: Promise<T>): Promise<T> {
    if (this.aborted) {
      // Abandoned, but its own rejection must not surface as an unhandled one.
      promise.catch(() => undefined);
      return Promise.reject(this.reason as Error);
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

  /** Forgets every waiter without telling them. */
  protected clearWaiters(): void {
    this.#first = null;
    this.#waiters?.clear();
  }

  /** Tells every waiter of the abort, once; one that throws does not keep the others from hearing. */
  protected fire(): void {
    const first = this.#first;
    if (first === null && (this.#waiters === null || this.#waiters.size === 0)) return;
    const waiters = first === null ? [] : [first];
    if (this.#waiters !== null) for (const waiter of this.#waiters) waiters.push(waiter);
    this.clearWaiters();
    const reason: unknown = this.reason;
    for (const waiter of waiters) {
      try {
        if (typeof waiter === 'function') waiter(reason);
        else waiter.onAbort(reason);
      } catch {
        // One waiter's failure must not keep the others from hearing of the abort.
      }
    }
  }
}

/**
 * One 'abort' listener on a signal, shared by every effect that waits on it.
 * @example
 * const aborts = new AbortFanout(runSignal);
 * const forget = aborts.subscribe((reason) => call.abort(reason));
 * try { await aborts.race(work) } finally { forget() }
 */
export class AbortFanout extends AbortWaiters {
  readonly #onAbort = (): void => this.fire();

  constructor(readonly signal: AbortSignal) {
    super();
    if (!signal.aborted) signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  get aborted(): boolean {
    return this.signal.aborted;
  }

  get reason(): unknown {
    return this.signal.reason;
  }

  /** Takes the one listener off the signal: for a fanout that lives shorter than its signal. */
  dispose(): void {
    this.signal.removeEventListener('abort', this.#onAbort);
    this.clearWaiters();
  }
}

/**
 * A run's own abort (cancel, deadline): what an `AbortController` would be, without making one for a run
 * nobody reads the signal of. Its waiters hear of the abort first, then the signal, made on first read (a
 * tool, an evaluator or a model adapter that asks for it), aborts with the same reason; a signal first read
 * after the abort is already aborted with it.
 * @example
 * const run = new RunAbort();
 * setTimeout(() => run.abort(new Error('deadline')), 1_000);
 * await run.race(work); // rejects with the reason at the deadline
 */
export class RunAbort extends AbortWaiters {
  readonly #signal = new LazySignal();

  get aborted(): boolean {
    return this.#signal.aborted;
  }

  get reason(): unknown {
    return this.#signal.reason;
  }

  get signal(): AbortSignal {
    return this.#signal.signal;
  }

  /** Aborts once, as `AbortController.abort` does (no reason: an `AbortError`); later calls keep the first reason. */
  abort(reason?: unknown): void {
    if (this.#signal.aborted) return;
    const why = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    this.#signal.abort(why, () => this.fire());
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

  /** Aborts once; later calls keep the first reason. `beforeSignal` runs once aborted, before the signal hears of it. */
  abort(reason: unknown, beforeSignal?: () => void): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    beforeSignal?.();
    this.#controller?.abort(reason);
  }
}
