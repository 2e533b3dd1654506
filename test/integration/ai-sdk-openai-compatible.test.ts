/**
 * `aiSdkModel` on the real `@ai-sdk/openai-compatible` provider against the local OpenAI-compatible server
 * (Chat Completions, JSON and SSE): transient failures retried by the loop only, one HTTP request per attempt;
 * a 401; a content-filtered reply; a reply cut by the output limit; a tool loop streamed and unstreamed to
 * the same transcript and usage, priced from the built-in table by the model id after the provider.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLoop, DEFAULT_PRICES, defineTool, evaluators, type RunResult, type TraceEvent } from 'loopstate';
import { aiSdkModel, type AiSdkLanguageModel } from 'loopstate/ai-sdk';
import { virtualClock } from 'loopstate/testing';
import { apiError, replyStep } from '../support/openai-fixtures.js';
import { useOpenAIServer, type OpenAITestServer, type ServerStep } from '../support/openai-server.js';

const KEY = 'sk-compatible-test-0123456789SECRET';

let server: OpenAITestServer;
useOpenAIServer((started) => (server = started));

const compatible = (): AiSdkLanguageModel =>
  createOpenAICompatible({ name: 'local', baseURL: server.baseURL, apiKey: KEY, includeUsage: true })('gpt-4.1-mini');

const OK = replyStep('chat', false, { text: 'done', usage: { input: 10, output: 2 } });

async function runWith(steps: ServerStep[], stream = false): Promise<RunResult> {
  server.enqueue(...steps);
  const loop = createLoop({
    model: aiSdkModel(compatible(), { stream }),
    limits: { maxRetries: 2 },
    clock: virtualClock(),
    random: () => 0,
  });
  return loop.run({ goal: 'Say done.' });
}

const delays = (result: RunResult) =>
  result.trace.flatMap((event) => (event.type === 'model-error' ? [event.retryDelayMs] : []));

describe('openai-compatible: failures', () => {
  it('a 429 with retry-after-ms is waited out by the loop, then the call succeeds', async () => {
    const result = await runWith([apiError(429, 'Rate limit reached', { 'retry-after-ms': '250' }), OK]);
    expect(result.stopReason).toBe('completed');
    expect(server.requests).toHaveLength(2);
    expect(delays(result)).toEqual([250]);
  });

  it.each([false, true])('a 503 is retried, one request per attempt (stream %s)', async (stream) => {
    const result = await runWith([apiError(503, 'busy'), replyStep('chat', stream, { text: 'done' })], stream);
    expect(result.stopReason).toBe('completed');
    expect(server.requests).toHaveLength(2);
  });

  it('a persistent 500 costs maxRetries + 1 requests, then retries_exhausted', async () => {
    const result = await runWith([apiError(500, 'down'), apiError(500, 'down'), apiError(500, 'down')]);
    expect(result.stopReason).toBe('retries_exhausted');
    expect(server.requests).toHaveLength(3);
  });

  it('a 401 is fatal_error, code model_auth, after one request', async () => {
    const result = await runWith([apiError(401, 'Incorrect API key provided')]);
    expect(result.stopReason).toBe('fatal_error');
    expect(result.error?.code).toBe('model_auth');
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(JSON.stringify(result)).not.toContain(KEY);
  });

  it.each([false, true])('a content-filtered reply is fatal, code model_refused (stream %s)', async (stream) => {
    const result = await runWith([replyStep('chat', stream, { text: '', finishReason: 'content_filter' })], stream);
    expect(result.stopReason).toBe('fatal_error');
    expect(result.error?.code).toBe('model_refused');
  });
});

describe('openai-compatible: the Model', () => {
  it('is named local.chat:gpt-4.1-mini, its provider the name given, its server the baseURL', () => {
    const model = aiSdkModel(compatible());
    expect(model).toMatchObject({
      id: 'local.chat:gpt-4.1-mini',
      provider: 'local',
      server: { address: '127.0.0.1', port: Number(new URL(server.baseURL).port) },
    });
  });

  it.each([false, true])('reports finish reason length with the response id and model (stream %s)', async (stream) => {
    server.enqueue(replyStep('chat', stream, { text: 'The ans', finishReason: 'length' }));
    const response = await aiSdkModel(compatible(), { stream }).generate({
      messages: [{ role: 'user', content: 'Tell me.' }],
      tools: [],
      signal: new AbortController().signal,
      settings: { maxOutputTokens: 3, seed: 7 },
    });
    expect(response.text).toBe('The ans');
    expect(response.metadata).toMatchObject({ id: 'chatcmpl-test', model: 'gpt-4.1-mini', finishReason: 'length' });
    expect(server.requests[0]?.body).toMatchObject({ max_tokens: 3, seed: 7 });
  });
});

const getOrder = defineTool({
  name: 'get_order',
  description: 'Look one order up.',
  input: z.object({ order_id: z.string() }),
  access: 'read',
  execute: ({ order_id }) => ({ order_id, status: order_id === 'O-1' ? 'shipped' : 'pending' }),
});
const ANSWER = '{"statuses":[{"order_id":"O-1","status":"shipped"},{"order_id":"O-2","status":"pending"}]}';

async function orderRun(stream: boolean, events: TraceEvent[] = []): Promise<RunResult> {
  server.enqueue(
    replyStep('chat', stream, {
      toolCalls: [
        { id: 'call_a', name: 'get_order', args: { order_id: 'O-1' } },
        { id: 'call_b', name: 'get_order', args: { order_id: 'O-2' } },
      ],
      usage: { input: 1_000, output: 40 },
    }),
    replyStep('chat', stream, { text: ANSWER, usage: { input: 1_400, output: 60, cached: 1_024, reasoning: 16 } }),
  );
  const loop = createLoop({
    model: aiSdkModel(compatible(), { stream }),
    instructions: 'Look orders up, then answer in JSON.',
    tools: [getOrder],
    evaluate: evaluators.schema(
      z.object({ statuses: z.array(z.object({ order_id: z.string(), status: z.string() })) }),
    ),
    limits: { maxSteps: 4 },
    clock: virtualClock(),
    generateRunId: () => 'run-compatible',
    trace: { onEvent: (event) => events.push(event) },
  });
  return loop.run({ goal: 'Status of O-1 and O-2?' });
}

describe('openai-compatible: a tool loop through createLoop', () => {
  it.each([false, true])('completes, the tool results sent back under their call ids (stream %s)', async (stream) => {
    const result = await orderRun(stream);
    expect(result.stopReason).toBe('completed');
    expect(server.requests).toHaveLength(2);
    const messages = (server.requests[1]!.body as { messages: Record<string, unknown>[] }).messages;
    expect(messages.filter((message) => message.role === 'tool')).toEqual([
      { role: 'tool', tool_call_id: 'call_a', content: expect.stringContaining('shipped') },
      { role: 'tool', tool_call_id: 'call_b', content: expect.stringContaining('pending') },
    ]);
    // Priced from the built-in table by the model id after `local.chat:`.
    const price = DEFAULT_PRICES['gpt-4.1-mini']!;
    const cost =
      ((2_400 - 1_024) * price.inputPerMillion + 1_024 * price.cachedInputPerMillion! + 100 * price.outputPerMillion) /
      1e6;
    expect(result.usage.costUsd).toBeCloseTo(cost, 12);
  });

  it('ends streamed as unstreamed: same transcript, same usage; tool-call starts arrive live', async () => {
    const unstreamed = await orderRun(false);
    const events: TraceEvent[] = [];
    const streamed = await orderRun(true, events);
    expect(streamed.messages).toEqual(unstreamed.messages);
    expect(streamed.usage).toEqual(unstreamed.usage);
    expect(
      events.flatMap((event) => (event.type === 'model-tool-call-start' ? [`${event.callId}:${event.name}`] : [])),
    ).toEqual(['call_a:get_order', 'call_b:get_order']);
    expect(events.flatMap((event) => (event.type === 'model-delta' ? [event.text] : [])).join('')).toBe(ANSWER);
  });
});
