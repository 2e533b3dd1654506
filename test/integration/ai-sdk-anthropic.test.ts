/**
 * `aiSdkModel` on the real `@ai-sdk/anthropic` provider (`createAnthropic({ baseURL, apiKey })`) against a
 * local fake of the Anthropic Messages API over HTTP, JSON and SSE: transient failures retried by the loop
 * only (one HTTP request per attempt, Retry-After honoured), fatal ones stopping at once, a tool loop
 * streamed and unstreamed to the same transcript and usage, refusals, a reply cut by the output limit, a
 * stream that fails or ends early, and a missing API key.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, defineTool, evaluators, systemClock, type RunResult, type TraceEvent } from 'loopstate';
import { aiSdkModel, type AiSdkLanguageModel } from 'loopstate/ai-sdk';
import { virtualClock } from 'loopstate/testing';
import { anthropicError, anthropicEvents, anthropicStep } from '../support/anthropic-fixtures.js';
import { useOpenAIServer, type OpenAITestServer, type ServerStep } from '../support/openai-server.js';

const KEY = 'sk-ant-test-0123456789abcdefSECRET';

let server: OpenAITestServer;
useOpenAIServer((started) => (server = started));

const claude = ({ withKey = true } = {}): AiSdkLanguageModel =>
  createAnthropic({ baseURL: server.baseURL, ...(withKey ? { apiKey: KEY } : {}) })('claude-sonnet-4-5');

const OK = anthropicStep(false, { text: 'done', usage: { input: 10, output: 2 } });

interface Run {
  result: RunResult;
  events: TraceEvent[];
}

async function runWith(steps: ServerStep[], { stream = false, languageModel = claude() } = {}): Promise<Run> {
  server.enqueue(...steps);
  const events: TraceEvent[] = [];
  const loop = createLoop({
    model: aiSdkModel(languageModel, { stream }),
    limits: { maxRetries: 2 },
    clock: virtualClock(),
    random: () => 0,
    trace: { onEvent: (event) => events.push(event) },
  });
  return { result: await loop.run({ goal: 'Say done.' }), events };
}

const delays = (result: RunResult) =>
  result.trace.flatMap((event) => (event.type === 'model-error' ? [event.retryDelayMs] : []));
const kinds = (result: RunResult) =>
  result.trace.flatMap((event) => (event.type === 'model-error' ? [event.errorKind] : []));
const times = (count: number, step: ServerStep): ServerStep[] => Array.from({ length: count }, () => step);

describe('anthropic: transient failures go to the loop, one HTTP request per attempt', () => {
  it('a 429 with retry-after is waited out, then the call succeeds', async () => {
    const { result } = await runWith([
      anthropicError(429, 'Number of request tokens has exceeded your rate limit', { 'retry-after': '2' }),
      OK,
    ]);
    expect(result.stopReason).toBe('completed');
    expect(result.output).toBe('done');
    expect(server.requests).toHaveLength(2);
    expect(kinds(result)).toEqual(['rate_limited']);
    expect(delays(result)).toEqual([2_000]);
  });

  it('a 503 and a 529 (overloaded) are retried, then the call succeeds', async () => {
    const { result } = await runWith([
      anthropicError(503, 'Service unavailable'),
      anthropicError(529, 'Overloaded'),
      OK,
    ]);
    expect(result.stopReason).toBe('completed');
    expect(server.requests).toHaveLength(3);
    expect(kinds(result)).toEqual(['server', 'server']);
  });

  it('a persistent 429 costs maxRetries + 1 HTTP requests: the provider retries nothing itself', async () => {
    const { result } = await runWith(times(3, anthropicError(429, 'slow down', { 'retry-after-ms': '10' })));
    expect(result.stopReason).toBe('retries_exhausted');
    expect(server.requests).toHaveLength(3);
    expect(delays(result)).toEqual([10, 10, 10]);
  });

  it('an error event before any content (the stream opens overloaded) is retried', async () => {
    const overloaded: ServerStep = {
      kind: 'sse',
      done: false,
      events: [{ event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }],
    };
    const { result } = await runWith([overloaded, anthropicStep(true, { text: 'done' })], { stream: true });
    expect(result.stopReason).toBe('completed');
    expect(server.requests).toHaveLength(2);
    expect(kinds(result)).toEqual(['server']);
  });

  it('an error event in the middle of the stream is retried', async () => {
    const events = anthropicEvents({ text: 'partial answer' }, { complete: false });
    const failing: ServerStep = {
      kind: 'sse',
      done: false,
      events: [
        ...events.slice(0, 3),
        { event: 'error', data: { type: 'error', error: { type: 'api_error', message: 'Internal error' } } },
      ],
    };
    const { result } = await runWith([failing, anthropicStep(true, { text: 'done' })], { stream: true });
    expect(result.stopReason).toBe('completed');
    expect(result.output).toBe('done');
    expect(server.requests).toHaveLength(2);
  });

  it('a stream cut before its end (no message_delta) is retried as a connection failure', async () => {
    const cut: ServerStep = {
      kind: 'sse',
      done: false,
      events: anthropicEvents({ text: 'half' }, { complete: false }),
    };
    const { result } = await runWith([cut, anthropicStep(true, { text: 'done' })], { stream: true });
    expect(result.stopReason).toBe('completed');
    expect(kinds(result)).toEqual(['connection']);
    expect(server.requests).toHaveLength(2);
  });
});

describe('anthropic: fatal failures stop at once', () => {
  it('a 401 is fatal_error, code model_auth, one request, never the key', async () => {
    const { result, events } = await runWith([anthropicError(401, 'invalid x-api-key')]);
    expect(result.stopReason).toBe('fatal_error');
    expect(result.error?.code).toBe('model_auth');
    expect(result.error?.message).toMatch(/HTTP 401: invalid x-api-key — the API key was refused/);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.headers['x-api-key']).toBe(KEY);
    expect(JSON.stringify({ result, events })).not.toContain(KEY);
  });

  describe('without an API key', () => {
    let saved: string | undefined;
    beforeEach(() => {
      saved = process.env.ANTHROPIC_API_KEY;
      delete process.env.ANTHROPIC_API_KEY;
    });
    afterEach(() => {
      if (saved !== undefined) process.env.ANTHROPIC_API_KEY = saved;
    });

    it('is fatal_error, code invalid_config, naming ANTHROPIC_API_KEY, and sends nothing', async () => {
      const { result } = await runWith([], { languageModel: claude({ withKey: false }) });
      expect(result.stopReason).toBe('fatal_error');
      expect(result.error?.code).toBe('invalid_config');
      expect(result.error?.message).toContain('ANTHROPIC_API_KEY');
      expect(server.requests).toHaveLength(0);
    });
  });

  it.each([false, true])('a refusal (stop_reason refusal, stream %s) is fatal, code model_refused', async (stream) => {
    const { result } = await runWith([anthropicStep(stream, { text: '', stopReason: 'refusal' })], { stream });
    expect(result.stopReason).toBe('fatal_error');
    expect(result.error?.code).toBe('model_refused');
    expect(server.requests).toHaveLength(1);
    // The refused call was billed: its tokens count.
    expect(result.usage.inputTokens).toBe(100);
  });
});

describe('anthropic: an abort', () => {
  it.each([
    ['before the headers', { kind: 'stall-before-headers' } as const, false],
    ['mid-stream', { kind: 'stall-after-headers', contentType: 'text/event-stream' } as const, true],
  ])(
    'limits.modelCallTimeoutMs ends a call stalled %s: a timeout the loop retries, one request per attempt',
    async (_, stall, stream) => {
      server.enqueue(stall, stall);
      const loop = createLoop({
        model: aiSdkModel(claude(), { stream }),
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
    },
  );

  it("a cancel of the run's signal mid-call stops the run as cancelled", async () => {
    server.enqueue({ kind: 'stall-before-headers' });
    const controller = new AbortController();
    const loop = createLoop({ model: aiSdkModel(claude()), clock: systemClock });
    const run = loop.run({ goal: 'Say done.', signal: controller.signal });
    while (server.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    const result = await run;
    expect(result.stopReason).toBe('cancelled');
    expect(server.requests).toHaveLength(1);
  });

  it('of the signal mid-stream is reported as its reason, as openaiModel reports it', async () => {
    server.enqueue({
      kind: 'sse',
      done: false,
      after: 'keep-open',
      events: anthropicEvents({ text: 'a long reply' }, { complete: false }),
    });
    const controller = new AbortController();
    const reason = new Error('cancelled by the caller');
    const pending = aiSdkModel(claude(), { stream: true }).generate({
      messages: [{ role: 'user', content: 'Tell me.' }],
      tools: [],
      signal: controller.signal,
      onProgress: () => controller.abort(reason),
    });
    await expect(pending).rejects.toBe(reason);
    expect(server.requests).toHaveLength(1);
  });
});

describe('anthropic: the Model', () => {
  it('is named and placed from the provider: id, provider and server', () => {
    const model = aiSdkModel(claude());
    const port = Number(new URL(server.baseURL).port);
    expect(model).toMatchObject({
      id: 'anthropic.messages:claude-sonnet-4-5',
      provider: 'anthropic',
      server: { address: '127.0.0.1', port },
    });
  });

  it.each([false, true])('reports a reply cut by max_tokens as finish reason length (stream %s)', async (stream) => {
    server.enqueue(
      anthropicStep(stream, { text: 'The answer is', stopReason: 'max_tokens', model: 'claude-sonnet-4-5-20250929' }),
    );
    const response = await aiSdkModel(claude(), { stream }).generate({
      messages: [{ role: 'user', content: 'Tell me.' }],
      tools: [],
      signal: new AbortController().signal,
      settings: { maxOutputTokens: 3 },
    });
    expect(response.text).toBe('The answer is');
    expect(response.metadata).toEqual({
      id: 'msg_test',
      model: 'claude-sonnet-4-5-20250929',
      finishReason: 'length',
      rawFinishReason: 'max_tokens',
    });
    expect(server.requests[0]?.body).toMatchObject({ max_tokens: 3 });
  });
});

const orders: Record<string, string> = { 'O-1': 'shipped', 'O-2': 'pending' };
const executed: string[] = [];
const getOrder = defineTool({
  name: 'get_order',
  description: 'Look one order up.',
  input: z.object({ order_id: z.string() }),
  access: 'read',
  execute: ({ order_id }) => {
    executed.push(order_id);
    return { order_id, status: orders[order_id] ?? 'unknown' };
  },
});
const Answer = z.object({ statuses: z.array(z.object({ order_id: z.string(), status: z.string() })) });
const ANSWER = '{"statuses":[{"order_id":"O-1","status":"shipped"},{"order_id":"O-2","status":"pending"}]}';

async function orderRun(stream: boolean, events: TraceEvent[] = []): Promise<RunResult> {
  executed.length = 0;
  server.enqueue(
    anthropicStep(stream, {
      text: 'Looking both up.',
      toolCalls: [
        { id: 'toolu_a', name: 'get_order', args: { order_id: 'O-1' } },
        { id: 'toolu_b', name: 'get_order', args: { order_id: 'O-2' } },
      ],
      usage: { input: 1_000, output: 40 },
    }),
    anthropicStep(stream, { text: ANSWER, usage: { input: 1_400, output: 60, cached: 1_024 } }),
  );
  const loop = createLoop({
    model: aiSdkModel(claude(), { stream, settings: { temperature: 0 } }),
    instructions: 'Look orders up, then answer in JSON.',
    tools: [getOrder],
    evaluate: evaluators.schema(Answer),
    limits: { maxSteps: 4 },
    prices: { 'claude-sonnet-4-5': { inputPerMillion: 3, cachedInputPerMillion: 0.3, outputPerMillion: 15 } },
    clock: virtualClock(),
    generateRunId: () => 'run-anthropic',
    trace: { onEvent: (event) => events.push(event) },
  });
  return loop.run({ goal: 'Status of O-1 and O-2?' });
}

describe.each([false, true])('anthropic: a tool loop through createLoop (stream %s)', (stream) => {
  it('runs the tool, sends its result back under the tool_use id, and completes', async () => {
    const result = await orderRun(stream);
    expect(result.stopReason).toBe('completed');
    expect(result.output).toEqual(JSON.parse(ANSWER));
    expect(executed).toEqual(['O-1', 'O-2']);
    expect(server.requests).toHaveLength(2);
    const second = server.requests[1]!.body as { system: unknown; messages: { role: string; content: unknown[] }[] };
    expect(second.system).toEqual([{ type: 'text', text: expect.stringContaining('Look orders up') }]);
    expect(second.messages.at(-2)).toMatchObject({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Looking both up.' },
        { type: 'tool_use', id: 'toolu_a', name: 'get_order', input: { order_id: 'O-1' } },
        { type: 'tool_use', id: 'toolu_b', name: 'get_order', input: { order_id: 'O-2' } },
      ],
    });
    expect(second.messages.at(-1)).toMatchObject({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_a', content: expect.stringContaining('shipped') },
        { type: 'tool_result', tool_use_id: 'toolu_b', content: expect.stringContaining('pending') },
      ],
    });
    // Cost from the usage (cache reads at their rate), priced by the model id after the provider.
    expect(result.usage.inputTokens).toBe(2_400);
    expect(result.usage.outputTokens).toBe(100);
    const cost = (2_400 - 1_024) * 3e-6 + 1_024 * 0.3e-6 + 100 * 15e-6;
    expect(result.usage.costUsd).toBeCloseTo(cost, 12);
  });
});

describe('anthropic: streamed and unstreamed', () => {
  it('end in the same transcript and usage', async () => {
    const unstreamed = await orderRun(false);
    const streamed = await orderRun(true);
    expect(streamed.messages).toEqual(unstreamed.messages);
    expect(streamed.usage).toEqual(unstreamed.usage);
    expect(streamed.output).toEqual(unstreamed.output);
  });

  it('streams text deltas and tool-call starts to trace.onEvent as they arrive', async () => {
    const events: TraceEvent[] = [];
    await orderRun(true, events);
    const live = events.filter((event) => event.type === 'model-delta' || event.type === 'model-tool-call-start');
    expect(live.filter((event) => event.type === 'model-tool-call-start').map((event) => event.callId)).toEqual([
      'toolu_a',
      'toolu_b',
    ]);
    const text = live.flatMap((event) => (event.type === 'model-delta' ? [event.text] : [])).join('');
    expect(text).toBe(`Looking both up.${ANSWER}`);
  });
});
