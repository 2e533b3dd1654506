/**
 * Every failure the openai 6.49 client can raise, or leak, against the local server over real HTTP:
 * the edge it takes, the number of HTTP requests it costs (one per attempt: the client never retries),
 * the stop reason once retries run out, and the key absent from everything the run hands back.
 */
import { createServer } from 'node:net';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { createLoop, systemClock, type RunResult, type TraceEvent } from 'loopstate';
import { openaiModel, type OpenAIModelOptions } from 'loopstate/openai';
import { virtualClock } from 'loopstate/testing';
import { apiError, chatChunks, chatCompletion, replyStep, responsesEvents } from '../support/openai-fixtures.js';
import { useOpenAIServer, type OpenAITestServer, type ServerStep } from '../support/openai-server.js';

const SECRET = 'sk-test-abcdefghijklmnop1234567890SECRETKEY';

let server: OpenAITestServer;
useOpenAIServer((started) => (server = started));

const OK = replyStep('chat', false, { text: 'done', usage: { input: 10, output: 2 } });

interface Run {
  result: RunResult;
  events: TraceEvent[];
}

/**
 * One run on a virtual clock (backoffs are instant). The model's own timers are wall-clock: roomy by
 * default (a loaded machine must not time out a healthy reply), short only where a stall is tested.
 */
async function runWith(
  steps: ServerStep[],
  options: Partial<OpenAIModelOptions> = {},
  loopOptions: Record<string, unknown> = {},
): Promise<Run> {
  server.enqueue(...steps);
  const events: TraceEvent[] = [];
  const loop = createLoop({
    model: openaiModel({
      model: 'gpt-4.1-mini',
      baseURL: server.baseURL,
      apiKey: SECRET,
      timeoutMs: 5_000,
      idleTimeoutMs: 2_000,
      ...options,
    }),
    limits: { maxRetries: 2 },
    clock: virtualClock(),
    random: () => 0,
    trace: { onEvent: (event) => events.push(event) },
    ...loopOptions,
  });
  return { result: await loop.run({ goal: 'Say done.' }), events };
}

const delays = (result: RunResult) =>
  result.trace.flatMap((event) => (event.type === 'model-error' ? [event.retryDelayMs] : []));
const kinds = (result: RunResult) =>
  result.trace.flatMap((event) => (event.type === 'model-error' ? [event.errorKind] : []));

function expectNoKey(run: Run): void {
  const everything = JSON.stringify({ result: run.result, events: run.events });
  expect(everything).not.toContain(SECRET);
  expect(everything).not.toContain(SECRET.slice(0, 12));
  expect(everything).not.toContain(SECRET.slice(-8));
}

const STALL_BEFORE = { timeoutMs: 200 };
const STALL_AFTER = { idleTimeoutMs: 100 };

const times = (count: number, step: ServerStep): ServerStep[] => Array.from({ length: count }, () => step);

describe('transient failures: the transport retry, one HTTP request per attempt', () => {
  const transient: [string, ServerStep, string, Partial<OpenAIModelOptions>?][] = [
    ['429 RateLimitError', apiError(429, 'Rate limit reached'), 'rate_limited'],
    ['500 InternalServerError', apiError(500, 'The server had an error'), 'server'],
    ['503 InternalServerError', apiError(503, 'Service unavailable'), 'server'],
    ['408 plain APIError', apiError(408, 'Request timeout'), 'timeout'],
    ['409 ConflictError', apiError(409, 'Conflict'), 'server'],
    ['a stall before the headers (timeoutMs)', { kind: 'stall-before-headers' }, 'timeout', STALL_BEFORE],
    [
      'a stall after the headers (idleTimeoutMs)',
      { kind: 'stall-after-headers', partial: '{"id":' },
      'timeout',
      STALL_AFTER,
    ],
    ['a reset mid-body (TypeError: terminated)', { kind: 'reset-mid-body' }, 'connection'],
    [
      'a malformed JSON body (SyntaxError)',
      { kind: 'raw', contentType: 'application/json', body: '{"id":"chatcmpl-1","choices":[' },
      'server',
    ],
    [
      'a stream that ends without [DONE] or finish_reason',
      { kind: 'sse', events: chatChunks({ text: 'half an ans' }).slice(0, 3), done: false },
      'connection',
      { stream: true },
    ],
    [
      'an in-stream error event',
      {
        kind: 'sse',
        events: [
          ...chatChunks({ text: 'partial' }).slice(0, 2),
          { error: { message: 'The server had an error while processing your request', type: 'server_error' } },
        ],
      },
      'server',
      { stream: true },
    ],
    [
      'a stall after the headers of a stream',
      {
        kind: 'stall-after-headers',
        contentType: 'text/event-stream',
        partial: `data: ${JSON.stringify(chatChunks({ text: 'hi' })[0])}\n\n`,
      },
      'timeout',
      { ...STALL_AFTER, stream: true },
    ],
  ];

  it.each(transient)('%s: retried, then completes (2 requests)', async (_name, fault, kind, options = {}) => {
    const run = await runWith([fault, options.stream ? replyStep('chat', true, { text: 'done' }) : OK], options);
    expect(run.result.stopReason).toBe('completed');
    expect(run.result.rawOutput).toBe('done');
    expect(kinds(run.result)).toEqual([kind]);
    expect(server.requests).toHaveLength(2);
    expectNoKey(run);
  });

  it.each(transient)(
    '%s, persistent: retries_exhausted after maxRetries + 1 = 3 requests',
    async (_name, fault, kind, options = {}) => {
      const run = await runWith(times(3, fault), options);
      expect(run.result.stopReason).toBe('retries_exhausted');
      expect(run.result.status).toBe('failed');
      expect(kinds(run.result)).toEqual([kind, kind, kind]);
      expect(server.requests).toHaveLength(3);
      expectNoKey(run);
    },
  );

  it('names the timer that fired: timeoutMs before the headers, idleTimeoutMs after them', async () => {
    const before = await runWith([{ kind: 'stall-before-headers' }, OK], STALL_BEFORE);
    expect(before.result.trace.find((event) => event.type === 'model-error')).toMatchObject({
      errorKind: 'timeout',
      message: 'the OpenAI call took longer than timeoutMs (200 ms)',
    });
    const after = await runWith([{ kind: 'stall-after-headers' }, OK], STALL_AFTER);
    expect(after.result.trace.find((event) => event.type === 'model-error')).toMatchObject({
      errorKind: 'timeout',
      message: expect.stringContaining('sent nothing for idleTimeoutMs (100 ms)'),
    });
  });

  it('a refused connection (APIConnectionError): retried, 3 attempts, retries_exhausted', async () => {
    const port = await closedPort();
    const events: TraceEvent[] = [];
    const loop = createLoop({
      model: openaiModel({ model: 'gpt-4.1-mini', baseURL: `http://127.0.0.1:${port}/v1`, apiKey: SECRET }),
      clock: virtualClock(),
      trace: { onEvent: (event) => events.push(event) },
    });
    const result = await loop.run({ goal: 'Say done.' });
    expect(result.stopReason).toBe('retries_exhausted');
    expect(kinds(result)).toEqual(['connection', 'connection', 'connection']);
    expect(result.detail).toMatch(/could not reach gpt-4\.1-mini at http:\/\/127\.0\.0\.1/);
    expectNoKey({ result, events });
  });
});

describe('the Responses API stream', () => {
  const responses = { api: 'responses' as const, stream: true };
  const OK_STREAM = replyStep('responses', true, { text: 'done' });
  it.each([
    [
      'ends without response.completed',
      { kind: 'sse', events: responsesEvents({ text: 'half' }, { complete: false }), done: false },
      'connection',
    ],
    [
      'carries an error event',
      {
        kind: 'sse',
        events: [
          ...responsesEvents({ text: 'half' }, { complete: false }),
          { event: 'error', data: { type: 'error', code: 'server_error', message: 'The server had an error' } },
        ],
        done: false,
      },
      'server',
    ],
    [
      'reports response.failed',
      {
        kind: 'sse',
        events: [
          ...responsesEvents({ text: 'half' }, { complete: false }),
          {
            event: 'response.failed',
            data: {
              type: 'response.failed',
              response: { status: 'failed', error: { code: 'server_error', message: 'boom' } },
            },
          },
        ],
        done: false,
      },
      'server',
    ],
  ] as [string, ServerStep, string][])('that %s is retried (2 requests)', async (_name, fault, kind) => {
    const run = await runWith([fault, OK_STREAM], responses);
    expect(run.result.stopReason).toBe('completed');
    expect(kinds(run.result)).toEqual([kind]);
    expect(server.requests).toHaveLength(2);
  });

  it('a 429 before the stream starts is retried the same way', async () => {
    const run = await runWith([apiError(429, 'slow down', { 'retry-after-ms': '30' }), OK_STREAM], responses);
    expect(delays(run.result)).toEqual([30]);
    expect(run.result.stopReason).toBe('completed');
  });
});

describe('a chat stream that is whole without [DONE]', () => {
  it('completes once a finish_reason came, usage estimated when its chunk is missing too', async () => {
    const run = await runWith([{ kind: 'sse', events: chatChunks({ text: 'done' }, { usage: false }), done: false }], {
      stream: true,
    });
    expect(run.result.stopReason).toBe('completed');
    expect(run.result.usage.outputTokens).toBe(1);
    expect(server.requests).toHaveLength(1);
  });
});

describe('Retry-After: honoured, capped', () => {
  it('waits what retry-after-ms says (250 ms), over the jitter', async () => {
    const run = await runWith([apiError(429, 'slow down', { 'retry-after-ms': '250' }), OK]);
    expect(delays(run.result)).toEqual([250]);
    expect(server.requests).toHaveLength(2);
  });

  it('reads retry-after in seconds', async () => {
    const run = await runWith([apiError(503, 'busy', { 'retry-after': '2' }), OK]);
    expect(delays(run.result)).toEqual([2_000]);
  });

  it('prefers retry-after-ms to retry-after', async () => {
    const run = await runWith([apiError(429, 'slow down', { 'retry-after-ms': '120', 'retry-after': '9' }), OK]);
    expect(delays(run.result)).toEqual([120]);
  });

  it('caps an hour-long Retry-After at retry.maxRetryAfterMs (60 s by default)', async () => {
    const run = await runWith([apiError(429, 'come back in an hour', { 'retry-after': '3600' }), OK]);
    expect(delays(run.result)).toEqual([60_000]);
    const capped = await runWith(
      [apiError(429, 'come back in an hour', { 'retry-after': '3600' }), OK],
      {},
      { retry: { maxRetryAfterMs: 5_000 } },
    );
    expect(delays(capped.result)).toEqual([5_000]);
    expect(capped.result.stopReason).toBe('completed');
  });

  it("a persistent 429 costs maxRetries + 1 HTTP requests, not the 9 of the client's own retries stacked on ours", async () => {
    const run = await runWith(times(3, apiError(429, 'Rate limit reached', { 'retry-after-ms': '10' })));
    expect(run.result.stopReason).toBe('retries_exhausted');
    expect(server.requests).toHaveLength(3);
    expect(delays(run.result)).toEqual([10, 10, 10]);
  });

  it('why maxRetries is 0: the client on its own makes 3 requests per call, so stacked on ours 9 per step', async () => {
    server.enqueue(...times(3, apiError(429, 'Rate limit reached', { 'retry-after-ms': '1' })));
    const client = new OpenAI({ apiKey: SECRET, baseURL: server.baseURL, logLevel: 'off' });
    await expect(
      client.chat.completions.create({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    expect(server.requests).toHaveLength(3);
  });

  it('x-should-retry: false from the server makes a 5xx fatal', async () => {
    const run = await runWith([apiError(500, 'do not retry this', { 'x-should-retry': 'false' })]);
    expect(run.result.stopReason).toBe('fatal_error');
    expect(server.requests).toHaveLength(1);
  });
});

describe('fatal failures: one request, fatal_error naming the cause, never the key', () => {
  const masked = `${SECRET.slice(0, 8)}*************${SECRET.slice(-4)}`;
  const fatal: [string, ServerStep, string, RegExp][] = [
    [
      '400 BadRequestError',
      apiError(400, "Invalid value for 'temperature'"),
      'model_bad_request',
      /HTTP 400 Invalid value for 'temperature'/,
    ],
    [
      '401 AuthenticationError',
      apiError(
        401,
        `Incorrect API key provided: ${masked}. You can find your API key at https://platform.openai.com/account/api-keys. (${SECRET})`,
      ),
      'model_auth',
      /HTTP 401 Incorrect API key provided: \[redacted\].*the API key was refused; check apiKey or OPENAI_API_KEY/,
    ],
    [
      '403 PermissionDeniedError',
      apiError(403, 'Project does not have access to model'),
      'model_auth',
      /HTTP 403 Project does not have access to model — the key may not use this model/,
    ],
    [
      '404 NotFoundError',
      apiError(404, 'The model `gpt-9` does not exist'),
      'model_bad_request',
      /HTTP 404 The model `gpt-9` does not exist — unknown model or endpoint/,
    ],
    ['422 UnprocessableEntityError', apiError(422, 'Unprocessable'), 'model_bad_request', /HTTP 422 Unprocessable/],
    [
      'a 200 whose body is an HTML page',
      { kind: 'raw', contentType: 'text/html', body: '<!DOCTYPE html><html><body>Welcome to nginx</body></html>' },
      'model_unknown',
      /answered 200 with an HTML page instead of a chat completion; is baseURL the API's address/,
    ],
  ];

  it('a tool call without a name: fatal, naming the field', async () => {
    const body = chatCompletion({
      toolCalls: [
        { id: 'c1', name: 'lookup', args: {} },
        { id: 'c2', name: '', args: {} },
      ],
    });
    const run = await runWith([{ kind: 'json', body }]);
    expect(run.result.stopReason).toBe('fatal_error');
    expect(run.result.detail).toContain(
      'sent a malformed reply: choices[0].message.tool_calls[1].function.name is missing',
    );
  });

  it.each(['chat', 'responses'] as const)(
    'a server that ignores stream: true and answers whole JSON (%s): fatal, saying so',
    async (api) => {
      const run = await runWith([replyStep(api, false, { text: 'done' })], { api, stream: true });
      expect(run.result.stopReason).toBe('fatal_error');
      expect(run.result.detail).toContain(
        'answered a streamed request with application/json, not text/event-stream; this server does not stream: set stream: false',
      );
      expect(server.requests).toHaveLength(1);
    },
  );

  it.each(fatal)('%s', async (_name, fault, code, message) => {
    const run = await runWith([fault]);
    expect(run.result.stopReason).toBe('fatal_error');
    expect(run.result.error?.code).toBe(code);
    expect(run.result.error?.message).toMatch(message);
    expect(run.result.detail).toMatch(message);
    expect(server.requests).toHaveLength(1);
    expectNoKey(run);
  });

  it('sends the key only as the Authorization header', async () => {
    await runWith([OK]);
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${SECRET}`);
  });
});

describe("aborts of loopstate's own signal are never retried", () => {
  it('a cancel while the server stalls: cancelled after 1 request', async () => {
    server.enqueue({ kind: 'stall-before-headers' });
    const controller = new AbortController();
    const loop = createLoop({
      model: openaiModel({ model: 'gpt-4.1-mini', baseURL: server.baseURL, apiKey: SECRET }),
      clock: virtualClock(),
    });
    const running = loop.run({ goal: 'Say done.', signal: controller.signal });
    await until(() => server.requests.length === 1);
    controller.abort();
    const result = await running;
    expect(result.stopReason).toBe('cancelled');
    expect(server.requests).toHaveLength(1);
  });

  it('the deadline while the stream stalls after its headers: deadline_exceeded after 1 request', async () => {
    server.enqueue({ kind: 'stall-after-headers', contentType: 'text/event-stream' });
    const loop = createLoop({
      model: openaiModel({ model: 'gpt-4.1-mini', baseURL: server.baseURL, apiKey: SECRET, stream: true }),
      clock: systemClock,
      limits: { deadlineMs: 150 },
    });
    const result = await loop.run({ goal: 'Say done.' });
    expect(result.stopReason).toBe('deadline_exceeded');
    expect(server.requests).toHaveLength(1);
  });

  it('limits.modelCallTimeoutMs: a timeout the transport layer retries, one request per attempt', async () => {
    server.enqueue(...times(2, { kind: 'stall-before-headers' }));
    const loop = createLoop({
      model: openaiModel({ model: 'gpt-4.1-mini', baseURL: server.baseURL, apiKey: SECRET }),
      clock: systemClock,
      random: () => 0,
      retry: { baseMs: 1, maxMs: 2 },
      limits: { modelCallTimeoutMs: 60, maxRetries: 1 },
    });
    const result = await loop.run({ goal: 'Say done.' });
    expect(result.stopReason).toBe('retries_exhausted');
    expect(kinds(result)).toEqual(['timeout', 'timeout']);
    expect(result.detail).toMatch(/modelCallTimeoutMs \(60 ms\)/);
    expect(server.requests).toHaveLength(2);
  });

  it("the model used alone rethrows the caller's abort reason", async () => {
    server.enqueue({ kind: 'stall-before-headers' });
    const model = openaiModel({ model: 'gpt-4.1-mini', baseURL: server.baseURL, apiKey: SECRET });
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const call = model.generate({ messages: [{ role: 'user', content: 'hi' }], tools: [], signal: controller.signal });
    await until(() => server.requests.length === 1);
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
  });
});

describe('refusals and the content filter: a fatal `refused` model error', () => {
  it.each([false, true])('a refusal (stream %s)', async (stream) => {
    const run = await runWith([replyStep('chat', stream, { refusal: "I'm sorry, I can't help with that." })], {
      stream,
    });
    expect(run.result.stopReason).toBe('fatal_error');
    expect(run.result.error?.code).toBe('model_refused');
    expect(run.result.detail).toMatch(/refused to answer: I'm sorry, I can't help with that\./);
    expect(server.requests).toHaveLength(1);
  });

  it('finish_reason content_filter', async () => {
    const run = await runWith([
      { kind: 'json', body: chatCompletion({ text: 'partial', finishReason: 'content_filter' }) },
    ]);
    expect(run.result.error?.code).toBe('model_refused');
    expect(run.result.detail).toMatch(/content filter/);
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let tries = 0; tries < 500 && !condition(); tries++) await new Promise((resolve) => setTimeout(resolve, 2));
  if (!condition()) throw new Error('condition never became true');
}

/** A port nothing listens on: bound, then released. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
