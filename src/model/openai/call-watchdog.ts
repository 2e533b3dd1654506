/**
 * One HTTP call's own timers. The openai client's `timeout` covers only the wait for the response
 * headers: a server that stalls after them would hang the call for ever. So each call gets an
 * AbortController of ours, aborted by the caller's signal, by a whole-call timer (`timeoutMs`) and by
 * an idle timer re-armed on every byte of the body (`idleTimeoutMs`), and a `fetch` that feeds it.
 */
import { ModelCallError } from '../../errors.js';

/** The fetch the openai client calls: the global one unless a test or a proxy hands its own. */
export type FetchFunction = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

export interface CallWatchdog {
  /** Aborted when the caller's signal aborts or one of our timers fires; its reason says which. */
  readonly signal: AbortSignal;
  /** A fetch whose response body re-arms the idle timer on every chunk. */
  readonly fetch: FetchFunction;
  /** Re-arms the idle timer; streaming code calls it per event too. */
  touch(): void;
  /** The content type of the last response, once its headers came; null before. */
  readonly contentType: string | null;
  /** Clears every timer and listener; idempotent. */
  dispose(): void;
}

/**
 * Starts the watchdog of one call. Timers run on the wall clock (they guard real sockets).
 * @example
 * const watchdog = watchCall({ signal: request.signal, timeoutMs: 60_000, idleTimeoutMs: 30_000, fetch: globalThis.fetch });
 */
export function watchCall(options: { signal: AbortSignal; timeoutMs: number; idleTimeoutMs: number; fetch: FetchFunction }): CallWatchdog {
  const controller = new AbortController();
  const { signal: callerSignal, timeoutMs, idleTimeoutMs } = options;
  const onCallerAbort = () => controller.abort(callerSignal.reason);
  if (callerSignal.aborted) onCallerAbort();
  else callerSignal.addEventListener('abort', onCallerAbort, { once: true });
  const callTimer = setTimeout(() => controller.abort(new ModelCallError({ kind: 'timeout', message: `the OpenAI call took longer than timeoutMs (${timeoutMs} ms)` })), timeoutMs);
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  let disposed = false;
  let contentType: string | null = null;

  const touch = () => {
    if (disposed || controller.signal.aborted) return;
    if (idleTimer !== undefined) clearTimeout(idleTimer);
    idleTimer = setTimeout(
      () => controller.abort(new ModelCallError({ kind: 'timeout', message: `the OpenAI server sent nothing for idleTimeoutMs (${idleTimeoutMs} ms) in the middle of its reply` })),
      idleTimeoutMs,
    );
  };

  const watchedFetch: FetchFunction = async (input, init) => {
    const response = await options.fetch(input, init);
    contentType = response.headers.get('content-type') ?? '';
    // The headers are in: from here on silence is a stall, not a model thinking before it answers.
    touch();
    // A null-body status cannot be rebuilt with a body; there is nothing to watch anyway.
    if (response.body === null || NULL_BODY_STATUSES.has(response.status)) return response;
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, stream) {
          touch();
          stream.enqueue(chunk);
        },
      }),
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  return {
    signal: controller.signal,
    fetch: watchedFetch,
    touch,
    get contentType() {
      return contentType;
    },
    dispose() {
      disposed = true;
      clearTimeout(callTimer);
      if (idleTimer !== undefined) clearTimeout(idleTimer);
      callerSignal.removeEventListener('abort', onCallerAbort);
    },
  };
}
