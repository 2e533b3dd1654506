/**
 * What an AI SDK provider throws, mapped to a `ModelCallError` kind so that the loop's one retry layer
 * decides: an `APICallError` by its status and `isRetryable` (429, 408, 409, 5xx and connection failures
 * are transient; 400, 401, 403, 404, 422 fatal), with the server's `retry-after-ms` / `retry-after`. A
 * missing API key or setting is a `LoopConfigError` naming the environment variable. Errors are recognised
 * by the AI SDK's marker symbols (`Symbol.for('vercel.ai.error.AI_APICallError')`) or their `name`, so any
 * installed copy of `@ai-sdk/provider` is classified the same, and nothing of it is loaded here.
 */
import {
  LoopConfigError,
  ModelCallError,
  modelErrorKindOfStatus,
  type ModelErrorKind,
} from '../../contracts/errors.js';
import type { ModelUsage } from '../../contracts/model.js';

/** An AI SDK error class's name (`AI_APICallError`), as its marker symbol and its `name` carry it. */
export type AiSdkErrorName =
  | 'AI_APICallError'
  | 'AI_LoadAPIKeyError'
  | 'AI_LoadSettingError'
  | 'AI_JSONParseError'
  | 'AI_EmptyResponseBodyError'
  | 'AI_InvalidResponseDataError'
  | 'AI_TypeValidationError'
  | 'AI_UnsupportedFunctionalityError'
  | 'AI_InvalidPromptError'
  | 'AI_InvalidArgumentError'
  | 'AI_NoContentGeneratedError';

/**
 * True when `error` is the AI SDK error `name`, from any installed copy: its marker symbol is set, or
 * (an error copied across a boundary that lost the symbol) its `name` says so.
 * @example
 * isAiSdkError(error, 'AI_APICallError')
 */
export function isAiSdkError(error: unknown, name: AiSdkErrorName): boolean {
  if (typeof error !== 'object' || error === null) return false;
  try {
    const marker = Symbol.for(`vercel.ai.error.${name}`);
    return (error as Record<symbol, unknown>)[marker] === true || (error as { name?: unknown }).name === name;
  } catch {
    return false;
  }
}

/** The fields of an `APICallError` that decide its kind. */
interface ApiCallFacts {
  message: string;
  statusCode?: number;
  isRetryable?: boolean;
  responseHeaders?: Record<string, string>;
}

const TRANSIENT: ReadonlySet<ModelErrorKind> = new Set(['rate_limited', 'timeout', 'server', 'connection']);

const HINTS: Partial<Record<number, string>> = {
  401: "the API key was refused; check the key given to the provider's factory or its environment variable",
  403: 'the key may not use this model or endpoint',
  404: "unknown model or endpoint; check the model id and the provider's baseURL",
};

/** A header of a plain record whatever its case (the AI SDK keeps them as the server sent them, lower-cased by fetch). */
function header(headers: Record<string, string> | undefined, name: string): string | undefined {
  if (headers === undefined) return undefined;
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value;
  return undefined;
}

/**
 * Retry-After in milliseconds: `retry-after-ms` first, then `retry-after` in seconds or as an HTTP date.
 * @example
 * retryAfterMs({ 'retry-after': '2' }, Date.now()) // 2000
 */
export function retryAfterMs(headers: Record<string, string> | undefined, now: number): number | undefined {
  const milliseconds = Number.parseFloat(header(headers, 'retry-after-ms') ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return Math.ceil(milliseconds);
  const value = header(headers, 'retry-after')?.trim();
  if (value === undefined || value === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number.parseFloat(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** A message as a clause of ours: trimmed, without its closing full stop. */
const clause = (text: string): string => text.trim().replace(/([^.])\.$/, '$1');

const messageOf = (error: unknown): string => {
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string')
    return (error as { message: string }).message;
  if (typeof error === 'object' && error !== null) return JSON.stringify(error).slice(0, 200);
  return String(error);
};

function apiCallError(error: ApiCallFacts, where: string, now: number): ModelCallError {
  const status = Number.isInteger(error.statusCode) ? error.statusCode : undefined;
  if (status === undefined) {
    // No response at all: the provider could not reach the server (its `isRetryable` says so), or gave up.
    return new ModelCallError({
      kind: error.isRetryable === false ? 'unknown' : 'connection',
      message: `could not reach ${where} (${clause(error.message)})`,
    });
  }
  let kind = modelErrorKindOfStatus(status);
  // The provider's own say on retrying wins over our reading of the status (Anthropic's 529 "overloaded").
  if (error.isRetryable === false && TRANSIENT.has(kind)) kind = 'bad_request';
  if (error.isRetryable === true && !TRANSIENT.has(kind)) kind = 'server';
  const hint = HINTS[status];
  const retryAfter = TRANSIENT.has(kind) ? retryAfterMs(error.responseHeaders, now) : undefined;
  return new ModelCallError({
    kind,
    status,
    message: `${where} answered HTTP ${status}: ${clause(error.message)}${hint === undefined ? '' : ` — ${hint}`}`,
    ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter }),
  });
}

/** Socket-level failures of Node and undici, leaked past a provider: the network failed, not the request. */
function isNetworkFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code ?? (error.cause as { code?: unknown } | undefined)?.code;
  return (
    (typeof code === 'string' && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(code)) ||
    /^(fetch failed|terminated|socket hang up|other side closed)$/i.test(error.message)
  );
}

export interface ClassifyFacts {
  /** The signal the call was given: once it is aborted, its reason is what the call reports. */
  signal: AbortSignal;
  /** `anthropic.messages:claude-sonnet-4-5`, for the message. */
  where: string;
  now: number;
  /** Tokens the provider reported before the failure (a stream's finish, then a cut): billed, so carried. */
  usage?: ModelUsage | null;
}

/**
 * What a failed AI SDK call becomes. An abort of the call's signal (the loop's cancel, deadline or per-call
 * timeout) is rethrown as the signal's reason, as every loopstate adapter does, so the loop tells a
 * timeout from a cancel the same way whichever model runs.
 * @example
 * throw classifyAiSdkError(error, { signal: request.signal, where: 'anthropic.messages:claude-sonnet-4-5', now: Date.now() });
 */
export function classifyAiSdkError(error: unknown, facts: ClassifyFacts): unknown {
  if (facts.signal.aborted) return facts.signal.reason;
  const classified = classify(error, facts);
  if (facts.usage == null || !(classified instanceof ModelCallError) || classified.usage !== undefined)
    return classified;
  return new ModelCallError({
    kind: classified.kind,
    message: classified.message,
    ...(classified.status === undefined ? {} : { status: classified.status }),
    ...(classified.retryAfterMs === undefined ? {} : { retryAfterMs: classified.retryAfterMs }),
    usage: facts.usage,
  });
}

function classify(error: unknown, { where, now }: ClassifyFacts): unknown {
  if (ModelCallError.is(error) || error instanceof LoopConfigError) return error;
  const message = clause(messageOf(error));
  if (isAiSdkError(error, 'AI_APICallError')) return apiCallError(error as ApiCallFacts, where, now);
  if (isAiSdkError(error, 'AI_LoadAPIKeyError') || isAiSdkError(error, 'AI_LoadSettingError')) {
    // The provider's message names the option and the environment variable (`ANTHROPIC_API_KEY`).
    return new LoopConfigError({ issues: [{ path: `aiSdkModel(${where})`, message }] });
  }
  if (isAiSdkError(error, 'AI_JSONParseError') || isAiSdkError(error, 'AI_EmptyResponseBodyError')) {
    // A body cut short or garbled by a proxy: the next attempt usually reads fine.
    return new ModelCallError({ kind: 'server', message: `${where} sent a reply that could not be read (${message})` });
  }
  if (isAiSdkError(error, 'AI_InvalidResponseDataError') || isAiSdkError(error, 'AI_TypeValidationError')) {
    // The server's reply is not the shape its provider expects: asking again brings the same reply.
    return new ModelCallError({
      kind: 'unknown',
      message: `${where} sent a reply its provider does not understand (${message})`,
    });
  }
  if (
    isAiSdkError(error, 'AI_UnsupportedFunctionalityError') ||
    isAiSdkError(error, 'AI_InvalidPromptError') ||
    isAiSdkError(error, 'AI_InvalidArgumentError')
  ) {
    return new ModelCallError({ kind: 'bad_request', message: `${where} cannot take this request: ${message}` });
  }
  if (typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError') {
    // Not our abort (checked first): something under the provider gave up on the socket.
    return new ModelCallError({ kind: 'connection', message: `the connection to ${where} was aborted mid-call` });
  }
  // Providers wrap fetch failures in APICallError; a bare TypeError is a bug, unless it is a socket failure.
  if (isNetworkFailure(error)) {
    const cause = error instanceof Error && error.cause !== undefined ? `: ${clause(messageOf(error.cause))}` : '';
    return new ModelCallError({
      kind: 'connection',
      message: `the connection to ${where} failed mid-call (${message}${cause})`,
    });
  }
  return new ModelCallError({ kind: 'unknown', message: `the call to ${where} failed: ${message}` });
}

/**
 * A stream's `error` part: the server gave up mid-reply (Anthropic's `overloaded_error`, say), which is
 * transient unless the part is an AI SDK error that says otherwise.
 * @example
 * throw streamErrorPart({ type: 'overloaded_error', message: 'Overloaded' }, facts);
 */
export function streamErrorPart(error: unknown, facts: ClassifyFacts): unknown {
  if (facts.signal.aborted) return facts.signal.reason;
  const named = typeof error === 'object' && error !== null && Symbol.for('vercel.ai.error') in error;
  if (named || error instanceof Error) return classifyAiSdkError(error, facts);
  const type =
    typeof error === 'object' && error !== null && typeof (error as { type?: unknown }).type === 'string'
      ? ` (${(error as { type: string }).type})`
      : '';
  return classifyAiSdkError(
    new ModelCallError({
      kind: 'server',
      message: `${facts.where} reported an error in the middle of its streamed reply${type}: ${clause(messageOf(error))}`,
    }),
    facts,
  );
}
