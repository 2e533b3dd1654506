import { describe, expect, it } from 'vitest';
import { ModelCallError } from '../../contracts/errors.js';
import { classifyOpenAIError, clause, retryAfterMs } from './classify-error.js';
import { loadOpenAI } from './load-openai.js';

// The classes of the copy the adapter loads (a `require`d one: an ESM import would be another copy).
const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } = loadOpenAI();

const KEY = 'sk-proj-0123456789abcdefSECRET';
const facts = {
  secrets: [KEY],
  baseURL: 'https://api.openai.com/v1',
  model: 'gpt-4.1-mini',
  redirects: 'refuse' as const,
};
const idle = new AbortController().signal;
const classify = (error: unknown, callSignal: AbortSignal = idle) =>
  classifyOpenAIError(error, { callSignal, facts, now: 0 }) as ModelCallError;
const statusError = (status: number, message = 'boom', headers: Record<string, string> = {}) =>
  APIError.generate(status, { error: { message, type: 'x' } }, undefined, new Headers(headers));

describe('classifyOpenAIError: the classes openai 6.49 raises', () => {
  it.each([
    [400, 'BadRequestError', 'bad_request'],
    [401, 'AuthenticationError', 'auth'],
    [403, 'PermissionDeniedError', 'auth'],
    [404, 'NotFoundError', 'bad_request'],
    [408, 'APIError', 'timeout'],
    [409, 'ConflictError', 'server'],
    [422, 'UnprocessableEntityError', 'bad_request'],
    [429, 'RateLimitError', 'rate_limited'],
    [500, 'InternalServerError', 'server'],
    [502, 'InternalServerError', 'server'],
    [503, 'InternalServerError', 'server'],
  ])('HTTP %i (%s) is %s', (status, className, kind) => {
    const error = statusError(status);
    expect(error.constructor.name).toBe(className);
    const classified = classify(error);
    expect(classified).toBeInstanceOf(ModelCallError);
    expect(classified).toMatchObject({ kind, status });
    expect(classified.message).toContain(`gpt-4.1-mini at https://api.openai.com/v1 answered HTTP ${status} boom`);
  });

  it('maps connection failures and timeouts of the client', () => {
    expect(classify(new APIConnectionTimeoutError())).toMatchObject({ kind: 'timeout' });
    expect(
      classify(new APIConnectionError({ message: 'Connection error.', cause: new TypeError('fetch failed') })),
    ).toMatchObject({
      kind: 'connection',
      message: 'could not reach gpt-4.1-mini at https://api.openai.com/v1 (Connection error: fetch failed)',
    });
  });

  it('maps what the client leaks: a reset mid-body, a garbled body, a stray abort', () => {
    expect(classify(new TypeError('terminated'))).toMatchObject({
      kind: 'connection',
      message: expect.stringContaining('terminated'),
    });
    expect(classify(new TypeError('fetch failed'))).toMatchObject({ kind: 'connection' });
    expect(classify(new SyntaxError('Unexpected end of JSON input'))).toMatchObject({ kind: 'server' });
    expect(classify(new DOMException('This operation was aborted', 'AbortError'))).toMatchObject({
      kind: 'connection',
    });
    expect(classify(new APIUserAbortError())).toMatchObject({ kind: 'connection' });
    expect(classify(new RangeError('odd'))).toMatchObject({ kind: 'unknown' });
  });

  it('a plain Error("fetch failed") or a socket error code is a connection failure, retried', () => {
    expect(classify(new Error('fetch failed'))).toMatchObject({
      kind: 'connection',
      message: expect.stringContaining('fetch failed'),
    });
    expect(
      classify(
        new Error('read failed', { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) }),
      ),
    ).toMatchObject({ kind: 'connection', message: expect.stringContaining('read ECONNRESET') });
    expect(classify(Object.assign(new Error('socket closed'), { code: 'UND_ERR_SOCKET' }))).toMatchObject({
      kind: 'connection',
    });
    expect(classify(new Error('fetch failed for good reasons?'))).toMatchObject({ kind: 'unknown' });
  });

  it('an in-stream error (an APIError without a status) is transient', () => {
    expect(classify(new APIError(undefined, { message: 'overloaded' }, undefined, undefined))).toMatchObject({
      kind: 'server',
      message: expect.stringContaining('in the middle of its streamed reply: overloaded'),
    });
  });

  it('an abort of the call signal is returned as its reason, never reclassified', () => {
    const controller = new AbortController();
    const reason = new ModelCallError({
      kind: 'timeout',
      message: 'the model call took longer than modelCallTimeoutMs (10 ms)',
    });
    controller.abort(reason);
    for (const error of [
      new APIUserAbortError(),
      new DOMException('aborted', 'AbortError'),
      new TypeError('terminated'),
      statusError(500),
    ]) {
      expect(classify(error, controller.signal)).toBe(reason);
    }
  });

  it('passes a ModelCallError through', () => {
    const error = new ModelCallError({ kind: 'refused', message: 'no' });
    expect(classify(error)).toBe(error);
  });

  it('reads Retry-After for transient statuses only, and obeys x-should-retry: false', () => {
    expect(classify(statusError(429, 'slow', { 'retry-after-ms': '1500' }))).toMatchObject({ retryAfterMs: 1_500 });
    expect(classify(statusError(400, 'bad', { 'retry-after': '5' })).retryAfterMs).toBeUndefined();
    expect(classify(statusError(503, 'no', { 'x-should-retry': 'false' }))).toMatchObject({ kind: 'bad_request' });
  });

  it('never puts the key, or its masked prefix, in a message', () => {
    const masked = `Incorrect API key provided: sk-proj-****************CRET. (${KEY})`;
    const classified = classify(statusError(401, masked));
    expect(classified.message).not.toContain(KEY);
    expect(classified.message).not.toContain('sk-proj');
    expect(classified.message).toContain('check apiKey or OPENAI_API_KEY');
    expect(classified.cause).toBeUndefined();
  });
});

describe('retryAfterMs', () => {
  it('reads retry-after-ms, then retry-after in seconds or as an HTTP date', () => {
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '12.2' }), 0)).toBe(13);
    expect(retryAfterMs(new Headers({ 'retry-after': '1.5' }), 0)).toBe(1_500);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:07 GMT' }), now)).toBe(7_000);
    expect(retryAfterMs(new Headers({ 'retry-after': 'Wed, 31 Dec 2025 00:00:00 GMT' }), now)).toBe(0);
  });

  it('is undefined when absent or garbled', () => {
    expect(retryAfterMs(undefined, 0)).toBeUndefined();
    expect(retryAfterMs(new Headers(), 0)).toBeUndefined();
    expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }), 0)).toBeUndefined();
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '-4' }), 0)).toBeUndefined();
  });
});

describe('clause', () => {
  it('drops a closing full stop, so a joined cause or hint never doubles the punctuation', () => {
    expect(clause(' Connection error. ')).toBe('Connection error');
    expect(clause('Try again in 6ms. Visit https://platform.openai.com to learn more.')).toBe(
      'Try again in 6ms. Visit https://platform.openai.com to learn more',
    );
    expect(clause('wait...')).toBe('wait...');
    expect(clause('is it /v1?')).toBe('is it /v1?');
  });
});

describe('a redirect left unfollowed', () => {
  it('is fatal, naming the Location and the option', () => {
    const error = APIError.generate(
      307,
      undefined,
      'moved',
      new Headers({ location: 'https://elsewhere.example/v1/chat/completions' }),
    );
    expect(classify(error)).toMatchObject({
      kind: 'unknown',
      status: 307,
      message:
        "gpt-4.1-mini at https://api.openai.com/v1 answered HTTP 307, a redirect to https://elsewhere.example/v1/chat/completions, which was not followed (redirects: 'refuse', the default); point baseURL at the address it redirects to, or set redirects: 'same-origin' if it stays within https://api.openai.com",
    });
  });
});
