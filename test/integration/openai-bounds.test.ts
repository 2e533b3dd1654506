/**
 * A hostile or broken OpenAI server, over real HTTP: a reply too big to hold (`maxResponseBytes`, enforced while
 * the body streams in, so what is read stays bounded), a stream that is whole but leaves its connection open
 * (`[DONE]` or `response.completed` ends the call), usage the server reported for a call that then failed
 * (always counted), a Responses API 200 that is an HTML page (fatal, with the baseURL hint).
 */
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createLoop, rebuildRun, type RunResult } from 'loopstate';
import { openaiModel, type OpenAIModelOptions } from 'loopstate/openai';
import { virtualClock } from 'loopstate/testing';
import { chatChunks, replyStep, responsesEvents, responsesResponse } from '../support/openai-fixtures.js';
import { useOpenAIServer, type OpenAITestServer, type ServerStep } from '../support/openai-server.js';

let server: OpenAITestServer;
useOpenAIServer((started) => (server = started));

const MB = 1024 * 1024;
const LIMIT = 1 * MB;
/** What loopback sockets may hold on top of what the client read (kernel buffers both ways). */
const SOCKET_SLACK = 16 * MB;

async function runWith(steps: ServerStep[], options: Partial<OpenAIModelOptions> = {}): Promise<RunResult> {
  server.enqueue(...steps);
  const loop = createLoop({
    model: openaiModel({
      model: 'gpt-4.1-mini',
      baseURL: server.baseURL,
      apiKey: 'sk-test-bounds-0123456789',
      timeoutMs: 10_000,
      idleTimeoutMs: 2_000,
      ...options,
    }),
    limits: { maxRetries: 2 },
    clock: virtualClock(),
    random: () => 0,
  });
  return loop.run({ goal: 'Say done.' });
}

const kinds = (result: RunResult) =>
  result.trace.flatMap((event) => (event.type === 'model-error' ? [event.errorKind] : []));

describe('maxResponseBytes: a reply past it is a fatal error naming the limit, read no further', () => {
  const overLimit = `is larger than maxResponseBytes (${LIMIT} bytes); raise openaiModel({ maxResponseBytes }) if replies this big are expected`;

  it('an endless body: the call fails once the limit is passed, after reading a bounded amount', async () => {
    const sent = { bytes: 0 };
    const result = await runWith(
      [
        {
          kind: 'huge',
          contentType: 'application/json',
          prefix: '{"id":"chatcmpl-1","choices":[{"message":{"content":"',
          sent,
        },
      ],
      { maxResponseBytes: LIMIT },
    );
    expect(result.stopReason).toBe('fatal_error');
    expect(result.error?.code).toBe('model_unknown');
    expect(result.detail).toContain(overLimit);
    expect(server.requests).toHaveLength(1);
    expect(sent.bytes).toBeGreaterThan(LIMIT);
    expect(sent.bytes).toBeLessThan(LIMIT + SOCKET_SLACK);
  });

  it('a 200 MB body that says its length: refused before its body is read', async () => {
    const sent = { bytes: 0 };
    const result = await runWith([{ kind: 'huge', contentType: 'application/json', contentLength: 200 * MB, sent }], {
      maxResponseBytes: LIMIT,
    });
    expect(result.stopReason).toBe('fatal_error');
    expect(result.detail).toContain(`answered with a body of ${200 * MB} bytes, which ${overLimit}`);
    expect(sent.bytes).toBeLessThan(SOCKET_SLACK);
  });

  it('an endless stream (chat) and an endless error body alike', async () => {
    const stream = { bytes: 0 };
    const streamed = await runWith(
      [
        {
          kind: 'huge',
          contentType: 'text/event-stream',
          prefix: 'data: {"choices":[{"index":0,"delta":{"content":"',
          sent: stream,
        },
      ],
      { maxResponseBytes: LIMIT, stream: true },
    );
    expect(streamed.stopReason).toBe('fatal_error');
    expect(streamed.detail).toContain(overLimit);
    expect(stream.bytes).toBeLessThan(LIMIT + SOCKET_SLACK);
    const errorBody = { bytes: 0 };
    const failed = await runWith([{ kind: 'huge', contentType: 'text/plain', sent: errorBody }], {
      maxResponseBytes: LIMIT,
      api: 'responses',
    });
    expect(failed.stopReason).toBe('fatal_error');
    expect(failed.detail).toContain(overLimit);
    expect(errorBody.bytes).toBeLessThan(LIMIT + SOCKET_SLACK);
  });

  it('a reply under the limit is untouched, whole or streamed', async () => {
    const whole = await runWith([replyStep('chat', false, { text: 'x'.repeat(LIMIT - 1_000) })], {
      maxResponseBytes: LIMIT,
    });
    expect(whole.stopReason).toBe('completed');
    expect(whole.rawOutput).toHaveLength(LIMIT - 1_000);
    const streamed = await runWith([replyStep('chat', true, { text: 'x'.repeat(20_000) })], {
      maxResponseBytes: LIMIT,
      stream: true,
    });
    expect(streamed.stopReason).toBe('completed');
    expect(streamed.rawOutput).toHaveLength(20_000);
  });
});

describe('a stream that is whole ends the call, even when the server leaves the connection open', () => {
  it('chat: [DONE] completes it at once, its usage counted; one request', async () => {
    const result = await runWith(
      [{ kind: 'sse', events: chatChunks({ text: 'done', usage: { input: 10, output: 2 } }), after: 'keep-open' }],
      { stream: true },
    );
    expect(result.stopReason).toBe('completed');
    expect(result.rawOutput).toBe('done');
    expect(kinds(result)).toEqual([]);
    expect(result.usage).toMatchObject({ inputTokens: 10, outputTokens: 2, modelCalls: 1 });
    expect(result.usage.costUsd).toBeGreaterThan(0);
    expect(server.requests).toHaveLength(1);
  });

  it('responses: response.completed completes it', async () => {
    const result = await runWith(
      [
        {
          kind: 'sse',
          events: responsesEvents({ text: 'done', usage: { input: 10, output: 2 } }),
          done: false,
          after: 'keep-open',
        },
      ],
      { api: 'responses', stream: true },
    );
    expect(result.stopReason).toBe('completed');
    expect(kinds(result)).toEqual([]);
    expect(result.usage).toMatchObject({ inputTokens: 10, outputTokens: 2, modelCalls: 1 });
    expect(server.requests).toHaveLength(1);
  });
});

describe('usage the server reported is counted even when the call then fails', () => {
  it('chat: a stream that reported its usage and was then cut off, three times: retries_exhausted, all three billed calls counted', async () => {
    const cut: ServerStep = {
      kind: 'sse',
      events: chatChunks({ text: 'half', usage: { input: 10, output: 2 } }).filter(
        (chunk) => (chunk as { choices: unknown[] }).choices.length === 0 || !hasFinish(chunk),
      ),
      done: false,
      after: 'reset',
    };
    const result = await runWith([cut, cut, cut], { stream: true });
    expect(result.stopReason).toBe('retries_exhausted');
    expect(kinds(result)).toEqual(['connection', 'connection', 'connection']);
    expect(result.usage).toMatchObject({ inputTokens: 30, outputTokens: 6, modelCalls: 3 });
    expect(result.usage.costUsd).toBeGreaterThan(0);
    const traced = result.trace.flatMap((event) =>
      event.type === 'model-error' ? [[event.inputTokens, event.outputTokens]] : [],
    );
    expect(traced).toEqual([
      [10, 2],
      [10, 2],
      [10, 2],
    ]);
    // The trace alone tells the same spend.
    expect(rebuildRun(result.trace).usage).toEqual(result.usage);
  });

  it('responses: response.failed with its usage, then a reply: both calls counted', async () => {
    const failedResponse = {
      ...responsesResponse({ text: 'x', usage: { input: 7, output: 3 } }),
      status: 'failed',
      error: { code: 'server_error', message: 'boom' },
    };
    const failed: ServerStep = {
      kind: 'sse',
      events: [{ event: 'response.failed', data: { type: 'response.failed', response: failedResponse } }],
      done: false,
    };
    const result = await runWith(
      [failed, replyStep('responses', true, { text: 'done', usage: { input: 10, output: 2 } })],
      { api: 'responses', stream: true },
    );
    expect(result.stopReason).toBe('completed');
    expect(result.usage).toMatchObject({ inputTokens: 17, outputTokens: 5, modelCalls: 2 });
  });
});

describe('the Responses API answering 200 with something that is not a response', () => {
  it('an HTML page: fatal_error with the baseURL hint, one request (chat says the same)', async () => {
    const page: ServerStep = {
      kind: 'raw',
      contentType: 'text/html',
      body: '<!DOCTYPE html><html><body>Welcome to nginx</body></html>',
    };
    const result = await runWith([page], { api: 'responses' });
    expect(result.stopReason).toBe('fatal_error');
    expect(result.error?.code).toBe('model_unknown');
    expect(result.detail).toContain(
      "answered 200 with an HTML page instead of a response object; is baseURL the API's address (it usually ends in /v1)?",
    );
    expect(server.requests).toHaveLength(1);
  });
});

describe('messages joined with their cause', () => {
  it('a refused connection reads "connection error: fetch failed", never "Connection error.: fetch failed"', async () => {
    const port = await closedPort();
    const loop = createLoop({
      model: openaiModel({
        model: 'gpt-4.1-mini',
        baseURL: `http://127.0.0.1:${port}/v1`,
        apiKey: 'sk-test-0123456789',
      }),
      clock: virtualClock(),
      limits: { maxRetries: 0 },
    });
    const result = await loop.run({ goal: 'Say done.' });
    expect(result.stopReason).toBe('retries_exhausted');
    expect(result.detail).toContain(
      `could not reach gpt-4.1-mini at http://127.0.0.1:${port}/v1 (Connection error: fetch failed`,
    );
    expect(result.detail).not.toMatch(/[.!?][:;]/);
  });
});

function hasFinish(chunk: unknown): boolean {
  return (chunk as { choices: { finish_reason: unknown }[] }).choices.some((choice) => choice.finish_reason !== null);
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
