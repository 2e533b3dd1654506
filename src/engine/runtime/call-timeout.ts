/**
 * One call under its own timeout: the main model's call, an LLM judge's, a context summary's (each
 * `limits.modelCallTimeoutMs`), an evaluator's (`limits.evaluatorTimeoutMs`). The call gets a signal
 * aborted on cancel, on the run's deadline and when its timeout passes on the run's clock. A model call's
 * timeout is a transport failure (`ModelCallError` of kind `timeout`), which the retry layers handle; a
 * caller with another limit passes the error its timeout is.
 */
import { ModelCallError } from '../../contracts/errors.js';
import { LazySignal, type AbortWatcher } from './abort-fanout.js';
import type { RunSession } from './run-session.js';
import type { ReusableTimer, TimerTarget } from './clock.js';

/** The error a model call that took too long fails with (made when its timeout fires, not per call). */
function modelCallTimeout(what: string, timeoutMs: number): ModelCallError {
  return new ModelCallError({
    kind: 'timeout',
    message: `${what} took longer than modelCallTimeoutMs (${timeoutMs} ms)`,
  });
}

/** What a call reads its abort signal from; the signal is only made if the call reads it. */
export interface CallScope {
  readonly signal: AbortSignal;
}

/**
 * One call under watch: its scope (the signal the call reads, made on first read), what it waits on (the run's
 * abort, as a watcher object, and its timer) and how it settles, in one object. A model call is waited on
 * while every other run in flight takes its turn, so what it holds outlives young GCs and is promoted: one
 * object with its fields in place of a closure per role (stop, finish, the abort's subscription and its
 * forgetting) keeps that small.
 */
class WatchedCall<Result, Out> extends LazySignal implements AbortWatcher, TimerTarget {
  resolve: (value: Out | PromiseLike<Out>) => void = settleNothing;
  reject: (error: Error) => void = settleNothing;
  #cancelTimer: unknown = undefined;
  /**
   * How it settles, until it has: the call's own outcome after its timeout or the run's abort (or the reverse)
   * changes nothing, and a call that never settles after its timeout keeps none of the caller's state.
   */
  #then: CallSettlement<Result, Out> | null;
  /** The call, until it is made. */
  #call: ((scope: CallScope) => Promise<Result> | Result) | null;

  constructor(
    readonly session: RunSession,
    readonly timeoutMs: number,
    readonly what: string,
    readonly timeoutError: (() => Error) | undefined,
    then: CallSettlement<Result, Out>,
    call: (scope: CallScope) => Promise<Result> | Result,
  ) {
    super();
    this.#then = then;
    this.#call = call;
  }

  /**
   * Makes the call and hears how its promise settles: a call that throws fails like one that rejects. The
   * call's promise is listened to directly, not adopted by another promise first (which held a promise, a
   * reaction and two resolving functions more across every call).
   */
  start(): void {
    const call = this.#call;
    this.#call = null;
    if (call === null) return;
    let result: Promise<Result> | Result;
    let thenable: boolean;
    try {
      result = call(this);
      thenable = isThenable(result);
    } catch (error) {
      this.failed(error);
      return;
    }
    if (!thenable) {
      this.fulfilled(result as Result);
      return;
    }
    Promise.resolve(result).then(
      (value) => this.fulfilled(value),
      (error: unknown) => this.failed(error),
    );
  }

  /**
   * Arms the call's timer: the run's own timer when it has one free for this duration (the system clock), else
   * one on the run's clock (none for `Infinity`: Node clamps what it cannot hold).
   */
  arm(): void {
    if (this.aborted || !Number.isFinite(this.timeoutMs)) return;
    const shared = this.session.callTimer;
    if (shared !== null && shared.set(this.timeoutMs, this)) {
      this.#cancelTimer = shared;
      return;
    }
    try {
      this.#cancelTimer = this.session.config.clock.setTimer(this.timeoutMs, () => this.timedOut());
    } catch (error) {
      this.onAbort(error);
    }
  }

  timedOut(): void {
    this.onAbort(this.timeoutError === undefined ? modelCallTimeout(this.what, this.timeoutMs) : this.timeoutError());
  }

  /** The run aborted, the timer fired or could not be set: the call's signal aborts and nobody waits any more. */
  onAbort(reason: unknown): void {
    this.abort(reason);
    this.failed(reason);
  }

  fulfilled(value: Result): void {
    this.finish();
    const then = this.#then;
    if (then === null) return;
    this.#then = null;
    try {
      this.resolve(then.fulfilled(value));
    } catch (error) {
      this.reject(error as Error);
    }
  }

  failed(error: unknown): void {
    this.finish();
    const then = this.#then;
    if (then === null) return;
    this.#then = null;
    try {
      this.resolve(then.failed(error));
    } catch (thrown) {
      this.reject(thrown as Error);
    }
  }

  finish(): void {
    this.session.aborts.unwatch(this);
    const cancel = this.#cancelTimer;
    // A clock whose setTimer returns no cancel function leaves a timer that fires into a settled call: harmless.
    if (typeof cancel === 'function') (cancel as () => void)();
    else if (cancel !== undefined) (cancel as ReusableTimer).clear(this);
  }
}

const settleNothing = (): void => undefined;

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  (typeof value === 'object' || typeof value === 'function') &&
  value !== null &&
  typeof (value as { then?: unknown }).then === 'function';

/** One function for every call (not a closure a call): what starts a call in its microtask. */
const startWatched = (watched: { start(): void }): void => watched.start();

/**
 * What a call's outcome becomes, for `callWithTimeout`'s settlement: the value the call fulfilled with, or its
 * failure (its rejection, the run's abort, its timeout). What either returns is what the promise settles with,
 * and what either throws it rejects with. An object (its fields the caller's state), so a caller that goes on
 * from the call holds no closures of its own while the call is waited on.
 * @example
 * const orNull: CallSettlement<string, string | null> = { fulfilled: (text) => text, failed: () => null };
 */
export interface CallSettlement<Result, Out> {
  fulfilled(value: Result): Out | PromiseLike<Out>;
  failed(error: unknown): Out | PromiseLike<Out>;
}

/** The settlement of a plain `callWithTimeout`: the call's value, or its failure as the rejection. */
const AS_IS: CallSettlement<unknown, unknown> = {
  fulfilled: (value) => value,
  failed: (error) => {
    throw error;
  },
};

/**
 * Runs `call`, and stops waiting for it on the run's abort or after `timeoutMs` (never, for `Infinity`),
 * aborting the signal the call was given (made on first read: pass it on as a getter,
 * `get signal() { return scope.signal }`). `timeoutError` is what the timeout rejects with; by default the
 * `ModelCallError` of a model call that took too long.
 * @example
 * const response = await callWithTimeout(session, 60_000, 'the model call', (scope) => model.generate({ messages, tools, get signal() { return scope.signal } }));
 */
export function callWithTimeout<Result>(
  session: RunSession,
  timeoutMs: number,
  what: string,
  call: (scope: CallScope) => Promise<Result> | Result,
  timeoutError?: () => Error,
): Promise<Result> {
  return watchCall(session, timeoutMs, what, call, timeoutError, AS_IS as CallSettlement<Result, Result>);
}

/**
 * `callWithTimeout` whose promise settles with what `then` makes of the call's outcome (a model call's event
 * from its reply or its failure): the same as `callWithTimeout(...).then(then.fulfilled, then.failed)`, without
 * the second promise and the closures that hold the caller's state while the call is waited on.
 * @example
 * const event = await callWithTimeoutThen(session, 60_000, 'the model call', (scope) => model.generate(request(scope)), replyHandler);
 */
export function callWithTimeoutThen<Result, Out>(
  session: RunSession,
  timeoutMs: number,
  what: string,
  call: (scope: CallScope) => Promise<Result> | Result,
  then: CallSettlement<Result, Out>,
): Promise<Out> {
  return watchCall(session, timeoutMs, what, call, undefined, then);
}

function watchCall<Result, Out>(
  session: RunSession,
  timeoutMs: number,
  what: string,
  call: (scope: CallScope) => Promise<Result> | Result,
  timeoutError: (() => Error) | undefined,
  then: CallSettlement<Result, Out>,
): Promise<Out> {
  const watched = new WatchedCall<Result, Out>(session, timeoutMs, what, timeoutError, then, call);
  const settled = new Promise<Out>((resolve, reject) => {
    watched.resolve = resolve;
    watched.reject = reject;
  });
  session.aborts.watch(watched);
  watched.arm();
  // Started in a microtask, as before: a call that throws synchronously rejects like one that rejects.
  void Promise.resolve(watched).then(startWatched);
  return settled;
}
