/**
 * One HTTP call's own bounds. The openai client's `timeout` covers only the wait for the response
 * headers: a server that stalls after them would hang the call for ever, and it reads a body of any size
 * whole. So each call gets an AbortController of ours, aborted by the caller's signal, by a whole-call
 * timer (`timeoutMs`), by an idle timer re-armed on every byte of the body (`idleTimeoutMs`) and once the
 * body passes `maxResponseBytes`, and a `fetch` that feeds it. A Chat Completions stream ends at its
 * `[DONE]` line, whether or not the server closes the connection.
 */
import { ModelCallError } from '../../contracts/errors.js';
import { DoneLineFinder } from './stream-end.js';

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

export interface WatchOptions {
  signal: AbortSignal;
  timeoutMs: number;
  idleTimeoutMs: number;
  /** Bytes of one response body, read as they arrive; past them the call fails for good. */
  maxResponseBytes: number;
  fetch: FetchFunction;
  /** Names the server in the size error (`gpt-4.1-mini at http://…/v1`). */
  where: string;
}

/** Fatal: the same request would bring the same reply, and reading on is what the limit prevents. */
function tooLarge(where: string, maxResponseBytes: number, declared?: number): ModelCallError {
  const limit = `is larger than maxResponseBytes (${maxResponseBytes} bytes); raise openaiModel({ maxResponseBytes }) if replies this big are expected`;
  return new ModelCallError({
    kind: 'unknown',
    message:
      declared === undefined
        ? `${where} sent a reply that ${limit}; it was cut off there`
        : `${where} answered with a body of ${declared} bytes, which ${limit}`,
  });
}

/**
 * What `watchCall` returns. `contentType` is a getter on this prototype, one for every call: an object literal's
 * `get contentType()` is a closure of its own per call, over the call's timers, controller and caller's signal,
 * and V8 describes it on the object's map, which keeps that closure past young collections.
 */
class Watchdog implements CallWatchdog {
  #contentType: string | null = null;

  constructor(
    readonly signal: AbortSignal,
    readonly fetch: FetchFunction,
    readonly touch: () => void,
    readonly dispose: () => void,
  ) {}

  get contentType(): string | null {
    return this.#contentType;
  }

  /** Called once the response's headers came. */
  noteContentType(contentType: string): void {
    this.#contentType = contentType;
  }
}

const declaredLength = (response: Response): number | undefined => {
  const length = Number(response.headers.get('content-length') ?? Number.NaN);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
};

/**
 * Starts the watchdog of one call. Timers run on the wall clock (they guard real sockets).
 * @example
 * const watchdog = watchCall({ signal: request.signal, timeoutMs: 60_000, idleTimeoutMs: 30_000, maxResponseBytes: 16 * 1024 * 1024, fetch: globalThis.fetch, where: 'gpt-4.1-mini at https://api.openai.com/v1' });
 */
export function watchCall(options: WatchOptions): CallWatchdog {
  const controller = new AbortController();
  const { signal: callerSignal, timeoutMs, idleTimeoutMs, maxResponseBytes, where } = options;
  const onCallerAbort = () => controller.abort(callerSignal.reason);
  if (callerSignal.aborted) onCallerAbort();
  else callerSignal.addEventListener('abort', onCallerAbort, { once: true });
  const callTimer = setTimeout(
    () =>
      controller.abort(
        new ModelCallError({
          kind: 'timeout',
          message: `the OpenAI call took longer than timeoutMs (${timeoutMs} ms)`,
        }),
      ),
    timeoutMs,
  );
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  let disposed = false;

  const touch = () => {
    if (disposed || controller.signal.aborted) return;
    if (idleTimer !== undefined) clearTimeout(idleTimer);
    idleTimer = setTimeout(
      () =>
        controller.abort(
          new ModelCallError({
            kind: 'timeout',
            message: `the OpenAI server sent nothing for idleTimeoutMs (${idleTimeoutMs} ms) in the middle of its reply`,
          }),
        ),
      idleTimeoutMs,
    );
  };

  const watchedFetch: FetchFunction = async (input, init) => {
    const response = await options.fetch(input, init);
    const contentType = response.headers.get('content-type') ?? '';
    watchdog.noteContentType(contentType);
    // The headers are in: from here on silence is a stall, not a model thinking before it answers.
    touch();
    // A null-body status cannot be rebuilt with a body; there is nothing to watch anyway.
    if (response.body === null || NULL_BODY_STATUSES.has(response.status)) return response;
    const declared = declaredLength(response);
    if (declared !== undefined && declared > maxResponseBytes) {
      // Said before a byte of it is read; the abort closes the socket.
      controller.abort(tooLarge(where, maxResponseBytes, declared));
      await response.body.cancel().catch(() => undefined);
      throw controller.signal.reason;
    }
    const doneLine = contentType.includes('text/event-stream') ? new DoneLineFinder() : null;
    let received = 0;
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, stream) {
          received += chunk.byteLength;
          if (received > maxResponseBytes) {
            const error = tooLarge(where, maxResponseBytes);
            // The abort is what the call reports, however the client words the broken body.
            controller.abort(error);
            stream.error(error);
            return;
          }
          touch();
          stream.enqueue(chunk);
          // The client would read on until the server closes the connection: the reply is whole here.
          if (doneLine?.sawDone(chunk) === true) stream.terminate();
        },
      }),
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  const watchdog = new Watchdog(controller.signal, watchedFetch, touch, () => {
    disposed = true;
    clearTimeout(callTimer);
    if (idleTimer !== undefined) clearTimeout(idleTimer);
    callerSignal.removeEventListener('abort', onCallerAbort);
  });
  return watchdog;
}
