/**
 * Everything the openai client can throw, mapped to a `ModelCallError` kind: transient failures
 * (429, 408, 409, 5xx, connection, timeouts, a body cut short) go to the loop's transport retry;
 * the caller's mistakes (400, 401, 403, 404, 422) and redirects are fatal. Messages name the cause and
 * never a credential.
 */
import type { APIError } from 'openai';
import { loadOpenAI } from './load-openai.js';
import { ModelCallError, modelErrorKindOfStatus } from '../../contracts/errors.js';
import { MAX_REDIRECT_HOPS, type RedirectPolicy } from './redirect-guard.js';
import { scrubSecrets } from './secret-scrub.js';

/** Where the failed call went and with which credentials, so the message can name the one and hide the others. */
export interface CallFacts {
  /** The key and the header values in use (`modelSecrets`); scrubbed from every message. */
  secrets: readonly string[];
  baseURL: string;
  model: string;
  redirects: RedirectPolicy;
}

const HINTS: Partial<Record<number, string>> = {
  401: 'the API key was refused; check apiKey or OPENAI_API_KEY',
  403: 'the key may not use this model or endpoint (organization, project or region)',
  404: 'unknown model or endpoint; check the model id and baseURL (it usually ends in /v1)',
};

/**
 * Retry-After as milliseconds: `retry-after-ms` first (OpenAI sends it), then `retry-after` in seconds
 * or as an HTTP date. The loop caps how long it waits (`retry.maxRetryAfterMs`).
 * @example
 * retryAfterMs(new Headers({ 'retry-after': '2' }), Date.now()) // 2000
 */
export function retryAfterMs(headers: Headers | undefined, now: number): number | undefined {
  const milliseconds = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return Math.ceil(milliseconds);
  const value = headers?.get('retry-after')?.trim();
  if (value === undefined || value === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number.parseFloat(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * A message as a clause of ours: trimmed, without its closing full stop, so that joined to a cause or a
 * hint it reads `Connection error: fetch failed`, never `Connection error.: fetch failed`.
 * @example
 * clause('Connection error. ') // 'Connection error'
 */
export function clause(text: string): string {
  return text.trim().replace(/([^.])\.$/, '$1');
}

/** Socket-level error codes of Node and undici: the network failed, not the request. */
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/** A plain `Error('fetch failed')` or an error whose code (or its cause's) is a socket error. */
function isNetworkFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const codeOf = (value: unknown) =>
    typeof value === 'object' && value !== null ? (value as { code?: unknown }).code : undefined;
  const code = codeOf(error) ?? codeOf((error as { cause?: unknown }).cause);
  return (
    (typeof code === 'string' && NETWORK_CODES.has(code)) ||
    /^(fetch failed|terminated|socket hang up|other side closed)$/i.test(error.message)
  );
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

const isAbortLike = (error: unknown): boolean =>
  error instanceof loadOpenAI().APIUserAbortError ||
  (typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError');

/**
 * What a failed call becomes. An abort of `callSignal` (the caller's cancel, deadline or per-call
 * timeout, or our own timers) is rethrown as its reason, never reclassified as a connection failure.
 * @example
 * throw classifyOpenAIError(error, { callSignal: watchdog.signal, facts, now: Date.now() });
 */
export function classifyOpenAIError(
  error: unknown,
  { callSignal, facts, now }: { callSignal: AbortSignal; facts: CallFacts; now: number },
): unknown {
  if (callSignal.aborted) return callSignal.reason;
  const { APIConnectionError, APIConnectionTimeoutError, APIError } = loadOpenAI();
  if (ModelCallError.is(error)) return error;
  const where = `${facts.model} at ${facts.baseURL}`;
  const scrub = (text: string) => clause(scrubSecrets(text, facts.secrets));
  if (error instanceof APIConnectionTimeoutError) {
    return new ModelCallError({
      kind: 'timeout',
      message: `the OpenAI call to ${where} timed out before the response headers arrived`,
    });
  }
  if (error instanceof APIConnectionError) {
    const cause = error.cause === undefined ? '' : `: ${scrub(messageOf(error.cause))}`;
    return new ModelCallError({
      kind: 'connection',
      message: `could not reach ${where} (${scrub(error.message)}${cause})`,
    });
  }
  if (isAbortLike(error)) {
    // Not our abort (checked above): something under the client gave up on the socket.
    return new ModelCallError({ kind: 'connection', message: `the connection to ${where} was aborted mid-call` });
  }
  if (error instanceof APIError) return statusError(error, facts, scrub, now);
  if (error instanceof SyntaxError) {
    // A body cut short or garbled by a proxy: the next attempt usually reads fine.
    return new ModelCallError({
      kind: 'server',
      message: `${where} sent a reply that is not valid JSON (${scrub(error.message)})`,
    });
  }
  if (error instanceof TypeError || isNetworkFailure(error)) {
    // undici's `terminated` (a reset mid-body) and `fetch failed`, leaked past the client, or a socket error.
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause === undefined ? '' : `: ${scrub(messageOf(cause))}`;
    return new ModelCallError({
      kind: 'connection',
      message: `the connection to ${where} failed mid-call (${scrub(messageOf(error))}${detail})`,
    });
  }
  return new ModelCallError({
    kind: 'unknown',
    message: `the OpenAI call to ${where} failed: ${scrub(messageOf(error))}`,
  });
}

/** A redirect the redirect guard did not follow: where it pointed, and why it stays unfollowed. */
function redirectError(status: number, location: string, facts: CallFacts): ModelCallError {
  const origin = new URL(facts.baseURL).origin;
  const policy =
    facts.redirects === 'refuse'
      ? "redirects: 'refuse', the default"
      : `redirects: 'same-origin' follows 301, 302, 307 and 308 within ${origin}, at most ${MAX_REDIRECT_HOPS} in a row`;
  return new ModelCallError({
    kind: 'unknown',
    status,
    message:
      `${facts.model} at ${facts.baseURL} answered HTTP ${status}, a redirect to ${location}, which was not followed (${policy}); point baseURL at the address it redirects to` +
      (facts.redirects === 'refuse' ? `, or set redirects: 'same-origin' if it stays within ${origin}` : ''),
  });
}

function statusError(error: APIError, facts: CallFacts, scrub: (text: string) => string, now: number): ModelCallError {
  const where = `${facts.model} at ${facts.baseURL}`;
  const status = error.status;
  // An in-stream `error` event has no status: the server gave up mid-reply, which is transient.
  if (status === undefined) {
    return new ModelCallError({
      kind: 'server',
      message: `${where} reported an error in the middle of its streamed reply: ${scrub(error.message)}`,
    });
  }
  const location = error.headers?.get('location');
  if (status >= 300 && status < 400 && location) return redirectError(status, scrub(location), facts);
  // OpenAI's own say on retrying wins over our reading of the status.
  const shouldRetry = error.headers?.get('x-should-retry');
  let kind = modelErrorKindOfStatus(status);
  if (shouldRetry === 'false' && (kind === 'server' || kind === 'rate_limited' || kind === 'timeout'))
    kind = 'bad_request';
  const hint = HINTS[status];
  const requestId = error.requestID ? ` (request ${error.requestID})` : '';
  const retryAfter =
    kind === 'rate_limited' || kind === 'server' || kind === 'timeout' ? retryAfterMs(error.headers, now) : undefined;
  return new ModelCallError({
    kind,
    status,
    message: `${where} answered HTTP ${scrub(error.message)}${hint === undefined ? '' : ` — ${hint}`}${requestId}`,
    ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter }),
  });
}
