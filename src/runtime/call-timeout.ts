/**
 * One model call under its own timeout: the main model's call, an LLM judge's, a context summary's.
 * The call gets a signal aborted on cancel, on the run's deadline and when `limits.modelCallTimeoutMs`
 * passes on the run's clock; the timeout is a transport failure (`ModelCallError` of kind `timeout`),
 * which the retry layers handle.
 */
import { ModelCallError } from '../errors.js';
import { untilAborted } from './interruption.js';
import type { RunSession } from './run-session.js';

/**
 * Runs `call` with a signal that aborts on the run's signal or after `timeoutMs`.
 * @example
 * const response = await callWithTimeout(session, 60_000, 'the model call', (signal) => model.generate({ messages, tools, signal }));
 */
export async function callWithTimeout<Result>(
  session: RunSession,
  timeoutMs: number,
  what: string,
  call: (signal: AbortSignal) => Promise<Result> | Result,
): Promise<Result> {
  const controller = new AbortController();
  const onRunAbort = () => controller.abort(session.signal.reason);
  if (session.signal.aborted) onRunAbort();
  else session.signal.addEventListener('abort', onRunAbort, { once: true });
  const cancelTimer: unknown = session.config.clock.setTimer(timeoutMs, () =>
    controller.abort(new ModelCallError({ kind: 'timeout', message: `${what} took longer than modelCallTimeoutMs (${timeoutMs} ms)` })),
  );
  try {
    return await untilAborted(Promise.resolve().then(() => call(controller.signal)), controller.signal);
  } finally {
    // A clock whose setTimer returns no cancel function leaves a timer that fires into an aborted call: harmless.
    if (typeof cancelTimer === 'function') cancelTimer();
    session.signal.removeEventListener('abort', onRunAbort);
  }
}
