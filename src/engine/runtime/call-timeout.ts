/**
 * One call under its own timeout: the main model's call, an LLM judge's, a context summary's (each
 * `limits.modelCallTimeoutMs`), an evaluator's (`limits.evaluatorTimeoutMs`). The call gets a signal
 * aborted on cancel, on the run's deadline and when its timeout passes on the run's clock. A model call's
 * timeout is a transport failure (`ModelCallError` of kind `timeout`), which the retry layers handle; a
 * caller with another limit passes the error its timeout is.
 */
import { ModelCallError } from '../../contracts/errors.js';
import { LazySignal } from './abort-fanout.js';
import type { RunSession } from './run-session.js';

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
  const scope = new LazySignal();
  return new Promise<Result>((resolve, reject) => {
    let cancelTimer: unknown;
    let forgetRunAbort = (): void => undefined;
    const finish = () => {
      forgetRunAbort();
      // A clock whose setTimer returns no cancel function leaves a timer that fires into a settled call: harmless.
      if (typeof cancelTimer === 'function') cancelTimer();
    };
    const stop = (reason: unknown) => {
      scope.abort(reason);
      finish();
      reject(reason as Error);
    };
    forgetRunAbort = session.aborts.subscribe(stop);
    try {
      // Infinity switches the bound off: a timer for it would fire at once (Node clamps what it cannot hold).
      if (!scope.aborted && Number.isFinite(timeoutMs))
        cancelTimer = session.config.clock.setTimer(timeoutMs, () =>
          stop(timeoutError === undefined ? modelCallTimeout(what, timeoutMs) : timeoutError()),
        );
    } catch (error) {
      stop(error);
    }
    // Started in a microtask, as before: a call that throws synchronously rejects like one that rejects.
    // (`.then(call)` with the scope as the value: no closure of its own per call.)
    Promise.resolve(scope)
      .then(call)
      .then(
        (value) => {
          finish();
          resolve(value);
        },
        (error: unknown) => {
          finish();
          reject(error as Error);
        },
      );
  });
}
